"""A standalone script's parts as the reducer sees them, and the reduced script's text.

The exporter (harness/report/standalone.py) writes one fixed comment line, the provenance as string
literals (CASE; CELL, KNOWN_ISSUE, EXAMPLE; INSTALL, ...), `import os` and the cell's variables in one
`os.environ.update({k: v for k, v in {...}.items() if k not in os.environ})`, then the code (earlier
exports: two comment lines, a literal and an `os.environ.setdefault(K, V)` per line, read the same).
`split_script` reads the literals and the variables back with `ast.literal_eval` (never running
anything) and leaves the code to reduce.

The reduced script (`render`) is shorter at the top too: one fixed comment line, the provenance a
maintainer needs as literals on at most three lines (the case id, the cell, where it passes, the
known issue, the pip line), and the variables the reduction could not drop in one
`os.environ.update({...})`. Every value is checked against a grammar before it is written (a node id,
a cell name, a known issue of matrices/known_issues, a pip line of parsed words), and written with
`ascii()`; a value that fails its check is left out, never put in a comment.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from typing import Mapping

from harness.reduce.names import undefined_names
from harness.report.grammar import is_env_name, is_node_id, pip_words

# The exporter's header literals (harness.report.standalone.HEADER_NAMES), kept here by name only, and the
# reduced script's own (`provenance`): a CASE.min.py read back has the same preamble as the script it came from.
FACT_NAMES = ("CASE", "CELL", "KNOWN_ISSUE", "INSTALL", "INSTALL_NOTE", "SOURCES", "EXAMPLE", "PASSES_IN", "CHECKED_BY")
# The reduced script's one fixed comment line: no value of the results is ever in it.
REDUCED_HEAD = ("# Reduced reproducer (xla-seams): exit 1 as CASE's full script does in CELL (the same exception, message"
                " and statement), 0 once fixed (as in PASSES_IN). Env: INSTALL.")
# A crash's: once fixed the call may raise instead (an error where torch's other in-place ops raise one), so
# no exit status is promised, only that the signal is gone.
CRASH_HEAD = ("# Reduced reproducer (xla-seams): killed by the same signal as CASE's full script in CELL, at the same"
              " statement; not killed once fixed. Env: INSTALL.")
_CELL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.]*-(cpu|gpu|tpu)")
_ISSUE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_PLACEHOLDER = re.compile(r"<[A-Za-z0-9][A-Za-z0-9_.-]* source>")  # standalone.source_placeholder


@dataclass
class Parts:
    """A standalone script: its provenance literals, the cell's variables it sets, the code below."""

    facts: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    body: str = ""


def env_statement(node: ast.stmt) -> dict[str, str] | None:
    """{K: V} for `os.environ.setdefault('K', 'V')`, `os.environ.update({...})` or `os.environ['K'] = 'V'`."""
    def literal(n: ast.AST) -> object:
        try:
            return ast.literal_eval(n)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None

    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
        t = node.targets[0]
        if ast.unparse(t.value) == "os.environ":
            k, v = literal(t.slice), literal(node.value)
            return {k: v} if isinstance(k, str) and isinstance(v, str) else None
        return None
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and not node.value.keywords):
        return None
    call = node.value
    if not isinstance(call.func, ast.Attribute) or ast.unparse(call.func.value) != "os.environ":
        return None
    args = [literal(a) for a in call.args]
    if call.func.attr == "setdefault" and len(args) == 2 and all(isinstance(a, str) for a in args):
        return {args[0]: args[1]}  # type: ignore[dict-item]
    if call.func.attr == "update" and len(call.args) == 1 and isinstance(call.args[0], ast.DictComp):
        # the exporter's `update({k: v for k, v in {...}.items() if k not in os.environ})`: its dict literal
        gen = call.args[0].generators
        it = gen[0].iter if len(gen) == 1 else None
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items"
                and not it.args and isinstance(it.func.value, ast.Dict)):
            args = [literal(it.func.value)]
    if call.func.attr == "update" and len(args) == 1 and isinstance(args[0], dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in args[0].items()):
        return dict(args[0])
    return None


def _facts(node: ast.stmt) -> dict[str, str] | None:
    """{NAME: 'value'} for `NAME = 'value'` or `A, B = 'a', 'b'` where every name is one of FACT_NAMES."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return None
    target, value = node.targets[0], node.value
    names = [target] if isinstance(target, ast.Name) else list(target.elts) if isinstance(target, ast.Tuple) else []
    values = [value] if isinstance(target, ast.Name) else list(value.elts) if isinstance(value, ast.Tuple) else []
    if not names or len(names) != len(values):
        return None
    if not all(isinstance(n, ast.Name) and n.id in FACT_NAMES for n in names):
        return None
    if not all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in values):
        return None
    return {n.id: v.value for n, v in zip(names, values)}  # type: ignore[attr-defined]


def preamble_length(tree: ast.Module) -> int:
    """How many statements lead tree.body as the exporter's preamble (provenance literals, `import os`, the
    environment statements): the script's code starts at this index."""
    for i, node in enumerate(tree.body):
        plain_os = isinstance(node, ast.Import) and [(a.name, a.asname) for a in node.names] == [("os", None)]
        if env_statement(node) is None and not plain_os and _facts(node) is None:
            return i
    return len(tree.body)


