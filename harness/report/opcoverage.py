"""The torchax_ops coverage table: which OpInfo ops each cell's torchax makes a case, and why the
others are not (suites/torchax_ops/test_ops.py::test_opinfo_coverage records it per cell).

The table is read from results (untrusted): only string fields of the expected shape are kept,
and the renderers escape them.
"""

from __future__ import annotations

from typing import Any

COVERAGE_CASE = "suites/torchax_ops/test_ops.py::test_opinfo_coverage"
_FIELDS = ("opinfo", "aten", "covered_by", "reason")


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def op_coverage(report: dict[str, Any]) -> dict[str, Any]:
    """{"cells": {cell: {in_opinfo, covered, registered, cases}}, "holes": [{opinfo, aten, covered_by,
    reason, cells}]}: an OpInfo no case covers, once per distinct reason, with the cells it holds in."""
    cells: dict[str, dict[str, int | None]] = {}
    holes: dict[tuple[str, ...], list[str]] = {}
    for case in report.get("cases", []):
        if case.get("id") != COVERAGE_CASE:
            continue
        for cell, result in sorted((case.get("results") or {}).items()):
            obs = (result or {}).get("observations") or {}
            table = obs.get("opinfo_coverage")
            if not isinstance(table, dict):
                continue
            cells[cell] = {k: _count(table.get(k)) for k in ("in_opinfo", "covered", "registered")}
            cells[cell]["cases"] = _count(obs.get("cases"))
            for row in table.get("rows") or []:
                if isinstance(row, dict) and all(isinstance(row.get(f), str) for f in _FIELDS):
                    holes.setdefault(tuple(row[f] for f in _FIELDS), []).append(cell)
    rows = [dict(zip(_FIELDS, key), cells=sorted(set(c))) for key, c in sorted(holes.items())]
    return {"cells": cells, "holes": rows}


def render_op_coverage_markdown(report: dict[str, Any]) -> list[str]:
    """The report.md section: per-cell figures, then every OpInfo that is not a case and why."""
    from harness.report.markdown import md_code, md_text

    cov = op_coverage(report)
    if not cov["cells"]:
        return []
    out = ["## torchax op coverage (PyTorch OpInfo)", "",
           "| cell | OpInfos | registered aten ops in torchax | OpInfos covered | cases |", "|---|---|---|---|---|"]
    for cell, c in cov["cells"].items():
        out.append(f"| {md_text(cell)} | {c['in_opinfo']} | {c['registered']} | {c['covered']} | {c['cases']} |")
    out += ["", f"{len(cov['holes'])} OpInfo entries are not cases (no silent skips: each with its reason):", "",
            "| OpInfo | aten op | why not a case | cells |", "|---|---|---|---|"]
    for h in cov["holes"]:
        out.append(f"| {md_code(h['opinfo'])} | {md_code(h['aten'])} | {md_text(h['reason'])} | {md_text(', '.join(h['cells']))} |")
    return out + [""]
