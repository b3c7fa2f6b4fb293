"""Standalone repros: for each result that is not ok, a Markdown file ready for an upstream issue."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any


REPO = Path(__file__).resolve().parent.parent
_SKIP = {"ok", "skipped"}


def test_source(nodeid: str) -> str | None:
    """The source of the test function a node id names (from this checkout), if it can be found."""
    path, _, rest = nodeid.partition("::")
    name = rest.split("[")[0].split("::")[-1]
    try:
        tree = ast.parse((REPO / path).read_text())
    except (OSError, SyntaxError):
        return None
    lines = (REPO / path).read_text().splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            return "\n".join(lines[start - 1:node.end_lineno])
    return None


def safe_name(text: str) -> str:
    """A file-name-safe version of a test id."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:150]


def repro_markdown(case_id: str | None, cell: dict[str, Any], r: dict[str, Any]) -> str:
    """The repro text for one result."""
    env = " ".join(f"{k}={v}" for k, v in (cell.get("run_env") or cell.get("env") or {}).items())
    exp = r.get("expectation")
    out = [f"# {case_id or cell['cell']}: {r['verdict']} on {cell['cell']}", "",
           f"- raw outcome: {r['raw']}" + (f" ({r['signal']})" if r.get("signal") else ""),
           f"- device: {cell['device']}; python {cell.get('python') or '3.11'}; {cell.get('platform') or ''}",
           "- versions: " + ", ".join(f"{k}=={v}" for k, v in (cell.get("versions") or cell["pins"]).items())]
    if exp:
        out.append(f"- known issue {exp['id']}: {exp['reason']} ({exp['link']})")
    out += ["", "## Install", "", "```sh", "python3.11 -m venv venv && . venv/bin/activate",
            cell["install_line"] + " pytest", "```", ""]
    if case_id:
        out += ["## Run", "", "From a clone of xla-seams:", "", "```sh",
                f"{env} python -m pytest -p no:cacheprovider '{case_id}'".strip(),
                f"# or, building the same env: python -m harness run --cell {cell['cell']} -- '{case_id}'", "```", ""]
        src = test_source(case_id)
        if src:
            out += ["## The scenario", "", "```python", src, "```", ""]
    if r.get("message"):
        out += ["## What happened", "", "```", r["message"], "```", ""]
    obs = r.get("observations") or {}
    if obs:
        out += ["## Observations", "", "```json", json.dumps(obs, indent=1, default=str)[:20000], "```", ""]
    return "\n".join(out)


def write_repros(report: dict[str, Any], out_dir: Path, limit: int = 500) -> int:
    """Write one repro file per result that is not ok or skipped (at most `limit`); returns how many."""
    from harness.report.model import iter_results  # here: harness.report imports this module

    cells = {c["cell"]: c for c in report["cells"]}
    out_dir.mkdir(parents=True, exist_ok=True)
    n = 0
    for case_id, cell, r in iter_results(report):
        if r["verdict"] in _SKIP:
            continue
        if n >= limit:
            break
        name = f"{safe_name(cell)}__{safe_name(case_id or 'cell')}.md"
        (out_dir / name).write_text(repro_markdown(case_id, cells[cell], r), encoding="utf-8")
        n += 1
    return n