def split_script(source: str) -> Parts:
    """The script's leading provenance literals and environment preamble, and the code after them."""
    tree = ast.parse(source)
    parts = Parts()
    first = preamble_length(tree)
    for node in tree.body[:first]:
        parts.env.update({k: v for k, v in (env_statement(node) or {}).items() if is_env_name(k)})
        parts.facts.update(_facts(node) or {})
    lines = source.splitlines()
    start = len(lines)
    if first < len(tree.body):
        node = tree.body[first]
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    parts.body = "\n".join(lines[start:]) + "\n"
    return parts


def env_lines(env: Mapping[str, str], body: str) -> list[str]:
    """`import os` and one `os.environ.update({...})` (or nothing), what the body needs `os` for too."""
    needs_os = "os" in undefined_names(ast.parse(body))
    out = ["import os"] if env or needs_os else []
    if env:
        out.append("os.environ.update({" + ", ".join(f"{ascii(k)}: {ascii(v)}" for k, v in env.items()) + "})")
    return out


def assemble(env: Mapping[str, str], body: str) -> str:
    """What a candidate runs: the environment preamble it keeps, then its code."""
    return "\n".join([*env_lines(env, body), body.rstrip("\n")]) + "\n"


def install_ok(line: str) -> bool:
    """A pip line of parsed words only (index options with a URL, PEP 508 requirements, a source placeholder)."""
    if not line.isascii() or not line.isprintable():
        return False
    try:
        words = shlex.split(line)
    except ValueError:
        return False
    if words[:2] != ["pip", "install"] or len(words) == 2:
        return False
    plain = [w if not _PLACEHOLDER.fullmatch(w) else "placeholder" for w in words]
    return pip_words({"install_line": shlex.join(plain)}) == plain


def known_issue(value: str | None) -> tuple[str, str] | None:
    """(id, link) of the known issue a script's KNOWN_ISSUE names, from the project's own known issues."""
    from harness.judge.expectations import load_expectations

    ident = (value or "").split(":", 1)[0].strip()
    if not _ISSUE_ID.fullmatch(ident):
        return None
    exp = next((e for e in load_expectations() if e.id == ident), None)
    return (exp.id, exp.link or "none filed") if exp else None


# CHECKED_BY where no cell passes the case and the script's own checks were frozen (harness.reduce.checks):
# a maintainer then knows the reduction was vouched for by the original checks, not by a passing run.
FROZEN_NOTE = "its own checks, kept word for word (no cell where the case passes)"


def provenance(facts: Mapping[str, str], passes_in: list[str], frozen: bool = False) -> list[str]:
    """At most three lines of literals, each value checked: the case id, the cell (and where the case
    passes, or that the frozen checks vouched for it, and the known issue), the pip line."""
    out = []
    case = facts.get("CASE")
    if is_node_id(case):
        out.append(f"CASE = {ascii(case)}")
    names, values = [], []
    cell = (facts.get("CELL") or "").split(" (", 1)[0]  # the exporter writes 'NAME (DEVICE)'; the name says it
    if _CELL.fullmatch(cell):
        names.append("CELL"), values.append(cell)
    passes = [c for c in passes_in if _CELL.fullmatch(c)]
    if passes:
        names.append("PASSES_IN"), values.append(", ".join(passes))
    elif frozen:
        names.append("CHECKED_BY"), values.append(FROZEN_NOTE)
    issue = known_issue(facts.get("KNOWN_ISSUE"))
    if issue:
        names.append("KNOWN_ISSUE"), values.append(f"{issue[0]}: {issue[1]}")
    if names:
        out.append(f"{', '.join(names)} = {', '.join(ascii(v) for v in values)}")
    install = facts.get("INSTALL") or ""
    if install_ok(install):
        out.append(f"INSTALL = {ascii(install)}")
    return out


def split_preamble(source: str) -> tuple[str, str]:
    """(header comments and the env preamble, the code to reduce): the text before the code, as is."""
    body = split_script(source).body
    lines = source.splitlines()
    head = lines[:len(lines) - len(body.splitlines())]
    return "\n".join(head).rstrip("\n") + "\n", body
