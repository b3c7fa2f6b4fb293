"""report.html: one self-contained page, a grid of cases x cells coloured by verdict.

The data is embedded once as compact JSON (strings deduplicated, big IR text left to report.json
and the repro files) and rendered by a small script, so 10,000 results stay well under 1 MB.
"""

from __future__ import annotations

import json
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from harness.judge.coverage import coverage_gaps, gap_headline
from harness.judge.outcomes import VERDICTS
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
    msgs, obs, exps = _Table(), _Table(), _Table()
    rows = []
    for ci, case in enumerate(report["cases"]):
        for cell, r in case["results"].items():
            rows.append([ci, cell_idx[cell], VERDICTS.index(r["verdict"]), RAWS.index(r["raw"]),
                         msgs.add(r.get("message")), obs.add(_compact_obs(r.get("observations"))),
                         exps.add(r.get("expectation")), r.get("signal")])
    return {
        "generated_at": report["generated_at"], "counts": report["counts"], "errors": report["errors"],
        "verdicts": list(VERDICTS), "raws": list(RAWS),
        "cells": [{k: c[k] for k in ("cell", "device", "status", "reason", "verdict", "pins", "install_line",
                                     "versions", "devices", "python", "platform", "run_env", "counts",
                                     "stale_expectations", "expectation")} | {"floating": c.get("floating") or {}}
                  for c in cells],
        "cases": [[c["id"], c["family"]] for c in report["cases"]],
        "rows": rows, "msgs": msgs.items, "obs": obs.items, "exps": exps.items,
        "history": report.get("history"),  # set by `harness history`: a timeline per grid cell
    }


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element whatever its strings hold (`</script>`, `<!--`, `&`)."""
    data = dumps_strict(value, separators=(",", ":"))
    # <, > and & occur in JSON only inside strings, where \uXXXX means the same character.
    return data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(report: dict[str, Any]) -> str:
    """The self-contained HTML report."""
    env = Environment(loader=PackageLoader("harness.report", "templates"), autoescape=select_autoescape(["html", "j2"]))
    gaps = report.get("coverage") or coverage_gaps(report)  # a report.json from before coverage was recorded
    return env.get_template("report.html.j2").render(data=script_json(compact_data(report)), counts=report["counts"],
                                                     generated_at=report["generated_at"], gaps=gaps,
                                                     gaps_headline=gap_headline(gaps))
