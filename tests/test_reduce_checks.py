"""harness reduce where the failure is the script's own check and no cell passes the case: the checks
that ran, and what they name, are frozen (harness.reduce.checks), on real pure-Python scripts run in
a fork server of this interpreter. The "library" each script tests is source it exec()s from a string
literal: like jax to a real script, the reducer cannot rewrite it (a shortened string is a value the
script never held), so a server with BUG unset is the fixed release, used here only to check the
reduction afterwards, never by the reducer."""

from __future__ import annotations

import ast
import sys
from collections import Counter
import textwrap
from pathlib import Path

from harness.reduce import transforms
from harness.reduce.checks import ORACLE, bridged_functions, held_calls, frozen_checks, lacks
from harness.reduce.normalise import reduced_script
from harness.reduce.reducer import reduce_script
from harness.reduce.script import FROZEN_NOTE
from harness.reduce.server import ForkServer, Run
from harness.reduce.signature import signature
from tests.test_reduce import HEADER

# The sum is off by a half once there are three or more values (BUG=1); the check's message says no
# number, so a reduction that feeds the check anything else that is off fails it the same way.
SUM_LIBRARY = ("import os\n\ndef library_sum(values):\n    total = 0.0\n    for v in values:\n        total += v\n"
               "    if os.environ.get('BUG') == '1' and len(values) > 2:\n        total += 0.5\n    return total\n")

OWN_ASSERT = HEADER + textwrap.dedent(f'''\
    import json
    import math

    LIBRARY = {SUM_LIBRARY!r}
    library = {{}}
    exec(LIBRARY, library)
    UNUSED_TABLE = {{"a": 1, "b": 2, "c": 3}}
    TOLERANCE = 1e-09


    def unused_helper(x):
        return json.dumps({{"x": x, "sqrt": math.sqrt(abs(x))}})


    def close_enough(got, want):
        return abs(got - want) <= TOLERANCE


    def core(values, observe):
        """library_sum equals the exact sum."""
        note = unused_helper(len(values))
        got = library["library_sum"](values)
        want = math.fsum(values)
        assert close_enough(got, want), "library_sum is off the exact sum"
        observe.append(note)


    if __name__ == "__main__":
        core([1.0, 2.0, 3.0, 4.0], observe=[])
        print("no failure")
    ''')

HELPER = "def close_enough(got, want):\n    return abs(got - want) <= TOLERANCE"

# "Compiling" drops the host tag (BUG=1). Without the precondition, a reduction that never puts the tag
# there (`op = on_host("mul")` -> `op = "mul"`, two steps before the failing check: not frozen) fails the
# last check the same way, bug gone.
HOST_LIBRARY = ("import os\n\ndef compile_module(text):\n"
                "    return text.replace('@host ', '') if os.environ.get('BUG') == '1' else text\n")

PRECONDITION = HEADER + textwrap.dedent(f'''\
    import re

    LIBRARY = {HOST_LIBRARY!r}
    library = {{}}
    exec(LIBRARY, library)


    def tags(text):
        return re.findall("@([a-z]+)", text)


    def placed(text):
        return "host" in tags(text)


    def on_host(op):
        return "@host " + op


    def core():
        op = on_host("mul")
        lowered = "lowered: " + op
        assert placed(lowered), "lowered without the host placement"
        compiled = library["compile_module"](lowered)
        print("compiled:", compiled)
        assert placed(compiled), "the compiled module lost the host placement"


    if __name__ == "__main__":
        core()
    ''')


