"""The reducer's own rewrites (harness/reduce/transforms.py), the provenance a reduced script carries
(harness/reduce/script.py) and the cell's variables it keeps: each rewrite against the case it must
leave alone, and what a reduced script may say only as checked data."""

from __future__ import annotations

import ast
import io
import sys
import textwrap
import tokenize
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.reduce import transforms as t
from harness.reduce.normalise import NOQA, reduced_script
from harness.reduce.reducer import reduce_script
from harness.reduce.script import REDUCED_HEAD, assemble, install_ok, provenance, split_script
from harness.reduce.server import ForkServer
from harness.reduce.signature import signature, statement_at
from harness.report.standalone import HEADER_LINES


def _code(text: str) -> str:
    return ast.unparse(ast.parse(textwrap.dedent(text)))


CORE = textwrap.dedent("""\
    import json
    import os


    def helper(x):
        return json.dumps(x)


    def core(variant, observe):
        total = 0
        for i in range(3):
            total += i
            if i == 2:
                out, = check(variant, total)
            print("after, in the loop")
        print("after the loop")
        observe.close(total)


    if __name__ == "__main__":
        core("base", observe=None)
        print("no failure")
    """)


TB = ('Traceback (most recent call last):\n  File "/s/repro.py", line 21, in <module>\n'
      '  File "/lib/x.py", line 9, in g\n  File "/s/repro.py", line 14, in core\nValueError: v\n')


def test_what_comes_after_the_failing_statement_goes_but_a_loop_body_stays():
    tb = TB
    assert t.frame_lines("Traceback (most recent call last):\n  File \"/s/repro.py\", line 3\nfirst\n" + tb) == [21, 14]
    cut = t.truncate(CORE, t.frame_lines(tb))
    assert "after, in the loop" in cut  # it ran in the earlier iterations
    assert "after the loop" not in cut and "observe.close" not in cut and "no failure" not in cut
    assert "def helper" in cut  # a definition before the call ran: dead_code's, not truncate's


def test_dead_code_keeps_what_calls_something_and_imports_unless_asked():
    code = _code("""\
        import json
        import torch_xla
        X = 3
        Y = compute()
        def unused(a):
            return a
        def used():
            tmp = [1, 2]
            out, = g(t)
            return 1
        used()
        """)
    dead = t.dead_code(code)
    assert "def unused" not in dead and "X = 3" not in dead and "tmp = " not in dead
    assert "Y = compute()" in dead and "out, = g(t)" in dead  # what it calls may be the point: one at a time
    assert "import torch_xla" in dead and "import torch_xla" not in t.dead_code(code, imports=True)


def test_the_core_becomes_top_level_code_with_its_parameters_folded():
    code = t.drop_unused_params(t.unwrap_main(t.truncate(CORE, t.frame_lines(TB))))
    assert "def core(variant):" in code and "core('base')" in code  # observe was never read
    inlined = t.inline_calls(code)
    assert "def core" not in inlined and "check('base', total)" in inlined
    assigned = t.inline_calls(code, substitute=False)
    assert "variant = 'base'" in assigned
    # a local that would become a global another function reads stays in its function
    shadow = _code("""\
        def other():
            return total
        def core():
            total = 1
            other()
        core()
        """)
    assert t.inline_calls(shadow) == shadow


def test_a_helper_that_only_returns_an_expression_is_inlined_at_its_one_call():
    code = _code("""\
        def shard_map(f, *, mesh, check=True):
            from jax.experimental.shard_map import shard_map as exp
            return exp(f, mesh=mesh, check_rep=check)
        def twice(x):
            return x + x
        g = shard_map(h, mesh=m)
        y = twice(compute())
        """)
    got = list(t.inline_returns(code))
    assert len(got) == 1  # twice(compute()) would compute it twice
    assert "g = exp(h, mesh=m, check_rep=True)" in got[0] and "from jax.experimental.shard_map import" in got[0]


