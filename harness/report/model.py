"""Merge judged cells into the report document (report.json): cells, cases x cells, counts."""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from typing import Any

from harness import __version__
from harness.judge.coverage import coverage_gaps
from harness.judge.outcomes import VERDICTS
from harness.judge.results import CellResults

REPORT_SCHEMA_VERSION = 1


def cell_summary(cell: CellResults) -> dict[str, Any]:
    """What the report says about a cell as a whole."""
    info = cell.run_info
    return {"cell": cell.cell, "device": cell.device, "pins": cell.pins, "install_line": cell.install_line,
            "env": cell.env, "status": cell.status, "reason": cell.reason, "verdict": cell.verdict,
            "expectation": cell.expectation, "versions": info.get("versions") or {},
            "devices": info.get("devices") or {}, "python": info.get("python", ""),
            "platform": info.get("platform", ""), "run_env": info.get("env") or {},
            "results_file": str(cell.path), "started_at": cell.started_at, "duration_s": cell.duration_s,
            "stale_expectations": [s.get("id") for s in cell.stale], "floating": cell.floating,
            "counts": dict(Counter(c.verdict for c in cell.cases.values()))}


def build_report(cells: list[CellResults], errors: list[str], expectations_source: str) -> dict[str, Any]:
    """The merged report: every case of every cell with raw outcome, verdict and observations."""
    cases: dict[str, dict[str, Any]] = {}
    counts: Counter = Counter()
    for cell in cells:
        if not cell.cases:
            counts[cell.verdict if cell.verdict != "complete" else "incomplete"] += 1
        for case in cell.cases.values():
            entry = cases.setdefault(case.nodeid, {"id": case.nodeid, "family": case.family, "results": {}})
            entry["results"][cell.cell] = {
                "raw": case.raw, "verdict": case.verdict, "message": case.message, "error_type": case.error_type,
                "duration": round(case.duration, 4), "signal": case.signal, "observations": case.observations,
                "expectation": case.expectation}
            counts[case.verdict] += 1
    ordered = {v: counts[v] for v in VERDICTS if counts.get(v)}
    report = {"schema_version": REPORT_SCHEMA_VERSION, "harness_version": __version__,
            "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "expectations": expectations_source, "counts": ordered, "errors": errors,
            "cells": [cell_summary(c) for c in cells],
            "cases": sorted(cases.values(), key=lambda c: c["id"])}
    report["coverage"] = coverage_gaps(report)  # cases that ran nowhere: an area nobody checks
    return report


def iter_results(report: dict[str, Any]):
    """(case id, cell name, result) for every judged result, plus case-less cells as (None, cell, summary)."""
    for case in report["cases"]:
        for cell, result in case["results"].items():
            yield case["id"], cell, result
    for cell in report["cells"]:
        if not any(cell["cell"] in case["results"] for case in report["cases"]):
            yield None, cell["cell"], {"verdict": cell["verdict"] if cell["verdict"] != "complete" else "incomplete",
                                       "raw": cell.get("status", ""), "message": cell.get("reason"),
                                       "expectation": cell.get("expectation")}
