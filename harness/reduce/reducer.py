"""Reduce a failing standalone script to what still fails the same way (pysource-minimize does the
search; this module says what "the same way" is and runs the candidates).

The script's header (comments) and environment preamble (`import os`, `os.environ.setdefault(...)`)
are kept as they are: the cell's variables must be set before jax or torch_xla starts, in the
script, for a maintainer who runs it anywhere, and a candidate that dropped them would still pass
here (the fork server runs under them). Only the code below is reduced, under the predicate that
its run has the original's signature (harness.reduce.signature).
"""

from __future__ import annotations

import ast
import hashlib
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import pysource_minimize

from harness.reduce.names import undefined_names
from harness.reduce.server import ForkServer
from harness.reduce.signature import Signature, signature, statement_texts

MIN_TIMEOUT_S = 10  # a candidate's alarm: this, or 3x the original's run, whichever is more
_RENAMED = "unique_name_"  # pysource-minimize's renaming of names: rejected, the names stay readable


class _OutOfBudget(Exception):
    """Raised by the predicate once the budget is spent: the search stops, the last kept candidate stands."""


class NotReducible(Exception):
    """The script cannot be reduced (it does not fail, or its failure is flaky): the reason."""


@dataclass
class Reduction:
    """What the reducer did: the reduced code (below the kept preamble) and its figures."""

    preamble: str
    body: str
    signature: Signature
    candidates: int = 0
    ran: int = 0
    seconds: float = 0.0
    budget_hit: bool = False
    contrast: list[str] = field(default_factory=list)  # cells where every kept candidate passed


def split_preamble(source: str) -> tuple[str, str]:
    """(header comments and the env preamble, the code to reduce)."""
    lines = source.splitlines()
    i = 0
    while i < len(lines) and (lines[i].startswith("#") or lines[i].strip() in ("", "import os")
                              or lines[i].startswith("os.environ.setdefault(")):
        i += 1
    return "\n".join(lines[:i]).rstrip("\n") + "\n", "\n".join(lines[i:]) + "\n"


