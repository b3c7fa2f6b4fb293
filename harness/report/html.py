"""report.html: one self-contained page that opens on the news, then a grid of cases x cells.

The page opens on what needs a human (regressions, fixed, crashes, ...), the "Since which release"
table and, with a baseline, what changed since it; the grid below has cells in version order with
the versions that differ in each column header. Filters, the view and the selected result live in
the URL fragment (#case=...&cell=...), so a pasted link opens the same view.

The data is embedded once as compact JSON (strings deduplicated, big IR text left to report.json
and the repro files) and rendered by a small script, so 10,000 results stay well under 1 MB.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from harness.judge.coverage import coverage_gaps, gap_headline
from harness.report.census import AGAINST, KIND_TITLES, census_headline, census_tables, findings
from harness.report.opcoverage import op_coverage
from harness.judge.outcomes import VERDICTS
from harness.report.model import cell_versions, differing_versions
from harness.report.repro import cell_selection, harness_install_line, repro_files, shown_install_line
from harness.report.standalone import shown_sources
from harness.judge.results import WHOLE_CELL
from harness.safeio import dumps_strict

_MAX_OBS_STR = 200
RAWS = ("pass", "fail", "error", "crash", "timeout", "skip", "env-error", "incomplete", "complete", "skipped")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, str) and len(v) > _MAX_OBS_STR:
        return f"<{len(v)} chars: in report.json and the repro file>"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={_fmt(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v[:20]) + (", ..." if len(v) > 20 else "") + "]"
    return str(v)


def _compact_obs(obs: dict[str, Any] | None) -> str | None:
    """Observations as one short line per fact (floats to 3 digits): small enough for 10k results."""
    if not obs:
        return None
    return "\n".join(f"{k}: {_fmt(v)}" for k, v in obs.items())


class _Table:
    """Interns values so each distinct message/observation/expectation is embedded once."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._index: dict[str, int] = {}

    def add(self, value: Any) -> int:
        if value is None:
            return -1
        key = json.dumps(value, sort_keys=True, default=str)
        if key not in self._index:
            self._index[key] = len(self.items)
            self.items.append(value)
        return self._index[key]


def compact_data(report: dict[str, Any]) -> dict[str, Any]:
    """The page's data: cells, cases, and one small row per result pointing into interned tables."""
    cells = report["cells"]
    cell_idx = {c["cell"]: i for i, c in enumerate(cells)}
    case_idx = {c["id"]: i for i, c in enumerate(report["cases"])}
    msgs, obs, exps = _Table(), _Table(), _Table()
    rows = []
    row_idx: dict[tuple[str, str], int] = {}
    for ci, case in enumerate(report["cases"]):
        # Results in column order, so rows of one case run left to right.
        for cell, r in sorted(case["results"].items(), key=lambda kv: cell_idx[kv[0]]):
            row_idx[(case["id"], cell)] = len(rows)
            rows.append([ci, cell_idx[cell], VERDICTS.index(r["verdict"]), RAWS.index(r["raw"]),
                         msgs.add(r.get("message")), obs.add(_compact_obs(r.get("observations"))),
                         exps.add(r.get("expectation")), r.get("signal")])
    heads = differing_versions(cells)
    repros: dict[str, str] = {}  # "row" or "c<cell>" -> repro file name under repro/
    for case_id, cell, _r, name in repro_files(report):
        key = str(row_idx[(case_id, cell)]) if case_id is not None else f"c{cell_idx[cell]}"
        repros[key] = name
    return {
        "generated_at": report["generated_at"], "counts": report["counts"], "errors": report["errors"],
        "verdicts": list(VERDICTS), "raws": list(RAWS),
        "cells": [{k: c[k] for k in ("cell", "device", "status", "reason", "verdict", "pins",
                                     "versions", "devices", "python", "platform", "run_env", "counts",
                                     "stale_expectations", "expectation")}
                  | {"floating": c.get("floating") or {}, "sources": shown_sources(c), "head": heads[c["cell"]],
                     "build_env": c.get("build_env") if isinstance(c.get("build_env"), dict) else {},
                     # the repro's pip line and `harness run` selection, the same as repro/CASE.md's
                     # a local source is its placeholder here too: the page is shared as an artifact
                     "install_line": shown_install_line(str(c.get("install_line") or ""), c),
                     "repro_install": harness_install_line(str(c.get("install_line") or ""), c),
                     "select": shlex.join(cell_selection(c))}
                  for c in cells],
        "cases": [[c["id"], c["family"]] for c in report["cases"]],
        "rows": rows, "msgs": msgs.items, "obs": obs.items, "exps": exps.items, "repros": repros,
        "repro_dir": report.get("repro_dir") or "repro",  # `harness history` writes its page elsewhere
        "since": _since_data(report, cell_idx, case_idx),
        "baseline": _baseline_data(report.get("baseline"), cell_idx, row_idx),
        "history": report.get("history"),  # set by `harness history`: a timeline per grid cell
    }


