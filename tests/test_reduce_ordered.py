"""The rewrites that move code without changing when it runs (harness/reduce/ordered.py), which the
reducer applies to frozen checks: each candidate must run the same operations in the same order as the
script it came from. Generated programs whose every operation logs itself (a call, a property, an
operator) tell a rewrite that reorders or drops one from one that keeps the run."""

from __future__ import annotations

import ast
import itertools
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reduce.ordered import (
    conditional_assignments,
    fold_first_reads,
    inline_expressions,
)

PRELUDE = textwrap.dedent('''\
    import math
    log = []


    def val(o):
        return o.v if isinstance(o, Box) else [val(x) for x in o] if isinstance(o, list) else o


    class Box:
        def __init__(self, v):
            self.v = v

        @property
        def p(self):
            log.append(("p", self.v))
            return Box(self.v + 1)

        def m(self, *a):
            log.append(("m", self.v, len(a)))
            return Box(self.v * 2 + len(a))

        def __add__(self, o):
            log.append(("add", self.v, val(o)))
            return Box(self.v + (o.v if isinstance(o, Box) else o))


    def g(*a):
        log.append(("g", val(list(a))))
        return Box(len(log))


    def one(x):
        return g(x).m(1)


    def first(a, b):
        return a.m(b)


    def late(a, b):
        return g(a) + b


    def swapped(a, b):
        return b + a


    def unread(a, b):
        return g(a)


    def local_chain(x):
        y = g(x)
        y = y.p
        return y.m(y)
    ''')
HELPERS = ("one", "first", "late", "swapped", "unread", "local_chain")


def _expr(draw, names: list[str], depth: int = 0, outer: tuple[str, ...] = ()) -> str:
    """outer: the module's names a function may read."""
    atoms = [*names, *outer, "Box(1)", "3", "math.pi"] if names else ["Box(1)", "3"]
    if depth > 2:
        return draw(st.sampled_from(atoms))
    kind = draw(st.sampled_from(["atom", "g", "p", "m", "add", "helper", "pair", "cond"]))
    sub = lambda: _expr(draw, names, depth + 1, outer)
    if kind == "atom":
        return draw(st.sampled_from(atoms))
    if kind == "g":
        return f"g({', '.join(sub() for _ in range(draw(st.integers(0, 2))))})"
    if kind == "p":
        return f"({sub()}).p"
    if kind == "cond":  # evaluated only sometimes: what comes after it is not in a known order
        return f"({sub()} if {sub()} else {sub()})"
    if kind == "m":
        return f"Box(5).m({sub()})"
    if kind == "add":
        return f"(Box(6) + {sub()})"
    if kind == "pair":
        return f"[{sub()}, {sub()}]"
    helper = draw(st.sampled_from(HELPERS))
    if helper in ("one", "local_chain"):
        return f"{helper}({sub()})"
    return f"{helper}({sub()}, {sub()})"


def _assignment(draw, names: list[str], last: str | None, outer: tuple[str, ...]) -> tuple[str, str]:
    """(name, `name = value`): a new name or one already bound, reading the name just assigned or not."""
    name = f"v{len(names)}" if not names or draw(st.booleans()) else draw(st.sampled_from(names))
    if last is not None and draw(st.booleans()):  # read the name just assigned: what a fold may move
        shape = draw(st.sampled_from(["{p}.m({e})", "{p} + {e}", "g({p}, {e})", "first({p}, {e})", "{p}.p",
                                      "one({p})", "{e} + {p}", "[{p}, {e}]"]))
        value = shape.format(p=last, e=_expr(draw, names, outer=outer))
    else:
        value = _expr(draw, names, outer=outer)
    return name, f"{name} = {value}"


@st.composite
def programs(draw) -> str:
    """Straight-line assignments, some under an `if` on how much has run (len(log): any reordering
    shows), some in a loop that runs them twice (a value read again on the next pass) and some in a
    `try` whose handler logs the names bound before it (what it sees where one raised); at the top or
    in a function whose parameter is v0, which reads a module name, called beside module names of the
    same names as its locals."""
    in_function = draw(st.booleans())
    lines: list[str] = []
    names: list[str] = ["v0"] if in_function else []
    last = None
    for _ in range(draw(st.integers(2, 7))):
        kind = draw(st.sampled_from(["plain", "plain", "if", "loop", "try"]))
        indent = "" if kind == "plain" else "    "
        if kind == "if":
            lines.append(f"if len(log) % {draw(st.integers(2, 3))}:")
        elif kind == "loop":
            lines.append("for _ in range(2):")
        elif kind == "try":
            lines.append("try:")
        bound = list(names)
        for _ in range(1 if kind == "plain" else draw(st.integers(1, 3))):
            name, line = _assignment(draw, names, last, ("w0",) if in_function else ())
            lines.append(indent + line)
            last = name
            if name not in names:
                names.append(name)
        if kind == "try":  # what a handler sees of the names bound before (an int has no .m: it raises)
            lines += ["except Exception:", f"    log.append(('caught', val([{', '.join(bound)}])))"]
    shown = [n for n in names if draw(st.booleans())]  # a name read nowhere after is one a fold may take
    lines.append(f"log.append(('end', val([{', '.join(shown)}])))")
    if in_function:  # the module's own v0 and v1 are other variables, read after the call
        # w0, which main may read, is a global a fold must leave though w1 reads it next: main, written
        # above both, runs after them
        lines = ["def main(v0):", *("    " + ln for ln in lines), "w0 = Box(3)", "w1 = w0.m()", "v1 = Box(7)",
                 "v0 = g(v1)", "main(v0)", "log.append(('module', val([v0, v1, w1])))"]
    return PRELUDE + "\n".join(lines) + "\n"