def reduce_script(source: str, server: ForkServer, match: str | None, *, contrast: Sequence[ForkServer] = (),
                  budget_s: float = 300, say: Callable[[str], None] = lambda _m: None) -> Reduction:
    """Reduce source (a failing standalone script) under its signature; raises NotReducible.

    contrast: servers of cells where the case passes (the fixing release first) and the full script
    exits 0: every kept candidate must exit 0 there too, so the reduction keeps the bug, not merely
    a way to raise the same error (a reducer left alone turns a wrong gradient into a wrong call)."""
    start = time.monotonic()
    preamble, body = split_preamble(source)
    try:
        ast.parse(body)
    except SyntaxError as exc:
        raise NotReducible(f"the script does not parse: {exc}") from None
    first = server.run(source, 600)
    sig = signature(first, source, match)
    if sig.status in (0, 125):
        raise NotReducible(f"the script does not fail here (exit {sig.status}): nothing to keep")
    again = server.run(source, 600)
    sig2 = signature(again, source, match)
    if sig2 != sig:
        raise NotReducible(f"flaky signature: two runs of the original disagree ({sig.describe()} / {sig2.describe()})")
    if match and str(sig.failure).startswith("no match"):
        raise NotReducible("the known issue's match is not in the script's output: its failure is another one")
    contrast = [c for c in contrast if c.run(source, 600).status == 0]  # else that cell cannot tell the bug apart
    if sig.own_check and not contrast:
        # An assertion fails as surely when the reducer guts what it checks ("the compiled module lost the
        # host placement" once the host computation is gone): only a cell where it passes tells them apart.
        raise NotReducible("the failure is the script's own check and no cell where the case passes (and the "
                           "full script exits 0) is given to tell the bug from a reduction that broke the check; "
                           "pass --passes-in CELL")
    timeout = max(MIN_TIMEOUT_S, int(3 * again.seconds) + 1)  # the first run also waited for the server's imports
    allowed = undefined_names(ast.parse(source))  # what the original itself leaves undefined (never reached)
    red = Reduction(preamble, body, sig, contrast=[c.name for c in contrast])
    say(f"signature: {sig.describe()}; candidate timeout {timeout} s; "
        f"must pass in: {', '.join(red.contrast) or 'no contrast cell'}")
    seen: dict[str, bool] = {}
    tidying = False  # the last check (the tidied script) runs past the budget: one run
    trace = bool(os.environ.get("SEAMS_REDUCE_TRACE"))

    def keeps(candidate: str) -> bool:
        red.candidates += 1
        key = hashlib.sha256(candidate.encode()).hexdigest()
        if key in seen:
            return seen[key]
        if _RENAMED in candidate:
            return False
        if not tidying and time.monotonic() - start > 0.9 * budget_s:  # room for the run in flight and the tidy one
            red.budget_hit = True
            raise _OutOfBudget
        ok = False
        full = preamble + candidate
        tree = ast.parse(full)
        # cheap first: the failing statement must still be there, word for word, and every name defined
        if (sig.where is None or sig.where in statement_texts(tree)) and not undefined_names(tree) - allowed:
            red.ran += 1
            run = server.run(full, timeout)
            ok = signature(run, full, match) == sig
            ok = ok and all(c.run(full, timeout).status == 0 for c in contrast)
            if trace:
                say(f"    {time.monotonic() - start:6.1f} s: run {red.ran} {run.seconds:.1f} s exit {run.status}: "
                    f"{'kept' if ok else 'rejected'} ({len(full.splitlines())} lines)")
        seen[key] = ok
        if ok:
            red.body = candidate
        return ok

    try:
        body = drop_statements(ast.unparse(ast.parse(body)), keeps)
        red.body = pysource_minimize.minimize(body, keeps, retries=0)
    except _OutOfBudget:
        pass  # red.body is the last candidate the predicate kept: the search's current state
    except pysource_minimize.CouldNotMinimize as exc:
        raise NotReducible(str(exc)) from None
    tidying = True
    tidy = without_bare_constants(red.body)
    if tidy != red.body and keeps(tidy):  # checked like any candidate
        red.body = tidy
    red.seconds = time.monotonic() - start
    return red


def _preorder(tree: ast.AST) -> list[tuple[list[ast.stmt], ast.stmt]]:
    """(the list holding it, the statement) for every statement, in document order."""
    out: list[tuple[list[ast.stmt], ast.stmt]] = []

    def visit(node: ast.AST) -> None:
        for _field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.stmt):
                        out.append((value, item))
                    if isinstance(item, ast.AST):
                        visit(item)
            elif isinstance(value, ast.AST):
                visit(value)

    visit(tree)
    return out


def drop_statements(code: str, keeps: Callable[[str], bool]) -> str:
    """Delete single statements, the last first, until none can go (pysource-minimize's first pass
    goes top-level first, where a helper cannot go while a line inside a function still uses it:
    on a 100-line script that is most of a minute's budget spent on nothing)."""
    for _ in range(3):
        changed = False
        k = len(_preorder(ast.parse(code))) - 1
        while k >= 0:
            tree = ast.parse(code)
            holder, stmt = _preorder(tree)[k]
            holder.remove(stmt)
            if not holder and holder is not tree.body:  # ast: a block is never empty
                holder.append(ast.Pass())
            candidate = ast.unparse(tree)
            if candidate != code and keeps(candidate):
                code, changed = candidate, True
            k -= 1  # statements before k keep their places; k's subtree went with it or was tried
        if not changed:
            break
    return code


def without_bare_constants(code: str) -> str:
    """code without statements that are a bare constant (`0`: what pysource-minimize leaves where it
    replaced an expression statement; they do nothing, and a reader wonders why they are there)."""
    tree = ast.parse(code)
    for holder, stmt in reversed(_preorder(tree)):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            holder.remove(stmt)
            if not holder and holder is not tree.body:
                holder.append(ast.Pass())
    return ast.unparse(tree)
