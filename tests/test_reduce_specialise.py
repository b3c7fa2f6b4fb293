"""The reducer's specialising rewrites (harness/reduce/specialise.py). The builder a generated structure
case leaves is evaluated on templates hypothesis draws from the whole space the scenarios draw from (dicts,
lists, tuples, namedtuples, None, the leaf markers, empty containers, nested), and each candidate is run
beside the original: the same value, leaf for leaf and object for object. Then what the evaluator must
give up on, and the smaller rewrites on the shapes they take and the ones they must leave."""

from __future__ import annotations

import ast
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reduce import specialise as sp
from harness.reduce import transforms

# The three builders the structure scenarios leave after reduction (suites/call_jax/test_structure.py and
# test_properties.py): a leaf marked by a (str, int) pair, by a 2-tuple whose name says which argument,
# and a namedtuple kept with its second field the leaf.
BUILDERS = {
    "marked": """
        def build(template, a, b):
            if len(template) == 2 and isinstance(template[0], str):
                return a
            if isinstance(template, Pair):
                return Pair(template.first, b)
            if isinstance(template, dict):
                return {key: build(v, a, b) for key, v in template.items()}
            return type(template)((build(v, a, b) for v in template))
        """,
    "named": """
        def build(template, a, b):
            if template is None:
                return None
            if isinstance(template, tuple) and len(template) == 2:
                name, k = template
                return a if name else b
            if isinstance(template, dict):
                return {key: build(v, a, b) for key, v in template.items()}
            return type(template)((build(v, a, b) for v in template))
        """,
    "listed": """
        def build(template, a, b):
            if template is None:
                return None
            elif not isinstance(template, (list, tuple, dict)):
                return a if template else b
            if isinstance(template, dict):
                return dict([(k, build(v, a, b)) for k, v in template.items() if k != 'skip'])
            out = [build(v, a, b) for v in template]
            return tuple(out) if isinstance(template, tuple) else list(out)
        """,
}
HEAD = "import collections\nPair = collections.namedtuple('Pair', ['first', 'second'])\n"


class Leaf:
    """A distinct object per argument: the candidate must put each exactly where the builder did."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


def _run(code: str) -> object:
    scope: dict[str, object] = {"__name__": "__main__", "A": Leaf("a"), "B": Leaf("b")}
    exec(compile(code, "<candidate>", "exec"), scope)  # noqa: S102 - the test's own code
    return scope["result"]


def _same(x: object, y: object) -> bool:
    """Equal, with the same types all the way down (a namedtuple is not a tuple here) and the same argument at each leaf."""
    if isinstance(x, Leaf) or isinstance(y, Leaf):
        return isinstance(x, Leaf) and isinstance(y, Leaf) and x.name == y.name  # each run makes its own
    if type(x).__name__ != type(y).__name__:
        return False
    if isinstance(x, dict):
        return list(x) == list(y) and all(_same(x[k], y[k]) for k in x)  # type: ignore[index]
    if isinstance(x, (tuple, list)):
        return len(x) == len(y) and all(_same(p, q) for p, q in zip(x, y))  # type: ignore[arg-type]
    return x == y


def _templates(kind: str) -> st.SearchStrategy[str]:
    """Template source as the scenarios write it, for one builder's leaf marker."""
    leaf = {"marked": st.sampled_from(["('', 0)", "('x', 1)"]),
            "named": st.sampled_from(["('a', 0)", "(0, 0)", "('', 3)", "None"]),
            "listed": st.sampled_from(["1", "0", "None", "True", "''"])}[kind]

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        keys = st.sampled_from(["'w'", "'b'", "'skip'", "'x y'", "3"])
        one = st.lists(inner, max_size=3)
        tup = one.map(lambda xs: "(" + "".join(x + ", " for x in xs) + ")")
        lst = one.map(lambda xs: "[" + ", ".join(xs) + "]")
        dct = st.lists(st.tuples(keys, inner), max_size=3, unique_by=lambda kv: kv[0]).map(
            lambda kvs: "{" + ", ".join(f"{k}: {v}" for k, v in kvs) + "}")
        options = [lst, dct] + ([tup] if kind != "marked" else [])  # a 2-tuple of a str would read as a leaf
        # a namedtuple: the marked builder keeps its first field, the others see a tuple of two
        options.append(st.tuples(inner, inner).map(lambda vs: f"Pair(None, {vs[1]})" if kind == "marked"
                                                    else f"Pair({vs[0]}, {vs[1]})"))
        return st.one_of(*options)

    return st.recursive(leaf, grow, max_leaves=8)