class Recording(ForkServer):
    """A fork server that keeps every script it was given to run (what the reducer did not reject unrun)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.sources: list[str] = []

    def run(self, source: str, timeout_s: int, lines: bool = False) -> Run:
        self.sources.append(source)
        return super().run(source, timeout_s, lines)


def _server(tmp: Path, name: str, cls: type[ForkServer] = ForkServer, **env: str) -> ForkServer:
    return cls(Path(sys.executable), {"PYTHONHASHSEED": "0", **env}, [], tmp / name, name)


def _frozen(source: str, server: ForkServer):
    return frozen_checks(source, transforms.frame_lines(server.run(source, 30).output))


def _body(source: str) -> str:
    return ast.unparse(ast.parse(source))


def test_an_own_assertion_is_reduced_without_a_passing_cell_and_keeps_its_check_and_helper(tmp_path):
    with _server(tmp_path, "bad", Recording, BUG="1") as bad, _server(tmp_path, "fixed") as fixed:
        red = reduce_script(OWN_ASSERT, bad, None, budget_s=120)
        text = reduced_script(red.facts, red.env, red.body, red.contrast, frozen=red.oracle == ORACLE)
        assert signature(bad.run(text, 30), text, None) == signature(bad.run(OWN_ASSERT, 30), OWN_ASSERT, None)
        # the reduction still shows the bug: where it is fixed, the reduced script passes (the reducer never ran there)
        assert fixed.run(text, 30).status == 0, text
    assert red.signature.own_check and red.contrast == [] and red.oracle == ORACLE
    assert "assert close_enough(got, want), 'library_sum is off the exact sum'" in text
    # the helper stays what it judges, its module constant written where it is read (harness.reduce.rebase: a
    # rewrite that keeps the run's meaning may change a frozen helper's text, never what it computes)
    assert (HELPER in text and "TOLERANCE = 1e-09" in text) or \
        "def close_enough(got, want):\n    return abs(got - want) <= 1e-09" in text, text
    assert "unused_helper" not in text and "UNUSED_TABLE" not in text, text
    assert f"CELL, CHECKED_BY = 'fake-cpu', {FROZEN_NOTE!r}" in text
    # a helper gutted to `return False` fails the check the same way: never run, whatever the search tried
    assert not any("return False" in s for s in bad.sources)


def test_a_gutted_helper_or_a_severed_input_is_rejected_unrun(tmp_path):
    with _server(tmp_path, "bad", BUG="1") as bad:
        frozen = _frozen(OWN_ASSERT, bad)
        gutted = OWN_ASSERT.replace("return abs(got - want) <= TOLERANCE", "return False")
        severed = OWN_ASSERT.replace('got = library["library_sum"](values)', "got = 0")
        # both fail exactly as the original does: only the frozen checks tell them apart
        sig = signature(bad.run(OWN_ASSERT, 30), OWN_ASSERT, None)
        assert signature(bad.run(gutted, 30), gutted, None) == sig
        assert signature(bad.run(severed, 30), severed, None) == sig
    assert dict(frozen.statements) == {"assert close_enough(got, want), 'library_sum is off the exact sum'": 1}
    assert not lacks(ast.parse(OWN_ASSERT), frozen)
    assert lacks(ast.parse(gutted), frozen)
    assert lacks(ast.parse(severed), frozen)
    assert lacks(ast.parse(OWN_ASSERT.replace("want = math.fsum(values)", "want = got + 1")), frozen)  # an input rebound
    assert lacks(ast.parse(OWN_ASSERT.replace("TOLERANCE = 1e-09", "TOLERANCE = 0")), frozen)  # what the helper reads
    # the message too: rewritten as the text it raised (literal_message), an f-string's reads are gone
    assert lacks(ast.parse(OWN_ASSERT.replace('"library_sum is off', '"off')), frozen)
    # moving the check (the scenario inlined into the main block) is not changing it
    inlined = transforms.inline_calls(transforms.unwrap_main(_body(OWN_ASSERT)), substitute=False)
    assert "def core" not in inlined and not lacks(ast.parse(inlined), frozen)


def test_the_checks_that_passed_before_the_failing_one_protect_the_cause(tmp_path):
    dropped_cause = PRECONDITION.replace('op = on_host("mul")', 'op = "mul"')
    no_precondition = dropped_cause.replace('    assert placed(lowered), "lowered without the host placement"\n', "")
    with _server(tmp_path, "bad", BUG="1") as bad, _server(tmp_path, "fixed") as fixed:
        frozen = _frozen(PRECONDITION, bad)
        sig = signature(bad.run(PRECONDITION, 30), PRECONDITION, None)
        # without the precondition, a reduction that never tags the op fails the same way, and passes nowhere
        assert signature(bad.run(no_precondition, 30), no_precondition, None) == sig
        assert fixed.run(no_precondition, 30).status == 1
        # with it, that reduction fails another check: its signature is another
        assert signature(bad.run(dropped_cause, 30), dropped_cause, None).where == "assert placed(lowered)"
        red = reduce_script(PRECONDITION, bad, None, budget_s=120)
        text = reduced_script(red.facts, red.env, red.body, red.contrast, frozen=True)
        assert fixed.run(text, 30).status == 0, text
    assert set(frozen.statements) == {"assert placed(lowered), 'lowered without the host placement'",
                                      "assert placed(compiled), 'the compiled module lost the host placement'"}
    assert not lacks(ast.parse(dropped_cause), frozen)  # what rejects it is the precondition's run
    assert lacks(ast.parse(no_precondition), frozen)
    assert lacks(ast.parse(PRECONDITION.replace(', "lowered without the host placement"', "")), frozen)
    # the cause stays (on_host's expression may be written where it was called: inline_returns)
    assert "'@host '" in text and "assert placed(lowered), 'lowered without the host placement'" in text
    # the helpers judge as they did: `tags`, called once, inlined into `placed` (harness.reduce.rebase)
    assert ("def placed(text):\n    return 'host' in tags(text)" in text and "def tags(text):" in text) or \
        "def placed(text):\n    return 'host' in re.findall('@([a-z]+)', text)" in text, text


def test_checks_after_the_failure_and_skips_are_not_frozen(tmp_path):
    script = HEADER + textwrap.dedent('''\
        import sys


        def skip(reason):
            print(reason)
            raise SystemExit(125)


        def core():
            if sys.version_info < (3,):
                skip("python 2")
            value = 2
            assert value > 1, "a precondition"
            assert value == 3, "the failing check"
            assert value == 4, "never ran"


        core()
        ''')
    with _server(tmp_path, "bad") as bad:
        frozen = _frozen(script, bad)
    assert set(frozen.statements) == {"assert value > 1, 'a precondition'", "assert value == 3, 'the failing check'"}
    assert not frozen.definitions  # nothing the checks name is defined at the top level


def test_a_check_in_a_loop_keeps_its_message_its_loop_header_and_the_checks_of_earlier_iterations(tmp_path):
    """xla28's equal-looking statics: the f-string message reads the static and JAX's dtype, the loop
    draws the reference from JAX, and the numerics check after the failing one ran for the first static.
    A reduction that writes the message out, compares with another sequence or drops the later check is
    rejected unrun."""
    script = HEADER + textwrap.dedent('''\
        def reference(s):
            return [s + 1, s]


        def core():
            gots = [len("ab"), len("a")]
            for s in (1, True):
                for i, (got, ref) in enumerate(zip(gots, reference(s))):
                    assert type(got) is type(ref), f"static {s!r}, output {i}: {type(got).__name__} where {type(ref).__name__}"
                    assert got == ref, "values differ"


        core()
        ''')
    with _server(tmp_path, "bad") as bad:
        frozen = _frozen(script, bad)
    assert "assert got == ref, 'values differ'" in frozen.statements
    assert "for (i, (got, ref)) in enumerate(zip(gots, reference(s)))" in frozen.statements
    assert "for s in (1, True)" in frozen.statements
    assert any(text.startswith("def reference(s):") for text in frozen.definitions)
    written = script.replace('f"static {s!r}, output {i}: {type(got).__name__} where {type(ref).__name__}"',
                             "'static True, output 1: int where bool'")
    assert lacks(ast.parse(script), frozen) is False
    assert lacks(ast.parse(written), frozen)
    assert lacks(ast.parse(script.replace("reference(s)))", "gots))")), frozen)
    assert lacks(ast.parse(script.replace('gots = [len("ab"), len("a")]', "gots = [len('ab'), True]")), frozen)  # what the loop draws from
    assert lacks(ast.parse(script.replace('            assert got == ref, "values differ"\n', "")), frozen)


# An op script's shape (harness/report/standalone_op.py): torch's result against torchax's, the check a
# library assertion. Without a passing cell, `got` rebound one step back is caught, but reductions further
# back compared torch's result with the sample itself converted, then with `traced` gutted, then torch's
# reference without the kwargs, each failing "Tensor-likes are not close" the same way
# (torchax0013jax0102-cpu's avg_pool2d bfloat16 jit script, 40 -> 20 lines).
OP_SCRIPT = textwrap.dedent('''\
    import jax, torch, torchax
    from torch.utils import _pytree as pt

    if __name__ == "__main__":
        sample = make_sample()
        args = ((sample.input, *sample.args), sample.kwargs)
        want = pt.tree_leaves(info(*args[0], **args[1]))
        env = torchax.default_env()
        flat, spec = pt.tree_flatten(args)
        pos = [i for i, x in enumerate(flat) if isinstance(x, torch.Tensor)]
        def traced(*ts):
            a = pt.tree_unflatten([ts[pos.index(i)] if i in pos else x for i, x in enumerate(flat)], spec)
            return info(*a[0], **a[1])
        got = torchax.interop.jax_jit(traced)(*env.to_xla([flat[i] for i in pos]))
        got = pt.tree_leaves(got)
        print('sample:', sample.summary())
        for n, (w, g) in enumerate(zip(want, got)):
            g = g.torch()
            torch.testing.assert_close(g, w, msg=lambda m: f'output {n}: {m}')
    ''')


def test_the_bridge_calls_a_checked_value_came_through_stay_however_far_back():
    check = next(i + 1 for i, line in enumerate(OP_SCRIPT.splitlines()) if "assert_close" in line)
    frozen = frozen_checks(OP_SCRIPT, [check])
    assert "torchax.interop.jax_jit(traced)(*env.to_xla([flat[i] for i in pos]))" in frozen.calls
    assert "info(*args[0], **args[1])" in frozen.calls and "make_sample()" in frozen.calls  # the reference and input too
    assert not any("pos.index" in c for c in frozen.calls)  # not inside the script's own function (held whole)
    assert not lacks(ast.parse(OP_SCRIPT), frozen)
    op_gone = OP_SCRIPT.replace("torchax.interop.jax_jit(traced)(*env.to_xla([flat[i] for i in pos]))",
                                "env.to_xla([flat for i in flat])")
    assert lacks(ast.parse(op_gone), frozen)
    # kept but no longer what the check reads (a dead statement, `got` computed otherwise)
    dead = op_gone.replace("        got = pt.tree_leaves(got)\n",
                           "        unused = torchax.interop.jax_jit(traced)(*env.to_xla([flat[i] for i in pos]))\n"
                           "        got = pt.tree_leaves(got)\n")
    assert lacks(ast.parse(dead), frozen)
    # the function the bridge runs is held whole: gutted to return its arguments, the op is gone as surely
    assert [d.name for d in bridged_functions(ast.parse(OP_SCRIPT), [])] == [] and len(frozen.bridged) == 1
    assert lacks(ast.parse(OP_SCRIPT.replace("return info(*a[0], **a[1])", "return a")), frozen)
    # torch's reference called without the sample's kwargs failed the same way (no passing cell to tell)
    assert lacks(ast.parse(OP_SCRIPT.replace("info(*args[0], **args[1]))", "info(*args[0]))")), frozen)
    # what the checked values do not come from may go, and the calls are found from the check wherever
    # the values flow: the loop unrolled as the rewrites unroll it
    assert not lacks(ast.parse(OP_SCRIPT.replace("print('sample:', sample.summary())", "pass")), frozen)
    unrolled = ast.parse(OP_SCRIPT.replace(
        "for n, (w, g) in enumerate(zip(want, got)):\n            g = g.torch()\n            torch",
        "n, w, g = (0, want[0], got[0])\n        g = g.torch()\n        torch"))
    assert not lacks(unrolled, frozen.__class__(calls=frozen.calls, bridged=frozen.bridged, statements=Counter(
        {"torch.testing.assert_close(g, w, msg=lambda m: f'output {n}: {m}')": 1})))
    check_stmt = [n for n in ast.walk(unrolled) if isinstance(n, ast.Expr) and "assert_close" in ast.unparse(n)]
    assert frozen.calls <= held_calls(unrolled, check_stmt)


def test_a_raise_in_a_branch_the_run_never_took_is_no_precondition():
    """Had an unconditional `raise` before the failure run, it would have been the failure: it is not frozen
    (an op script's torch-refuses branch, whose `raise AssertionError` reads `got`, froze a binding of `got`
    after the failure, and every candidate, the script itself printed again, was rejected unrun)."""
    script = textwrap.dedent('''\
        import torchax
        try:
            want = 1
        except Exception as exc:
            raised = exc
            got = torchax.f()
            raise AssertionError(f'torch raised {raised}, torchax returned {got}')
        got = torchax.interop.jax_jit(g)(want)
        if got is None:
            raise ValueError('the if judged its condition: a precondition')
        assert got == want, 'the failing check'
        got = torchax.g(got)
        ''')
    lines = script.splitlines()
    failing = next(i + 1 for i, line in enumerate(lines) if "the failing check" in line)
    frozen = frozen_checks(script, [failing])
    assert set(frozen.statements) == {"if got is None: raise ValueError('the if judged its condition: a precondition')",
                                      "assert got == want, 'the failing check'"}
    cut = "\n".join(lines[:failing]) + "\n"  # what truncate leaves: nothing after the failure
    assert not lacks(ast.parse(cut), frozen)


def test_the_exporters_environment_preamble_is_never_frozen():
    """The exported header sets the cell's variables with a comprehension (`k not in os.environ`,
    `{...}.items()`); the reducer writes that preamble anew, so nothing of it may be frozen (it was: every
    candidate of the compute_on placement scripts, reduced under frozen checks, was rejected)."""
    from harness.report.standalone import export_script

    case = ("suites/compute_on/test_properties.py::"
            "test_host_multiply_next_to_a_device_multiply_keeps_the_host_placement[compute_on_outside_jit]")
    cell = {"cell": "jax060-cpu", "device": "cpu", "pins": {"jax": "0.6.0"}, "versions": {"jax": "0.6.0", "jaxlib": "0.6.0"},
            "env": {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}}
    source = export_script(case, cell)
    lines = source.splitlines()
    assert any("if k not in os.environ" in line for line in lines)
    failing = next(i + 1 for i, line in enumerate(lines) if line.lstrip().startswith("assert compiled_host_placement"))
    outer = next(i + 1 for i, line in enumerate(lines) if "observe=Observe()" in line)
    frozen = frozen_checks(source, [outer, failing])
    assert frozen.statements and frozen.calls
    assert not [c for c in frozen.calls if "environ" in c or ".items()" in c], frozen.calls
    assert not [t for t in frozen.statements if "environ" in t], frozen.statements


def test_only_the_leading_preamble_is_left_out_of_the_frozen_checks():
    """The preamble frozen_checks leaves out is split_script's, one definition (preamble_length): the leading
    literals, `import os` and environment statements, not an environment statement in the script's code."""
    from harness.reduce.script import preamble_length, split_script

    source = ("CASE, CELL = 'c', 'x'\nimport os\n"
              "os.environ.update({k: v for k, v in {'A': '1'}.items() if k not in os.environ})\n"
              "import jax.numpy as jnp\nos.environ['B'] = '2'\n"
              "assert os.environ['B'] == '3', 'B is ' + os.environ['B']\n")
    tree = ast.parse(source)
    assert preamble_length(tree) == 3
    assert split_script(source).body.startswith("import jax.numpy as jnp\n")
    assert split_script(source).env == {"A": "1"}
    frozen = frozen_checks(source, [6])
    assert frozen.statements == {"assert os.environ['B'] == '3', 'B is ' + os.environ['B']": 1}