def test_names_read_once_imports_of_one_module_and_unread_targets():
    code = _code("""\
        from a import b
        import x
        dev = devices()[0]
        s = Sharding(dev, kind='pinned')
        out = run(s)
        from a import c
        """)
    names = list(t.inline_names(code))
    assert any("s = Sharding(devices()[0], kind='pinned')" in c for c in names)
    assert t.merge_imports(code).startswith("from a import b, c\nimport x")
    assert "\nrun(s)" in t.unused_targets(code)
    long = _code(f"v = {'x' * 95}()\nw = f(v)\n")
    assert not list(t.inline_names(long))  # the line would pass MAX_LINE


def test_the_failing_statement_is_the_expression_it_computes():
    src = "out, = g(t)\ndef f():\n    return g(t)\ng(t)\nif x:\n    raise ValueError(1)\nh[mask] = 0.25\n"
    assert statement_at(src, 1) == statement_at(src, 3) == statement_at(src, 4) == "g(t)"
    assert statement_at(src, 6) == "if x: raise ValueError(1)"
    assert statement_at(src, 7) == "h[mask] = 0.25"  # the item assignment is the operation that raised


def test_a_table_of_steps_shrinks_by_halves_with_the_functions_only_it_used():
    code = _code("""\
        def fa(h):
            return h
        def fb(h):
            return h
        def fc(h):
            return h
        def fd(h):
            return h
        STEPS = {'a': fa, 'b': fb, 'c': fc, 'd': fd}
        program = ['a', 'b', 'c', 'd']
        run(program, STEPS)
        """)
    got = list(t.shrink_collections(code))
    assert "program = ['c', 'd']" in got[0] and "STEPS = {'a': fa" in got[0]  # the sequence first, its table after
    table = [c for c in got if "STEPS = {'c': fc, 'd': fd}" in c][0]
    assert "def fa" not in table and "def fb" not in table and "def fc" in table


EXPORTED = "\n".join(HEADER_LINES) + "\n" + textwrap.dedent("""\
    CASE = 'suites/shard_map/test_x.py::test_y[base]'
    CELL = 'jax060-cpu (cpu)'
    KNOWN_ISSUE = 'jax-28260-linearize-transpose-unmarked-primal: https://github.com/jax-ml/jax/issues/28260'
    INSTALL = 'pip install jax==0.6.0 jaxlib==0.6.0 numpy==2.4.6'
    import os
    os.environ.setdefault('XLA_FLAGS', '--xla_force_host_platform_device_count=8')
    os.environ.setdefault('JAX_PLATFORMS', 'cpu')
    import jax

    @decorated
    def f():
        pass
    """)


