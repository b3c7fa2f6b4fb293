"""What the failing run never ran (harness/reduce/unrun.py), read off the fork server's trace of the
script's lines, and the rewrites that keep a run's meaning before a frozen-check reduction
(harness/reduce/rebase.py): on real scripts run by this interpreter, as a cell's runs them."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from harness.reduce.reducer import reduce_script
from harness.reduce.server import ForkServer, _checked_trace
from harness.reduce.unrun import drop_unrun

SCRIPT = textwrap.dedent('''\
    import math


    def to_float(x):
        if isinstance(x, str):
            return float(x.strip())
        elif isinstance(x, (list, tuple)):
            return [to_float(v) for v in x]
        return float(x)


    def refused(f, arg):
        try:
            f(arg)
        except ValueError as exc:
            return str(exc)
        except TypeError:
            return "type"
        else:
            raise AssertionError("DID NOT RAISE")


    def never_called():
        return 1


    def assert_sorted(xs):
        if list(xs) != sorted(xs):
            raise AssertionError(f"{xs} is not sorted")


    class Checks:
        def close(self, a, b):
            if abs(a - b) > 1e-9:
                raise AssertionError(f"{a} is not {b}")

        def unused(self):
            return 2


    for _ in range(2):
        print(refused(math.sqrt, -1))
    print(to_float(3))
    Checks().close(to_float(2), 2.0)
    if to_float(1) > 5:
        print("big")
    else:
        print("small")
    if to_float(3) < 0:  # never taken: it holds an assertion helper's call, a check
        assert_sorted([3, 1])
    assert to_float(2) == 3.0, "to_float(2) is not 3"
    print("after the failure")
    ''')


def _server(tmp: Path) -> ForkServer:
    return ForkServer(Path(sys.executable), {"PYTHONHASHSEED": "0"}, [], tmp / "cell", "cell")


def test_what_never_ran_goes_and_the_run_is_the_same(tmp_path):
    with _server(tmp_path) as cell:
        run = cell.run(SCRIPT, 30, lines=True)
        assert run.lines is not None and run.status == 1
        pruned = drop_unrun(SCRIPT, run.lines)
        again = cell.run(pruned, 30)
    assert again.status == 1 and again.output.split("Traceback")[0] == run.output.split("Traceback")[0]
    assert again.record["message"] == run.record["message"] == "to_float(2) is not 3"
    # gone: the branches for a type never seen (their tests too: an isinstance runs no code), the handler
    # that caught nothing, the branch not taken and what came after the failure
    for gone in ("x.strip()", "to_float(v) for v", "(list, tuple)", "TypeError", "print('big')", "after the failure"):
        assert gone not in pruned, gone
    # kept: what ran, a function and a method never called (whole: the trace may not see every thread), and
    # every check, though none of them failed: what fails a candidate that guts what they judge
    for kept in ("return float(x)", "except ValueError as exc", "def never_called():\n    return 1",
                 "def unused(self):\n        return 2", "if not to_float(1) > 5:\n    print('small')",
                 "if abs(a - b) > 1e-09:\n            raise AssertionError(f'{a} is not {b}')",
                 "else:\n        raise AssertionError('DID NOT RAISE')", "if to_float(3) < 0:\n    assert_sorted([3, 1])"):
        assert kept in pruned, (kept, pruned)


BRANCHES = textwrap.dedent('''\
    def widen(x):
        if type(x) is float:  # every call: the branch alone
            x = x * 2.0
        return x


    def kind(x):
        if isinstance(x, int):  # both ways
            return "int"
        return "other"


    def sign(x):
        if x < 0:  # never: the else alone
            s = -1
        else:
            s = 1
        return s


    def last(x):
        if x:  # both ways, the other by returning
            print("x")


    def guarded(x):
        if x > 0:  # every call, but it holds a check
            assert x < 100, "too big"
        return x


    def noisy():
        print("called")
        return True


    def impure(x):
        if noisy():  # every call, but the test calls something
            x = x + 1
        return x


    for v in (1.5, 2.5):
        print(widen(v), kind(v), kind(1), sign(3), last(1), last(0), guarded(5), impure(1))
    assert widen(1.5) == 4.0, f"widen gave {widen(1.5)}"
    ''')


def test_an_if_that_went_one_way_every_time_becomes_that_branch(tmp_path):
    with _server(tmp_path) as cell:
        run = cell.run(BRANCHES, 30, lines=True)
        assert run.steps is not None and run.status == 1
        pruned = drop_unrun(BRANCHES, run.lines, run.steps)
        again = cell.run(pruned, 30)
    assert again.status == 1 and again.output.split("Traceback")[0] == run.output.split("Traceback")[0]
    assert again.record["message"] == run.record["message"] == "widen gave 3.0"
    for gone in ("type(x) is float", "x < 0", "s = -1"):
        assert gone not in pruned, (gone, pruned)
    for kept in ("def widen(x):\n    x = x * 2.0\n    return x", "def sign(x):\n    s = 1\n    return s",
                 "if isinstance(x, int):", "if x:\n        print('x')", "if x > 0:\n        assert x < 100",
                 "if noisy():\n        x = x + 1"):
        assert kept in pruned, (kept, pruned)
    # without the steps, only what never ran goes: the tests stay
    assert "if type(x) is float:" in drop_unrun(BRANCHES, run.lines)


def test_a_trace_is_only_asked_for_and_a_forged_one_is_none(tmp_path):
    forge = "open(__file__ + '.lines', 'w').write('[1, \"x\"]')\n"
    with _server(tmp_path) as cell:
        assert cell.run("print(1)\n", 30).lines is None  # not asked for
        traced = cell.run("print(1)\n", 30, lines=True)
        assert traced.lines == frozenset({0, 1}) and traced.steps == frozenset({(0, 1), (1, 0)})
        # the script writes its own record: the child's write comes after and replaces it
        assert cell.run(forge, 30, lines=True).lines == frozenset({0, 1})
    # a record of the wrong shape (a script's, cut short, forged) is no trace at all
    for text in ('[1, 2]', '{"lines": [1], "steps": [[1, "x"]]}', '{"lines": [-1], "steps": []}',
                 '{"lines": [1], "steps": [[1, 2, 3]]}', '{"lines": [1]', '{"lines": [true], "steps": []}'):
        assert _checked_trace(text) == (None, None), text
    assert _checked_trace('{"lines": [1, 2], "steps": [[1, 2]]}') == (frozenset({1, 2}), frozenset({(1, 2)}))


HEADER = "# Standalone reproducer (xla-seams).\n# Run: python this_file.py\n" + textwrap.dedent("""\
    CASE = 'suites/x/test_x.py::test_x'
    CELL = 'fake-cpu (cpu)'
    INSTALL = 'pip install numpy==2.4.6'
    """)

FROZEN = HEADER + textwrap.dedent('''\
    import os


    def to_number(x):
        if isinstance(x, str):
            return float(x)
        return x


    class Observe(dict):
        def close(self, actual, expected, *, tol, name=""):
            if abs(to_number(actual) - to_number(expected)) > tol:
                raise AssertionError(f"{name}: {actual} is not {expected}")


    observe = Observe()


    def library_sum(values):
        total = 0.0
        for v in values:
            total += v
        return total + (0.5 if len(values) > 2 else 0.0)  # the bug, in every "cell"


    def core(values):
        observe.close(library_sum(values[:2]), sum(values[:2]), tol=1e-9, name="two values")
        got = library_sum(values)
        if abs(got - sum(values)) > 1e-9:
            raise AssertionError(f"library_sum gave {got} for {len(values)} values")


    if __name__ == "__main__":
        core([1.0, 2.0, 3.0])
    ''')


def test_a_frozen_check_reduction_starts_from_the_script_without_what_never_ran(tmp_path):
    # no cell passes the case: the checks that ran (the precondition through Observe.close, the failing one)
    # are frozen; the branch of their helper that never ran and the class around a self-free method go first
    with _server(tmp_path) as cell:
        red = reduce_script(FROZEN, cell, None, budget_s=60)
    assert red.oracle == "frozen checks"
    assert "isinstance(x, str)" not in red.body and "class Observe" not in red.body, red.body
    assert "if abs(got - sum(values)) > 1e-09:" in red.body and "two values" in red.body, red.body
