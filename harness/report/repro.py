"""Standalone repros: for each result that is not ok, a Markdown file ready for an upstream issue."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path
from typing import Any

from harness.safeio import atomic_write, dumps_strict
from harness.judge.testids import read_suite_module

_SKIP = {"ok", "skipped"}


def test_source(nodeid: str) -> str | None:
    """The source of the test function a node id names (from this checkout), if it can be found."""
    name = nodeid.partition("::")[2].split("[")[0].split("::")[-1]
    read = read_suite_module(nodeid)
    if read is None:
        return None
    text, tree = read
    lines = text.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            return "\n".join(lines[start - 1:node.end_lineno])
    return None


def safe_name(text: str) -> str:
    """A file-name-safe version of a test id."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:150]


def _fenced(text: str, lang: str = "") -> list[str]:
    """A fenced block longer than any backtick run in text, so the text cannot close it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, text, fence]


def shell_word(value: str) -> str:
    """One shell word for value, always on one line: shlex quoting, or bash's $'...' with escapes when
    value holds a newline or another control character (a quoted newline pasted after a `#` comment,
    or into a terminal, would start a command of its own)."""
    if value.isprintable():
        return shlex.quote(value)
    out = []
    for ch in value:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append("".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass")))
    return "$'" + "".join(out) + "'"


def printable(value: str) -> str:
    """value for a Markdown line: newlines and control characters shown escaped, never acted on."""
    return "".join(ch if ch.isprintable() else ("\\n" if ch == "\n" else f"\\x{ord(ch):02x}") for ch in value)


def command_line(env: dict[str, Any], argv: list[str]) -> str:
    """A one-line shell command with every value quoted: spaces, `$(...)` and newlines paste safely."""
    assigns = [f"{k}={shell_word(str(v))}" for k, v in env.items() if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k))]
    return " ".join(assigns + [shell_word(str(a)) for a in argv])


def repro_markdown(case_id: str | None, cell: dict[str, Any], r: dict[str, Any]) -> str:
    """The repro text for one result."""
    env = cell.get("run_env") or cell.get("env") or {}
    exp = r.get("expectation")
    out = [f"# {printable(str(case_id or cell['cell']))}: {r['verdict']} on {printable(str(cell['cell']))}", "",
           f"- raw outcome: {r['raw']}" + (f" ({r['signal']})" if r.get("signal") else ""),
           f"- device: {cell['device']}; python {cell.get('python') or '3.11'}; {cell.get('platform') or ''}",
           "- versions: " + ", ".join(f"{k}=={v}" for k, v in (cell.get("versions") or cell["pins"]).items())]
    if exp:
        out.append(f"- known issue {exp['id']}: {exp['reason']} ({exp['link']})")
    # The install line comes from the results file: written by the harness with shlex, but shown
    # here only if it still is one shell-safe pip command (a tampered file gets it quoted whole).
    install = str(cell.get("install_line") or "")
    try:
        words = shlex.split(install)
    except ValueError:
        words = []
    install = shlex.join(words + ["pytest"]) if words[:2] == ["pip", "install"] else "# " + shlex.quote(install)
    out += ["", "## Install", "", *_fenced("python3.11 -m venv venv && . venv/bin/activate\n" + install, "sh"), ""]
    if case_id:
        run = command_line(env, ["python", "-m", "pytest", "-p", "no:cacheprovider", case_id])
        again = command_line({}, ["python", "-m", "harness", "run", "--cell", str(cell["cell"]), "--", case_id])
        out += ["## Run", "", "From a clone of xla-seams:", "",
                *_fenced(f"{run}\n# or, building the same env: {again}", "sh"), ""]
        src = test_source(case_id)
        if src:
            out += ["## The scenario", "", *_fenced(src, "python"), ""]
    if r.get("message"):
        out += ["## What happened", "", *_fenced(str(r["message"])), ""]
    obs = r.get("observations") or {}
    if obs:
        out += ["## Observations", "", *_fenced(dumps_strict(obs, indent=1)[:20000], "json"), ""]
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
        atomic_write(out_dir / name, repro_markdown(case_id, cells[cell], r))
        n += 1
    return n
