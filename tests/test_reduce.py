"""harness reduce on real pure-Python scripts: the fork server (here in this interpreter, which is
what a cell's is to it), the signature predicate, the contrast cell and what is refused."""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

from harness.reduce.names import undefined_names
from harness.reduce.normalise import format_code, reduced_script
from harness.reduce.reducer import NotReducible, reduce_script, split_preamble
from harness.reduce.script import CRASH_HEAD, REDUCED_HEAD
from harness.reduce.server import ForkServer, Run, heavy_imports
from harness.reduce.signature import signature, statement_at, up_to_numbers
from harness.reduce.transforms import frame_lines
from harness.report.standalone import HEADER_LINES

# What the exporter writes above the code (harness/report/standalone.py): two fixed comment lines, the
# provenance as literals, the cell's variables.
HEADER = "\n".join(HEADER_LINES) + "\n" + textwrap.dedent("""\
    CASE = 'suites/x/test_x.py::test_x'
    CELL = 'fake-cpu (cpu)'
    INSTALL = 'pip install numpy==2.4.6'
    import os
    os.environ.setdefault('XLA_FLAGS', '--xla_force_host_platform_device_count=8')
    """)

# A "library" whose bug depends on an env var (BUG=1 in the bad cell, unset in the fixed one), buried
# among helpers, dead branches and records the check does not need.
SCRIPT = HEADER + textwrap.dedent('''\
    import json
    import math

    UNUSED_TABLE = {"a": 1, "b": 2, "c": 3}


    def library_sum(values):
        total = 0.0
        for v in values:
            total += v
        if os.environ.get("BUG") == "1" and len(values) > 2:
            total += 0.5  # the bug: an off-by-half once there are three or more values
        return total


    def unused_helper(x):
        return json.dumps({"x": x, "sqrt": math.sqrt(abs(x))})


    def records(values):
        return {"n": len(values), "mean": sum(values) / len(values)}


    def core(values, observe):
        """library_sum equals the exact sum."""
        seen = records(values)
        note = unused_helper(seen["n"])
        got = library_sum(values)
        want = math.fsum(values)
        if abs(got - want) > 1e-9:
            raise AssertionError(f"library_sum gave {got}, the exact sum is {want} ({len(values)} values)")
        observe.append(note)


    if __name__ == "__main__":
        core([1.0, 2.0, 3.0, 4.0], observe=[])
        print("no failure")
    ''')


def _server(tmp: Path, name: str, **env: str) -> ForkServer:
    return ForkServer(Path(sys.executable), {"PYTHONHASHSEED": "0", **env}, [], tmp / name, name)


def test_a_reduced_script_keeps_the_signature_and_passes_where_the_bug_is_fixed(tmp_path):
    with _server(tmp_path, "bad", BUG="1") as bad, _server(tmp_path, "good-cpu") as good:
        red = reduce_script(SCRIPT, bad, None, contrast=[good], budget_s=120)
        text = reduced_script(red.facts, red.env, red.body, red.contrast)
        full_sig = signature(bad.run(SCRIPT, 30), SCRIPT, None)
        assert signature(bad.run(text, 30), text, None) == full_sig
        assert good.run(text, 30).status == 0
    assert full_sig.status == 1 and full_sig.type == "builtins.AssertionError"
    assert len(text.splitlines()) < len(SCRIPT.splitlines()) - 15, text
    assert "unused_helper" not in text and "UNUSED_TABLE" not in text and "records" not in text
    # the check is the original's, word for word; the provenance is kept, and the variables (no fresh
    # interpreter was given to try them without)
    assert "if abs(got - want) > 1e-09:" in text
    assert text.splitlines()[:3] == [REDUCED_HEAD, "CASE = 'suites/x/test_x.py::test_x'", "CELL, PASSES_IN = 'fake-cpu', 'good-cpu'"]
    assert "os.environ.update({'XLA_FLAGS': '--xla_force_host_platform_device_count=8'})" in text
    assert not undefined_names(ast.parse(text))
    assert red.contrast == ["good-cpu"]


def test_the_scripts_own_check_without_a_cell_where_it_passes_is_reduced_under_its_frozen_checks(tmp_path):
    # gutting what an assertion checks fails the same way: with no passing cell to tell the bug apart, the
    # checks that ran are frozen (tests/test_reduce_checks.py), and reduce.json and the script say so
    with _server(tmp_path, "bad", BUG="1") as bad:
        red = reduce_script(SCRIPT, bad, None, budget_s=60)
    assert red.contrast == [] and red.oracle == "frozen checks"
    assert "if abs(got - want) > 1e-09:\n        raise AssertionError(" in red.body or \
        "if abs(got - want) > 1e-09:\n    raise AssertionError(" in red.body, red.body


