"""A failing script's signature: what a reduced script must keep to be the same finding.

- the exit status (1 for an exception, the signal for a crash);
- the exception's type;
- the failure itself: the known issue's `match` regex in the output where the finding is a known
  issue with one, else the exception's message up to numbers (values, counts, addresses and line
  numbers may change as the script shrinks; the words may not);
- where it surfaced: the script's own statement at the innermost frame, as source (for a `raise`
  under an `if`, the condition too; for an assignment, an expression statement or a `return`, the
  expression it computes, so `out, = g(t)` may become `g(t)` and a helper's `return g(t)` its
  caller's `g(t)`; for an `assert`, its test: the message it raises is the failure above), so the
  check that fails is the original's, word for word, and a reduction cannot turn `if bug: raise`
  into a bare `raise`.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass

from harness.reduce.server import Run

_CRASH_LINE = re.compile(r'File "([^"]*)", line (\d+)')
# faulthandler's dump of one thread: "Current thread 0x... [name] (most recent call first):" (the thread
# that crashed) or "Thread 0x..." (another, or each at the alarm), then an indented `File "...", line N in
# FUNC` a frame up to a blank line
_THREAD_DUMP = re.compile(r"^(Current thread|Thread) 0x[0-9a-fA-F]+ (?:\[[^\]\n]*\] )?\(most recent call first\):\n"
                          r"((?:[ \t]+\S.*\n?)*)", re.MULTILINE)


@dataclass(frozen=True)
class Signature:
    status: int
    type: str | None
    failure: str | None  # the match regex's presence ("match"), or the message up to numbers
    where: str | None
    own_check: bool = False  # the script raised it (an assert, a `raise AssertionError`), not the library

    def describe(self) -> str:
        parts = [f"exit {self.status}"] + [p for p in (self.type, self.failure, self.where) if p]
        return "; ".join(p if len(p) < 200 else p[:197] + "..." for p in parts)


def up_to_numbers(message: str) -> str:
    """The message with every number (hex addresses, floats, counts, shapes' sizes) as `N`."""
    text = re.sub(r"0x[0-9a-fA-F]+", "N", message)
    text = re.sub(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?", "N", text)
    return re.sub(r"\s+", " ", text).strip()


def parents_of(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """Each node of tree -> the node holding it."""
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


class FoldedFStrings(ast.NodeTransformer):
    """An f-string's literal parts as its text: `f"{'nested'}: got {n}"` is `f'nested: got {n}'`, and
    `f"{f'call {step}'}: ..."` is `f"call {step}: ..."` (format(x, '') is str(x) for a str, int or bool).
    What statement_text says a statement is with (a fold is the same statement) and what
    harness.reduce.unfold.fold_literals writes."""

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        node.value = self.visit(node.value)  # a format spec stays as written: it must stay a JoinedStr
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        self.generic_visit(node)
        parts: list[ast.expr] = []
        values: list[ast.expr] = []
        for v in node.values:  # f"{f'call {step}'}: ..." is f"call {step}: ..."
            nested = isinstance(v, ast.FormattedValue) and v.conversion == -1 and v.format_spec is None
            values += v.value.values if nested and isinstance(v.value, ast.JoinedStr) else [v]  # type: ignore[attr-defined]
        for v in values:
            if (isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Constant)
                    and type(v.value.value) in (str, int, bool) and v.conversion == -1 and v.format_spec is None):
                v = ast.Constant(str(v.value.value))  # format(x, '') is str(x) for these
            if isinstance(v, ast.Constant) and parts and isinstance(parts[-1], ast.Constant):
                parts[-1] = ast.Constant(parts[-1].value + v.value)
            else:
                parts.append(v)
        if len(parts) == 1 and isinstance(parts[0], ast.Constant):
            return ast.copy_location(parts[0], node)
        node.values = parts
        return node


def _text(node: ast.AST) -> str:
    """node's source, its f-strings' literal parts folded into their text (FoldedFStrings)."""
    if any(isinstance(n, ast.JoinedStr) for n in ast.walk(node)):
        node = FoldedFStrings().visit(copy.deepcopy(node))
    return ast.unparse(node)


def statement_text(node: ast.stmt, parent: ast.AST | None) -> str | None:
    """A statement as the signature says it: canonical source; an assignment, expression statement
    or `return` by the expression it computes; a block by its header (`if COND`); a `raise`
    directly under an `if` with its condition (`if COND: raise ...`)."""
    if isinstance(node, (ast.If, ast.While)):
        return f"{'if' if isinstance(node, ast.If) else 'while'} {_text(node.test)}"  # its condition raised
    if isinstance(node, ast.For):
        return f"for {_text(node.target)} in {_text(node.iter)}"
    if not isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Assert,
                             ast.Import, ast.ImportFrom, ast.Delete)):
        return None  # a decorator, a def's or a with's header: no single statement to keep
    if isinstance(node, ast.Assert):
        return f"assert {_text(node.test)}"  # the check; its message is the signature's failure, up to numbers
    value = getattr(node, "value", None)
    binds = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
    if (isinstance(node, (ast.Expr, ast.Return, ast.Assign, ast.AnnAssign)) and value is not None
            and all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Starred, ast.Store)) for t in binds for n in ast.walk(t))):
        # what it computes: `out, = g(t)`, `g(t)` and `return g(t)` raise the same (an assignment to an
        # item or attribute, `h[mask] = 0.25`, is itself the operation: it stays whole)
        return _text(value)
    text = _text(node)
    if isinstance(node, ast.Raise) and isinstance(parent, ast.If) and node in parent.body:
        text = f"if {_text(parent.test)}: {text}"
    return text