def _script(kind: str, template: str, call: str = "build(template, A, B)") -> str:
    return HEAD + textwrap.dedent(BUILDERS[kind]) + f"template = {template}\nresult = {call}\n"


@settings(max_examples=120, deadline=None)
@given(data=st.data(), kind=st.sampled_from(sorted(BUILDERS)))
def test_a_builder_on_a_literal_is_written_out_and_gives_the_same_value(data, kind):
    template = data.draw(_templates(kind))
    code = _script(kind, template)
    try:
        want = _run(code)
    except (TypeError, ValueError, KeyError, IndexError):
        # the builder fails on this template: the evaluator must not invent a value for it
        assert all(_raises(c) for c in sp.partial_evaluation(code))
        return
    got = list(sp.partial_evaluation(code))
    assert len(got) == 1, code
    assert "def build" not in got[0]  # no call of it is left
    assert _same(_run(got[0]), want), (code, got[0])


def _raises(code: str) -> bool:
    try:
        _run(code)
    except Exception:  # noqa: BLE001 - any failure is what the original did
        return True
    return False


def test_the_lambda_a_scenario_hands_call_jax_is_specialised_and_its_arguments_stay_names():
    code = _script("marked", "[{'w': (('', 0), Pair(None, 0))}, ()]",
                   "(lambda a, b: build(template, a, b))(A, B)")
    (got,) = sp.partial_evaluation(code)
    assert "lambda a, b: [{'w': (a, Pair(None, b))}, ()]" in got
    assert _same(_run(got), _run(code))


def test_a_second_call_the_evaluator_cannot_know_keeps_the_builder():
    code = _script("named", "{'w': [('a', 0), None]}", "(build(template, A, B), build(unknown, A, B))")
    code = code.replace("template = ", "unknown = make()\ntemplate = ").replace("import collections", "import collections\nmake = dict")
    (got,) = sp.partial_evaluation(code)
    assert "def build" in got and "build(unknown, A, B)" in got and "{'w': [A, None]}" in got


def _none(code: str) -> None:
    assert list(sp.partial_evaluation(textwrap.dedent(code))) == [], code


def test_what_the_evaluator_cannot_know_gives_no_candidate():
    # a call of anything but the builder, isinstance, len, type and the script's namedtuples
    _none("""
        def build(t, a):
            print(t)
            return a
        t = (1,)
        result = build(t, A)
        """)
    _none("""
        def build(t, a):
            return torch.zeros(t)
        t = (1,)
        result = build(t, A)
        """)
    # a template changed in place, or bound twice, is not the literal it was written as
    _none("""
        def build(t, a):
            return [a for _ in t]
        t = [1, 2]
        t.append(3)
        result = build(t, A)
        """)
    _none("""
        def build(t, a):
            return [a for _ in t]
        t = [1, 2]
        t = [1]
        result = build(t, A)
        """)
    _none("""
        def build(t, a):
            return [a for _ in t]
        t = [1, 2]
        def grow():
            global t
            t = [1, 2, 3]
        grow()
        result = build(t, A)
        """)
    # an argument that is a call would be written (and run) once per place the builder puts it
    _none("""
        def build(t, a):
            return [a for _ in t]
        result = build((1, 2), make())
        """)
    # a test on an argument it does not know
    _none("""
        def build(t, a):
            return t if a else None
        result = build((1,), A)
        """)
    # recursion without end
    _none("""
        def build(t, a):
            return build(t, a)
        result = build((1,), A)
        """)
    # identity of anything but None and the bools is the interpreter's
    _none("""
        def build(t, a):
            return a if t is (1,) else None
        result = build((1,), A)
        """)