def test_an_if_raise_check_holds_what_its_condition_reads_though_its_message_names_none_of_it(tmp_path):
    # `if not placed(text): raise AssertionError('no placement')`: the condition is what the check judges;
    # its helper, the helper's helper and the input it reads are held, whether the check is the failing one,
    # a precondition before it, or in a loop
    script = HEADER + textwrap.dedent('''\
        import re


        def tags(text):
            return re.findall("@([a-z]+)", text)


        def placed(text):
            return "host" in tags(text)


        def core():
            lowered = "lowered: @host mul"
            if not placed(lowered):
                raise AssertionError("lowered without the placement")
            for compiled in ["compiled: mul"]:
                if not placed(compiled):
                    raise AssertionError("no placement")


        if __name__ == "__main__":
            core()
        ''')
    with _server(tmp_path, "bad") as bad:
        frozen = _frozen(script, bad)
    held = {ast.parse(d).body[0].name for d in frozen.definitions}
    assert {"placed", "tags"} <= held, held
    assert "lowered = 'lowered: @host mul'" in frozen.inputs
    gutted = script.replace('return "host" in tags(text)', "return False")
    assert lacks(ast.parse(gutted), frozen)


def test_a_helper_that_shares_a_local_name_with_the_checked_one_holds_none_of_its_calls():
    """The slice of what the checks read is scope-insensitive: `structure`'s comprehension binds k, and so
    does one in `leaves_at_paths`, which only a later, never-run loop calls. Its calls (`sorted(tree)`,
    `enumerate(tree)`) were held, and every candidate without that dead helper was refused (the xla27
    output-structure scripts stayed at 41-46 lines)."""
    script = textwrap.dedent('''\
        def leaves_at_paths(tree):
            if isinstance(tree, dict):
                return [x for k in sorted(tree) for x in leaves_at_paths(tree[k])]
            return [x for i, v in enumerate(tree) for x in leaves_at_paths(v)]

        def structure(tree):
            if isinstance(tree, dict):
                return ('dict', tuple((k, structure(tree[k])) for k in sorted(tree)))
            return ('leaf', type(tree).__name__)

        out = {'w': 1}
        got_s = structure(out)
        assert got_s == ('leaf', 'dict'), f'structure {got_s}'
        for got in leaves_at_paths(out):
            print(got)
        ''')
    lines = script.splitlines()
    failing = next(i + 1 for i, line in enumerate(lines) if line.startswith("assert got_s"))
    frozen = frozen_checks(script, [failing])
    assert not {"sorted(tree)", "enumerate(tree)"} & frozen.calls, frozen.calls
    cut = "\n".join(ln for ln in lines[:failing] if ln)
    tree = ast.parse(cut)
    tree.body = [s for s in tree.body if not (isinstance(s, ast.FunctionDef) and s.name == "leaves_at_paths")]
    assert not lacks(tree, frozen)


def test_a_helper_the_checked_value_comes_through_keeps_a_call():
    """`back = j2t(env, j)` is held as written, but j2t's body is the search's: cut to `pass`, torchax 0.0.4's
    stub round trip failed the same way (None has no dtype) without torchax. A helper the checked values
    come through keeps one of the calls it made (a different call, `env(0)`, was the search's next way round);
    one that never called anything is the search's."""
    script = textwrap.dedent('''\
        import lib

        def j2t(env, array):
            return lib.j2t(array)

        def label(t):
            return 'x'

        if __name__ == '__main__':
            back = j2t(None, 1)
            assert back.dtype == 'f', label(back)
        ''')
    failing = next(i + 1 for i, line in enumerate(script.splitlines()) if line.lstrip().startswith("assert back"))
    frozen = frozen_checks(script, [failing])
    assert frozen.through == {"j2t": {"lib.j2t(array)"}}
    for gutted in ("    pass", "    env(0)", "    return lib.j2t_copy(array)"):  # nothing, or another call
        assert lacks(ast.parse(script.replace("    return lib.j2t(array)", gutted)), frozen), gutted
    kept = ast.parse(script.replace("    return lib.j2t(array)", "    lib.j2t(array)"))
    assert not lacks(kept, frozen)
