"""How long the standalone reproducers are: every case with a core, on every default-matrix cell
its family runs in (issue 19: short enough to paste into an upstream issue, aim under 60 lines).

The scripts are exported for each cell's pins (what `harness report` does, without the installed
versions a run adds), so the figure is the whole class, not one example. Cores are the scenarios'
own code, kept word for word: the bound below is what the exporter reaches, and docs/repros.md
("Standalone reproducers") gives the distribution.
"""

from __future__ import annotations

import functools
import statistics

from harness.cells.matrix import load_matrix
from harness.judge.apis import default_api_ranges
from harness.paths import MATRICES_DIR
from harness.report.standalone import NoStandalone, export_script, find_core
from tests.test_standalone import _all_case_ids

AIM = 60
# The longest script may have (lines). Exporting drops everything a case does not reach; what is
# left over AIM is the scenarios' own code: the linearize_transpose core alone is 40 lines, the
# call_jax ones carry the HLO-parameter helpers and torch_xla's device/sync shims, and its property
# cases (cored since) also the input-spec helpers and the probe they compare against (up to 226).
BOUND = 230
# The generated shard_map space case carries the float64 model of every collective it draws (the
# reference itself: the per-device semantics of 13 collectives, the out-spec join, the Jacobian
# the vjp is checked against): about 320 lines on every cell, the price of a script that reruns any
# falsifying program the space finds (its refusal checks written as try/except: a script imports no pytest).
# The generated compute_on program case carries the program builder (11 forms x 4 nestings), its
# float64 reference, and since jax 0.11 the compute_on spelling bridge, the same-type nesting refusal
# and the GPU compiler's host-placement reader it checks with (232-238 lines).
CASE_BOUNDS = {"suites/shard_map/test_space.py::test_generated_collective_programs_match_the_float64_model": 340,
               "suites/compute_on/test_space.py::test_generated_placed_programs_agree_eager_jit_aot": 240}
# Cases of this round's derived families, by id prefix, each over BOUND for a reason not yet met:
# - the census cases carry the AST scanner and resolver they check the bridge's source with (367);
# - the generated module forwards carry the grammar that builds them (232);
# - the declared-dependency cases carry the import probe and the Requires-Dist closure, with the
#   bridge's extras the env holds and the extras that name a missing package (252).
PREFIX_BOUNDS = {"suites/coexist/test_census.py::": 370, "suites/torchax_ops/test_modules.py::": 235,
                 "suites/coexist/test_declared.py::": 255}
# An OpInfo op case (and its in-place / out= / error-input forms) exports through
# harness/report/standalone_op.py: the op, the sample, the two results (issue 27), not the family's
# core (398 lines before). The header and the cell's env are 5-6 of these lines; a script exported
# without a run (as here) also works out the OpInfo's tolerance and whether values compare, and checks
# every output leaf; an out= script builds its out tensors too. Where torch refuses the sample, an op /
# in-place script calls torchax in that branch (the case's rule: torchax must refuse it too), 9-12 lines
# more: a traced in-place one, 63 (74 before the one-line header and the two import lines).
OP_CASE, OP_BOUND = "suites/torchax_ops/test_ops.py::test_op", 63
# A failing run's op script (short_op_scripts below) keeps only the check the run failed: the header and
# env (5-6 lines: a fixed comment, the provenance as literals on 2-3, the cell's variables on 2), the
# imports (2), then at most SHORT_OP_BODY lines: 13-15 for an eager op's compared check, a traced call
# (jit) 2-3 more, out= its out tensors (3 more), an in-place / out= values check its tolerance worked
# out (2 more: those runs record none), a 64-bit dtype its jax_enable_x64 (1). Out= traced, values: 23.
# Where torch raises, torch's call in a try, then torchax's (which must raise too) in another: traced,
# 22. Within issue 32's target for a reduced script (30 lines): these are minimal by construction.
SHORT_OP_BODY, SHORT_OP_BOUND = 23, 30


def bound_for(case_id: str) -> int:
    """The longest script case_id may export."""
    if case_id.startswith((OP_CASE + "[", OP_CASE + "_")):
        return OP_BOUND
    return next((b for p, b in PREFIX_BOUNDS.items() if case_id.startswith(p)),
                CASE_BOUNDS.get(case_id.split("[")[0], BOUND))
