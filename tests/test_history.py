"""`harness history`: timelines across past reports (first failing, last passing, flips) and its outputs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.report.history import build_history, changes, render_history_markdown

REPO = Path(__file__).resolve().parent.parent
A, B, EVIL = "suites/a.py::test_a", "suites/b.py::test_b", "suites/x.py::test_x[</script><b>]"


def _night(day: int, results: dict[str, dict[str, str]]) -> dict:
    verdict = {"pass": "ok", "fail": "regression", "crash": "crash", "skip": "skipped"}
    cells = sorted({c for r in results.values() for c in r})
    return {"schema_version": 1, "generated_at": f"2026-11-{day:02d}T03:00:00+00:00", "counts": {}, "errors": [],
            "cells": [{"cell": c, "device": "cpu", "status": "complete", "reason": "", "verdict": "complete",
                       "pins": {"jax": "0.6.0"}, "install_line": "pip install jax==0.6.0", "versions": {}, "devices": {},
                       "python": "3.11", "platform": "linux", "run_env": {}, "counts": {}, "stale_expectations": [],
                       "expectation": None} for c in cells],
            "cases": [{"id": case, "family": "x", "results": {c: {"raw": raw, "verdict": verdict[raw], "message": None,
                                                                    "observations": {}, "expectation": None}
                                                                for c, raw in r.items()}}
                      for case, r in results.items()]}


NIGHTS = [_night(1, {A: {"c-cpu": "pass"}, B: {"c-cpu": "pass"}}),
          _night(2, {A: {"c-cpu": "fail"}, B: {"c-cpu": "fail"}}),
          _night(3, {A: {"c-cpu": "fail"}, B: {"c-cpu": "pass"}}),
          _night(4, {A: {"c-cpu": "crash"}, B: {"c-cpu": "fail"}, EVIL: {"c-cpu": "skip"}})]


def test_timeline_facts_per_case_and_cell():
    h = build_history(list(reversed(NIGHTS)))  # any order in, ordered by generated_at
    a, b = h["timelines"][f"{A}\tc-cpu"], h["timelines"][f"{B}\tc-cpu"]
    assert [n["verdict"] for n in a["nights"]] == ["ok", "regression", "regression", "crash"]
    assert a["first_seen_failing"].startswith("2026-11-02") and a["failing_since"].startswith("2026-11-02")
    assert a["last_seen_passing"].startswith("2026-11-01") and a["flips"] == 1 and not a["flaky"]
    assert b["flips"] == 3 and b["flaky"] and b["failing_since"].startswith("2026-11-04")
    assert h["timelines"][f"{EVIL}\tc-cpu"]["nights"][:3] == [None, None, None]


def test_changes_over_the_last_k_nights_only():
    h = build_history(NIGHTS)
    last2 = changes(h, 2)
    assert {(c["case"], c["old"], c["new"]) for c in last2} == {
        (A, "regression", "crash"), (B, "ok", "regression"), (EVIL, "(absent)", "skipped")}
    assert len(changes(h, 10)) == len(last2) + 3  # nights 2 and 3 add A and B, then B again
    md = render_history_markdown(h, 2)
    assert "## Changed over the last 2 nights" in md and "flips" in md
    assert "</script>" not in md, "case ids are escaped in Markdown"


def _cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "harness", "history", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True)


def test_cli_writes_history_and_a_report_page_with_timelines(tmp_path):
    paths = []
    for i, n in enumerate(NIGHTS):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps(n))
        paths.append(p)
    proc = _cli(*paths, "--out", tmp_path / "h", "--last", "3")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "h" / "history.json").read_text())["nights"][0].startswith("2026-11-01")
    page = (tmp_path / "h" / "report.html").read_text()
    data = re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S).group(1)
    assert "</script>" not in data and json.loads(data)["history"]["lines"][f"{A}\tc-cpu"][-1] == "crash"
    assert "function histBlock" in page
    node = shutil.which("node")
    if node:  # the page's script at least parses
        script = page.rsplit("<script>", 1)[1].split("</script>")[0]
        (tmp_path / "page.js").write_text(script)
        assert subprocess.run([node, "--check", str(tmp_path / "page.js")], capture_output=True).returncode == 0


@pytest.mark.parametrize("make, message", [
    (lambda d: [d / "missing.json"], "cannot read report"),
    (lambda d: [d / "r.json", d / "r.json"], "same generated_at"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, make, message):
    (tmp_path / "r.json").write_text(json.dumps(NIGHTS[0]))
    proc = _cli(*make(tmp_path), "--out", tmp_path / "h")
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
