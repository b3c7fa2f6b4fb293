"""The bisection's final report: first bad / last good, versions tested, repro, IR diff."""

from __future__ import annotations

import difflib
import re
import shlex
from pathlib import Path
from typing import Any

from harness.bisect.probe import Answer
from harness.cells.cell import Cell
from harness.report.repro import command_line, fenced, harness_install_line, printable

_IR_KEYS = ("stablehlo", "hlo", "jaxpr", "ir")
_MAX_DIFF_LINES = 120


def ir_diff(good: Answer | None, bad: Answer | None) -> tuple[str, str] | None:
    """(key, unified diff) of the first IR text both probes recorded and that differs."""
    if not good or not bad:
        return None
    for key in sorted(set(good.observations) & set(bad.observations)):
        if not any(k in key.lower() for k in _IR_KEYS):
            continue
        a, b = good.observations[key], bad.observations[key]
        if isinstance(a, str) and isinstance(b, str) and a != b:
            lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), f"{key} @ {good.version}",
                                              f"{key} @ {bad.version}", lineterm="", n=2))
            if len(lines) > _MAX_DIFF_LINES:
                lines = lines[:_MAX_DIFF_LINES] + [f"... ({len(lines) - _MAX_DIFF_LINES} more lines)"]
            return key, "\n".join(lines)
    return None


def first_bad_details(summary: dict[str, Any], h: Any, markdown: bool, where: str, limit: int | None = None) -> list[str]:
    """The error at the first bad probe and the IR diff between last good and first bad, where the
    case recorded them: the same block for a release and a commit bisection."""
    out: list[str] = []
    fb = summary.get("first_bad_answer")
    if fb and fb.message:
        out += ["", h(f"error at {where}"), "```" if markdown else "", fb.message.strip()[:limit],
                "```" if markdown else ""]
    diff = summary.get("ir_diff")
    if diff:
        key, text = diff
        out += ["", h(f"{key} diff between last good and first bad"), "```diff" if markdown else "", text,
                "```" if markdown else ""]
    return out


def reproduce_lines(summary: dict[str, Any], cell: Cell) -> list[str]:
    """How to reproduce at the first bad version: an exported script runs as `python CASE.py` after
    an install of the cell's own packages (the script sets its variables itself, imports no pytest);
    a case runs through pytest from a clone of xla-seams; another command as it was given."""
    from harness.report.standalone import standalone_install_line

    script = summary.get("script") or []
    if summary.get("script_text"):
        name = Path(str(script[0])).name
        return [standalone_install_line(cell.describe()), f"python {shlex.quote(name)}"]
    env = cell.run_env()  # every value quoted, the test id after `--`: data, never shell text
    if summary.get("test_id"):
        return [harness_install_line(cell.install_line()),
                command_line(env, ["python", "-m", "pytest", "-p", "no:cacheprovider", "--", summary["test_id"]])
                + "  # from a clone of xla-seams"]
    return [harness_install_line(cell.install_line()), command_line(env, list(script))]


def shown_command(argv: list[str]) -> str:
    """The bisect command as a reader can rerun it: a script file by its name, a local repository as
    <PKG checkout>, and no --out / --markdown (this machine's folders)."""
    out: list[str] = []
    skip = False
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        if word in ("--out", "--markdown"):
            skip = True
            continue
        if word.startswith(("--out=", "--markdown=")):
            continue
        prev = argv[i - 1] if i else ""
        if prev == "--repo" and not re.match(r"^[a-z+]+://|^[\w.-]+@", word):
            word = "<repository checkout>"
        elif prev == "--script" and word.endswith(".py"):
            word = Path(word).name
        out.append(word)
    return shlex.join(["python", "-m", "harness", *out])


def render(summary: dict[str, Any], answers: list[Answer], first_bad_cell: Cell | None, markdown: bool) -> str:
    """Terminal text or Markdown, ending with how to reproduce."""
    h = (lambda t: f"## {t}") if markdown else (lambda t: f"{t}:")
    out = [f"# Bisection: {summary['target']}" if markdown else f"bisection of {summary['target']}", ""]
    out.append(summary["conclusion"])
    out += ["", h("versions tested")]
    if summary.get("regress") == "pass":
        note = "(--regress pass: 'bad' means the test passes, 'good' that it still fails)"
        out += ["", note] if markdown else [f"  {note}"]
    if markdown:
        out += ["", "| version | answer | outcome | detail |", "|---|---|---|---|"]
    for a in sorted(answers, key=lambda a: summary["order"].index(a.version)):
        detail = (a.reason or (a.message or "").strip().splitlines()[0] if (a.reason or a.message) else "")[:140]
        tag = " (cached)" if a.cached else ""
        out.append(f"| {a.version} | {a.answer} | {a.raw} | {detail.replace('|', '/')}{tag} |" if markdown
                   else f"  {a.version:<10} {a.answer:<5} {a.raw:<10} {detail}{tag}")
    out += ["", f"probes run: {summary['probes_run']} (cached answers reused: {summary['cached']}); "
                f"{summary['n_between']} releases between the bounds; wall time {summary['wall_s']:.1f} s"]
    fb = summary.get("first_bad_answer")
    out += first_bad_details(summary, h, markdown, f"the first bad version ({fb.version})" if fb else "")
    if first_bad_cell is not None:
        out += ["", h("reproduce (first bad)"), "```sh" if markdown else "",
                "python3.11 -m venv venv && . venv/bin/activate", *reproduce_lines(summary, first_bad_cell),
                "```" if markdown else ""]
    if summary.get("script_text"):
        name = str((summary.get("script") or ["repro.py"])[0]).rsplit("/", 1)[-1]
        text = summary["script_text"].rstrip("\n")
        out += ["", h("standalone reproducer")]
        out += (["", f"<details><summary>{printable(name)}</summary>", "", *fenced(text, "python"), "", "</details>"]
                if markdown else [text])
    out += ["", f"Reproduce with: {summary['command']}"]
    return "\n".join(line for line in out if line is not None) + "\n"