# What each family needs in a cell to run at all (the others skip as "not in cell"): torchax_ops
# needs torch beside torchax (torchax0013declared-cpu pins torchax alone).
FAMILY_NEEDS = {"call_jax": ("torch-xla",), "torchax": ("torch",), "torchax_ops": ("torchax", "torch"),
                "shard_map": ("jax",), "compute_on": ("jax",)}


@functools.lru_cache(maxsize=1)
def exported_scripts() -> tuple[tuple[str, str, str], ...]:
    """(case, cell, script) for every exportable case on every default-matrix cell of its family
    (shared with tests/test_standalone_lint.py: exported once per session)."""
    cells = [c.describe() for c in load_matrix(MATRICES_DIR / "default.yaml").cells]
    ranges = default_api_ranges()
    out = []
    for case_id in _all_case_ids():
        family = case_id.split("/")[1]
        for cell in cells:
            if not all(p in cell["pins"] for p in FAMILY_NEEDS.get(family, ("jax",))):
                continue
            try:
                script = export_script(case_id, cell, {"id": "known-issue", "link": "https://example.org/1"}, ranges)
            except NoStandalone:
                break  # no core: the same on every cell
            out.append((case_id, cell["cell"], script))
    return tuple(out)


# A failing run's record for each check an op case's form can fail (suites/torchax_ops/cores.py's words):
# (example, message) - the short script is exported from these, as `harness report` exports it from a run.
_RUN = "Falsifying example: sample(index=3, ties={ties}, values=True, rtol={tol}, atol={tol})"
_SAMPLES = {"op": "1 of 2 samples differ from torch eager; ", "inplace": "1 of 2 samples: the in-place call differs from torch eager; ",
            "out": "1 of 2 samples: out= differs from torch eager; "}
_FAILS = {"op": ["sample 3: torch raised RuntimeError, torchax {path} returned",
                 "sample 3: torch returned, torchax {path} raised TypeError: no",
                 "sample 3: torch returned, torchax {path} raised AssertionError: the call left a JAX tracer (T) as the env's PRNG key",
                 "sample 3 (float32[5]): 2 output leaves where torch gives 1",
                 "sample 3 (float32[5]): output 1: torch.Tensor where a torchax Tensor is due (it left the env)",
                 "sample 3 (float32[5]): output 1: shape (1,) where torch gives (5,)",
                 "sample 3 with ties (float32[5]): output 1: dtype torch.int32 where torch gives torch.int64",
                 "sample 3 (float32[5]): output 0: Tensor-likes are not close!"],
          "inplace": ["sample 3: torch raised RuntimeError, torchax {path} returned",
                      "sample 3 (float32[5]): OperatorNotFound: no lowering",
                      "sample 3 (float32[5]): AssertionError: the call left a JAX tracer (T) as the env's PRNG key",
                      "sample 3 (float32[5]): AssertionError: output 1: dtype torch.int32 where torch gives torch.int64",
                      "sample 3 (float32[5]): AssertionError: output 0: Tensor-likes are not close!"]}
_FAILS["out"] = _FAILS["inplace"][1:]  # torch refusing a sample leaves it out of out=


