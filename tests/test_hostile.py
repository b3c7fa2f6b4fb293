"""Hostile tests: modules under tests/drills that attack the harness running them, each run through
the real runner (host interpreter as the env: tests/host_cell.py). Whatever they do, every finished
result is kept, the damage is named, and nothing they started outlives the cell."""

from __future__ import annotations

import os
import time
from pathlib import Path

from harness.judge.results import read_results
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
    assert len(left) == 2
    deadline = time.monotonic() + 2
    while any(_alive(p) for p in left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in left if _alive(p)], "a process a test left outlived the cell"
    assert run.status == res.status == "complete"
    assert all(c.raw == "pass" for c in res.cases.values()) and len(res.cases) == 3
    assert "a test left 2 processes running" in res.reason, res.reason
    assert len(run.left_processes) == 2
