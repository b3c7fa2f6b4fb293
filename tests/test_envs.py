"""Cell envs: built with uv once, reused warm, verified against the pins (real jax wheels)."""

from __future__ import annotations

import time

import pytest

from harness.envs import EnvError, ensure_env, env_dir, verify, _one_line
from harness.matrix import load_matrix

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