@functools.lru_cache(maxsize=1)
def short_op_scripts() -> tuple[tuple[str, str, str, str], ...]:
    """(case, cell, check, script) for every op case of exported_scripts() (on its first cell; one case of each
    form on every cell) and every check its form can fail, exported from a failing run's record
    (tests/test_standalone_lint.py lints these too)."""
    from harness.report.standalone_op import parse_op_case, short_form

    cells = {c.name: c.describe() for c in load_matrix(MATRICES_DIR / "default.yaml").cells}
    ops = [(case_id, cell) for case_id, cell, _full in exported_scripts() if case_id.startswith((OP_CASE + "[", OP_CASE + "_"))]
    # every op case on its first cell, and every cell (the header and env differ) for one case of each form
    firsts = {case_id: cell for case_id, cell in reversed(ops)}
    forms = {}
    for case_id, cell in ops:
        forms.setdefault((case_id.split("[")[0], case_id.rsplit("-", 1)[-1]), case_id)
    out = []
    for case_id, cell_name in ops:
        if firsts[case_id] != cell_name and case_id not in forms.values():
            continue
        cell = cells[cell_name]
        parts = parse_op_case(case_id)
        if parts["kind"] == "error":
            runs = [("Falsifying example: error_input(index=2)",
                     f"1 of 3 error inputs: error input 2 (float32[5]): torch raises RuntimeError (x), torchax {parts['path']} returned")]
        else:
            example = (_RUN.format(ties=True, tol=0.5) if parts["kind"] == "op" else
                       f"Falsifying example: {parts['kind']}_sample(index=3)")
            runs = [(example, _SAMPLES[parts["kind"]] + f.format(path=parts["path"])) for f in _FAILS[parts["kind"]]]
        for example, message in runs:
            failed = short_form(case_id, example, message)
            assert failed is not None, (case_id, message)  # every record of the family's words is read
            script = export_script(case_id, cell, {"id": "known-issue", "link": "https://example.org/1"},
                                   example=example, message=message)
            out.append((case_id, cell_name, failed.check, script))
    return tuple(out)


def _lengths() -> list[tuple[int, str, str]]:
    """(lines, case, cell) for every exportable case on every default cell of its family."""
    return sorted((len(script.splitlines()), case_id, cell) for case_id, cell, script in exported_scripts())


def test_every_exported_script_is_within_the_bound():
    lengths = _lengths()
    cored = set()
    for case_id in _all_case_ids():
        try:
            find_core(case_id)
            cored.add(case_id)
        except NoStandalone:
            pass
    assert len(cored) > 80 and {case for _n, case, _c in lengths} == cored  # every case with a core
    counts = [n for n, _case, _cell in lengths]
    over = [f"{n} {case} ({cell})" for n, case, cell in lengths if n > bound_for(case)]
    summary = (f"{len(counts)} scripts: min {counts[0]}, median {statistics.median(counts)}, max {counts[-1]}, "
               f"{sum(n <= AIM for n in counts)} within {AIM} lines")
    print("\n" + summary)
    longest = "\n".join(f"{n} {case} ({cell})" for n, case, cell in lengths[-10:])
    assert not over, f"{summary}; over {BOUND}:\n" + "\n".join(over) + f"\nlongest:\n{longest}"


def test_an_op_cases_script_is_the_op_the_sample_and_the_two_results():
    """Every OpInfo op case a known issue names, on every default cell of the family: within OP_BOUND,
    and nothing of the family's core in it (no inlined helper of suites/torchax_ops)."""
    ops = [(case, cell, script) for case, cell, script in exported_scripts() if case.startswith((OP_CASE + "[", OP_CASE + "_"))]
    assert len(ops) > 200, "the known issues name fewer op cases than expected: the export path is not exercised"
    lengths = sorted(len(script.splitlines()) for _case, _cell, script in ops)
    print(f"\n{len(ops)} op scripts: min {lengths[0]}, median {statistics.median(lengths)}, max {lengths[-1]} lines")
    assert lengths[-1] <= OP_BOUND
    assert not [case for case, _cell, script in ops if "def op_case(" in script or "def _compare(" in script]


def test_a_failing_runs_op_script_is_a_few_lines():
    """issue 27: every op case on every default cell of the family, failing each check its form can fail,
    exports only that check: within SHORT_OP_BOUND lines, SHORT_OP_BODY below the imports."""
    scripts = short_op_scripts()
    assert len(scripts) > 1000 and {c for _i, _cell, c, _s in scripts} == {
        "torch-raises", "torchax-raises", "prng", "count", "type", "shape", "dtype", "values", "returned"}
    lengths = sorted(len(s.splitlines()) for *_x, s in scripts)
    bodies = sorted(len(s.split("import op_db\n", 1)[1].splitlines()) for *_x, s in scripts)
    print(f"\n{len(scripts)} short op scripts: {lengths[0]}-{lengths[-1]} lines (median {statistics.median(lengths)}), "
          f"body {bodies[0]}-{bodies[-1]} (median {statistics.median(bodies)})")
    assert lengths[-1] <= SHORT_OP_BOUND and bodies[-1] <= SHORT_OP_BODY
