"""`harness diff OLD NEW`: what changed between two reports - regressed, fixed, new, gone, drift."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from harness.errors import UserError
from harness.report.markdown import md_code
from harness.report.model import iter_results
from harness.safeio import atomic_write, disk_error, read_input
from harness.paths import SCHEMA_DIR

GOOD = {"ok", "known-bug", "skipped"}
BAD = {"regression", "crash", "timeout", "env-error", "incomplete", "api-drift"}
DRIFT_FACTOR = 10.0
MAX_REPORT_BYTES = 1_000_000_000  # inputs are bounded: a runaway or hostile file is one line, not an OOM


def load_report(path: Path) -> dict[str, Any]:
    """Read a report.json, or one UserError line."""
    try:
        doc = json.loads(read_input(Path(path), MAX_REPORT_BYTES, "report.json"))
    except RecursionError:
        raise UserError(f"{path}: nested too deeply: not a report.json written by `harness report`") from None
    except ValueError as exc:
        raise UserError(f"{path}:{getattr(exc, 'lineno', 1)}: not JSON: is this a report.json written by `harness report`?") from None
    if not isinstance(doc, dict) or doc.get("schema_version") != 1 or "cases" not in doc:
        raise UserError(f"{path}:1: not a schema-1 report.json written by `harness report`")
    problem = _shape_problem(doc)
    if problem:
        raise UserError(f"{path}: not a report.json written by `harness report`: {problem}")
    return doc


REPORT_SCHEMA = SCHEMA_DIR / "report-v1.json"


@lru_cache(maxsize=1)
def _report_validator() -> Any:
    from harness.judge.outcomes import VERDICTS
    from harness.report.html import RAWS

    schema = json.loads(REPORT_SCHEMA.read_text())
    # The vocabularies come from the code, so a new verdict never makes old readers reject reports.
    schema["$defs"]["result"]["properties"]["verdict"] = {"enum": list(VERDICTS)}
    schema["$defs"]["result"]["properties"]["raw"] = {"enum": list(RAWS)}
    schema["$defs"]["cell"]["properties"]["verdict"] = {"enum": [*VERDICTS, "complete"]}
    return jsonschema.validators.validator_for(schema)(schema)


def _shape_problem(doc: dict[str, Any]) -> str | None:
    """What is wrong with the report's shape (harness/schema/report-v1.json), or None."""
    err = jsonschema.exceptions.best_match(_report_validator().iter_errors(doc))
    if err is not None:
        where = "/".join(str(p) for p in err.absolute_path) or "the document"
        return f"{where}: {err.message[:200]}"
    cells = {c["cell"] for c in doc["cells"]}
    for i, case in enumerate(doc["cases"]):
        unknown = sorted(set(case["results"]) - cells)
        if unknown:
            return f"cases/{i}/results: cell {unknown[0]!r} is not among the report's cells"
    return None


def _index(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(case or "(whole cell)", cell): r for case, cell, r in iter_results(report)}


def _err(r: dict[str, Any]) -> tuple[float, float] | None:
    num = (r.get("observations") or {}).get("numerics")
    if isinstance(num, dict) and "max_abs_err" in num:
        try:  # report.json writes nan/inf as strings (strict JSON); float() reads them back
            err, atol = float(num["max_abs_err"]), float(num.get("atol") or 0.0)
        except (TypeError, ValueError):
            return None
        return (err, atol) if err == err else None  # NaN compares with nothing: not drift, the verdict says it
    return None


