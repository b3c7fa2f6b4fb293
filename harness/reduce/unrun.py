"""Drop what the failing run never ran: the branches not taken, the handlers that caught nothing, the
statements after the failure, read off a trace of the script's own lines (harness.incell.forkserver,
`lines`).

That run is the same run without them: a statement that never ran cannot change it. So this rewrite
may touch what nothing else may, the checks and helpers the reducer freezes where no cell passes the
case (harness.reduce.checks): `to_numpy`'s branch for a type never seen, a refusal's `else: raise
AssertionError('DID NOT RAISE')`, a compat helper's other spelling. Where the trace's steps show an
`if` whose test only reads (no call but `isinstance` and its kind) went the same way every time it
ran, the `if` goes too and the branch it took stands in its place (`to_numpy`'s `if arr.dtype.kind ==
'f':` around the cast that every call made): the test's outcome was the same each time, so the run is
the same. The reducer takes the result as
the script to reduce (and reads its frozen set from it) only where it fails the same way.

A check never goes, though it never ran: an `assert`, a `raise` of the script's own, a call of an
assertion helper, and the branch or handler holding one (`if abs(a - b) > tol: raise ...` in the
helper of a precondition that passed). It did not fail in this run, but it is what fails a candidate
that guts what it judges: pruned, the precondition would hold for anything, and the frozen checks
would vouch for nothing.

What it leaves, though no line of it ran: a function's body that never ran (a function the run never
called, or called only on a thread the trace does not see: a C thread's callback, autograd's device
thread), a loop's body that ran zero times, and the statements that run no bytecode of their own
(`global`, `nonlocal`, a bare annotation, `break`, `continue`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection

from harness.reduce.checks import checks_of
from harness.reduce.transforms import runs_code

_KEEP = (ast.Global, ast.Nonlocal, ast.Break, ast.Continue, ast.Pass)
_Held = Callable[[ast.AST], bool]  # whether a node holds a check (never pruned)
_PURE_CALLS = frozenset({"isinstance", "issubclass", "hasattr", "callable", "len", "type", "str", "repr"})


def _header(stmt: ast.stmt) -> range:
    """The lines a statement runs on its own: a simple statement's every line; a compound one's up to
    its first block (a def's decorators and defaults, an if's test, a for's target and sequence)."""
    first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", []))])
    blocks = [s for f in ("body", "orelse", "finalbody", "handlers") for s in getattr(stmt, f, []) or []]
    if isinstance(stmt, ast.Match):
        blocks = [s for c in stmt.cases for s in c.body]
    if not blocks:
        return range(first, (stmt.end_lineno or stmt.lineno) + 1)
    return range(first, max(first, min(b.lineno for b in blocks)))


def _ran(stmt: ast.stmt, lines: Collection[int]) -> bool:
    if isinstance(stmt, _KEEP) or (isinstance(stmt, ast.AnnAssign) and stmt.value is None):
        return True  # no bytecode of its own (or nothing to gain): never judged by the trace
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
        return True
    return any(n in lines for n in _header(stmt))


def _any_ran(block: list[ast.stmt], lines: Collection[int]) -> bool:
    return any(_ran(s, lines) and not isinstance(s, _KEEP) for s in block)


def _gone(block: list[ast.stmt], lines: Collection[int], held: _Held) -> bool:
    """Whether a block may go whole: none of it ran and it holds no check."""
    return not _any_ran(block, lines) and not any(held(s) for s in block)


def _span(block: list[ast.stmt]) -> range:
    return range(block[0].lineno, (block[-1].end_lineno or block[-1].lineno) + 1) if block else range(0)


def _always(stmt: ast.If, steps: Collection[tuple[int, int]]) -> list[ast.stmt] | None:
    """The branch an `if` took every time its test ran, read off the steps from the test's lines to the
    next line its frame ran (None: it went both ways, or never ran, or the trace cannot tell: a branch
    sharing the test's line, a test whose own frame (a comprehension's) returned)."""
    test = range(stmt.lineno, (stmt.test.end_lineno or stmt.lineno) + 1)
    if stmt.body[0].lineno in test or (stmt.orelse and stmt.orelse[0].lineno in test):
        return None
    went = {b for a, b in steps if a in test and b not in test}
    for branch in (stmt.body, stmt.orelse):
        if went and branch and went <= set(_span(branch)):
            return branch
    return None


def _block(block: list[ast.stmt], lines: Collection[int], held: _Held,
           steps: Collection[tuple[int, int]] = ()) -> list[ast.stmt]:
    """block without what never ran (a check stays), each compound statement that ran pruned within."""
    out: list[ast.stmt] = []
    for stmt in block:
        if not _ran(stmt, lines):
            if held(stmt):
                out.append(stmt)
            continue
        out += _statement(stmt, lines, held, steps)
    return out or [ast.Pass()]


def _statement(stmt: ast.stmt, lines: Collection[int], held: _Held,
               steps: Collection[tuple[int, int]] = ()) -> list[ast.stmt]:
    """What stands for a statement that ran: itself with its untaken parts gone."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if _any_ran(stmt.body, lines):  # else never called here (or on a thread the trace misses): whole
            stmt.body = _block(stmt.body, lines, held, steps)
        return [stmt]
    if isinstance(stmt, ast.ClassDef):  # its body ran when it was defined; a method that never ran stays whole
        stmt.body = _block(stmt.body, lines, held, steps)
        return [stmt]
    if isinstance(stmt, ast.If):
        taken = _always(stmt, steps)
        if taken is not None and not held(stmt) and not runs_code(stmt.test, _PURE_CALLS):
            # the test held every time and reads only: the branch alone is the same run (the other
            # never ran and holds no check: `held` covers the whole `if`)
            return _block(taken, lines, held, steps)
        body_goes = _gone(stmt.body, lines, held)
        else_goes = not stmt.orelse or _gone(stmt.orelse, lines, held)
        if not body_goes and not else_goes:  # both ran (in a loop, called twice) or hold a check
            stmt.body, stmt.orelse = _block(stmt.body, lines, held, steps), _block(stmt.orelse, lines, held, steps)
            return [stmt]
        if not body_goes:
            stmt.body, stmt.orelse = _block(stmt.body, lines, held, steps), []
            return [stmt]
        if not else_goes:  # `if c: A else: B` where only B ran: `if not c: B`
            test = stmt.test.operand if isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not) \
                else ast.UnaryOp(ast.Not(), stmt.test)
            return [ast.If(test, _block(stmt.orelse, lines, held, steps), [])]
        # neither block ran: the test is what ran (kept as a statement where it may run code)
        return [ast.Expr(stmt.test)] if runs_code(stmt.test, _PURE_CALLS) else []
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
        if _any_ran(stmt.body, lines):
            stmt.body = _block(stmt.body, lines, held, steps)
        stmt.orelse = [] if _gone(stmt.orelse, lines, held) else _block(stmt.orelse, lines, held, steps)
        return [stmt]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        stmt.body = _block(stmt.body, lines, held, steps)
        return [stmt]
    if isinstance(stmt, ast.Try):  # a handler that never ran caught nothing here: it goes (unless it checks)
        handlers = [h for h in stmt.handlers if not _gone(h.body, lines, held)]
        for h in handlers:
            h.body = _block(h.body, lines, held, steps)
        body = _block(stmt.body, lines, held, steps)
        orelse = [] if _gone(stmt.orelse, lines, held) else _block(stmt.orelse, lines, held, steps)
        final = _block(stmt.finalbody, lines, held, steps) if stmt.finalbody else []
        if not handlers and not final:
            return [s for s in body + orelse if not isinstance(s, ast.Pass)] or [ast.Pass()]
        if not handlers:
            return [ast.Try(body + orelse, [], [], final)]
        stmt.handlers, stmt.body, stmt.orelse, stmt.finalbody = handlers, body, orelse, final
        return [stmt]
    return [stmt]


def drop_unrun(source: str, lines: Collection[int], steps: Collection[tuple[int, int]] = ()) -> str:
    """source without the statements and branches that never ran (lines: the source's line numbers that
    ran, as harness.reduce.server's Run.lines has them) and, where steps (Run.steps) show an `if` that
    read only went one way every time, without the `if`: that branch in its place."""
    tree = ast.parse(source)
    is_check = checks_of(tree)
    checked = {id(n) for n in ast.walk(tree) if isinstance(n, ast.stmt)
               and any(isinstance(s, ast.stmt) and is_check(s) for s in ast.walk(n))}

    def held(node: ast.AST) -> bool:
        return id(node) in checked

    tree.body = [s for s in _block(tree.body, lines, held, steps) if not isinstance(s, ast.Pass)] or [ast.Pass()]
    return ast.unparse(ast.fix_missing_locations(tree))