def test_the_exported_header_is_read_as_data_and_written_back_shorter():
    parts = split_script(EXPORTED)
    assert parts.facts["CELL"] == "jax060-cpu (cpu)" and parts.body.startswith("import jax\n\n@decorated")
    assert parts.env == {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    text = reduced_script(parts.facts, {"XLA_FLAGS": parts.env["XLA_FLAGS"]}, "import jax\nimport torch_xla\njax.devices()\n",
                          ["jax053-cpu"])
    assert text.splitlines() == [
        REDUCED_HEAD,
        "CASE = 'suites/shard_map/test_x.py::test_y[base]'",
        "CELL, PASSES_IN, KNOWN_ISSUE = 'jax060-cpu', 'jax053-cpu', "
        "'jax-28260-linearize-transpose-unmarked-primal: https://github.com/jax-ml/jax/issues/28260'",
        "INSTALL = 'pip install jax==0.6.0 jaxlib==0.6.0 numpy==2.4.6'",
        "import os",
        "os.environ.update({'XLA_FLAGS': '--xla_force_host_platform_device_count=8'})",
        "import jax",
        "import torch_xla" + NOQA,
        "jax.devices()"]
    assert assemble({}, "print(os.sep)\n") == "import os\nprint(os.sep)\n"  # the code's own use of os


def test_a_reduced_script_read_back_has_its_header_as_facts_and_is_written_the_same():
    """split_script on a CASE.min.py: the header (PASSES_IN or CHECKED_BY beside CELL) and the variables are
    the preamble, the code starts at the code; written again from what was read, the same text."""
    parts = split_script(EXPORTED)
    body = "import jax\njax.devices()\n"
    env = {"XLA_FLAGS": parts.env["XLA_FLAGS"]}
    for passes_in, frozen in ((["jax053-cpu"], False), ([], True)):
        text = reduced_script(parts.facts, env, body, passes_in, frozen)
        again = split_script(text)
        assert again.body == body and again.env == env
        assert again.facts.get("PASSES_IN") == (passes_in[0] if passes_in else None)
        assert ("CHECKED_BY" in again.facts) is frozen
        assert again.facts["KNOWN_ISSUE"].startswith("jax-28260-") and again.facts["INSTALL"].startswith("pip install")
        assert reduced_script(again.facts, again.env, again.body, passes_in, frozen) == text  # nothing twice


def _comments(text: str) -> list[str]:
    return [tok.string for tok in tokenize.generate_tokens(io.StringIO(text).readline) if tok.type == tokenize.COMMENT]


def test_a_value_that_fails_its_grammar_is_left_out_never_commented():
    hostile = {"CASE": "suites/x/test_x.py::test_x[a\n# -*- coding: raw_unicode_escape -*-]",
               "CELL": "jax060-cpu\nrm -rf / (cpu)", "KNOWN_ISSUE": "no-such-issue: https://x",
               "INSTALL": "pip install jax==0.6.0; touch pwned"}
    lines = provenance(hostile, ["good-cpu", "evil\n-cpu"])
    assert lines == ["PASSES_IN = 'good-cpu'"]
    text = reduced_script(hostile, {"XLA_FLAGS": "x'\n#y"}, "import jax\n", [])
    assert _comments(text) == [REDUCED_HEAD, NOQA.strip()] and text.isascii()
    tree = ast.parse(text)
    assert [type(n).__name__ for n in tree.body] == ["Import", "Expr", "Import"]
    assert install_ok("pip install --extra-index-url https://download.pytorch.org/whl/cpu torch==2.9.0 '<jax source>'")
    assert not install_ok("pip install jax==0.6.0 && curl x") and not install_ok("curl x | sh")


def _server(tmp: Path, name: str, **env: str) -> ForkServer:
    return ForkServer(Path(sys.executable), env, [], tmp / name, name)


LIB = "import json, os\n\n\ndef loads(text):\n    if os.environ.get('NEEDED') == '1'{bug}:\n        text = text[:-1]\n    return json.loads(text)\n"


# a script that sets both variables and loads lib.py from its folder (LIB: fails only with NEEDED=1)
READS_NEEDED = textwrap.dedent("""\
    import os
    os.environ.setdefault('NEEDED', '1')
    os.environ.setdefault('UNNEEDED', 'x')
    import sys
    sys.path.insert(0, os.getcwd())
    import lib
    data = lib.loads('[1, 2]')
    print(data)
    """)


def _lib_folders(tmp_path: Path) -> None:
    """The four servers' folders: the cell and its fresh interpreter with the bug, a contrast cell and its
    fresh interpreter without it."""
    for name, bug in (("bad", ""), ("bad-fresh", ""), ("good-cpu", " and False"), ("good-fresh", " and False")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "lib.py").write_text(LIB.format(bug=bug))


def test_a_variable_goes_where_a_fresh_interpreter_without_it_fails_the_same_way(tmp_path):
    # The cell sets both variables; its "library" (lib.py beside the candidates) fails only with NEEDED=1,
    # the fixed one never; UNNEEDED changes nothing.
    script = "\n".join(HEADER_LINES) + "\nCASE = 'suites/x/test_x.py::test_x'\n" + READS_NEEDED
    cell = {"NEEDED": "1", "UNNEEDED": "x"}
    _lib_folders(tmp_path)
    with _server(tmp_path, "bad", **cell) as bad, _server(tmp_path, "bad-fresh") as fresh, \
            _server(tmp_path, "good-cpu", **cell) as good, _server(tmp_path, "good-fresh") as good_fresh:
        red = reduce_script(script, bad, None, contrast=[good], budget_s=60, fresh=fresh, fresh_contrast=[good_fresh])
        text = reduced_script(red.facts, red.env, red.body, red.contrast)
        assert signature(fresh.run(text, 30), text, None) == red.signature  # without the cell's variables
        assert good_fresh.run(text, 30).status == 0
    assert red.env == {"NEEDED": "1"} and red.env_dropped == ["UNNEEDED"], text
    assert "os.environ.update({'NEEDED': '1'})" in text and "lib.loads('[1, 2]')" in text


def test_a_library_failure_checks_its_contrast_cell_at_each_phases_end_and_backs_out(tmp_path):
    # int() raises in the library; deleting the `if` keeps the error but loses the bug: the contrast
    # cell, run at the phase's end, sends the search back to a candidate it passes
    script = textwrap.dedent("""\
        import os
        s = '1x'
        if os.environ.get('BUG') != '1':
            s = '12'
        n = int(s)
        """)
    said: list[str] = []
    with _server(tmp_path, "bad", BUG="1") as bad, _server(tmp_path, "good") as good:
        red = reduce_script(script, bad, None, contrast=[good], budget_s=60, say=said.append)
        text = reduced_script(red.facts, red.env, red.body)
        assert signature(bad.run(text, 30), text, None) == red.signature and good.run(text, 30).status == 0
    assert not red.signature.own_check and "os.environ.get('BUG')" in text
    assert any("back to the latest one they all pass" in m for m in said), said
    # and from the back-out on, each kept candidate is checked there at once (a whole phase is not lost twice)
    assert any("each kept candidate is checked there at once" in m for m in said), said


def test_skips_constants_and_an_assertions_message_are_written_out():
    code = _code("""\
        AXIS = 'x'
        N = 8
        def skip(reason):
            print(reason)
            raise SystemExit(125)
        def need_devices(n=8):
            if len(jax.devices()) < n:
                skip('needs devices')
        need_devices()
        if not found:
            skip('api absent')
        mesh = Mesh(devices()[:N], (AXIS,))
        assert ok(mesh), f'lost {AXIS} on {N} devices'
        """)
    dropped = t.drop_skips(code)
    assert "skip" not in dropped and "need_devices" not in dropped and "mesh = Mesh(" in dropped
    assert "mesh = Mesh(devices()[:8], ('x',))" in t.inline_constants(code)
    assert t.inline_constants("N = 8\ndef f(N):\n    return N\n") == "N = 8\ndef f(N):\n    return N\n"  # a parameter
    assert "assert ok(mesh), 'lost x on 8 devices'" in t.literal_message(code, "assert ok(mesh)", "lost x on 8 devices")
    assert t.literal_message(code, "assert other()", "lost x on 8 devices") == code


def test_the_written_script_passes_in_every_cell_where_the_full_one_does(tmp_path):
    # The second cell where the case passes (the fix took another form there: it needs the three items)
    # fails a reduction the first passes: at the phase's end the search goes back to one both pass.
    script = textwrap.dedent("""\
        import os
        import sys
        sys.path.insert(0, os.getcwd())
        import lib
        x = [1, 2, 3]
        lib.check(x)
        """)
    libs = {"bad": "def check(x):\n    raise ValueError('bad')\n", "good-cpu": "def check(x):\n    pass\n",
            "other-cpu": "def check(x):\n    assert len(x) == 3, 'the fix reads all three'\n"}
    for name, text in libs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "lib.py").write_text(text)
    said: list[str] = []
    with _server(tmp_path, "bad") as bad, _server(tmp_path, "good-cpu") as good, _server(tmp_path, "other-cpu") as other:
        red = reduce_script(script, bad, None, contrast=[good, other], budget_s=60, say=said.append)
        text = reduced_script(red.facts, red.env, red.body, red.contrast)
        assert good.run(text, 30).status == 0 and other.run(text, 30).status == 0
        assert signature(bad.run(text, 30), text, None) == red.signature
    assert "x = [1, 2, 3]" in text and any("back to the latest one they all pass" in m for m in said), said
    assert "PASSES_IN = 'good-cpu, other-cpu'" in text


