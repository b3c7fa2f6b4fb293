"""The results reader: crash-safe parsing, raw outcomes, and one-line errors naming file:line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.judge.results import read_many, read_results
from tests.results_fixtures import COMPUTE, SHARD, case, cell_file

REPO = Path(__file__).resolve().parent.parent


def test_complete_cell_has_raw_outcomes(tmp_path):
    r = read_results(cell_file(tmp_path, "jax060-cpu", "0.6.0", [case(SHARD, "fail", "linearized function ...")]))
    assert r.status == "complete" and r.cases[SHARD].raw == "fail"
    assert r.versions()["jax"] == "0.6.0" and r.cases[SHARD].family == "shard_map"


def test_file_without_closing_record_is_incomplete_and_names_the_running_test(tmp_path):
    p = cell_file(tmp_path, "c-cpu", "0.6.0", [case(SHARD, "pass")], end=False,
                  extra=[{"$report_type": "TestStart", "nodeid": "suites/x.py::test_running"}])
    r = read_results(p)
    assert r.status == "incomplete" and "CellEnd" in r.reason
    assert r.cases["suites/x.py::test_running"].raw == "incomplete"
    assert r.cases[SHARD].raw == "pass", "finished results survive a killed run"


def test_truncated_last_line_is_tolerated_as_incomplete(tmp_path):
    p = cell_file(tmp_path, "c-cpu", "0.6.0", [case(SHARD, "pass")], end=False)
    p.write_bytes(p.read_bytes() + b'{"$report_type": "TestSta')
    r = read_results(p)
    assert r.status == "incomplete" and "mid-line" in r.reason and SHARD in r.cases


@pytest.mark.parametrize("mutate, expected", [
    (lambda lines: lines[:2] + ["this is not json"] + lines[2:], ":3: not JSON"),
    (lambda lines: [lines[0].replace('"schema_version": 1', '"schema_version": 2')] + lines[1:], ":1: bad CellStart record"),
    (lambda lines: lines[1:], ":1: results must begin with a CellStart"),
    (lambda lines: lines[:1] + [json.dumps({"$report_type": "Bogus"})] + lines[1:], ":2: unknown record type 'Bogus'"),
    (lambda lines: lines[:1] + [json.dumps({"$report_type": "TestCrash", "nodeid": "x"})] + lines[1:], ":2: bad TestCrash record"),
    (lambda lines: lines + lines[:1], "a second CellStart"),
])
def test_malformed_file_is_one_line_naming_file_and_line(tmp_path, mutate, expected):
    p = cell_file(tmp_path, "c-cpu", "0.6.0", [case(SHARD, "pass")])
    p.write_text("\n".join(mutate(p.read_text().splitlines())) + "\n")
    with pytest.raises(UserError) as exc:
        read_results(p)
    assert expected in str(exc.value) and str(exc.value).startswith(str(p)) and "\n" not in str(exc.value)


def test_other_files_still_merge_when_one_is_bad(tmp_path):
    good = cell_file(tmp_path, "good-cpu", "0.6.0", [case(SHARD, "pass")])
    bad = tmp_path / "bad.jsonl"
    bad.write_text("garbage\nmore garbage\n")
    cells, errors = read_many([good, bad])
    assert [c.cell for c in cells] == ["good-cpu"] and len(errors) == 1 and "bad.jsonl:1" in errors[0]


def test_crash_timeout_env_error_and_skipped_records(tmp_path):
    p = cell_file(tmp_path, "c-cpu", "0.6.0", [], extra=[
        {"$report_type": "TestStart", "nodeid": "suites/a.py::test_abort"},
        {"$report_type": "TestCrash", "nodeid": "suites/a.py::test_abort", "signal": "SIGABRT", "returncode": -6},
        {"$report_type": "TestTimeout", "nodeid": "suites/a.py::test_hang", "timeout_s": 5}])
    r = read_results(p)
    assert r.cases["suites/a.py::test_abort"].raw == "crash" and r.cases["suites/a.py::test_abort"].signal == "SIGABRT"
    assert r.cases["suites/a.py::test_hang"].raw == "timeout"
    env = tmp_path / "env.jsonl"
    env.write_text(json.dumps({"$report_type": "CellStart", "schema_version": 1, "cell": "e-cpu", "device": "cpu",
                               "pins": {"jax": "0.5.4"}}) + "\n" +
                   json.dumps({"$report_type": "EnvError", "cell": "e-cpu", "reason": "no version of jax==0.5.4"}) + "\n" +
                   json.dumps({"$report_type": "CellEnd", "cell": "e-cpu", "complete": True, "status": "env-error"}) + "\n")
    e = read_results(env)
    assert e.status == "env-error" and "0.5.4" in e.reason and not e.cases


def test_zero_tests_collected_is_incomplete_not_green(tmp_path):
    r = read_results(cell_file(tmp_path, "c-cpu", "0.6.0", []))
    assert r.status == "incomplete" and "no tests collected" in r.reason


def _collected(nodeids: list[str]) -> dict:
    return {"$report_type": "Collected", "count": len(nodeids), "nodeids": nodeids}


def test_a_closed_file_with_fewer_finished_cases_than_collected_is_incomplete_naming_the_missing(tmp_path):
    from tests.results_fixtures import PVARY

    p = cell_file(tmp_path, "c-cpu", "0.6.0", [case(SHARD, "pass")])
    lines = p.read_text().splitlines()
    lines[2] = json.dumps(_collected([SHARD, PVARY, "suites/x.py::test_z"]))  # what pytest said it would run
    p.write_text("\n".join(lines) + "\n")
    r = read_results(p)
    assert r.status == "incomplete" and r.reason.startswith("2 of 3 collected cases did not finish")
    assert r.cases[SHARD].raw == "pass" and r.cases[PVARY].raw == "incomplete"
    assert r.cases["suites/x.py::test_z"].raw == "incomplete"


def test_a_count_without_ids_still_makes_missing_cases_incomplete(tmp_path):
    p = cell_file(tmp_path, "c-cpu", "0.6.0", [case(SHARD, "pass")])
    p.write_text(p.read_text().replace('"count": 1', '"count": 45'))
    r = read_results(p)
    assert r.status == "incomplete" and "44 of 45" in r.reason
    assert r.cases["(whole cell)"].raw == "incomplete", "the cell's state is a case every output counts"


def test_collection_errors_phase_timeouts_and_crashes_outside_tests_are_cases(tmp_path):
    p = cell_file(tmp_path, "c-cpu", "0.6.0", [case(SHARD, "pass")], extra=[
        {"$report_type": "CollectReport", "nodeid": "suites/broken.py", "outcome": "failed",
         "longrepr": "ImportError while importing test module 'suites/broken.py'.\nTraceback:\nE   ModuleNotFoundError: No module named 'jax'"},
        {"$report_type": "PhaseTimeout", "phase": "exit", "timeout_s": 60},
        {"$report_type": "TestCrash", "nodeid": "", "phase": "collection", "signal": "SIGSEGV", "returncode": -11}])
    r = read_results(p)
    err = r.cases["suites/broken.py"]
    assert err.raw == "error" and err.message.splitlines()[0] == "ModuleNotFoundError: No module named 'jax'"
    assert r.cases["(exit)"].raw == "timeout" and "60 s" in r.cases["(exit)"].message
    assert (r.cases["(collection)"].raw, r.cases["(collection)"].signal) == ("crash", "SIGSEGV")
    assert r.cases[SHARD].raw == "pass", "every finished result is kept"


def _report(tmp_path, name, *files):
    none = tmp_path / "none.yaml"
    none.write_text("issues: []\n")
    proc = subprocess.run([sys.executable, "-m", "harness", "report", *map(str, files), "--out", str(tmp_path / name),
                           "--expectations", str(none)], cwd=REPO, capture_output=True, text=True)
    return proc


def test_incomplete_is_exit_1_in_report_and_diff_and_news(tmp_path):
    from harness.nightly.news import news_lines

    good_dir, cut_dir = tmp_path / "good", tmp_path / "cut"
    good_dir.mkdir(), cut_dir.mkdir()
    good = cell_file(good_dir, "c-cpu", "0.6.0", [case(SHARD, "pass"), case(COMPUTE, "pass")])
    cut = cell_file(cut_dir, "c-cpu", "0.6.0", [case(SHARD, "pass")])
    cut.write_text(cut.read_text().replace('"count": 1', '"count": 2'))
    none = tmp_path / "none.yaml"
    none.write_text("issues: []\n")
    assert news_lines([good], none) == []
    assert news_lines([cut], none) and "incomplete" in news_lines([cut], none)[0]
    assert _report(tmp_path, "a", good).returncode == 0
    rep = _report(tmp_path, "b", cut)
    assert rep.returncode == 1, rep.stderr
    diff = subprocess.run([sys.executable, "-m", "harness", "diff", str(tmp_path / "a" / "report.json"),
                           str(tmp_path / "b" / "report.json")], cwd=REPO, capture_output=True, text=True)
    assert diff.returncode == 1 and "incomplete" in diff.stdout


def test_no_results_files_at_all_is_news():
    from harness.nightly.news import news_lines

    assert news_lines([]) == ["no cell ran (zero tests is never a pass)"]


@pytest.mark.parametrize("selection, whole", [
    ({"keyword": "", "markexpr": "", "args": ["suites"], "resumed": False}, True),
    ({"args": ["suites/"]}, True),
    ({}, True),
    ({"keyword": "ok"}, False),
    ({"markexpr": "e2e"}, False),
    ({"deselected": 3}, False),
    ({"resumed": True}, False),
    ({"args": ["suites/shard_map"]}, False),
    ({"args": ["suites", "suites/x.py::test_a"]}, False),
])
def test_one_reading_of_a_selection_for_the_runner_and_the_judge(selection, whole):
    """The runner's 'N of M cases selected' and the judge's stale-known-issue check ask the same
    question of the plugin's `selection` record; each way of narrowing a run is not the whole suite."""
    from harness.incell.resultsfile import whole_suite
    from harness.judge.apply import _full_run
    from harness.judge.results import CellResults
    from harness.run.cellrun import _narrowed, _Watch

    assert whole_suite(selection) is whole
    assert (_narrowed(_Watch(collected=["a"], selection=selection)) == "") is whole
    cell = CellResults(path=Path("x.jsonl"), cell="c-cpu", device="cpu", pins={}, collected_ids=["a"], selection=selection)
    assert _full_run(cell) is whole
