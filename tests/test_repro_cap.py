"""The repro cap (MAX_REPROS files a report) keeps news: a default run's op cases alone are thousands
of known bugs, and a cap taken in report order left the regressions of later cases without a repro."""

from __future__ import annotations

from harness.judge.outcomes import VERDICTS
from harness.report.repro import repro_files, repro_wanted


def _report(verdicts: list[str]) -> dict:
    cases = [{"id": f"suites/x/test_x.py::test_x[{i}]", "results": {"c-cpu": {"verdict": v, "raw": "fail"}}}
             for i, v in enumerate(verdicts)]
    return {"cases": cases, "cells": [{"cell": "c-cpu", "verdict": "complete"}]}


def test_news_come_first_under_the_cap_and_report_order_stays_within_each_group():
    verdicts = ["known-bug"] * 5 + ["regression", "ok", "fixed", "skipped", "known-bug", "crash"]
    report = _report(verdicts)
    files = repro_files(report, limit=4)
    assert [r["verdict"] for _c, _cell, r, _n in files] == ["regression", "fixed", "crash", "known-bug"]
    assert [c for c, *_ in files][-1].endswith("[0]")  # the first known bug in report order
    assert repro_wanted(report) == 9  # all but ok and skipped


def test_without_the_cap_every_result_but_ok_and_skipped_has_a_file():
    report = _report(["known-bug", "ok", "regression", "skipped"])
    assert [c.rsplit("[", 1)[1] for c, *_ in repro_files(report, limit=500)] == ["2]", "0]"]


def test_every_verdict_that_is_news_comes_before_every_known_bug():
    """Over the whole verdict vocabulary, not a hand list: news placed after the known bugs in report
    order still fill the cap first."""
    news = [v for v in VERDICTS if v not in ("known-bug", "ok", "skipped")]
    report = _report(["known-bug"] * 3 + news)
    files = repro_files(report, limit=len(news))
    assert [r["verdict"] for _c, _cell, r, _n in files] == news
    assert repro_wanted(report) == 3 + len(news)


def test_no_cap_gives_every_failing_result_a_file():
    report = _report(["known-bug"] * 7 + ["ok", "regression"])
    assert len(repro_files(report, limit=None)) == repro_wanted(report) == 8


def test_report_reduce_writes_a_repro_for_every_failing_result_past_the_cap(tmp_path, monkeypatch):
    """`report --reduce` must reach every failing result (issue 32: a reduced script for each), so the
    cap that keeps a plain report small does not apply; without --reduce it does."""
    import harness.reduce.batch as batch
    from harness.cli import main
    from harness.report.repro import MAX_REPROS
    from tests.results_fixtures import case, cell_file, known_issues

    n = MAX_REPROS + 3
    results = cell_file(tmp_path, "c-cpu", "0.6.0",
                        [case(f"suites/x/test_x.py::test_x[{i}]", "fail", "boom") for i in range(n)])
    issues = known_issues(tmp_path, "")
    seen: list[int] = []
    monkeypatch.setattr(batch, "reduce_report", lambda out, *a, **k: seen.append(len(list((out / "repro").glob("*.md")))) or [])
    monkeypatch.setattr(batch, "summary", lambda outcomes: "reduced nothing (test)")
    main(["report", str(results), "--out", str(tmp_path / "plain"), "--expectations", str(issues)])
    assert len(list((tmp_path / "plain" / "repro").glob("*.md"))) == MAX_REPROS
    main(["report", str(results), "--out", str(tmp_path / "all"), "--expectations", str(issues), "--reduce"])
    assert len(list((tmp_path / "all" / "repro").glob("*.md"))) == n and seen == [n]


def test_writing_thousands_of_repros_says_how_far_it_is(tmp_path, monkeypatch):
    """report --reduce writes every failing result's files (a default run: about 9,000, minutes): a progress
    line comes every PROGRESS_S seconds, naming how many of how many are written."""
    import harness.report.repro as repro_mod
    from harness.judge.results import read_many
    from harness.report.model import build_report
    from tests.results_fixtures import case, cell_file, known_issues

    cells, _errors = read_many([cell_file(tmp_path, "jax060-cpu", "0.6.0", [
        case(f"suites/compute_on/test_eager_vs_aot.py::test_eager_vs_aot[{i}]", "fail", "boom") for i in range(3)])])
    known_issues(tmp_path, "")
    report = build_report(cells, [], "none")
    lines: list[str] = []
    monkeypatch.setattr(repro_mod, "PROGRESS_S", 0.0)
    assert repro_mod.write_repros(report, tmp_path / "repro", limit=None, say=lines.append) == 3
    assert [ln.split(" (")[0] for ln in lines] == [f"repro: {i} of 3 written" for i in range(3)]
    assert all(ln.endswith(" s)") for ln in lines)