def test_a_test_of_two_literals_becomes_the_branch_python_takes():
    """A parameter folded into the core's body leaves `'pvary' == 'pvary'` (xla29-cpu's pvary script kept
    it, and the helper its other branch called, at its budget): the branch taken stays, the other goes;
    a test that reads a name, or one Python would raise on, stays as written."""
    code = _code("""\
        def pcast_varying():
            pass
        marker = getattr(jax.lax, 'pvary', None) if 'pvary' == 'pvary' else pcast_varying()
        if 'a' in ('b', 'c'):
            x = 1
        if 1 != 1:
            y = 2
        else:
            y = 3
        def f():
            if 'x' == 'x':
                return 4
        z = 1 if 1 in 'ab' else 2
        w = 1 if kind == 'a' else 2
        v = 1 if [0] == [0, 1] else 2
    """)
    got = t.fold_constant_tests(code)
    assert got == _code("""\
        def pcast_varying():
            pass
        marker = getattr(jax.lax, 'pvary', None)
        y = 3
        def f():
            return 4
        z = 1 if 1 in 'ab' else 2
        w = 1 if kind == 'a' else 2
        v = 2
    """)
    assert "pcast_varying" not in t.dead_code(got)  # what only the other branch used goes next
    assert t.fold_constant_tests(_code("if n == 'a':\n    x = 1\n")) == _code("if n == 'a':\n    x = 1\n")
    # a block left empty gets a `pass`
    assert t.fold_constant_tests(_code("def g():\n    if 0 == 1:\n        h()\n")) == _code("def g():\n    pass\n")


