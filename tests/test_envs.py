"""Cell envs: built with uv once, reused warm, verified against the pins (real jax wheels)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.cells.envs import EnvError, ensure_env, env_dir, verify, _one_line
from harness.cells.matrix import load_matrix

pytestmark = pytest.mark.e2e


@pytest.fixture()
def fresh_envs(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAMS_ENVS_DIR", str(tmp_path / "envs"))
    return tmp_path / "envs"


def test_env_is_built_verified_then_reused_warm(fresh_envs):
    cell = load_matrix().cell("jax060-cpu")
    first = ensure_env(cell)
    assert not first.reused and first.versions == {"jax": "0.6.0", "jaxlib": "0.6.0"}
    assert first.path == env_dir(cell) and first.path.parent == fresh_envs
    t = time.monotonic()
    second = ensure_env(cell)
    assert second.reused and time.monotonic() - t < 1.0
    assert not list(fresh_envs.glob(".tmp-*")), "no half-built env may be left behind"


def test_version_mismatch_is_an_env_error(fresh_envs):
    cell = load_matrix().cell("jax060-cpu")
    env = ensure_env(cell)
    with pytest.raises(EnvError, match=r"jax: pinned 0.6.1 but installed 0.6.0"):
        verify(env.python, cell.with_pins("lie-cpu", {"jax": "0.6.1"}))


def test_pin_missing_from_the_index_is_one_line_env_error(fresh_envs):
    cell = load_matrix().cell("jax060-cpu").with_pins("nope-cpu", {"jax": "0.5.4", "jaxlib": "0.5.4"})
    with pytest.raises(EnvError) as exc:
        ensure_env(cell)
    assert "no version of jax==0.5.4" in exc.value.reason and "\n" not in exc.value.reason
    assert not env_dir(cell).exists()


def test_uv_error_line_prefers_the_cause():
    text = "error: No solution found when resolving dependencies\n  cause: Because there is no version of x==1\n"
    assert _one_line(text) == "Because there is no version of x==1"


@pytest.fixture(scope="module")
def shared_envs(tmp_path_factory):
    """One envs folder for the damage drills: each drill repairs what the one before it broke."""
    root = tmp_path_factory.mktemp("envs")
    mp = pytest.MonkeyPatch()
    mp.setenv("SEAMS_ENVS_DIR", str(root))
    yield root
    mp.undo()


def _built(envs):
    cell = load_matrix().cell("jax053-cpu")
    return cell, ensure_env(cell)  # built the first time, rebuilt if a drill before left it broken


def _site(env) -> Path:
    return next(env.path.glob("lib/python*/site-packages"))


@pytest.mark.parametrize("damage, why", [
    (lambda env: (env.path / "xla-seams-env.json").write_text('{"versions": '), "marker"),
    (lambda env: (_site(env) / "jax" / "__init__.py").unlink(), "jax/__init__.py is missing"),
    (lambda env: _truncate(next((_site(env) / "jaxlib").rglob("*.so"))), "changed since the env was built"),
])
def test_a_damaged_cached_env_is_noticed_and_rebuilt_once(shared_envs, damage, why):
    cell, env = _built(shared_envs)
    damage(env)
    notes = []
    again = ensure_env(cell, log=notes.append)
    assert not again.reused, "rebuilt, not reused"
    assert any(why in n for n in notes), notes
    assert ensure_env(cell).reused, "and the rebuilt env is healthy"
    assert not list(shared_envs.glob(".tmp-*"))


def _truncate(path):
    # A damaged copy replaces the file: uv hard-links envs to its cache, so damaging the file in
    # place would damage the shared uv cache (and every env linked to it) as well.
    copy = path.with_name(path.name + ".damaged")
    copy.write_bytes(path.read_bytes()[:1024])
    os.replace(copy, path)


def test_an_env_whose_rebuild_fails_is_an_env_error_saying_both_why(shared_envs, monkeypatch):
    cell, env = _built(shared_envs)
    (env.path / "xla-seams-env.json").write_text("not json")
    monkeypatch.setattr("harness.cells.envs.uv_executable", lambda: "/nonexistent/uv")
    with pytest.raises(EnvError) as exc:
        ensure_env(cell)
    assert "cached env was damaged (marker xla-seams-env.json is corrupt" in exc.value.reason
    assert "rebuilding it failed" in exc.value.reason and "\n" not in exc.value.reason


def test_an_env_built_before_manifests_is_adopted_then_checked(shared_envs):
    import json

    cell, env = _built(shared_envs)
    marker = env.path / "xla-seams-env.json"
    data = json.loads(marker.read_text())
    del data["manifest"], data["manifest_version"]
    marker.write_text(json.dumps(data))
    adopted = ensure_env(cell)
    assert adopted.reused and adopted.versions == {"jax": "0.5.3", "jaxlib": "0.5.3"}
    assert "manifest" in json.loads(marker.read_text())
    (_site(env) / "jax" / "__init__.py").unlink()
    assert not ensure_env(cell).reused, "from then on, damage is seen"


def test_the_reuse_health_check_stays_cheap(shared_envs):
    cell, _ = _built(shared_envs)
    t = time.monotonic()
    for _ in range(5):
        assert ensure_env(cell).reused
    assert (time.monotonic() - t) / 5 < 0.5, "a stat per manifest file, no interpreter start"


def test_half_built_folders_of_a_dead_build_are_removed(shared_envs):
    cell = load_matrix().cell("jax053-cpu")
    mine = shared_envs / f".tmp-{env_dir(cell).name}-999999"
    other_dead = shared_envs / ".tmp-other-cpu-0123456789ab-999998"
    for d in (mine, other_dead):
        (d / "lib").mkdir(parents=True)
    ensure_env(cell)
    assert not mine.exists() and not other_dead.exists()
