"""The short standalone scripts of the OpInfo op cases (harness/report/standalone_op.py): the op, the
sample, the two results.

Without a cell: every part of an id and of a run's example is data (checked, embedded as a literal),
the script is short. In the cell (e2e, torchax0013-cpu): for real cases, failing for different causes
and passing, the script exported as `harness report` exports it (a failing case with its run's
recorded example, a passing one without) gives the case's verdict: exit 1 where the case failed
(its known issue's `match` in the script's output), exit 0 where it passed.
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
from harness.report.standalone_op import Facts, parse_op_case, run_facts

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
    assert len(script.splitlines()) <= 50
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
    assert len(script.splitlines()) <= 62


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
        path.write_text(export_script(case_id, described, None, example=example))
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
