"""Every phase has a deadline and every way a cell can fall short is news (real jax cell, real hangs).

Collection hangs, interpreter-exit hangs and crashes, modules that fail to import, selections that
match nothing and runs that stop early: each is recorded, kept apart from the results that did
finish, and makes `run` (with or without --no-report) and `report` exit 1.
"""

from __future__ import annotations

import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.run.cellrun import run_cell
from harness.cells.matrix import catalogue
from harness.judge.results import read_results

REPO = Path(__file__).resolve().parent.parent
CELL = "jax060-cpu"
e2e = pytest.mark.e2e


def _run(tmp_path: Path, drill: str, *extra: str, **kw) -> tuple[object, object, float]:
    out = tmp_path / "r.jsonl"
    t = time.monotonic()
    run = run_cell(catalogue().cell(CELL), out, [f"tests/drills/{drill}", *extra], **kw)
    return run, read_results(out), time.monotonic() - t


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


@e2e
def test_a_hang_while_importing_the_suites_is_killed_at_its_deadline_and_recorded(tmp_path):
    run, res, took = _run(tmp_path, "test_hang_at_import.py", collect_timeout_s=3)
    assert took < 30, "the import hang was killed at its deadline, not after the module's 600 s sleep"
    assert res.status == run.status == "incomplete" and "collecting" in res.reason
    assert res.cases["(collection)"].raw == "timeout" and "3 s" in res.cases["(collection)"].message


@e2e
def test_a_hang_at_interpreter_exit_is_a_timeout_that_keeps_every_result(tmp_path):
    run, res, _ = _run(tmp_path, "test_hang_at_exit.py", exit_timeout_s=2)
    assert res.cases["tests/drills/test_hang_at_exit.py::test_passes_then_exit_hangs"].raw == "pass"
    assert res.cases["(exit)"].raw == "timeout" and "interpreter exit" in res.cases["(exit)"].message
    assert run.outcomes.get("timeout") == 1


@e2e
def test_under_xdist_a_worker_hanging_at_exit_is_a_timeout_not_a_silent_kill(tmp_path):
    # xdist kills a worker that has not exited 10 s after its last test, and says nothing: the
    # controller reads the worker's exit status and records it (the harness's own 60 s is later).
    run, res, _ = _run(tmp_path, "test_hang_at_exit.py", xdist=2)
    assert res.cases["tests/drills/test_hang_at_exit.py::test_passes_then_exit_hangs"].raw == "pass"
    assert res.cases["(exit)"].raw == "timeout" and "xdist worker gw" in res.cases["(exit)"].message


@e2e
@pytest.mark.parametrize("xdist", [0, 2], ids=["serial", "xdist2"])
def test_a_crash_at_interpreter_exit_is_recorded_not_ignored(tmp_path, xdist):
    _, res, _ = _run(tmp_path, "test_crash_at_exit.py", xdist=xdist)
    assert res.cases["tests/drills/test_crash_at_exit.py::test_passes_then_exit_crashes"].raw == "pass"
    assert (res.cases["(exit)"].raw, res.cases["(exit)"].signal) == ("crash", "SIGSEGV")


@e2e
def test_a_run_that_stops_early_is_incomplete_naming_how_many_cases_are_missing(tmp_path):
    run, res, _ = _run(tmp_path, "test_stops_early.py", "-x")
    assert res.status == run.status == "incomplete"
    assert res.reason.startswith("1 of 3 collected cases did not finish")
    assert res.cases["tests/drills/test_stops_early.py::test_third_never_runs"].raw == "incomplete"


@e2e
def test_a_module_that_fails_to_import_is_news_everywhere_and_the_other_modules_still_run(tmp_path):
    args = ["run", "--cell", CELL, "--out", str(tmp_path), "--", "tests/drills/test_broken_import.py",
            "tests/drills/test_slow.py::test_slow[0]"]
    no_report = _cli(*args[:4], str(tmp_path / "a"), "--no-report", *args[5:])
    assert no_report.returncode == 1, no_report.stderr
    assert "news: jax060-cpu: regression: tests/drills/test_broken_import.py" in no_report.stdout
    with_report = _cli(*args)
    assert with_report.returncode == 1, with_report.stderr
    res = read_results(tmp_path / "results" / f"{CELL}.jsonl")
    assert res.status == "complete" and res.cases["tests/drills/test_slow.py::test_slow[0]"].raw == "pass"
    case = res.cases["tests/drills/test_broken_import.py"]
    assert case.raw == "error" and "No module named 'jax_that_does_not_exist'" in case.message
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    failures = [f.get("message") for f in junit.iter("failure")]
    assert any("jax_that_does_not_exist" in m for m in failures), failures
    again = _cli("report", str(tmp_path / "results" / f"{CELL}.jsonl"), "--out", str(tmp_path / "rep"))
    assert again.returncode == 1


@e2e
def test_a_selection_that_matches_no_test_is_news_not_green(tmp_path):
    proc = _cli("run", "--cell", CELL, "--out", str(tmp_path), "--no-report", "--", "tests/drills/test_slow.py::test_typo")
    assert proc.returncode == 1, proc.stderr
    res = read_results(tmp_path / "results" / f"{CELL}.jsonl")
    assert res.status == "incomplete"


@pytest.mark.parametrize("value", ["0", "-5", "ten", "1.5"])
def test_a_bad_phase_deadline_is_one_line_of_bad_input(monkeypatch, value):
    from harness.run.cellrun import _phase_timeouts
    from harness.errors import UserError

    monkeypatch.setenv("SEAMS_EXIT_TIMEOUT_S", value)
    with pytest.raises(UserError, match="SEAMS_EXIT_TIMEOUT_S=.*positive whole number"):
        _phase_timeouts(None, None)
    monkeypatch.setenv("SEAMS_EXIT_TIMEOUT_S", "7")
    assert _phase_timeouts(None, None)[1] == 7 and _phase_timeouts(3, None)[0] == 3
