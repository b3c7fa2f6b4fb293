"""Building an env (uv, git, a source package's build backend) sees an allow-list of the caller's
environment, never a stray UV_*, PIP_*, PYTHON*, GIT_CONFIG_* or compiler variable (issue 31)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from harness.cells import envs, sources
from harness.cells.matrix import load_matrix
from harness.cells.startup_env import BUILD_ALLOWED, build_env_record, build_passed

# Families that change what is installed or built, each a prefix or a name a tool reads.
_HOSTILE_FAMILIES = ["UV_", "PIP_", "PYTHON", "GIT_CONFIG", "GIT_", "CONDA_", "CMAKE_", "BAZEL", "JAX_", "TORCH_",
                     "XLA_", "BUILD_", "USE_", "LD_", "SEAMS_"]
_HOSTILE_NAMES = ["UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_CONSTRAINT", "UV_OVERRIDE", "UV_PYTHON", "UV_PRERELEASE",
                  "UV_RESOLUTION", "UV_CONFIG_FILE", "UV_NO_BUILD_ISOLATION", "UV_FIND_LINKS", "UV_EXCLUDE_NEWER",
                  "PIP_INDEX_URL", "PIP_CONSTRAINT", "PIP_EXTRA_INDEX_URL", "PYTHONPATH", "PYTHONHOME",
                  "PYTHONSTARTUP", "VIRTUAL_ENV", "CC", "CXX", "CFLAGS", "LDFLAGS", "LD_PRELOAD", "LD_LIBRARY_PATH",
                  "WHEEL_VERSION_SUFFIX", "JAX_GIT_HASH", "GIT_DIR", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0",
                  "GIT_CONFIG_VALUE_0", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL", "SEAMS_CGROUP", "MAKEFLAGS"]
_names = st.one_of(st.sampled_from(_HOSTILE_NAMES),
                   st.builds(lambda p, s: p + s, st.sampled_from(_HOSTILE_FAMILIES),
                             st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789", min_size=1, max_size=12)))
_hostile = st.dictionaries(_names.filter(lambda n: n not in BUILD_ALLOWED), st.sampled_from(
    ["http://127.0.0.1:9/simple", "/nonexistent/constraints.txt", "/bin/false", "1", "'url.https://evil/.insteadOf'"]),
    min_size=1, max_size=6)


_REAL_RUN = subprocess.run


def _cell():
    return load_matrix().cell("jax060-cpu")


def _capture(monkeypatch) -> list[tuple[list[str], dict[str, str]]]:
    seen: list[tuple[list[str], dict[str, str]]] = []

    def fake_run(argv, env, timeout_s, what):
        seen.append((list(argv), dict(env)))
        if argv[1] == "venv":
            (Path(argv[-1]) / "bin").mkdir(parents=True, exist_ok=True)
            (Path(argv[-1]) / "bin" / "python").touch()
        if argv[1:3] == ["build", "--wheel"]:
            out = Path(argv[argv.index("--out-dir") + 1])
            out.mkdir(parents=True, exist_ok=True)
            (out / "pkg-1.0-py3-none-any.whl").write_bytes(b"")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(envs, "_run", fake_run)
    monkeypatch.setattr(envs, "uv_executable", lambda: "/usr/bin/uv")
    return seen


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hostile=_hostile)
def test_hostile_caller_variables_reach_no_uv_build_or_git(hostile, tmp_path, monkeypatch):
    """uv venv/pip install (a cell and a build env), uv build (a source) and git get only BUILD_ALLOWED
    of the caller's; the harness's own VIRTUAL_ENV and the commit's version variables win."""
    monkeypatch.setenv("SEAMS_ENVS_DIR", str(tmp_path / "envs"))
    for name, value in hostile.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uvcache"))
    seen = _capture(monkeypatch)
    cell = _cell()
    target = tmp_path / f"env-{len(os.listdir(tmp_path))}"
    envs._uv_install(cell, target)
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    (tree / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n')
    envs._build_wheel("jax", tree, tmp_path / f"dest-{len(os.listdir(tmp_path))}", lambda _m: None,
                      {"WHEEL_VERSION_SUFFIX": ".dev1", "JAX_GIT_HASH": "abc"})
    git_envs: list[dict[str, str]] = []

    def fake_git(argv, **kw):
        if argv[0] != "git":
            return _REAL_RUN(argv, **kw)
        git_envs.append(dict(kw["env"]))
        return _REAL_RUN(["true"], capture_output=True, text=True)

    monkeypatch.setattr(sources.subprocess, "run", fake_git)
    sources._git(tmp_path, "rev-parse", "HEAD")
    assert seen and git_envs
    for argv, env in seen + [([], e) for e in git_envs]:
        leaked = {k for k in env if k in hostile} - {"WHEEL_VERSION_SUFFIX", "JAX_GIT_HASH", "VIRTUAL_ENV"}
        assert not leaked, (argv, leaked)
        assert env.get("UV_CACHE_DIR") == str(tmp_path / "uvcache")  # where uv caches passes (and is recorded)
        assert set(env) - {"VIRTUAL_ENV", "WHEEL_VERSION_SUFFIX", "JAX_GIT_HASH"} <= set(build_passed(dict(os.environ)))
    for argv, env in seen:
        assert env["VIRTUAL_ENV"].startswith(str(tmp_path)), argv
        if "build" in argv:
            assert env["WHEEL_VERSION_SUFFIX"] == ".dev1" and env["JAX_GIT_HASH"] == "abc"
        else:
            assert "WHEEL_VERSION_SUFFIX" not in env and "JAX_GIT_HASH" not in env


def test_what_a_build_sees_is_recorded_with_credentials_masked(monkeypatch):
    """CellStart's build_env: every variable a build sees, a proxy's password masked; no dropped one."""
    monkeypatch.setenv("https_proxy", "http://user:s3cret@proxy:3128")
    monkeypatch.setenv("UV_CACHE_DIR", "/cache/uv")
    monkeypatch.setenv("UV_INDEX_URL", "https://u:tok@evil/simple")
    rec = build_env_record(dict(os.environ))
    assert rec["UV_CACHE_DIR"] == "/cache/uv" and "s3cret" not in rec["https_proxy"]
    assert "UV_INDEX_URL" not in rec


@pytest.mark.e2e
def test_a_real_uv_build_env_ignores_a_callers_uv_constraint_and_index(tmp_path, monkeypatch):
    """A real uv (warm cache): UV_CONSTRAINT naming a missing file and an unreachable UV_INDEX_URL used to
    fail (or redirect) the install of a build env's requirements; now they are not seen."""
    if not (Path.home() / ".cache" / "uv").is_dir():
        pytest.skip("no warm uv cache on this machine")
    monkeypatch.setenv("SEAMS_ENVS_DIR", str(tmp_path / "envs"))
    monkeypatch.setenv("UV_CONSTRAINT", str(tmp_path / "missing-constraints.txt"))
    monkeypatch.setenv("UV_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("UV_PYTHON", "/nonexistent/python")
    monkeypatch.setenv("PIP_CONSTRAINT", str(tmp_path / "missing-constraints.txt"))
    env = envs._build_env(["setuptools"], lambda _m: None)
    assert (env / "bin" / "python").exists()
