"""The reduced script as a maintainer reads it: one fixed comment line, the provenance as checked
literals and the cell's variables the reduction kept (harness.reduce.script), then the code
formatted: one statement a line as `ast.unparse` writes it, a blank line around each top-level
definition, an import kept only for what importing does marked for the linter. Names are the
script's own: the reducer never renames."""

from __future__ import annotations

import ast

from harness.reduce.script import CRASH_HEAD, REDUCED_HEAD, env_lines, provenance

NOQA = "  # noqa: F401 (imported for what the import does)"  # as the exporter marks it


def format_code(code: str) -> str:
    """Canonical source for code, a blank line before and after every top-level def and class."""
    tree = ast.parse(code)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}
    out: list[str] = []
    for node in tree.body:
        is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if is_def and out and out[-1] != "":
            out.append("")
        text = ast.unparse(node)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not any(
                ((a.asname or a.name).split(".")[0] if isinstance(node, ast.Import) else (a.asname or a.name)) in read
                for a in node.names):
            text += NOQA
        for line in text.splitlines():
            if line.strip() or not (out and out[-1].rstrip().endswith(":")):
                out.append(line)
        if is_def:
            out.append("")
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


def reduced_script(facts: dict[str, str], env: dict[str, str], body: str, passes_in: list[str] | None = None,
                   frozen: bool = False, crash: bool = False) -> str:
    """The text of CASE.min.py: the fixed line (crash: the script is killed by a signal, not failing with
    exit 1), the provenance (frozen: the script's own checks vouched for the reduction, not a passing
    cell), the variables kept, the code."""
    head = [CRASH_HEAD if crash else REDUCED_HEAD, *provenance(facts, list(passes_in or []), frozen),
            *env_lines(env, body)]
    return "\n".join([*head, format_code(body)])