def compare(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The categories of change between two reports, each a list of {case, cell, old, new}."""
    a, b = _index(old), _index(new)
    out: dict[str, list] = {"regressed": [], "fixed": [], "changed": [], "new": [], "gone": [], "drift": []}
    # Cells in version order (the new report's, then cells only the old one had), not by name.
    rank: dict[str, int] = {}
    for i, c in enumerate([*new.get("cells", []), *old.get("cells", [])]):
        rank.setdefault(c["cell"], i)
    for key in sorted(set(a) | set(b), key=lambda k: (k[0], rank.get(k[1], len(rank)), k[1])):
        case, cell = key
        ra, rb = a.get(key), b.get(key)
        row = {"case": case, "cell": cell, "old": ra and ra["verdict"], "new": rb and rb["verdict"]}
        if ra is None:
            out["new"].append(row)
            continue
        if rb is None:
            out["gone"].append(row)
            continue
        if ra["verdict"] in GOOD and rb["verdict"] in BAD:
            out["regressed"].append(row)
        elif rb["verdict"] == "fixed" or (ra["verdict"] in BAD and rb["verdict"] in ("ok", "known-bug")):
            out["fixed"].append(row)
        elif ra["verdict"] != rb["verdict"]:
            out["changed"].append(row)
        ea, eb = _err(ra), _err(rb)
        if ea and eb:
            grew = eb[0] > max(ea[0], 1e-30) * DRIFT_FACTOR and eb[0] > eb[1] / 2
            if grew:
                out["drift"].append({**row, "old_err": ea[0], "new_err": eb[0], "atol": eb[1]})
    return out


def _printable(text: str) -> str:
    """One terminal line: control characters (ANSI escapes, newlines) shown as \\xNN, not obeyed."""
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in text)


def whole_cells(old: dict[str, Any], new: dict[str, Any]) -> dict[str, set[str]]:
    """Cells only one of the reports has: {"new": cells only in NEW, "gone": cells only in OLD}."""
    a = {c["cell"] for c in old.get("cells", [])}
    b = {c["cell"] for c in new.get("cells", [])}
    return {"new": b - a, "gone": a - b}


def _grouped(cat: str, rows: list[dict[str, Any]], cells: set[str]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Rows as (line, rows): one line per cell the other report lacks entirely, one per result otherwise."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    by_cell: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["cell"] in cells:
            by_cell.setdefault(r["cell"], []).append(r)
    for cell, group in by_cell.items():
        side = "new" if cat == "new" else "old"
        verdicts: dict[str, int] = {}
        for r in group:
            verdicts[r[side]] = verdicts.get(r[side], 0) + 1
        what = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items(), key=lambda kv: -kv[1]))
        out.append((f"{cell}: {'new' if cat == 'new' else 'gone'} cell, {len(group)} results ({what})", group))
    for r in rows:
        if r["cell"] not in cells:
            extra = (f" (max abs err {r['old_err']:.3g} -> {r['new_err']:.3g}, atol {r['atol']:.3g})"
                     if cat == "drift" else "")
            out.append((f"{r['case']} @ {r['cell']}: {r['old'] or '(absent)'} -> {r['new'] or '(absent)'}{extra}", [r]))
    return out


def render_text(changes: dict[str, list[dict[str, Any]]], markdown: bool = False,
                cells: dict[str, set[str]] | None = None) -> str:
    """Terminal text or Markdown for a comparison.

    `cells` (from whole_cells) names the cells one report lacks: their results are one line per
    cell ("jax0102-cpu: new cell, 101 results (90 ok, 11 skipped)"), not one line per case.
    """
    lines = ["# Report diff", ""] if markdown else []
    for cat, rows in changes.items():
        head = f"{cat}: {len(rows)}"
        lines.append(f"## {head}" if markdown else head)
        for item, _rows in _grouped(cat, rows, (cells or {}).get(cat, set())):
            lines.append(f"- {md_code(item)}" if markdown else f"  {_printable(item)}")
        if markdown:
            lines.append("")
    # Input strings may hold lone surrogates (valid JSON escapes): never let printing them fail.
    return ("\n".join(lines) + "\n").encode("utf-8", "backslashreplace").decode("utf-8")


def diff_command(old: Path, new: Path, markdown_out: Path | None = None) -> int:
    """Print the diff (and write Markdown if asked); exit 1 if anything regressed or NEW is incomplete."""
    new_doc, old_doc = load_report(new), load_report(old)
    changes = compare(old_doc, new_doc)
    cells = whole_cells(old_doc, new_doc)
    print(render_text(changes, cells=cells), end="")
    if markdown_out is not None:
        try:
            atomic_write(Path(markdown_out), render_text(changes, markdown=True, cells=cells))
        except OSError as exc:
            raise disk_error(exc, any_errno=True) from None
    # A cut-short run can look like "nothing changed" (its missing cases are merely gone): never green.
    cut = [c for c in new_doc.get("cells", []) if isinstance(c, dict) and c.get("status") == "incomplete"]
    for c in cut:
        print(f"incomplete in {new}: {c.get('cell')}: {c.get('reason')}")
    return 1 if changes["regressed"] or cut else 0