def _run(code: str) -> list:
    """What the program did, in order, and how it stopped (an exception is part of the run)."""
    scope: dict = {}
    try:
        exec(compile(code, "<candidate>", "exec"), scope)  # noqa: S102 (the test's own generated programs)
    except Exception as exc:  # noqa: BLE001 (an int has no .m: the same stop either way)
        return [*scope.get("log", []), ("raised", type(exc).__name__, str(exc))]
    return scope["log"]


def _closure(code: str, steps: int = 30) -> list[str]:
    """code and what the rewrites make of it, each candidate of each rewrite, a few rounds deep."""
    seen, frontier = [code], [code]
    for _ in range(3):
        nxt = []
        for c in frontier:
            for cand in itertools.chain(fold_first_reads(c), inline_expressions(c), conditional_assignments(c)):
                if len(seen) >= steps:
                    return seen  # the rewrites are generators: a candidate past the limit is never made
                if cand not in seen:
                    seen.append(cand)
                    nxt.append(cand)
        frontier = nxt
    return seen


@settings(max_examples=150, deadline=None)
@given(programs())
def test_every_candidate_runs_the_same_operations_in_the_same_order(code):
    want = _run(code)
    for cand in _closure(code)[1:]:
        assert _run(cand) == want, cand


def test_the_examples_the_rewrites_exist_for():
    src = PRELUDE + "v0 = Box(1).m()\nv0 = v0.m(g())\nv1 = one(v0)\nv2 = unread(Box(2), v1)\n"
    folded = list(fold_first_reads(src))
    assert any("v0 = Box(1).m().m(g())" in c for c in folded), folded
    inlined = list(inline_expressions(src))
    assert any("v1 = g(v0).m(1)" in c and "def one" not in c for c in inlined), inlined


def test_what_would_run_in_another_order_or_not_at_all_is_left():
    body = textwrap.dedent('''\
        a = g(1)
        b = g(2) + a
        c = g(3)
        print(c, c)
        d = g(4)
        e = late(Box(1), d)
        f = swapped(g(5), g(6))
        h = unread(Box(1), g(7))
        k = g(8)
        def closure():
            return k
        m = k.m()
        n = g(9)
        n2 = n.m()
        print(n)
        class K:
            a = g(10)
            b = a.m()
        def shadow(x):
            v0 = g(x)
            v1 = v0.m()
            later = lambda: v1.p
            return later()
        ''')
    src = PRELUDE + body
    tree_text = ast.unparse(ast.parse(src))
    for cand in fold_first_reads(src):
        assert "g(2) + g(1)" not in cand  # a read after code ran: g(2) would run before g(1)
        assert "print(g(3)" not in cand  # read twice
        assert "m = g(8).m()" not in cand  # a closure reads it
        assert "n2 = g(9).m()" not in cand  # read again after the next statement, which does not rebind it
        assert "b = g(10).m()" not in cand  # a class's attribute
        assert "lambda: g(x).m().p" not in cand  # a lambda reads it
    assert any("v1 = g(x).m()" in c for c in fold_first_reads(src))  # a local, though the module has a v0 too
    for cand in inline_expressions(src):
        assert "swapped" in cand and "late(" in cand and "unread(" in cand, cand  # order, order, a dropped call
    assert tree_text  # the script itself parses and is left as it was where nothing applies


def test_a_helper_reading_a_name_the_caller_binds_is_left():
    src = PRELUDE + "def caller(g):\n    return one(g)\nv0 = caller(Box(1))\n"
    assert not any("def one" not in c for c in inline_expressions(src))


def test_a_value_a_loop_or_a_handler_could_see_again_is_left():
    """The two guards of a fold the generated programs reach seldom: a read before the assignment that a
    loop's next pass makes a read after it, and a handler that sees the value where the next statement
    raised. Each program runs differently once folded."""
    looped = PRELUDE + textwrap.dedent('''\
        v0 = Box(1)
        for _ in range(2):
            v1 = g(v0)
            v0 = Box(2).m(3)
            v2 = v0.p
        log.append(('end', val([v1, v2])))
        ''')
    handled = PRELUDE + textwrap.dedent('''\
        v0 = Box(1)
        try:
            v0 = Box(2).m()
            v0 = first(v0, (3).p)
        except Exception:
            log.append(('caught', val([v0])))
        ''')
    for src, folded in ((looped, "v2 = Box(2).m(3).p"), (handled, "v0 = first(Box(2).m(), 3 .p)")):
        cands = [c for c in fold_first_reads(src) if "def " in c]
        assert not any(folded in c for c in cands), folded
        assert all(_run(c) == _run(src) for c in cands)
    # the same shapes outside the loop and the try do fold, and run the same
    straight = PRELUDE + "v0 = Box(1)\nv1 = g(v0)\nv0 = Box(2).m(3)\nv2 = v0.p\nlog.append(('end', val([v1, v2])))\n"
    assert any("v2 = Box(2).m(3).p" in c and _run(c) == _run(straight) for c in fold_first_reads(straight))


def test_an_if_that_assigns_becomes_a_conditional_expression_only_over_a_bound_name():
    src = PRELUDE + "v0 = Box(1)\nif len(log) % 2:\n    v0 = v0.p\nif len(log):\n    v9 = g()\nlog.append(('end', val([v0])))\n"
    cands = list(conditional_assignments(src))
    assert any("v0 = v0.p if len(log) % 2 else v0" in c for c in cands), cands
    assert not any("else v9" in c for c in cands)  # v9 is bound only there: `else v9` would raise NameError
    assert all(_run(c) == _run(src) for c in cands)
