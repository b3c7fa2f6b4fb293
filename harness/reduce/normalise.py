"""The reduced script as a maintainer reads it: the original's header and environment preamble,
a line saying what was reduced and what was kept, then the code formatted (one statement a line
as `ast.unparse` writes it, a blank line around each top-level definition). Names are the
script's own: the reducer never renames."""

from __future__ import annotations

import ast

from harness.reduce.signature import Signature


def format_code(code: str) -> str:
    """Canonical source for code, a blank line before and after every top-level def and class."""
    out: list[str] = []
    for node in ast.parse(code).body:
        is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if is_def and out and out[-1] != "":
            out.append("")
        for line in ast.unparse(node).splitlines():
            if line.strip() or not (out and out[-1].rstrip().endswith(":")):
                out.append(line)
        if is_def:
            out.append("")
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def reduced_script(preamble: str, body: str, full_name: str, full_lines: int, sig: Signature,
                   passes_in: list[str] | None = None) -> str:
    """The text of CASE.min.py."""
    head, env = [], []
    for line in preamble.splitlines():
        (head if line.startswith("#") else env).append(line)
    kept = ("exception type, the known issue's match and the message up to numbers"
            if str(sig.failure).startswith("match") else
            "exception type and message up to numbers" if sig.failure else "exit status")
    note = (f"# reduced by `python -m harness reduce` from the {full_lines}-line {full_name}: "
            f"the same exit status ({sig.status}), {kept}, at the same statement"
            + (f"; exits 0 in {', '.join(passes_in)} as the full one does" if passes_in else ""))
    return "\n".join([*head, note, *[e for e in env if e.strip()], "", format_code(body)])