LIBRARY_RAISES = HEADER + textwrap.dedent('''\
    import json
    import math


    def payload(n):
        rows = [{"i": i, "sqrt": math.sqrt(i)} for i in range(n)]
        text = json.dumps(rows)
        return text[:-1]  # the bug: the closing bracket is cut


    def unrelated():
        return sorted({"b": 2, "a": 1})


    def core():
        order = unrelated()
        data = json.loads(payload(3))
        assert order == ["a", "b"]
        return data


    if __name__ == "__main__":
        core()
    ''')


def test_a_failure_the_library_raises_is_reduced_without_a_contrast_cell(tmp_path):
    with _server(tmp_path, "bad") as bad:
        red = reduce_script(LIBRARY_RAISES, bad, "Expecting", budget_s=120)
        text = reduced_script(red.facts, red.env, red.body, red.contrast)
        assert signature(bad.run(text, 30), text, "Expecting") == signature(bad.run(LIBRARY_RAISES, 30), LIBRARY_RAISES, "Expecting")
    assert red.signature.type == "json.decoder.JSONDecodeError" and not red.signature.own_check
    assert "unrelated" not in text and "json.loads(payload(3))" in text
    assert len(text.splitlines()) < len(LIBRARY_RAISES.splitlines()) - 8, text


# A library whose own `assert` fails (torch_xla 2.8's call_jax on jax 0.10: `assert ..., "Jax is required for
# this feature"`): source compiled under another file name, so the traceback's innermost frame is not the
# script's, at a statement of the script's that is no check. No cell passes the case (the report's other
# cells fail it another way).
LIBRARY_ASSERTS = HEADER + textwrap.dedent('''\
    import math

    LIB = "def call_jax(f, args):\\n    assert jax_found(), 'Jax is required for this feature'\\n    return f(*args)\\n\\n\\ndef jax_found():\\n    return False\\n"
    lib = {}
    exec(compile(LIB, "site-packages/torch_xla/core/xla_builder.py", "exec"), lib)


    def unrelated():
        return sorted({"b": 2, "a": 1})


    def core():
        order = unrelated()
        out = lib["call_jax"](lambda x: x * 2, (math.pi,))
        assert order == ["a", "b"]
        assert out == 2 * math.pi, f"call_jax gave {out}"
        return out


    if __name__ == "__main__":
        core()
    ''')


def test_an_assertion_the_library_raises_is_reduced_as_the_librarys_error_without_a_contrast_cell(tmp_path):
    # before: refused ("the script's own check ... no check statement of the script's was found in its traceback")
    with _server(tmp_path, "bad") as bad:
        red = reduce_script(LIBRARY_ASSERTS, bad, "Jax is required", budget_s=120)
        text = reduced_script(red.facts, red.env, red.body, red.contrast, frozen=red.oracle == "frozen checks")
        run = bad.run(text, 30)
        assert signature(run, text, "Jax is required") == signature(bad.run(LIBRARY_ASSERTS, 30), LIBRARY_ASSERTS, "Jax is required")
    assert run.record and run.record["in_script"] is False
    assert red.signature.type == "builtins.AssertionError" and red.signature.own_check
    assert red.contrast == [] and red.oracle == "" and "CHECKED_BY" not in text
    assert "unrelated" not in text and "lib['call_jax'](lambda x: x * 2, (math.pi,))" in text, text
    assert len(text.splitlines()) < len(LIBRARY_ASSERTS.splitlines()) - 8, text


def test_an_own_assertion_helper_raising_outside_the_script_still_freezes_its_checks(tmp_path):
    # np.testing.assert_* raises inside numpy (not the script's frame), but its call is a check: frozen as before
    script = HEADER + textwrap.dedent('''\
        import numpy as np

        def unrelated():
            return sorted({"b": 2, "a": 1})

        def core():
            order = unrelated()
            got = np.float64(0.1) + np.float64(0.2)
            np.testing.assert_equal(got, 0.3)
            return order

        if __name__ == "__main__":
            core()
        ''')
    with _server(tmp_path, "bad") as bad:
        red = reduce_script(script, bad, None, budget_s=60)
    assert red.oracle == "frozen checks" and "np.testing.assert_equal(got, 0.3)" in red.body, red.body


