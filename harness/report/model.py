"""Merge judged cells into the report document (report.json): cells, cases x cells, counts.

Cells are ordered by their versions, not their names (jax0100 sorts after jax0438 as a string):
first the main package a cell is about (jax, then torch_xla, then torchax cells), then that
package's release (PEP 440), then the other packages' releases, then the device. Every output
(json, html, md, junit) follows report["cells"], so `run` and `harness report` agree.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness import __version__
from harness.judge.coverage import coverage_gaps
from harness.judge.outcomes import VERDICTS
from harness.judge.results import CellResults
from harness.judge.since import cell_identity

REPORT_SCHEMA_VERSION = 1
# The package a cell is about, by precedence (as the "Since which release" lines read it).
MAIN_PACKAGES = ("torch-xla", "torchax", "jax")
_GROUP_RANK = {"jax": 0, "torch-xla": 1, "torchax": 2}  # jax-only cells first, as in matrices/default.yaml
# Secondary keys: the other packages that move between cells, in a fixed order.
_PACKAGE_ORDER = ("jax", "jaxlib", "torch", "torch-xla", "torchax", "flax", "libtpu")
_DEVICE_ORDER = {"cpu": 0, "gpu": 1, "tpu": 2}


def cell_versions(cell: dict[str, Any]) -> dict[str, str]:
    """A report cell's versions (installed, else pinned), names canonical (torch_xla -> torch-xla)."""
    raw = cell.get("versions") or cell.get("pins") or {}
    return {canonicalize_name(str(k)): str(v) for k, v in raw.items()}


def _version_key(text: str | None) -> tuple:
    """PEP 440 order; a package the cell lacks first, an unparsable version last (by its text)."""
    if text is None:
        return (0,)
    try:
        return (1, Version(text))
    except InvalidVersion:
        return (2, text)


def cell_sort_key(cell: dict[str, Any]) -> tuple:
    """The key that orders report cells: main package, its release, the others' releases, device."""
    versions = cell_versions(cell)
    main = next((p for p in MAIN_PACKAGES if p in versions), None)
    others = [p for p in _PACKAGE_ORDER if p != main] + sorted(set(versions) - set(_PACKAGE_ORDER))
    return (_GROUP_RANK.get(main, 3), _version_key(versions.get(main)) if main else (0,),
            tuple(_version_key(versions.get(p)) for p in others),
            _DEVICE_ORDER.get(cell.get("device", ""), 3), cell.get("device", ""), cell.get("cell", ""))


def differing_versions(cells: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Per cell name, 'pkg version' for each package whose version is not the same in every cell.

    What the column headers show: in a jax sweep only jax/jaxlib differ, so a header reads
    `jax 0.6.0`; jaxlib is left out where it equals jax (it moves with it).
    """
    all_versions = [cell_versions(c) for c in cells]
    names = sorted({k for v in all_versions for k in v}, key=lambda p: (p not in _PACKAGE_ORDER,
                                                                        _PACKAGE_ORDER.index(p) if p in _PACKAGE_ORDER else 0, p))
    moving = [p for p in names if len({v.get(p) for v in all_versions}) > 1]
    out = {}
    for c, v in zip(cells, all_versions):
        shown = [f"{p} {v[p]}" for p in moving if p in v and not (p == "jaxlib" and v.get("jax") == v[p])]
        out[c["cell"]] = shown
    return out


def cell_summary(cell: CellResults) -> dict[str, Any]:
    """What the report says about a cell as a whole."""
    info = cell.run_info
    out = {"cell": cell.cell, "device": cell.device, "pins": cell.pins, "extras": list(cell.extras),
            "install_line": cell.install_line,
            "env": cell.env, "status": cell.status, "reason": cell.reason, "verdict": cell.verdict,
            "expectation": cell.expectation, "versions": info.get("versions") or cell.env_verified or {},
            "devices": info.get("devices") or {}, "python": info.get("python", ""),
            "platform": info.get("platform", ""), "run_env": info.get("env") or {},
            **({"build_env": cell.build_env} if cell.build_env else {}),
            "results_file": str(cell.path), "started_at": cell.started_at, "duration_s": cell.duration_s,
            "stale_expectations": [s.get("id") for s in cell.stale], "floating": cell.floating,
            "source": cell.source,
            **({"sources": cell.sources} if cell.sources else {}),
            "counts": dict(Counter(c.verdict for c in cell.cases.values()))}
    # What tells this cell from the others: every package it chose (extras too), as installed.
    out["identity"] = cell_identity(out)
    return out


def build_report(cells: list[CellResults], errors: list[str], expectations_source: str) -> dict[str, Any]:
    """The merged report: every case of every cell with raw outcome, verdict and observations.

    Cells (and each case's results) come in version order (cell_sort_key), whatever the order of
    the files given.
    """
    summaries = sorted((cell_summary(c) for c in cells), key=cell_sort_key)
    rank = {s["cell"]: i for i, s in enumerate(summaries)}
    cells = sorted(cells, key=lambda c: rank[c.cell])
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
            "cells": summaries,
            "cases": sorted(cases.values(), key=lambda c: c["id"])}
    report["coverage"] = coverage_gaps(report)  # cases that ran nowhere: an area nobody checks
    return report


def cell_rank(report: dict[str, Any]) -> dict[str, int]:
    """Cell name -> its column in the report (for sorting rows that name cells)."""
    return {c["cell"]: i for i, c in enumerate(report["cells"])}


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