def test_a_seeded_script_identical_to_its_seed_takes_its_variables_without_fresh_runs(tmp_path):
    """The same case failing the same way (a sibling case, or -j's seeds): where the seed's script is this
    very script (the cell, code, variables, failure, contrast cells), the fresh interpreters it ran without
    each variable would run again to the same end; its finding is taken (a fresh torch_xla interpreter is
    15-25 s of the 20 s a seeded script took). Another cell's seed is run again."""
    base = "\n".join(HEADER_LINES) + "\nCASE = 'suites/x/test_x.py::test_x'\nCELL = 'a-cpu'\n" + READS_NEEDED
    sibling = base.replace("test_x'", "test_y'")
    elsewhere = base.replace("CELL = 'a-cpu'", "CELL = 'b-cpu'")
    cell = {"NEEDED": "1", "UNNEEDED": "x"}
    _lib_folders(tmp_path)
    with _server(tmp_path, "bad", **cell) as bad, _server(tmp_path, "bad-fresh") as fresh, \
            _server(tmp_path, "good-cpu", **cell) as good, _server(tmp_path, "good-fresh") as good_fresh:
        args = dict(contrast=[good], budget_s=60, fresh=fresh, fresh_contrast=[good_fresh])
        first = reduce_script(base, bad, None, **args)
        runs = fresh.runs
        second = reduce_script(sibling, bad, None, seeds=[first], **args)
        assert second.seeded and fresh.runs == runs  # no fresh interpreter: the seed's finding
        assert second.env == first.env == {"NEEDED": "1"} and second.env_dropped == ["UNNEEDED"]
        third = reduce_script(elsewhere, bad, None, seeds=[first], **args)
        assert third.seeded and fresh.runs > runs  # another cell: its variables are tried again
        assert third.env == {"NEEDED": "1"}


def test_an_import_after_definitions_moves_up_to_the_imports_only_past_what_runs_no_code():
    code = "import re\nKEY = 'k'\n\ndef f(x, y=1):\n    return x\n\nfrom math import pi as p\nprint(f(p))\n"
    assert t.hoist_imports(code).splitlines()[:2] == ["import re", "from math import pi as p"]
    for runs in ("KEY = len('k')", "@staticmethod\ndef g():\n    pass", "def g(x=print('default')):\n    pass"):
        kept = code.replace("KEY = 'k'", runs)
        assert t.hoist_imports(kept) == kept, runs


def test_a_short_tuple_of_constants_is_written_where_it_is_read_like_a_constant():
    code = "import math\nshape = (4,)\nnames = ('x',)\nprint(math.prod(shape), shape, names)\n"
    got = t.inline_constants(code)
    assert "shape =" not in got and "names =" not in got and "print(math.prod((4,)), (4,), ('x',))" in got, got
    long = "sizes = (1024, 2048, 4096)\nprint(sizes, sizes)\n"  # longer than a reader takes in place twice
    assert t.inline_constants(long) == long