def test_a_script_that_does_not_fail_is_refused(tmp_path):
    with _server(tmp_path, "good") as good, pytest.raises(NotReducible, match="does not fail"):
        reduce_script(SCRIPT, good, None, budget_s=30)


def test_a_flaky_signature_is_refused(tmp_path):
    # two runs of the original disagree (the counter file lives in the scratch folder the children share)
    flaky = HEADER + textwrap.dedent("""\
        from pathlib import Path
        p = Path('count')
        n = int(p.read_text()) if p.exists() else 0
        p.write_text(str(n + 1))
        raise ValueError('odd' if n % 2 else 'even')
        """)
    with _server(tmp_path, "bad") as bad, pytest.raises(NotReducible, match="flaky"):
        reduce_script(flaky, bad, None, budget_s=30)


def test_the_known_issues_match_must_be_in_the_output(tmp_path):
    with _server(tmp_path, "bad", BUG="1") as bad, pytest.raises(NotReducible, match="match"):
        reduce_script(SCRIPT, bad, "a message this script never prints", budget_s=30)


def test_a_hanging_candidate_is_killed_by_its_alarm_and_the_server_goes_on(tmp_path):
    with _server(tmp_path, "s") as s:
        hung = s.run("while True:\n    pass\n", 1)
        after = s.run("raise KeyError('k')\n", 10)
    assert hung.status == -14  # SIGALRM
    assert after.status == 1 and after.record and after.record["type"] == "builtins.KeyError"


def test_what_a_script_prints_or_forges_is_data_not_its_signature(tmp_path):
    forger = textwrap.dedent("""\
        import json, sys
        print(json.dumps({"status": 0}))
        sys.stdout.flush()
        raise RuntimeError("real failure")
        """)
    with _server(tmp_path, "s") as s:
        run = s.run(forger, 10)
        spawner = s.run("import subprocess, sys\nsubprocess.Popen(['sleep', '300'])\nraise SystemExit(3)\n", 10)
    assert run.status == 1 and run.record and run.record["message"] == "real failure"
    assert spawner.status == 3  # and its sleep went with its session (the server's killpg)


def test_signature_parts():
    assert up_to_numbers("Mismatched elements: 3 / 8 (37.5%), max 1.5e-03 at 0x7f00ab") == \
        "Mismatched elements: N / N (N%), max N at N"
    src = "x = 1\nif x > 0:\n    raise ValueError('bad')\nassert x == 2, 'two'\n"
    assert statement_at(src, 3) == "if x > 0: raise ValueError('bad')"
    assert statement_at(src, 4) == "assert x == 2"  # the check; its message is the failure's text
    assert undefined_names(ast.parse("def f(a):\n    return a + b\n")) == {"b"}
    head, body = split_preamble(SCRIPT)
    assert head.splitlines()[-1].startswith("os.environ.setdefault(") and body.startswith("import json")
    assert heavy_imports("import jax\nfrom torch_xla import core\nimport numpy as np\n") == ["numpy", "jax", "torch_xla"]
    assert format_code("import os\ndef f():\n    return os.sep\nf()\n") == "import os\n\ndef f():\n    return os.sep\n\nf()\n"


def test_the_contrast_cell_is_the_fixing_release_first_then_older_passing_cells():
    from harness.reduce.batch import contrast_cells

    report = {"cells": [{"cell": n, "pins": {"jax": v}} for n, v in
                        (("j53", "0.5.3"), ("j60", "0.6.0"), ("j72", "0.7.2"), ("j102", "0.10.2"))],
              "cases": [{"id": "c", "results": {"j53": {"raw": "pass"}, "j60": {"raw": "fail"},
                                                "j72": {"raw": "fail"}, "j102": {"raw": "pass"}}}]}
    assert contrast_cells(report, "c", "j60") == ["j102", "j53"]
    assert contrast_cells(report, "c", "j102") == ["j53"]
    assert contrast_cells(report, "other", "j60") == []


