"""The rewrites that move code without changing when it runs (harness/reduce/ordered.py), which the
reducer applies to frozen checks: each candidate must run the same operations in the same order as the
script it came from. Generated programs whose every operation logs itself (a call, a property, an
operator) tell a rewrite that reorders or drops one from one that keeps the run."""

from __future__ import annotations

import ast
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reduce.ordered import fold_first_reads, inline_expressions

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


def _expr(draw, names: list[str], depth: int = 0) -> str:
    atoms = [*names, "Box(1)", "3", "math.pi"] if names else ["Box(1)", "3"]
    if depth > 2:
        return draw(st.sampled_from(atoms))
    kind = draw(st.sampled_from(["atom", "g", "p", "m", "add", "helper", "pair", "cond"]))
    sub = lambda: _expr(draw, names, depth + 1)
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


@st.composite
def programs(draw) -> str:
    lines: list[str] = []
    names: list[str] = []
    last = None
    for i in range(draw(st.integers(2, 7))):
        name = f"v{i}" if not names or draw(st.booleans()) else draw(st.sampled_from(names))
        if last is not None and draw(st.booleans()):  # read the name just assigned: what a fold may move
            prev = last
            shape = draw(st.sampled_from(["{p}.m({e})", "{p} + {e}", "g({p}, {e})", "first({p}, {e})", "{p}.p",
                                          "one({p})", "{e} + {p}", "[{p}, {e}]"]))
            value = shape.format(p=prev, e=_expr(draw, names))
        else:
            value = _expr(draw, names)
        lines.append(f"{name} = {value}")
        last = name
        if name not in names:
            names.append(name)
    lines.append(f"log.append(('end', val([{', '.join(names)}])))")
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
            for cand in [*fold_first_reads(c), *inline_expressions(c)]:
                if cand not in seen and len(seen) < steps:
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
        ''')
    src = PRELUDE + body
    tree_text = ast.unparse(ast.parse(src))
    for cand in fold_first_reads(src):
        assert "g(2) + g(1)" not in cand  # a read after code ran: g(2) would run before g(1)
        assert "print(g(3)" not in cand  # read twice
        assert "m = g(8).m()" not in cand  # a closure reads it
        assert "n2 = g(9).m()" not in cand  # read again after the next statement, which does not rebind it
    for cand in inline_expressions(src):
        assert "swapped" in cand and "late(" in cand and "unread(" in cand, cand  # order, order, a dropped call
    assert tree_text  # the script itself parses and is left as it was where nothing applies


def test_a_helper_reading_a_name_the_caller_binds_is_left():
    src = PRELUDE + "def caller(g):\n    return one(g)\nv0 = caller(Box(1))\n"
    assert not any("def one" not in c for c in inline_expressions(src))