def statement_texts(tree: ast.AST) -> set[str]:
    """Every statement of tree as statement_text says it (a cheap test that a candidate kept one)."""
    parents = parents_of(tree)
    return {t for n in ast.walk(tree) if isinstance(n, ast.stmt) for t in [statement_text(n, parents.get(n))] if t}


def statement_at(source: str, line: int | None) -> str | None:
    """The innermost statement of source that holds `line`, as statement_text says it."""
    if line is None:
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or (node.lineno, -(node.end_lineno or 0)) >= (best.lineno, -(best.end_lineno or 0)):
                best = node
    return None if best is None else statement_text(best, parents_of(tree).get(best))


def dumped_lines(output: str, name: str = "repro.py") -> list[int]:
    """The script's lines in faulthandler's dump, innermost first: the crashing thread's ("Current
    thread") where the dump has one, else the first thread whose frames hold the script."""
    threads = sorted(_THREAD_DUMP.finditer(output), key=lambda m: m.group(1) != "Current thread")
    for thread in threads:
        lines = [int(m.group(2)) for m in _CRASH_LINE.finditer(thread.group(2))
                 if m.group(1).endswith("/" + name) or m.group(1) == name]
        if lines:
            return lines
    return []


def _crash_line(output: str, path_name: str) -> int | None:
    """The script's innermost line in faulthandler's dump (most recent call first)."""
    lines = dumped_lines(output, path_name)
    if lines:
        return lines[0]
    for m in _CRASH_LINE.finditer(output):  # a dump this does not parse: the script's first frame named
        if m.group(1).endswith(path_name):
            return int(m.group(2))
    return None


def signature(run: Run, source: str, match: str | None) -> Signature:
    """The signature of one run of `source` (match: the known issue's regex, if it has one)."""
    rec = run.record or {}
    if run.status < 0:  # a crash or the alarm: the signal, and the script's line where faulthandler saw it
        return Signature(run.status, None, None, statement_at(source, _crash_line(run.output, "repro.py")))
    failure = None
    if run.status == 1 and rec:
        # Both: a known issue's match can be generic ("inconsistent with the original primal values"),
        # and a reducer finds another way to raise it; the message up to numbers keeps the dtypes and names.
        failure = up_to_numbers(rec["message"])
        if match:
            failure = ("match: " if re.search(match, run.output) else "no match: ") + failure
    where = statement_at(source, rec.get("line")) if rec else None
    # The script's own check: an assertion, or a `raise` of the script's. Not "the innermost frame is the
    # script's": jax filters its own frames out of tracebacks, so its errors look raised by the caller.
    own = rec.get("type") == "builtins.AssertionError" or bool(where and re.match(r"(raise\b|assert\b|if .*: raise\b)", where))
    return Signature(run.status, rec.get("type"), failure, where, bool(rec) and own)
