"""Hostile tests: modules under tests/drills that attack the harness running them, each run through
the real runner (host interpreter as the env: tests/host_cell.py). Whatever they do, every finished
result is kept, the damage is named, and nothing they started outlives the cell."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from harness.cells.matrix import load_matrix
from harness.cells.startup_env import STARTUP_VARS
from harness.errors import UserError
from harness.judge.results import read_results
from harness.report.command import report_command
from harness.run.cellrun import run_cell
from tests.host_cell import CELL, host_env


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _run(tmp_path: Path, drill: str, *extra: str, **kw):
    out = tmp_path / "results" / "host-cpu.jsonl"
    run = run_cell(CELL, out, [f"tests/drills/{drill}", *extra], env_provider=host_env, **kw)
    return run, read_results(out)


def test_setsid_children_and_double_forked_daemons_are_killed_at_cell_end_and_reported(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    monkeypatch.setenv("SEAMS_DRILL_PIDS", str(pids))
    run, res = _run(tmp_path, "test_daemons.py")
    left = [int(p) for p in pids.read_text().split()]
    assert len(left) == 3  # setsid child, double-forked daemon, the same daemon with an empty environment
    deadline = time.monotonic() + 2
    while any(_alive(p) for p in left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in left if _alive(p)], "a process a test left outlived the cell"
    assert run.status == res.status == "complete"
    assert all(c.raw == "pass" for c in res.cases.values()) and len(res.cases) == 4
    assert "a test left 3 processes running" in res.reason, res.reason
    assert len(run.left_processes) == 3


def test_no_start_up_variable_of_the_callers_environment_reaches_the_cell_and_each_is_named(tmp_path, monkeypatch):
    junk = {name: "/nonexistent/seams-junk" for name in STARTUP_VARS}  # PYTHONHOME alone would stop Python
    junk.update(PYTEST_ADDOPTS="-k matches_nothing", PYTEST_PLUGINS="no_such_plugin_module", PYTHONOPTIMIZE="2",
                PYTHONWARNINGS="error", LD_PRELOAD="/nonexistent/libjunk.so")
    for name, value in junk.items():
        monkeypatch.setenv(name, value)
    run, res = _run(tmp_path, "test_tiny.py")
    assert run.status == res.status == "complete", res.reason
    assert sorted(c.raw for c in res.cases.values()) == ["pass"] * 3
    named = res.reason.split("not passed from the caller's environment: ")[1].split(", ")
    assert set(STARTUP_VARS) <= set(named)


def test_the_callers_environment_reaches_a_cell_only_through_the_allow_list_and_is_recorded(tmp_path, monkeypatch):
    """JAX_* and the like from the caller's shell never reach a cell: they are dropped and named in its reason;
    anything else not on the allow-list is dropped and recorded in CellStart; what passed is in RunInfo."""
    seen_file = tmp_path / "env.json"
    monkeypatch.setenv("SEAMS_DRILL_ENV_OUT", str(seen_file))
    for name, value in {"JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "tpu", "XLA_FLAGS": "--junk", "TORCH_LOGS": "+all",
                        "SOME_SHELL_THING": "x", "HTTPS_PROXY": "http://me:s3cret@proxy:3128"}.items():
        monkeypatch.setenv(name, value)
    run, res = _run(tmp_path, "test_env_seen.py")
    assert res.status == "complete"
    seen = json.loads(seen_file.read_text())
    for name in ("JAX_ENABLE_X64", "TORCH_LOGS", "SOME_SHELL_THING"):
        assert name not in seen, name
    assert seen.get("XLA_FLAGS") != "--junk"  # the project's conftest sets its own default, the caller's is gone
    assert seen.get("JAX_PLATFORMS") != "tpu" and seen["HTTPS_PROXY"] == "http://me:s3cret@proxy:3128"
    named = set(res.reason.split("not passed from the caller's environment: ")[1].split(", "))
    assert {"JAX_ENABLE_X64", "JAX_PLATFORMS", "XLA_FLAGS", "TORCH_LOGS"} <= named and "SOME_SHELL_THING" not in named
    lines = [json.loads(ln) for ln in (tmp_path / "results" / "host-cpu.jsonl").read_text().splitlines()]
    start = next(r for r in lines if r["$report_type"] == "CellStart")
    assert "SOME_SHELL_THING" in start["dropped_env"] and "JAX_ENABLE_X64" in start["dropped_env"]
    recorded = res.run_info["env"]
    assert {"PATH", "SEAMS_DRILL_ENV_OUT", "HTTPS_PROXY", "PJRT_DEVICE"} <= set(recorded)
    assert "s3cret" not in json.dumps(recorded)
    assert set(recorded) <= set(seen)  # what RunInfo shows is what the cell had


@pytest.mark.parametrize("name", sorted(STARTUP_VARS))
def test_a_matrix_may_not_set_a_start_up_variable_in_a_cells_env(tmp_path, name):
    m = tmp_path / "m.yaml"
    m.write_text(f"include:\n  - name: x-cpu\n    pins: {{jax: 0.6.0}}\n    env: {{{name}: '1'}}\n")
    with pytest.raises(UserError, match=f"m.yaml:4: .*{name} changes which code"):
        load_matrix(m)


def test_a_narrowed_run_says_how_many_cases_it_selected_never_a_plain_complete(tmp_path):
    run, res = _run(tmp_path, "test_tiny.py", "-k", "one or two")
    assert run.status == "complete"
    assert res.reason.startswith("2 of 3 cases selected by -k 'one or two'; tests/drills/test_tiny.py"), res.reason


FILE_ATTACKS = ["truncate", "delete", "replace", "edit", "half-record", "remove-folder"]
PROCESS_ATTACKS = ["stream-close", "exit-0", "close-fds"]


@pytest.mark.parametrize("attack", FILE_ATTACKS + ["stream-garbage"] + PROCESS_ATTACKS + ["cwd-environ", "flood"])
def test_a_test_attacking_the_harness_loses_no_finished_result_and_is_named(tmp_path, monkeypatch, attack):
    monkeypatch.setenv("SEAMS_DRILL_ATTACK", attack)
    run, res = _run(tmp_path, "test_hostile.py")
    raw = {k.split("::")[-1]: c.raw for k, c in res.cases.items()}
    assert raw["test_before"] == "pass" and raw["test_after"] == "pass", (attack, raw, res.reason)
    assert run.status == res.status, (run.status, res.status, res.reason)
    results = tmp_path / "results" / "host-cpu.jsonl"
    lines = results.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(ln.startswith(b"{") and ln.endswith(b"}") for ln in lines[:-1]), "whole records only"
    if attack in FILE_ATTACKS:
        assert res.status == "incomplete" and "it was restored from the harness's copy" in res.reason, res.reason
        assert raw["test_attack"] == "pass"
    elif attack == "stream-garbage":
        assert res.status == "incomplete" and "2 lines on the results stream were not records" in res.reason
    elif attack in PROCESS_ATTACKS:  # pytest could not go on: the attacking test is a crash, the rest ran again
        assert raw["test_attack"] == "crash", (raw, res.reason)
    elif attack == "cwd-environ":
        assert res.status == "complete" and set(raw.values()) == {"pass"}
    elif attack == "flood":
        assert raw["test_attack"] == "fail" and results.stat().st_size < 1_000_000, "captured output is bounded"
    rep = report_command([results], tmp_path / "rep", None)
    assert rep == (0 if attack == "cwd-environ" else 1)
