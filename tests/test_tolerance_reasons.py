"""Every tolerance in suites/ says why it is that size (issue 23): a static check over the source.

A tolerance is an `rtol=` / `atol=` argument, or a name with "tol" in it being assigned. One that
holds a number other than 0 must either be derived from the numerics helpers (ulp, gamma,
unit_roundoff, OP_ULPS, or the format's eps / spacing) or carry a `#` comment giving the reason,
on a line of its statement or in the comment block directly above it. So a new unexplained
tolerance anywhere under suites/ fails here, not only the ones that exist today.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "suites"
KEYWORDS = {"rtol", "atol"}
# Names whose use makes a tolerance derived from the format's rounding (harness/incell/numerics.py).
DERIVED = {"ulp", "gamma", "unit_roundoff", "OP_ULPS", "eps", "spacing", "finfo"}



@dataclass(frozen=True)
class Tolerance:
    path: str
    line: int
    text: str  # `rtol=1e-6` as written (the keyword or the assignment)


def _has_number(node: ast.AST) -> bool:
    """A non-zero number in the expression, other than an index (`DTYPES[d][1]` looks a tolerance up)."""
    indices = {id(n) for s in ast.walk(node) if isinstance(s, ast.Subscript) for n in ast.walk(s.slice)}
    return any(isinstance(n, ast.Constant) and type(n.value) in (int, float) and n.value != 0 and id(n) not in indices
               for n in ast.walk(node))


def _derived(node: ast.AST) -> bool:
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    return bool(names & DERIVED)


def _comment_lines(source: str) -> set[int]:
    return {tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT}


def _explained(stmt: ast.stmt, comments: set[int], lines: list[str]) -> bool:
    if any(line in comments for line in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1)):
        return True
    above = stmt.lineno - 1  # the comment block directly above the statement
    return above >= 1 and above in comments and lines[above - 1].lstrip().startswith("#")


def _tolerances(tree: ast.AST) -> list[tuple[ast.stmt, ast.AST, ast.AST]]:
    """(enclosing statement, the node to show, its value) for every tolerance in a module."""
    found = []
    for stmt in ast.walk(tree):
        if not isinstance(stmt, ast.stmt):
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is not None and any(isinstance(t, ast.Name) and "tol" in t.id.lower() for t in targets):
                found.append((stmt, stmt, stmt.value))
        # keywords of calls in this statement's own expressions (not in nested statements' bodies)
        for field in ("value", "test", "targets", "iter", "items"):
            sub = getattr(stmt, field, None)
            for part in sub if isinstance(sub, list) else [sub]:
                if not isinstance(part, ast.AST):
                    continue
                for kw in ast.walk(part):
                    if isinstance(kw, ast.keyword) and kw.arg in KEYWORDS:
                        found.append((stmt, kw, kw.value))
    return found


def unexplained(path: Path, source: str | None = None) -> list[Tolerance]:
    """The tolerances of one file that hold a number, are not derived, and give no reason."""
    source = path.read_text() if source is None else source
    rel = path.relative_to(ROOT).as_posix() if path.is_absolute() and ROOT in path.parents else str(path)
    tree, comments, lines = ast.parse(source), _comment_lines(source), source.splitlines()
    out = []
    for stmt, node, value in _tolerances(tree):
        if _has_number(value) and not _derived(value) and not _explained(stmt, comments, lines):
            out.append(Tolerance(rel, node.lineno, ast.get_source_segment(source, node) or ""))
    return out


def _all_unexplained() -> list[Tolerance]:
    return [t for p in sorted(SUITES.rglob("*.py")) for t in unexplained(p)]


def test_every_tolerance_in_the_suites_says_why_it_is_that_size():
    missing = _all_unexplained()
    assert not missing, "tolerances without a reason (a `#` comment on the statement or directly above it, " \
        "or a bound from harness/incell/numerics.py):\n" + "\n".join(f"  {t.path}:{t.line}: {t.text}" for t in missing)


def test_the_check_fails_on_a_bare_tolerance_and_accepts_a_reason_or_a_derived_bound(tmp_path):
    src = (
        "close(a, b, rtol=1e-6, atol=0)\n"                      # 1: bare: caught
        "close(a, b, rtol=0, atol=0)\n"                         # exact: nothing to explain
        "close(a, b, rtol=1e-5)  # n-term sum: n eps\n"         # reason on the line
        "# 8 ulps at 1.0\n"
        "close(a, b,\n      atol=1e-6)\n"                        # reason directly above
        "close(a, b, atol=4 * ulp(b, 'float32'))\n"             # derived
        "TOL = dict(rtol=2e-5, atol=2e-5)\n"                    # 8: bare assignment: caught (twice: name and keywords)
        "tol = 1e-3 if low else 0\n"                            # 9: bare: caught
        "x = 1e-6\n"                                            # not a tolerance
        "tol = TABLE[dtype][1]\n"                               # a look-up, not a literal
    )
    path = tmp_path / "suite_case.py"
    path.write_text(src)
    got = [(t.line, t.text) for t in unexplained(path)]
    assert (1, "rtol=1e-6") in got and (9, "tol = 1e-3 if low else 0") in got
    assert {line for line, _ in got} == {1, 8, 9}, got