def _since_data(report: dict[str, Any], cell_idx: dict[str, int], case_idx: dict[str, int]) -> dict[str, Any]:
    """The "Since which release" rows, each pointing at a version line listed once."""
    lines: list[dict[str, Any]] = []
    line_idx: dict[tuple, int] = {}
    rows = []
    for r in report.get("since") or []:
        if r["case"] not in case_idx or not all(c in cell_idx for c in r["cells"]):
            continue
        key = (r["package"], r["device"], tuple(r["cells"]))
        if key not in line_idx:
            line_idx[key] = len(lines)
            by_name = {c["cell"]: c for c in report["cells"]}
            lines.append({"package": r["package"], "device": r["device"], "cells": [cell_idx[c] for c in r["cells"]],
                          "versions": [cell_versions(by_name[c]).get(r["package"], "?") for c in r["cells"]]})
        shown = bool(r.get("first_bad") or r.get("transitions") or "fails" in r["summary"])
        rows.append([case_idx[r["case"]], line_idx[key], "".join(s[0] for s in r["states"]), r["summary"],
                     r.get("first_bad"), r.get("last_good"), int(shown)])
    return {"lines": lines, "rows": rows}


def _baseline_data(baseline: dict[str, Any] | None, cell_idx: dict[str, int],
                   row_idx: dict[tuple[str, str], int]) -> dict[str, Any] | None:
    """Marks for each result that changed since the baseline report (regressed, fixed, changed, new, gone)."""
    if not baseline:
        return None
    marks: dict[str, str] = {}  # row index, or "c<cell index>" for a whole cell -> kind
    gone = []
    for kind in ("regressed", "fixed", "changed", "new", "gone"):
        for ch in baseline["changes"].get(kind, []):
            if kind == "gone":
                gone.append([ch["case"], ch["cell"], ch["old"]])
            elif ch["case"] == WHOLE_CELL and ch["cell"] in cell_idx:
                marks[f"c{cell_idx[ch['cell']]}"] = kind
            elif (ch["case"], ch["cell"]) in row_idx:
                marks[str(row_idx[(ch["case"], ch["cell"])])] = kind
    counts = {k: len(baseline["changes"].get(k, [])) for k in ("regressed", "fixed", "changed", "new", "gone")}
    return {"source": baseline["source"], "generated_at": baseline.get("generated_at"), "marks": marks,
            "gone": gone, "counts": counts}


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element whatever its strings hold (`</script>`, `<!--`, `&`)."""
    data = dumps_strict(value, separators=(",", ":"))
    # <, > and & occur in JSON only inside strings, where \uXXXX means the same character.
    return data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(report: dict[str, Any]) -> str:
    """The self-contained HTML report."""
    env = Environment(loader=PackageLoader("harness.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    gaps = report.get("coverage") or coverage_gaps(report)  # a report.json from before coverage was recorded
    census = census_tables(report)
    return env.get_template("report.html.j2").render(data=script_json(compact_data(report)), counts=report["counts"],
                                                     generated_at=report["generated_at"], gaps=gaps,
                                                     gaps_headline=gap_headline(gaps), ops=op_coverage(report), census=census,
                                                     census_headline=census_headline(census), census_titles=KIND_TITLES,
                                                     census_against=AGAINST, census_findings=findings(census))