def test_unused_parameters_go_one_function_at_a_time_too():
    code = _code("""\
        def make(program, width, seed):
            return [0] * width
        def run_all(program, width, seed):
            return make(program, width, seed)
        print(run_all(1, 3, 0))
        """)
    each = t.drop_unused_params_each(code)
    assert each[0] == t.drop_unused_params(code) and "run_all(3)" in each[0]  # all at once first
    alone = [c for c in each if "def make(width)" in c and "run_all(1, 3, 0)" in c]
    assert alone and "make(width)" in alone[0]  # run_all's call, held as written, stays; its callee's goes
    assert all(c != code for c in each) and len(set(each)) == len(each)
    assert t.drop_unused_params_each(_code("def f(a):\n    return a\nf(1)\n")) == []


def test_a_module_alias_of_a_name_bound_once_is_read_through_anywhere():
    code = _code("""\
        def fresh(x):
            return x + 1
        fn = fresh
        def other():
            return 2
        print(fn(1))
        """)
    got = list(t.inline_names(code))
    assert _code("def fresh(x):\n    return x + 1\ndef other():\n    return 2\nprint(fresh(1))") in got
    for kept in ("def fresh(x):\n    return 1\nfn = fresh\nfresh = 3\nprint(fn(1))",  # rebound after
                 "fn = fresh\ndef fresh(x):\n    return 1\nprint(fn(1))",  # bound after the alias
                 "def fresh(x):\n    return 1\nfn = fresh\ndef g():\n    fresh = 2\n    return fn\nprint(g())"):  # a local
        assert not [c for c in t.inline_names(_code(kept)) if "fn" not in c], kept


def _dead_code_by_walks(code: str, imports: bool) -> str:
    """dead_code as first written: every read counted again, by a walk of the whole tree, per statement."""
    tree = ast.parse(code)
    for _ in range(50):
        changed = False
        for holder in [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            for stmt in list(holder):
                if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                    inside = {id(n) for n in ast.walk(stmt)}
                    if holder is tree.body and not any(isinstance(n, ast.Name) and n.id == stmt.name and id(n) not in inside
                                                       and not isinstance(n.ctx, ast.Store) for n in ast.walk(tree)):
                        holder.remove(stmt)
                        changed = True
                    continue
                if isinstance(stmt, ast.Import):
                    if imports and holder is tree.body and t._loads(tree).get(stmt.names[0].name, 0) == 0:
                        holder.remove(stmt)
                        changed = True
                    continue
                names, value = t._targets(stmt), getattr(stmt, "value", None)
                if value is not None and any(isinstance(n, ast.Call) for n in ast.walk(value)):
                    continue
                if names and all(t._loads(tree).get(n, 0) == 0 for n in names):
                    holder.remove(stmt)
                    changed = True
        if not changed:
            break
    t._fix_empty(tree)
    return ast.unparse(tree)


@st.composite
def _programs_with_dead_parts(draw) -> str:
    """Top-level functions (some nested, some reading each other or a module name), assignments, imports."""
    names = ["a", "b", "c", "f", "g", "h", "os"]
    lines = []
    for _ in range(draw(st.integers(1, 9))):
        kind = draw(st.sampled_from(["def", "nested", "assign", "import", "call"]))
        n, m = draw(st.sampled_from(names[:6])), draw(st.sampled_from(names))
        if kind == "def":
            lines.append(f"def {n}():\n    x = {m}\n    y = x\n    return {draw(st.sampled_from(['x', 'y', '0']))}")
        elif kind == "nested":
            lines.append(f"def {n}():\n    def {m if m != 'os' else 'k'}():\n        return {draw(st.sampled_from(names))}\n"
                         f"    z = 1\n    return 0")
        elif kind == "assign":
            lines.append(f"{n} = {m}")
        elif kind == "import":
            lines.append("import os")
        else:
            lines.append(f"print({m})")
    return "\n".join(lines) + "\n"


@settings(max_examples=400, deadline=None)
@given(_programs_with_dead_parts(), st.booleans())
def test_dead_code_counting_reads_once_removes_what_a_walk_per_statement_did(code, imports):
    assert t.dead_code(code, imports=imports) == _dead_code_by_walks(code, imports)