def test_contrast_cells_are_compared_on_the_package_the_failing_cell_is_a_release_of():
    from harness.reduce.batch import contrast_cells

    pins = {"x27": {"torch_xla": "2.7.0", "jax": "0.5.3"}, "x28": {"torch_xla": "2.8.1", "jax": "0.6.2"},
            "x29j": {"torch_xla": "2.9.0", "jax": "0.10.2"}, "tx13": {"torchax": "0.0.13", "jax": "0.7.2"},
            "j53": {"jax": "0.5.3"}, "j60": {"jax": "0.6.0"}}
    report = {"cells": [{"cell": n, "pins": p} for n, p in pins.items()],
              "cases": [{"id": "c", "results": {n: {"raw": "fail" if n in ("x28", "j60") else "pass"} for n in pins}}]}
    # torch_xla 2.8 fails: the later torch_xla first, then cells without torch_xla (the reducer keeps those
    # where the full script exits 0: torchax on its own, not jax alone), then the older torch_xla
    assert contrast_cells(report, "c", "x28") == ["x29j", "j53", "tx13", "x27"]
    # jax 0.6.0 fails: compared on jax, the nearest later jax first (tx13's 0.7.2, x29j's 0.10.2), never on
    # torch_xla's 2.7 against jax's 0.6 (x27's jax 0.5.3 ties with j53's)
    got = contrast_cells(report, "c", "j60")
    assert got[:2] == ["tx13", "x29j"] and set(got[2:]) == {"j53", "x27"}