def test_a_wrapper_that_passes_its_arguments_on_goes():
    code = textwrap.dedent("""
        def probe(*args, **kw):
            return (args, kw)
        def fresh(*args, **kw):
            return probe(*args, **kw)
        result = (fresh(1, 2, k=3), fresh)
        """)
    (got,) = sp.eta_functions(code)
    assert "def fresh" not in got and "(probe(1, 2, k=3), probe)" in got
    for other in ["return probe(*args)", "return probe(1, *args, **kw)", "return probe(*args, k=1, **kw)"]:
        assert list(sp.eta_functions(code.replace("return probe(*args, **kw)", other))) == []
    two = "def g(a, b):\n    return a\ndef f(a, b):\n    return g(b, a)\nresult = f(1, 2)\n"
    assert list(sp.eta_functions(two)) == []  # the order changes


def test_a_loop_that_fills_a_dict_or_list_becomes_a_comprehension_computing_the_same():
    code = textwrap.dedent("""
        pairs = [('a', 1), ('b', 2)]
        def f():
            out = {}
            for i, (k, v) in enumerate(pairs):
                out[k] = v + i
            seen = []
            for k, v in pairs:
                seen.append(k * v)
            return out, seen
        result = f()
        """)
    got = list(sp.loop_comprehensions(code))
    assert len(got) == 2
    for c in got:
        assert _run(c) == _run(code)
    for other in ["out = {'z': 0}", "out = dict()"]:  # not an empty display
        assert len(list(sp.loop_comprehensions(code.replace("out = {}", other)))) == 1
    reads = code.replace("out[k] = v + i", "out[k] = len(out)")
    assert len(list(sp.loop_comprehensions(reads))) == 1  # the loop reads what it fills: only the list one


def test_an_import_below_a_call_moves_up_to_the_imports():
    code = "import collections\nPair = collections.namedtuple('Pair', ['a'])\nimport json\nx = json.dumps(1)\n"
    assert transforms.hoist_imports(code, past_calls=True).splitlines()[:2] == ["import collections", "import json"]
    assert transforms.hoist_imports(code) == code  # by default only past definitions (frozen checks)
    assert transforms.hoist_imports("import json\nx = 1\n", past_calls=True) == "import json\nx = 1\n"
    assert ast.parse(transforms.hoist_imports("from __future__ import annotations\nx = 1\n", past_calls=True))


def test_a_module_imported_by_its_literal_name_is_imported_by_a_statement():
    code = "import importlib\nenv = importlib.import_module('json.decoder').JSONDecoder()\n"
    got = sp.literal_imports(code)
    assert got.splitlines()[:2] == ["import importlib", "import json.decoder"]
    assert "env = json.decoder.JSONDecoder()" in got
    scope: dict[str, object] = {}
    exec(compile(got, "<candidate>", "exec"), scope)  # noqa: S102 - the test's own code
    assert type(scope["env"]).__name__ == "JSONDecoder"
    # a name bound otherwise, a name that is no module path, a computed name: left
    for other in ["import importlib\njson = 1\nx = importlib.import_module('json')\n",
                  "import importlib\nx = importlib.import_module('no such')\n",
                  "import importlib\nx = importlib.import_module(name)\n"]:
        assert sp.literal_imports(other) == other


def test_a_known_name_shadowed_where_the_builder_is_called_is_not_its_module_value():
    code = _script("named", "{'w': [('a', 0), None]}", "(lambda template: build(template, A, B))({'x': ('a', 0)})")
    for got in sp.partial_evaluation(code):
        assert _same(_run(got), _run(code)), got
    assert "{'w': [A, None]}" not in "".join(sp.partial_evaluation(code))
