"""The short standalone scripts of the OpInfo op cases (harness/report/standalone_op.py): the op, the
sample, the two results.

Without a cell: every part of an id and of a run's example is data (checked, embedded as a literal),
the script is short. In the cell (e2e, torchax0013-cpu): for real cases, failing for different causes
and passing, the script exported as `harness report` exports it (a failing case with its run's
recorded example and message: the short script, only the check that failed; a passing one without)
gives the case's verdict: exit 1 where the case failed (its known issue's `match` in the script's
output), exit 0 where it passed; and each failing case's short script fails as its full one does
(the reducer's signature).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest

from harness.cells.matrix import catalogue
from harness.judge.expectations import load_expectations
from harness.report.standalone import NoStandalone, export_script
from harness.report.standalone_op import CHECKS, Facts, Failed, parse_op_case, run_facts, short_form

CELL = "torchax0013-cpu"
OPS = "suites/torchax_ops/test_ops.py::test_op"
# (case, outcome on torchax 0.0.13 / jax 0.7.2): a failure of each kind the known issues hold, and passes
# that need what the generic script works out itself (a random op, a tolerance override, a skip of
# OpInfo's cross-device comparison, a torch.return_types result, a factory's device)
CASES = {
    f"{OPS}[aten.argmax-float32-eager]": "fail",           # int64 indices narrowed without x64
    f"{OPS}[aten.topk-float64-jit]": "fail",               # lax.top_k's int32 indices
    f"{OPS}[aten.bernoulli-float32-jit]": "fail",          # the PRNG key leaks a tracer
    f"{OPS}[aten.add-bool-eager]": "fail",                 # bool + bool gives int32
    f"{OPS}[aten.kthvalue-float64-jit]": "fail",           # only the tied copy of the sample differs
    f"{OPS}[aten.cumsum-bfloat16-eager]": "fail",          # values beyond the tolerance
    f"{OPS}[aten.nonzero-float32-jit]": "fail",            # torchax raises (data-dependent shape)
    f"{OPS}[aten.erf-bool-eager]": "fail",                 # torchax raises (bool rejected)
    f"{OPS}[aten.floor_divide-float32-eager]": "pass",
    f"{OPS}[aten.add-float32-jit]": "pass",
    f"{OPS}[aten.bernoulli-float32-eager]": "pass",        # random: compared by structure
    f"{OPS}[aten.erfinv-float32-jit]": "pass",             # the OpInfo's precisionOverride
    f"{OPS}[aten.empty_like-float32-eager]": "pass",       # OpInfo skips comparing its values
    f"{OPS}[aten.max(reduction_with_dim)-float64-jit]": "pass",  # a structseq, traced
    f"{OPS}[aten.arange-int64-eager]": "pass",             # a factory: device='cpu' becomes torchax's
    # the op's other forms
    f"{OPS}_error[aten.cat-eager]": "pass",                 # every error input raises on torchax too
    f"{OPS}_error[aten.gather-jit]": "fail",                # a size mismatch torch rejects, computed
    f"{OPS}_inplace[aten.sigmoid-float32-jit]": "pass",
    f"{OPS}_inplace[aten.abs-float32-eager]": "fail",       # no lowering for aten.abs_
    f"{OPS}_inplace[aten.sigmoid-int64-jit]": "fail",       # torch raises, torchax writes the float result back
    f"{OPS}_inplace[aten.renorm-bfloat16-jit]": "fail",     # torchax's own AssertionError (math outside its env)
    f"{OPS}_out[aten.add-float32-eager]": "pass",
    f"{OPS}_out[aten.digamma-float32-jit]": "fail",         # out= returned but never written
    f"{OPS}_out[aten.mm-float32-eager]": "fail",            # out= handed to the functional lowering
}


def _cell() -> dict:
    return catalogue().cell(CELL).describe()


def test_an_op_case_exports_the_op_the_sample_and_the_two_results():
    script = export_script(f"{OPS}[aten.max(reduction_with_dim)-float64-jit]", _cell(),
                           example="Falsifying example: sample(index=3, ties=True, values=True, rtol=None, atol=None)")
    compile(script, "op", "exec")
    assert "o.aten_name == 'max' and o.variant_test_name == 'reduction_with_dim'" in script
    assert "jax.config.update('jax_enable_x64', True)" in script
    assert "sample = list(info.sample_inputs('cpu', torch.float64))[3]" in script
    assert "sample.input = sample.input.sign()" in script and "torchax.interop.jax_jit(traced)" in script
    assert "import suites" not in script and "harness" not in script.split("import os", 1)[1]
    assert len(script.splitlines()) <= 67  # 17 of them where torch refuses the sample (torchax traced must too)
    eager = export_script(f"{OPS}[aten.floor_divide-float32-eager]", _cell())
    assert "jax_jit" not in eager and "with env:" in eager and "'jax_enable_x64', False" in eager
    assert "max(info.sample_inputs('cpu', torch.float32)" in eager  # no run: the ci profile's sample


@pytest.mark.parametrize("case, example, has", [
    (f"{OPS}_error[aten.cat-jit]", "Falsifying example: error_input(index=2)",
     ["for i in [2]:", "errors = list(info.error_inputs('cpu'))", "torchax jit returned", "jax_jit(traced)"]),
    (f"{OPS}_error[aten.cat-eager]", None, ["for i in range(len(errors)):", "with env:"]),
    (f"{OPS}_inplace[aten.sigmoid-float32-jit]", "Falsifying example: inplace_sample(index=0)",
     ["list(info.sample_inputs('cpu', torch.float32))[0]", "return a[0], info.inplace_variant(a[0], *a[1], **a[2])"]),
    (f"{OPS}_inplace[aten.sigmoid-float32-eager]", None, ["if not s.broadcasts_input", "info.inplace_variant(a[0]"]),
    (f"{OPS}_out[aten.max(reduction_with_dim)-float64-jit]", None,
     ["'jax_enable_x64', True", "info(*a[0], **a[1], out=a[2])", "return a[2]", "float('nan')"]),
])
def test_the_ops_other_forms_export_the_same_way(case, example, has):
    script = export_script(case, _cell(), example=example)
    compile(script, "op", "exec")
    assert all(h in script for h in has), [h for h in has if h not in script]
    assert len(script.splitlines()) <= 74  # tests/test_standalone_length.py's OP_BOUND


@pytest.mark.parametrize("bad", [
    f"{OPS}[aten.floor_divide-float16-eager]",                 # not a dtype of the family
    f"{OPS}[aten.floor_divide-float32-jit2]",
    f"{OPS}[aten.floor')+__import__('os').system('x')#-float32-eager]",
    f"{OPS}[aten.floor_divide\n-float32-eager]",
    f"{OPS}[aten.x(a b)-float32-eager]",
    f"{OPS}[aten.floor_divide-float32-eager",
])
def test_an_id_that_is_not_the_familys_is_refused(bad):
    with pytest.raises(NoStandalone):
        export_script(bad, _cell())


@pytest.mark.parametrize("example, facts", [
    ("Falsifying example: sample(index=7, ties=True, values=False, rtol=0.001, atol=1e-05)",
     Facts(7, True, False, 0.001, 1e-05, recorded=True)),
    ("Falsifying example: sample(index=__import__('os'), ties=True)", Facts()),    # not a literal
    ("Falsifying example: sample(index='7', ties=True)", Facts()),                 # not an int
    ("Falsifying example: sample(index=-1, ties=False)", Facts()),
    ("Falsifying example: sample(index=1, ties=1)", Facts()),                      # not a bool
    ("Falsifying example: sample(index=1, rtol=float('nan'))", Facts()),
    ("Falsifying example: sample(index=1, rtol=1e999)", Facts()),
    ("nothing", Facts()),
    (None, Facts()),
])
def test_the_runs_example_is_data(example, facts):
    assert run_facts(example) == facts


def test_every_part_of_the_script_from_outside_is_a_literal():
    """The id's parts and the example's values appear only inside string and number literals."""
    case = f"{OPS}[aten.max(reduction_with_dim)@max.x-bfloat16-jit]"
    assert parse_op_case(case) == {"kind": "op", "aten": "max", "variant": "reduction_with_dim", "name": "max.x",
                                   "dtype": "bfloat16", "path": "jit"}
    script = export_script(case, _cell(), {"id": "x\nimport os", "link": "https://e/1"},
                           example="Falsifying example: sample(index=2, ties=False, values=True, rtol=0.5, atol=0.25)")
    tree = ast.parse(script)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert not names & {"max_x", "reduction_with_dim", "os_system"}
    assert "o.name == 'max.x'" in script and "tol = dict(rtol=0.5, atol=0.25)" in script
    assert sum(isinstance(n, ast.Import) and [a.name for a in n.names] == ["os"] for n in tree.body) == 1


# --- in the cell -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cell_run(tmp_path_factory):
    from harness.judge.results import read_results
    from harness.run.cellrun import run_cell

    out = tmp_path_factory.mktemp("op-scripts") / "run.jsonl"
    run_cell(catalogue().cell(CELL), out, list(CASES), timeout_s=300)
    res = read_results(out)
    assert res.status == "complete", res.reason
    return res


@pytest.mark.e2e
def test_each_op_script_gives_its_cases_verdict_in_the_cell(cell_run, tmp_path):
    from harness.cells.envs import ensure_env
    from tests.test_standalone_fidelity import _run_cell

    cell = catalogue().cell(CELL)
    described = cell.describe()
    versions = {k: v for k, v in cell_run.run_info.get("versions", {}).items() if v}
    exps = [e for e in load_expectations() if e.applies(versions, "cpu")]
    assert {i: cell_run.cases[i].raw for i in CASES} == CASES, "a case's outcome moved: re-triage this list"
    scripts, matches = [], []
    for i, case_id in enumerate(CASES):
        example = cell_run.cases[case_id].observations.get("falsifying_example")
        assert (example is not None) == (CASES[case_id] == "fail"), (case_id, example)
        path = tmp_path / f"s{i}.py"
        path.write_text(export_script(case_id, described, None, example=example, message=cell_run.cases[case_id].message))
        scripts.append(path)
        exp = next((e for e in exps if e.covers(case_id)), None)
        matches.append(exp.match if exp is not None and CASES[case_id] == "fail" else None)
    python = ensure_env(cell).python
    codes = _run_cell(python, cell.run_env(), scripts, tmp_path,
                      "numpy,jax,torch,torchax,torch.testing._internal.common_methods_invocations")
    fresh = subprocess.run([str(python), "-I", str(scripts[0])], cwd=tmp_path, capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, timeout=300)
    assert fresh.returncode == codes[str(scripts[0])], "the forking driver changed a script's exit"
    wrong = []
    for (case_id, outcome), path, match in zip(CASES.items(), scripts, matches):
        rc, output = codes[str(path)], (tmp_path / f"{path.name}.out").read_text(errors="replace")
        if rc != {"pass": 0, "fail": 1}[outcome] or (match and not re.search(match, output)):
            wrong.append(f"{case_id} ({outcome}): exit {rc}, {output.strip().splitlines()[-1:]} (match {match!r})")
    print(f"\n{len(CASES) - len(wrong)} of {len(CASES)} op scripts give their case's verdict", file=sys.stderr)
    assert not wrong, "\n".join(wrong)


# --- the short script: only the check the run failed (issue 27) ---------------------------------------

def _ex(index: int, ties: bool = False, values: bool = True, rtol: float | None = None, atol: float | None = None) -> str:
    return f"Falsifying example: sample(index={index}, ties={ties}, values={values}, rtol={rtol}, atol={atol})"


# A failing run's first failure of each kind, as suites/torchax_ops/cores.py words it, with its example
SHORT = {
    "torch-raises": (f"{OPS}[aten.erf-float32-eager]", _ex(2),
                     "1 of 3 samples differ from torch eager; sample 2: torch raised RuntimeError, torchax eager returned"),
    "torchax-raises": (f"{OPS}[aten.nonzero-float32-jit]", _ex(1),
                       "1 of 1 samples differ from torch eager; sample 1: torch returned, torchax jit raised "
                       "jax.errors.ConcretizationTypeError: Abstract tracer value | sample 2: output 0: dtype x"),
    "prng": (f"{OPS}[aten.bernoulli-float32-jit]", _ex(0, values=False),
             "1 of 1 samples differ from torch eager; sample 0: torch returned, torchax jit raised AssertionError: "
             "the call left a JAX tracer (DynamicJaxprTracer) as the env's PRNG key (it escaped the trace)"),
    "count": (f"{OPS}[aten.split-float32-eager]", _ex(4),
              "1 of 5 samples differ from torch eager; sample 4 (float32[5, 5], 2): 3 output leaves where torch gives 2"),
    "type": (f"{OPS}[aten.add-float32-eager]", _ex(0),
             "1 of 1 samples differ from torch eager; sample 0 (float32[5]): output 0: torch.Tensor where a torchax Tensor "
             "is due (it left the env)"),
    "shape": (f"{OPS}[aten.add-float32-eager]", _ex(0),
              "1 of 1 samples differ from torch eager; sample 0 (float32[5]): output 0: shape (5, 1) where torch gives (5,)"),
    "dtype": (f"{OPS}[aten.kthvalue-float64-jit]", _ex(3, ties=True),
              "2 of 9 samples differ from torch eager; sample 3 with ties (float64[5, 5], 2): output 1: dtype torch.int32 "
              "where torch gives torch.int64 | sample 4 (x): output 0: shape"),
    "values": (f"{OPS}[aten.cumsum-bfloat16-eager]", _ex(5, rtol=0.016, atol=0.5),
               "1 of 9 samples differ from torch eager; sample 5 (bfloat16[5, 10], 1): output 0: Tensor-likes are not close!"),
}
_NO_OTHER_CHECK = ("assert len(want) == len(got)", "assert isinstance(g, torchax.tensor.Tensor)", "assert g.shape == w.shape",
                   "assert g.dtype == w.dtype", "torch.testing.assert_close(", "assert 'Tracer' not in")


def _body_lines(script: str) -> list[str]:
    """The run, below the header, the cell's variables and the imports (the last: OpInfo's database)."""
    return script.split("import op_db\n", 1)[1].splitlines()


@pytest.mark.parametrize("check", sorted(SHORT))
def test_a_failing_runs_op_script_keeps_only_the_check_that_failed(check):
    case, example, message = SHORT[check]
    short = export_script(case, _cell(), example=example, message=message)
    full = export_script(case, _cell(), example=example)
    compile(short, "op", "exec")
    kept = [c for c in _NO_OTHER_CHECK if c in short]
    expected = {"torch-raises": [], "torchax-raises": [], "prng": ["assert 'Tracer' not in"],
                "count": ["assert len(want) == len(got)"], "type": ["assert isinstance(g, torchax.tensor.Tensor)"],
                "shape": ["assert g.shape == w.shape"], "dtype": ["assert g.dtype == w.dtype"],
                "values": ["torch.testing.assert_close("]}[check]
    assert kept == expected, kept
    # the check is the full script's statement word for word (the reducer's signature names it)
    assert all(line.strip() in {x.strip() for x in full.splitlines()} for line in short.splitlines()
               if line.strip().startswith(("assert ", "torch.testing.assert_close(")))
    assert "for n, (w, g) in enumerate" not in short and "again" not in short and "values &=" not in short
    assert short.splitlines()[:2] == full.splitlines()[:2]  # the fixed header
    if check in ("type", "shape", "dtype", "values"):
        n = {"dtype": 1}.get(check, 0)  # the output the message names
        assert f"n, w, g = {n}, want[{n}], got[{n}]" in short
    if check == "values":
        assert "tol = dict(rtol=0.016, atol=0.5)" in short  # the run's tolerance, a literal
    if check == "torch-raises":  # torch must raise, then torchax's call must not return (the case's words)
        assert "raise AssertionError(f'sample 2: torch raised {type(raised).__name__}, torchax eager returned {got}')" in short
        assert short.index("except Exception as exc:") < short.index("torchax.default_env()")
    if check == "dtype":
        assert "(sample.input.sign(), *sample.args)" in short and "[3]  # the failing run's" in short
    assert len(_body_lines(short)) <= SHORT_BODY_BOUND, "\n".join(_body_lines(short))
    assert len(short.splitlines()) < len(full.splitlines())


# Lines below the imports (the final "no failure" print included, where the script does not end in its
# failure): 13-15 for an eager op's compared check; a traced call (jit) 2-3 more, an out= script builds
# its out tensors (3), a values check of an in-place / out= run works its tolerance out (2: those runs
# record none), so out= traced with a values check is 22-23 (a 64-bit dtype sets jax_enable_x64, 1 more);
# where torch raises, torch's call and torchax's each in a try (torchax must raise too): traced, 22.
SHORT_BODY_BOUND = 23


@pytest.mark.parametrize("case, example, message, check", [
    (f"{OPS}_inplace[aten.abs-float32-eager]", "Falsifying example: inplace_sample(index=0)",
     "1 of 1 samples: the in-place call differs from torch eager; sample 0 (float32[20]): OperatorNotFound: "
     "Operator with name aten::abs_ has no lowering", "torchax-raises"),
    (f"{OPS}_out[aten.digamma-float32-jit]", "Falsifying example: out_sample(index=0)",
     "1 of 1 samples: out= differs from torch eager; sample 0 (float32[20]): AssertionError: output 0: "
     "Tensor-likes are not close! Mismatched elements: 20 / 20 (100.0%)", "values"),
    (f"{OPS}_out[aten.multinomial-float32-eager]", "Falsifying example: out_sample(index=1)",
     "1 of 1 samples: out= differs from torch eager; sample 1 (float32[3], 2): AssertionError: output 0: "
     "dtype torch.int32 where torch gives torch.int64", "dtype"),
    (f"{OPS}_inplace[aten.uniform-float32-jit]", "Falsifying example: inplace_sample(index=2)",
     "1 of 1 samples: the in-place call differs from torch eager; sample 2 (float32[5]): AssertionError: "
     "the call left a JAX tracer (DynamicJaxprTracer) as the env's PRNG key (it escaped the trace)", "prng"),
    (f"{OPS}_inplace[aten.renorm-bfloat16-jit]", "Falsifying example: inplace_sample(index=0)",
     "1 of 1 samples: the in-place call differs from torch eager; sample 0 (bfloat16[5, 5, 5], 2, 1, 0.5): "
     "AssertionError: torchax Tensors can only do math within the torchax environment.", "torchax-raises"),
    (f"{OPS}_error[aten.gather-jit]", "Falsifying example: error_input(index=1)",
     "1 of 4 error inputs: error input 1 (float32[4, 3], 0, int64[2]): torch raises RuntimeError "
     "(Expected index), torchax jit returned", "returned"),
])
def test_the_other_forms_short_scripts_keep_only_their_failure(case, example, message, check):
    assert short_form(case, example, message) == Failed(check)
    short = export_script(case, _cell(), example=example, message=message)
    full = export_script(case, _cell(), example=example)
    compile(short, "op", "exec")
    assert len(_body_lines(short)) <= SHORT_BODY_BOUND and len(short.splitlines()) < len(full.splitlines())
    assert not [x for x in ("values &=", "for n, (w, g)", "for i in [", "for i in range(") if x in short]
    if check == "values":  # no tolerance recorded for out=: worked out as the case does
        assert "tol = dict(rtol=max(" in short
    if check == "returned":
        assert ("raise AssertionError(f'error input {i}: torch raises {type(raised).__name__}, torchax jit returned {got}')"
                in short)
        assert "i, env = 1, torchax.default_env()" in short


@pytest.mark.parametrize("example, message", [
    (None, "1 of 1 samples differ from torch eager; sample 0 (float32[5]): output 0: dtype x"),   # no example recorded
    ("Falsifying example: sample(index=0, ties=False)",  # not every fact: the full script works them out
     "1 of 1 samples differ from torch eager; sample 0 (x): output 0: dtype x"),
    (_ex(0), None),   # no message
    (_ex(0), "something else failed"),
    (_ex(0), "1 of 1 samples differ from torch eager; sample 0 (float32[5]): output 0x: dtype x"),
])
def test_a_run_without_a_readable_failure_keeps_the_full_script(example, message):
    case = f"{OPS}[aten.add-float32-eager]"
    assert short_form(case, example, message) is None
    assert export_script(case, _cell(), example=example, message=message) == export_script(case, _cell(), example=example)


def test_the_message_picks_a_check_never_text():
    """A message is read by fixed patterns into one of CHECKS and an int: whatever else it holds stays out."""
    evil = ("1 of 1 samples differ from torch eager; sample 0 (x'); import os; os.system('y'); ('): output 7: "
            "dtype ')+__import__('os').system('z')#")
    example = _ex(0)
    assert short_form(f"{OPS}[aten.add-float32-eager]", example, evil) == Failed("dtype", 7)
    script = export_script(f"{OPS}[aten.add-float32-eager]", _cell(), example=example, message=evil)
    assert "system" not in script and "import os\n" in script and script.count("import os") == 1
    assert {Failed(c).check for c in CHECKS} == set(CHECKS)


@pytest.mark.e2e
def test_a_failing_runs_short_script_fails_as_the_full_one_does(cell_run, tmp_path):
    """Fidelity of the short scripts (only the check the run failed): for each failing case above, the
    short script and the full one (the same run's example, no message) run in the cell's interpreter
    (the reducer's fork server) and give the same signature (harness/reduce/signature.py: exit status,
    exception type, message up to numbers and the known issue's match, the statement that raised)."""
    from harness.cells.envs import ensure_env
    from harness.reduce.batch import known_match
    from harness.reduce.server import ForkServer
    from harness.reduce.signature import signature

    cell = catalogue().cell(CELL)
    versions = {k: v for k, v in cell_run.run_info.get("versions", {}).items() if v}
    expectations = [e for e in load_expectations() if e.applies(versions, "cpu")]
    failing = [c for c, outcome in CASES.items() if outcome == "fail"]
    pairs, shorts = [], 0
    for case_id in failing:
        r = cell_run.cases[case_id]
        example = r.observations.get("falsifying_example")
        exp = next((e for e in expectations if e.covers(case_id)), None)
        known = {"id": exp.id, "link": exp.link} if exp else None
        short = export_script(case_id, cell.describe(), known, example=example, message=r.message)
        full = export_script(case_id, cell.describe(), known, example=example)
        shorts += short_form(case_id, example, r.message) is not None
        pairs.append((case_id, full, short))
    assert shorts == len(failing), "a failing case's record no longer gives a short script"
    wrong = []
    with ForkServer(ensure_env(cell).python, cell.run_env(), ["numpy", "jax", "torch", "torchax"], tmp_path / "s", CELL) as s:
        for case_id, full, short in pairs:
            sigs = [signature(s.run(src, 300), src, known_match(src)) for src in (full, short)]
            if sigs[0] != sigs[1] or sigs[0].status != 1:
                wrong.append(f"{case_id}: full {sigs[0].describe()} / short {sigs[1].describe()}")
    print(f"\n{len(pairs) - len(wrong)} of {len(pairs)} short op scripts keep the full script's signature", file=sys.stderr)
    assert not wrong, "\n".join(wrong)