def test_the_cli_refuses_what_is_not_a_standalone_script(tmp_path):
    import subprocess

    repo = Path(__file__).resolve().parent.parent
    (tmp_path / "x.min.py").write_text("raise SystemExit(1)\n")
    (tmp_path / "jax999-cpu__case.py").write_text("raise SystemExit(1)\n")
    for arg, says in ((tmp_path / "x.min.py", "not a standalone script"), (tmp_path / "missing.py", "not a standalone"),
                      (tmp_path / "jax999-cpu__case.py", "no cell 'jax999-cpu'")):
        proc = subprocess.run([sys.executable, "-m", "harness", "reduce", str(arg)], cwd=repo, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 2 and says in proc.stderr, proc.stderr


def test_a_server_killed_from_outside_stops_the_run_instead_of_restarting(tmp_path):
    import os
    import signal

    with _server(tmp_path, "s") as s:
        assert s.run("raise SystemExit(1)\n", 10).status == 1
        assert s.proc is not None
        os.kill(s.proc.pid, signal.SIGKILL)  # what lifeline.kill_all does when the harness is stopped
        s.proc.wait()
        with pytest.raises(KeyboardInterrupt):
            s.run("raise SystemExit(1)\n", 10)
        assert s.proc is None


def _op_result(check_message: str) -> dict:
    return {"raw": "fail", "message": check_message, "expectation": None,
            "observations": {"falsifying_example":
                             "Falsifying example: sample(index=3, ties=False, values=True, rtol=None, atol=None)"}}


def test_an_op_script_the_runs_record_made_short_is_minimal_by_construction(tmp_path):
    """report --reduce: a short op script (only the check its run failed) is run once in its cell, its
    signature recorded, and not searched (no CASE.min.py); one that does not fail there is refused."""
    from harness.cells.matrix import catalogue
    from harness.reduce.batch import Job, _minimal, _one
    from harness.report.repro import script_for

    case = "suites/torchax_ops/test_ops.py::test_op[aten.sort-float32-eager]"
    cell = catalogue().cell("torchax0013-cpu").describe()
    r = _op_result("1 of 1 samples differ from torch eager; sample 3 (float32[5]): output 1: dtype torch.int32 "
                   "where torch gives torch.int64")
    script = tmp_path / "op.py"
    script.write_text(script_for(case, cell, r))
    assert _minimal(script, case, cell, r) == "dtype"
    assert _minimal(script, case, cell, {**r, "message": "something else"}) is None  # no check read: the full script
    other = tmp_path / "other.py"
    other.write_text(script.read_text() + "# edited\n")
    assert _minimal(other, case, cell, r) is None  # not the script the record makes: searched as any other
    # the signature run, with a stand-in for the cell (this interpreter): a script that fails, one that passes
    fails, passes = tmp_path / "fails.py", tmp_path / "passes.py"
    fails.write_text(HEADER + "raise AssertionError('output 1: dtype torch.int32 where torch gives torch.int64')\n")
    passes.write_text(HEADER + "print('no failure')\n")
    with _server(tmp_path, "cell") as s:
        said: list[str] = []
        out = _one(Job(fails, "fake-cpu", case, minimal="dtype"), lambda *_a, **_k: s, None, said.append)
        refused = _one(Job(passes, "fake-cpu", case, minimal="dtype"), lambda *_a, **_k: s, None, said.append)
    assert (out.by_construction, out.ran, out.lines_after, out.refused) == ("dtype", 1, out.lines_before, None)
    assert out.signature and "AssertionError" in out.signature and not (tmp_path / "fails.min.py").exists()
    assert refused.refused and refused.refused.startswith("the script does not fail here") and refused.lines_after is None
    assert "minimal by construction fails.py" in said[0]


def test_a_batch_reduces_by_cell_then_known_issue_so_one_reduction_seeds_the_issues_others(tmp_path):
    from harness.reduce.batch import Job, sorted_jobs

    jobs = []
    for name, issue in (("a.py", "issue-b"), ("b.py", "issue-a"), ("c.py", "issue-b"), ("d.py", "issue-a")):
        (tmp_path / name).write_text(HEADER.replace("INSTALL =", f"KNOWN_ISSUE = '{issue}: https://e/1'\nINSTALL =")
                                     + "raise AssertionError('x')\n")
        jobs.append(Job(tmp_path / name, "fake-cpu"))
    assert [j.script.name for j in sorted_jobs(jobs)] == ["b.py", "d.py", "a.py", "c.py"]


# A crash (the process killed by a signal, faulthandler's dump instead of a traceback) after work the
# crash does not need, and a last line that reads CASE, the provenance the reducer keeps aside: what
# never ran must be cut by the dump's frames, else every candidate names CASE undefined and is rejected
# unrun (the torchax_ops `mvlgamma_` SIGFPE scripts were refused so).
CRASHES = HEADER + textwrap.dedent('''\
    import json
    import signal


    def unrelated(n):
        return json.dumps({"n": n})


    def library_scale(values, factor):
        if factor == 0 and len(values) > 2:
            os.kill(os.getpid(), signal.SIGFPE)  # the bug: an integer division by zero in native code
        return [v / (factor or 1) for v in values]


    if __name__ == "__main__":
        note = unrelated(3)
        got = library_scale([1, 2, 3], 0)
        assert got == [1, 2, 3], got
        print("no failure: " + CASE.rsplit("::", 1)[-1] + note)
    ''')


def test_a_crash_is_reduced_to_the_statement_the_dump_names_and_says_it_is_a_signal(tmp_path):
    with _server(tmp_path, "bad") as bad:
        full_sig = signature(bad.run(CRASHES, 30), CRASHES, None)
        red = reduce_script(CRASHES, bad, None, budget_s=120)
        text = reduced_script(red.facts, red.env, red.body, red.contrast, crash=red.signature.status < 0)
        assert signature(bad.run(text, 30), text, None) == full_sig
    assert full_sig.status == -8 and full_sig.where == "os.kill(os.getpid(), signal.SIGFPE)", full_sig
    assert text.splitlines()[0] == CRASH_HEAD
    assert "unrelated" not in text and "no failure" not in text and "assert" not in text, text
    assert len(text.splitlines()) < len(CRASHES.splitlines()) - 10, text


def test_the_dump_names_the_crashing_threads_frames_outermost_first():
    dump = textwrap.dedent('''\
        Fatal Python error: Floating point exception

        Thread 0x00007f0000000001 (most recent call first):
          File "/s/repro.py", line 99 in worker

        Current thread 0x00007f0000000002 [MainThread] (most recent call first):
          File "/s/repro.py", line 25 in core
          File "/usr/lib/python3.11/runpy.py", line 88 in _run_code
          File "/s/repro.py", line 40 in <module>

        Extension modules: numpy._core._multiarray_umath (total: 1)
        ''')
    assert frame_lines(dump) == [40, 25]
    assert signature(Run(-8, None, dump, 0.1), "\n" * 24 + "crash()\n" + "\n" * 14 + "core()\n", None).where == "crash()"


def test_rest_skips_what_reduce_json_records_and_the_min_outputs(tmp_path):
    """`harness reduce --rest repro/*.py` finishes a stopped batch: the scripts its reduce.json records
    (reduced, by construction, refused) and the CASE.min.py outputs the glob brings along are skipped."""
    import json

    from harness.errors import UserError
    from harness.reduce.batch import scripts_left

    repro = tmp_path / "repro"
    repro.mkdir()
    names = ["c-cpu__done.py", "c-cpu__done.min.py", "c-cpu__built.py", "c-cpu__refused.py", "c-cpu__left.py"]
    for n in names:
        (repro / n).write_text("raise SystemExit(1)\n")
    given = [repro / n for n in names]
    assert scripts_left(given) == [p for p in given if not p.name.endswith(".min.py")]  # no reduce.json: all of them
    (repro / "reduce.json").write_text(json.dumps([{"script": "c-cpu__done.py", "lines_after": 5},
                                                   {"script": "c-cpu__built.py", "by_construction": "dtype"},
                                                   {"script": "c-cpu__refused.py", "refused": "flaky signature"}]))
    assert scripts_left(given) == [repro / "c-cpu__left.py"]
    for bad in ("{not json", json.dumps({"script": "c-cpu__done.py"}), json.dumps([{"script": 3}])):
        (repro / "reduce.json").write_text(bad)
        with pytest.raises(UserError, match="not a reduce.json"):
            scripts_left(given)


def test_rest_with_nothing_left_says_so_and_runs_nothing(tmp_path):
    import json
    import subprocess

    repo = Path(__file__).resolve().parent.parent
    repro = tmp_path / "repro"
    repro.mkdir()
    (repro / "jax999-cpu__case.py").write_text("raise SystemExit(1)\n")  # an unknown cell: exit 2 if it were looked at
    (repro / "reduce.json").write_text(json.dumps([{"script": "jax999-cpu__case.py", "lines_after": 1}]))
    proc = subprocess.run([sys.executable, "-m", "harness", "reduce", "--rest", str(repro / "jax999-cpu__case.py")],
                          cwd=repo, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "nothing left" in proc.stdout, proc.stdout + proc.stderr
    (repro / "reduce.json").write_text("[")
    proc = subprocess.run([sys.executable, "-m", "harness", "reduce", "--rest", str(repro / "jax999-cpu__case.py")],
                          cwd=repo, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "not a reduce.json" in proc.stderr


def test_case_md_written_again_keeps_the_title_report_wrote(tmp_path):
    """A batch writes CASE.md again (the reduced script first); its title keeps "since" from the report's
    release lines, as `harness report` wrote it (it was dropped once)."""
    from harness.reduce.batch import rewrite_markdown
    from harness.report.command import report_command
    from tests.results_fixtures import SHARD, case, cell_file

    paths = [cell_file(tmp_path, "jax053-cpu", "0.5.3", [case(SHARD, "pass")]),
             cell_file(tmp_path, "jax060-cpu", "0.6.0", [case(SHARD, "fail", "linearized function differs")])]
    report_command(paths, tmp_path / "out")
    [md] = (tmp_path / "out" / "repro").glob("jax060-cpu__*.md")
    before = md.read_text()
    assert "since jax 0.6.0 (last good 0.5.3)" in before.splitlines()[0]
    md.write_text("stale\n")
    assert rewrite_markdown(tmp_path / "out", frozenset({md.name.removesuffix(".md") + ".py"})) == 1
    assert md.read_text() == before


def test_an_earlier_batchs_reduction_is_taken_again_only_where_one_run_shows_it_still_holds(tmp_path):
    """harness.reduce.memo: the same script in the same envs at the same budget takes the last batch's
    reduction after one run in its cell (no search); a record whose code no longer fails as recorded, or
    one that does not parse, is searched again (and replaced); a changed script, budget or cell env is
    another record."""
    import json

    from harness.reduce import memo
    from harness.reduce.batch import Job, _one

    script = tmp_path / "fake-cpu__case.py"
    script.write_text(SCRIPT)
    folder = tmp_path / "memo"
    with _server(tmp_path, "bad", BUG="1") as bad, _server(tmp_path, "fresh", BUG="1") as fresh:
        servers = lambda _name, _preload, is_fresh=False: fresh if is_fresh else bad  # noqa: E731
        said: list[str] = []
        first = _one(Job(script, "fake-cpu"), servers, 60, said.append, [], folder)
        again = _one(Job(script, "fake-cpu"), servers, 60, said.append, [], folder)
        [record] = folder.glob("*.json")
        name = record.name.removesuffix(".json")
        assert not first.reused and first.ran > 5 and first.text
        assert again.reused and again.ran == 1 and again.text == first.text and again.candidates == 0
        assert "it still holds (1 runs)" in said[-2] and "(an earlier batch's reduction, 1 checking runs)" in said[-1]
        # the record's code no longer fails as recorded: searched again, and the record is the search's
        kept = json.loads(record.read_text())
        record.write_text(json.dumps({**kept, "body": "print('no failure')\n"}))
        searched = _one(Job(script, "fake-cpu"), servers, 60, said.append, [], folder)
        assert not searched.reused and searched.text == first.text and json.loads(record.read_text()) == kept
        record.write_text("{not json")
        assert not _one(Job(script, "fake-cpu"), servers, 60, said.append, [], folder).reused
        key = memo.key(SCRIPT, bad, [], None, 60)
        assert key == name  # the batch's key: the script, the cell's interpreter and variables, no contrast, the budget
        with _server(tmp_path, "other", BUG="2") as other:
            assert len({key, memo.key(SCRIPT + "\n", bad, [], None, 60), memo.key(SCRIPT, bad, [], None, 61),
                        memo.key(SCRIPT, other, [], None, 60), memo.key(SCRIPT, bad, [other], None, 60)}) == 5
        assert not _one(Job(script, "fake-cpu"), servers, 60, said.append, [], None).reused  # --no-reuse
        # a folder that cannot take the record: the reduction stands, and says so
        blocked = tmp_path / "blocked"
        blocked.write_text("a file where the folder goes\n")
        kept_out = _one(Job(script, "fake-cpu"), servers, 60, said.append, [], blocked)
        assert kept_out.text == first.text and "could not be kept for the next batch" in " ".join(said[-3:])


def test_a_second_batch_takes_the_first_batchs_reduction_though_each_caches_compiles_in_its_own_scratch(monkeypatch,
                                                                                                         tmp_path):
    """The memo's key is what decides a reduction: each batch's servers get jax's compilation cache in the
    batch's own scratch folder (harness.reduce.server.compile_cache_env), and that folder is not part of it
    (it was: no record was ever taken again, every nightly searched each script)."""
    from types import SimpleNamespace

    from harness.cells import envs
    from harness.reduce import batch
    from harness.reduce.batch import Job

    script = tmp_path / "fake-cpu__case.py"
    script.write_text(SCRIPT)
    monkeypatch.setattr(batch, "cell_named", lambda _name: SimpleNamespace(run_env=lambda: {"BUG": "1"}))
    monkeypatch.setattr(envs, "ensure_env", lambda _cell: SimpleNamespace(python=Path(sys.executable)))
    folder = tmp_path / "memo"
    first = batch._reduce_in_order([Job(script, "fake-cpu")], 60, lambda _m: None, memo_dir=folder)
    again = batch._reduce_in_order([Job(script, "fake-cpu")], 60, lambda _m: None, memo_dir=folder)
    assert [o.reused for o in first] == [False] and [o.reused for o in again] == [True]
    assert again[0].text == first[0].text and len(list(folder.glob("*.json"))) == 1


def test_a_budget_bound_record_is_resumed_not_taken_and_settles_once_a_resume_finds_nothing_shorter(tmp_path):
    """harness.reduce.memo: a kept search that stopped at the budget is the next batch's start (its code is
    run as the first candidate, and the search goes on from it); the result replaces the record where it is
    shorter; where a resumed search writes nothing shorter the record stays, settled, and the batch after
    takes it after one run. A budget-bound record whose code no longer fails is searched from the script."""
    import json

    from harness.reduce.batch import Job, _one

    script = tmp_path / "fake-cpu__case.py"
    script.write_text(SCRIPT)
    folder = tmp_path / "memo"
    with _server(tmp_path, "bad", BUG="1") as bad:
        servers = lambda _name, _preload, is_fresh=False: bad  # noqa: E731
        said: list[str] = []
        first = _one(Job(script, "fake-cpu"), servers, 60, said.append, [], folder)
        [record] = folder.glob("*.json")
        done = json.loads(record.read_text())
        assert not done["budget_hit"] and not done["settled"] and not first.resumed
        # a search cut short with two of the script's statements left: resumed, and it ends where the whole
        # search did, in fewer candidates
        cut = "import json\nUNUSED_TABLE = {'a': 1, 'b': 2, 'c': 3}\n" + done["body"]
        record.write_text(json.dumps({**done, "budget_hit": True, "body": cut}))
        resumed = _one(Job(script, "fake-cpu"), servers, 60, said.append, [], folder)
        assert resumed.resumed and not resumed.reused and resumed.text == first.text
        assert resumed.candidates < first.candidates / 2
        assert any("the search goes on from it" in m for m in said) and "resumed from an earlier batch's" in said[-1]
        again = json.loads(record.read_text())
        assert not again["budget_hit"] and again["body"] == done["body"]  # replaced by the shorter, finished one
        # a budget-bound record already as short as a search from it gets: kept, settled, then taken
        record.write_text(json.dumps({**done, "budget_hit": True}))
        said.clear()
        settled = _one(Job(script, "fake-cpu"), servers, 60, said.append, [], folder)
        assert settled.resumed and settled.text == first.text and settled.candidates > 0
        assert any("nothing shorter" in m and "settled" in m for m in said), said
        assert json.loads(record.read_text()) == {**done, "settled": True}  # that search ended within the budget
        taken = _one(Job(script, "fake-cpu"), servers, 60, said.append, [], folder)
        assert taken.reused and not taken.resumed and taken.ran == 1 and taken.text == first.text
        # settled while still budget-bound (the resumed search reached the budget too): taken, not resumed
        record.write_text(json.dumps({**done, "budget_hit": True, "settled": True}))
        taken = _one(Job(script, "fake-cpu"), servers, 60, said.append, [], folder)
        assert taken.reused and not taken.resumed and taken.ran == 1 and taken.budget_hit
        # a budget-bound record whose code no longer fails: the search starts from the script
        record.write_text(json.dumps({**done, "budget_hit": True, "body": "print('no failure')\n"}))
        said.clear()
        searched = _one(Job(script, "fake-cpu"), servers, 60, said.append, [], folder)
        assert not searched.resumed and not searched.reused and searched.text == first.text
        assert not any("goes on from it" in m for m in said)
        assert json.loads(record.read_text())["body"] == done["body"]


def test_a_string_folded_from_the_scripts_own_pieces_is_kept_and_a_cut_one_is_not():
    from harness.reduce.reducer import _composed, _pieces

    pieces = _pieces({"nested", ": got ", "_xla_compute_type", 8, 1e-09, True, ""})
    assert _composed("nested: got ", pieces) and _composed("nested8", pieces)
    assert not _composed("pute_type", pieces)  # what pysource-minimize cuts out of a string
    assert not _composed("nested", pieces)  # one piece is the script's own value already, not a composition
    assert _composed("nestedTrue", pieces)  # f"{'nested'}{True}": a boolean the script held prints so
    assert not _composed("nestedFalse", pieces) and not _composed("", pieces) and not _composed(8, pieces)


FSTRING_MESSAGE = SCRIPT.replace('f"library_sum gave {got}', 'f"{\'library_sum\'} gave {got}')


def test_an_f_strings_literal_parts_fold_into_its_text_in_a_reduced_script(tmp_path):
    # fold_literals writes f"{'library_sum'} gave ..." as f'library_sum gave ...': a text no line of the
    # script held, made of its own strings, which the reducer's guard on values must let through
    assert "{'library_sum'} gave" in FSTRING_MESSAGE
    with _server(tmp_path, "bad", BUG="1") as bad, _server(tmp_path, "good-cpu") as good:
        red = reduce_script(FSTRING_MESSAGE, bad, None, contrast=[good], budget_s=120)
    assert "{'library_sum'}" not in red.body and "library_sum gave {got}" in red.body, red.body


SPLIT_NAME = SCRIPT.replace("    want = math.fsum(values)\n",
                            "    _, _, name = 'math.fsum'.rpartition('.')\n    want = getattr(math, name)(values)\n")


def test_a_value_folded_from_the_scripts_literals_is_kept_though_no_line_held_it(tmp_path):
    # 'math.fsum'.rpartition('.') folds to ('math', '.', 'fsum'): 'fsum' is no line's value nor made of
    # the script's strings end to end, yet it is the script's own computation, not a string cut short:
    # the guard on values lets through what fold_literals makes of a kept candidate
    assert "rpartition" in SPLIT_NAME
    with _server(tmp_path, "bad", BUG="1") as bad, _server(tmp_path, "good-cpu") as good:
        red = reduce_script(SPLIT_NAME, bad, None, contrast=[good], budget_s=120)
    # (`_, _, name` binds `_` twice, so the tuple stays a tuple: its 'fsum' is the folded value)
    assert "rpartition" not in red.body and ("'fsum'" in red.body or "math.fsum(" in red.body), red.body
