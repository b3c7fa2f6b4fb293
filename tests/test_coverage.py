"""Coverage gaps: a case skipped in every cell of a run is listed with its reasons, in every output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.incell import compat
from harness.judge import coverage
from harness.report.command import report_command
from tests.results_fixtures import COMPUTE, PVARY, SHARD, case, cell_file, known_issues

STREAM = "suites/compute_on/test_eager_vs_aot.py::test_stream_annotation_reaches_the_lowering"
SERIAL = "suites/compute_on/test_upstream_parity.py::test_serialized_host_function_keeps_the_placement"
NO_FLATBUFFERS = "not in cell: flatbuffers is not installed in this cell"


def _run(tmp_path: Path) -> tuple[dict, str, str]:
    files = [cell_file(tmp_path, "jax053-cpu", "0.5.3", [
                 case(SHARD, "pass"), case(PVARY, "skip", "api absent: jax.lax.pvary"),
                 case(STREAM, "skip", "needs gpu to run on a stream (lowering checked on cpu)"),
                 case(SERIAL, "skip", NO_FLATBUFFERS), case(COMPUTE, "skip", "not in cell: jax is not installed")]),
             cell_file(tmp_path, "jax060-cpu", "0.6.0", [
                 case(SHARD, "pass"), case(PVARY, "pass"),
                 case(STREAM, "skip", "needs gpu to run on a stream (lowering checked on cpu)"),
                 case(SERIAL, "pass"), case(COMPUTE, "pass")])]
    out = tmp_path / "out"
    report_command(files, out, known_issues(tmp_path, "  []\n"))
    return (json.loads((out / "report.json").read_text()), (out / "report.md").read_text(),
            (out / "report.html").read_text())


def test_a_case_skipped_in_every_cell_is_listed_with_its_reason_and_cells(tmp_path, capsys):
    report, md, html = _run(tmp_path)
    gaps = report["coverage"]
    assert [g["id"] for g in gaps["never_ran"]] == [STREAM]
    assert gaps["never_ran"][0]["reasons"] == [
        {"reason": "needs gpu to run on a stream (lowering checked on cpu)", "cells": ["jax053-cpu", "jax060-cpu"]}]
    headline = "1 case never ran anywhere in this matrix: test_eager_vs_aot.py::test_stream_annotation_reaches_the_lowering"
    assert headline in md and "jax053-cpu, jax060-cpu" in md
    assert headline in html
    assert headline in capsys.readouterr().out, "the run's summary (stdout) says it too"


def test_a_skip_for_a_package_the_matrix_could_install_is_listed_but_not_a_pinned_axis(tmp_path):
    report, md, html = _run(tmp_path)
    fixable = report["coverage"]["fixable"]
    # flatbuffers is no cell's pin: installing it is the fix. jax is what cells differ by: by design.
    assert fixable == [{"reason": NO_FLATBUFFERS, "cases": [SERIAL], "cells": ["jax053-cpu"]}]
    assert "Skips the matrix could fix" in md and "flatbuffers" in md
    assert "flatbuffers" in html


def test_a_case_that_ran_in_one_cell_is_no_gap_and_a_clean_run_says_nothing():
    report = {"cells": [], "cases": [
        {"id": PVARY, "results": {"a": {"raw": "skip", "message": "api absent"}, "b": {"raw": "fail"}}},
        {"id": SHARD, "results": {"a": {"raw": "incomplete"}}},  # already news as incomplete, no skip
        {"id": "(whole cell)", "results": {"a": {"raw": "skip"}}},
        {"id": COMPUTE, "results": {}}]}
    gaps = coverage.coverage_gaps(report, ranges={})
    assert gaps == {"never_ran": [], "fixable": [], "uncalled_apis": []}
    assert coverage.gap_headline(gaps) is None


def test_skipped_in_some_cells_and_unfinished_in_the_rest_never_ran():
    report = {"cells": [], "cases": [
        {"id": PVARY, "results": {"a": {"raw": "skip", "message": "needs tpu"}, "b": {"raw": "incomplete", "message": None}}}]}
    gaps = coverage.coverage_gaps(report)
    assert gaps["never_ran"][0]["reasons"] == [{"reason": "incomplete", "cells": ["b"]},
                                               {"reason": "needs tpu", "cells": ["a"]}]
    assert coverage.gap_headline(gaps).startswith("1 case never ran anywhere")


def test_the_judge_reads_the_same_words_require_writes():
    assert coverage.NOT_IN_CELL == compat.NOT_IN_CELL


def test_an_api_that_ships_in_a_cell_but_no_case_there_probed_is_listed():
    from packaging.specifiers import SpecifierSet

    from harness.judge.apis import ApiRange

    def rng(api, shipped):
        return ApiRange(api=api, package="jax", shipped=SpecifierSet(shipped), evidence="", link="none filed")

    ranges = {"jax.used": rng("jax.used", ">=0.5"), "jax.unused": rng("jax.unused", ">=0.5"),
              "jax.future": rng("jax.future", ">=9.0")}
    report = {"cells": [{"cell": "a", "versions": {"jax": "0.6.0"}}, {"cell": "b", "versions": {"jax": "0.4.1"}}],
              "cases": [{"id": PVARY, "results": {
                  "a": {"raw": "pass", "observations": {"apis": {"jax.used": True}}},
                  "b": {"raw": "pass", "observations": {"apis": {"jax.unused": False}}}}}]}
    # jax.unused was probed only in b, where it does not ship: in a, where it ships, nothing called it.
    assert coverage.uncalled_apis(report, ranges) == [
        {"api": "jax.unused", "package": "jax", "shipped": ">=0.5", "cells": ["a"]}]


def _apis_case(nodeid: str, apis: dict[str, bool]) -> list[dict]:
    """A passing case whose observations record the APIs it probed (as compat's found() does)."""
    recs = case(nodeid, "pass")
    recs[1]["user_properties"][0][1]["observations"]["apis"] = apis
    return recs


def _torchax_cell(tmp_path: Path, probed: dict[str, bool]) -> Path:
    path = cell_file(tmp_path, "torchax0013-cpu", "0.7.2", [_apis_case("suites/torchax/test_entry_points.py::test_x", probed)])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for rec in lines:  # a torchax cell: the distribution whose version the torchax ranges are judged on
        if rec["$report_type"] == "RunInfo":
            rec["versions"].update(torchax="0.0.13", torch="2.9.0")
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def test_every_recorded_torchax_range_that_no_case_called_is_listed_in_every_output(tmp_path):
    """With the real ranges of matrices/apis/: every torchax entry point called but j2t_autograd."""
    from harness.judge.apis import default_api_ranges

    torchax_apis = sorted(a for a, r in default_api_ranges().items() if r.package == "torchax")
    assert "torchax.interop.call_torch" in torchax_apis and "torchax.interop.j2t_autograd" in torchax_apis
    probed = {a: True for a in torchax_apis if a != "torchax.interop.j2t_autograd"}
    out = tmp_path / "out"
    report_command([_torchax_cell(tmp_path, probed)], out, known_issues(tmp_path, "  []\n"))
    report = json.loads((out / "report.json").read_text())
    uncalled = [g for g in report["coverage"]["uncalled_apis"] if g["package"] == "torchax"]
    assert uncalled == [{"api": "torchax.interop.j2t_autograd", "package": "torchax", "shipped": ">=0.0.5",
                         "cells": ["torchax0013-cpu"]}]
    assert "torchax.interop.j2t_autograd" in (out / "report.md").read_text()
    assert "torchax.interop.j2t_autograd" in (out / "report.html").read_text()


def test_a_run_that_calls_every_torchax_entry_point_lists_none_uncalled(tmp_path):
    from harness.judge.apis import default_api_ranges

    probed = {a: True for a, r in default_api_ranges().items() if r.package == "torchax"}
    report = {"cells": [{"cell": "t", "versions": {"torchax": "0.0.13"}}],
              "cases": [{"id": "suites/torchax/test_entry_points.py::test_x", "results": {"t": {"raw": "pass", "observations": {"apis": probed}}}}]}
    assert [g for g in coverage.uncalled_apis(report, default_api_ranges()) if g["package"] == "torchax"] == []
    # An API recorded absent where it does not ship (j2t_autograd on 0.0.4) is no gap there either.
    report["cells"][0]["versions"]["torchax"] = "0.0.4"
    probed["torchax.interop.j2t_autograd"] = False
    assert [g["api"] for g in coverage.uncalled_apis(report, default_api_ranges()) if g["package"] == "torchax"] == []


@pytest.mark.e2e
def test_a_real_torchax_run_calls_every_torchax_entry_point_with_a_range(tmp_path):
    """The torchax family in a real torchax cell probes every API matrices/apis/torchax.yaml
    records (call_torch and j2t_autograd included): the report lists none of them uncalled."""
    from harness.cells.matrix import catalogue
    from harness.run.cellrun import run_cell

    results = tmp_path / "torchax0013-cpu.jsonl"
    run_cell(catalogue().cell("torchax0013-cpu"), results,
             ["suites/torchax/test_interop.py", "suites/torchax/test_entry_points.py",
              "suites/torchax_ops/test_dlpack.py"], timeout_s=300)  # the last probes torchax's DLPack option
    out = tmp_path / "out"
    report_command([results], out)
    report = json.loads((out / "report.json").read_text())
    probed = {a for case in report["cases"] for r in case["results"].values()
              for a in ((r.get("observations") or {}).get("apis") or {})}
    assert {"torchax.interop.call_torch", "torchax.interop.j2t_autograd"} <= probed
    assert [g["api"] for g in report["coverage"]["uncalled_apis"] if g["package"] == "torchax"] == []
