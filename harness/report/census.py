"""The dependency API census table: bridge version x jax / torch version, from the cases' observations.

The census cases (suites/coexist/test_census.py) record, per bridge and kind of use, what the
bridge's source names and what the cell's jax or torch lacks. This module folds those records
into one table per kind (rows: the bridge and the distribution that shipped it; columns: the
jax or torch release it was checked against), and a list of every missing API with its sites.
Computed from the report's results, so an old report.json renders it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness.report.markdown import md_code, md_text
from harness.report.model import cell_rank

KIND_TITLES = {"jax": "jax APIs the bridges use", "torch-ops": "torch operators torchax registers"}
AGAINST = {"jax": "jax", "torch-ops": "torch"}


@dataclass
class Entry:
    """One bridge release checked against one jax or torch release (one table cell)."""

    used: int
    missing: list[dict[str, Any]]  # absent, unguarded
    fallbacks: list[dict[str, Any]]  # absent inside try/except
    conditional: list[dict[str, Any]]  # absent behind hasattr / a version check: the bridge asks first
    accelerator_only: list[dict[str, Any]]
    other_package: list[dict[str, Any]]  # torchvision::, xla:: operators: not torch's to have
    unimportable: list[dict[str, Any]]
    deprecated: list[dict[str, Any]]
    cells: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """`333 used; 1 missing, 1 fallback` (the zero counts left out)."""
        parts = [(len(self.missing), "missing"), (len(self.fallbacks), "fallback"),
                 (len(self.conditional), "asked first"), (len(self.unimportable), "unimportable"),
                 (len(self.accelerator_only), "accelerator-only"),
                 (len(self.other_package), "another package's"), (len(self.deprecated), "deprecated")]
        shown = ", ".join(f"{n} {what}" for n, what in parts if n)
        return f"{self.used} used" + (f"; {shown}" if shown else "; all present")


def _vkey(text: str) -> tuple:
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def _entries(rec: dict[str, Any], key: str, guard: str | None = None) -> list[dict[str, Any]]:
    out = [e for e in rec.get(key) or () if isinstance(e, dict) and isinstance(e.get("api"), str)]
    return [e for e in out if guard is None or e.get("guard") == guard]


def _row_label(rec: dict[str, Any]) -> str:
    """`torchax 0.0.13`, or `torchax (torch-xla 2.9.0)` for the copy a torch_xla release bundles."""
    bridge, dist = str(rec.get("bridge")), str(rec.get("dist") or rec.get("bridge"))
    if canonicalize_name(bridge) == canonicalize_name(dist):
        return f"{bridge} {rec.get('version')}"
    return f"{bridge} (in {dist} {rec.get('version')})"


def census_tables(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per kind: {"rows": [bridge labels], "columns": [versions], "entries": {(row, col): Entry}}."""
    rank = cell_rank(report)
    tables: dict[str, dict[str, Any]] = {}
    for case in report.get("cases") or ():
        for cell, result in sorted(case.get("results", {}).items(), key=lambda t: rank.get(t[0], len(rank))):
            rec = (result.get("observations") or {}).get("census")
            if not isinstance(rec, dict) or rec.get("kind") not in KIND_TITLES:
                continue
            kind = rec["kind"]
            row = _row_label(rec)
            col = str((rec.get("against") or {}).get(AGAINST[kind], "?"))
            table = tables.setdefault(kind, {"rows": [], "columns": [], "entries": {}})
            if (row, col) not in table["entries"]:
                table["entries"][(row, col)] = Entry(
                    used=int(rec.get("used") or 0), missing=_entries(rec, "absent", "none"),
                    fallbacks=_entries(rec, "absent", "try"), conditional=_entries(rec, "absent", "conditional"),
                    accelerator_only=_entries(rec, "accelerator_only"),
                    other_package=_entries(rec, "other_package"), unimportable=_entries(rec, "unimportable"),
                    deprecated=_entries(rec, "deprecated"))
            table["entries"][(row, col)].cells.append(cell)
    for table in tables.values():
        table["rows"] = sorted({r for r, _ in table["entries"]}, key=lambda r: (r.split(" ")[0], _vkey(r.split(" ")[-1].rstrip(")")), r))
        table["columns"] = sorted({c for _, c in table["entries"]}, key=_vkey)
    return tables


def _sites(e: dict[str, Any]) -> str:
    sites = [s for s in e.get("sites") or () if isinstance(s, str)]
    more = int(e.get("n_sites") or len(sites)) - len(sites)
    return ", ".join(sites) + (f", +{more} more" if more > 0 else "")


def findings(tables: dict[str, dict[str, Any]]) -> list[tuple[str, str, str, str, str]]:
    """(kind, bridge, against version, what, `api at file:line`) for each missing, fallback or unimportable API."""
    out = []
    for kind, table in tables.items():
        for (row, col), entry in sorted(table["entries"].items(),
                                        key=lambda t: (table["rows"].index(t[0][0]), table["columns"].index(t[0][1]))):
            for what, items in (("missing", entry.missing), ("fallback", entry.fallbacks),
                                ("unimportable", entry.unimportable)):
                out += [(kind, row, f"{AGAINST[kind]} {col}", what, f"{e['api']} at {_sites(e)}") for e in items]
    return out


def census_headline(tables: dict[str, dict[str, Any]]) -> str:
    """One line for the page's summary: how many bridge releases were read, how many findings."""
    rows = {r for t in tables.values() for r in t["rows"]}
    found = findings(tables)
    return (f"{len(rows)} bridge release{'s' if len(rows) != 1 else ''} read; "
            + (f"{len(found)} missing, fallback or unimportable API use{'s' if len(found) != 1 else ''}" if found
               else "every API they use is present"))


def render_census_markdown(report: dict[str, Any]) -> list[str]:
    """The census section of report.md (nothing when no cell ran a census case)."""
    tables = census_tables(report)
    if not tables:
        return []
    out = ["## Dependency API census", "",
           "What each bridge's installed source names, checked against the cell's jax / torch "
           "(suites/coexist/test_census.py). missing: used outside any guard; fallback: used inside try/except.", ""]
    for kind, table in tables.items():
        out += [f"### {KIND_TITLES[kind]}", "",
                "| bridge | " + " | ".join(f"{AGAINST[kind]} {md_text(c)}" for c in table["columns"]) + " |",
                "|---|" + "---|" * len(table["columns"])]
        for row in table["rows"]:
            cells = [table["entries"].get((row, c)) for c in table["columns"]]
            out.append(f"| {md_text(row)} | " + " | ".join(md_text(e.summary()) if e else "" for e in cells) + " |")
        out.append("")
    found = findings(tables)
    if found:
        out += ["| bridge | against | what | API and sites |", "|---|---|---|---|"]
        out += [f"| {md_text(row)} | {md_text(col)} | {what} | {md_code(text)} |" for _k, row, col, what, text in found]
        out.append("")
    return out
