"""The torchax_ops family sees the bugs it was built for, and no older case does: each seed in
tests/seeds puts one into the real torchax 0.0.13 of torchax0013-cpu (see tests/test_seeded_bugs.py
for the pattern).

- floor_divide_rounds_toward_zero: aten.floor_divide truncates (-7 // 2 == -3): the OpInfo case
  (its samples hold negatives) fails, eagerly and traced.
- argmax_takes_last_max: aten.argmax returns the last of equal maxima: OpInfo's argmax samples
  have no ties, the family's tied copy of an index op's sample does.
- factory_in_traced_forward_stays_on_cpu: a tensor constructor asked for the jax device inside a
  jax trace returns a CPU tensor: the generated-forward property fails (eager forwards agree).
- inplace_sigmoid_not_written_back: `x.sigmoid_()` returns sigmoid(x) but leaves x as it was: the
  in-place case fails, eagerly and traced; the functional sigmoid cases pass.
- cat_pads_mismatched_sizes: aten.cat zero-pads inputs whose sizes differ outside the cat dimension
  instead of raising: the error-input case fails, eagerly and traced; every valid cat passes.

Three cell runs: clean, every seed of the functional cases and the forwards at once (each touches a
different op; each target must fail with its own symptom, and every older torchax case must end as
it did clean), and the seeds of the op's other forms (in-place, error inputs), whose targets must
fail while every case that came before them (the functional op cases of the same ops, the forwards,
the older family) ends as it did clean.
"""

from __future__ import annotations

import pytest

from harness.cells.matrix import catalogue
from harness.judge.results import read_results
from harness.run.cellrun import run_cell

pytestmark = pytest.mark.e2e

CELL = "torchax0013-cpu"
SEEDS = ["floor_divide_rounds_toward_zero", "argmax_takes_last_max", "factory_in_traced_forward_stays_on_cpu"]
OPS = "suites/torchax_ops/test_ops.py::test_op"
FLOOR = [f"{OPS}[aten.floor_divide-int64-eager]", f"{OPS}[aten.floor_divide-float32-jit]"]
ARGMAX = [f"{OPS}[aten.argmax-float64-eager]", f"{OPS}[aten.argmax-float64-jit]"]
FORWARD = "suites/torchax_ops/test_modules.py::test_generated_forward_matches_torch_eager"
TARGETS = [*FLOOR, *ARGMAX, FORWARD]
OLDER = "suites/torchax/"  # every case of the torchax family that came before this one
FORMS = ["inplace_sigmoid_not_written_back", "cat_pads_mismatched_sizes"]
INPLACE = [f"{OPS}_inplace[aten.sigmoid-float32-eager]", f"{OPS}_inplace[aten.sigmoid-float32-jit]"]
ERRORS = [f"{OPS}_error[aten.cat-eager]", f"{OPS}_error[aten.cat-jit]"]
# what came before the op's other forms and must stay blind to their seeds: the functional cases of
# the same ops (every dtype, both paths), the generated forwards, the older family
BEFORE_FORMS = [f"{OPS}[aten.{op}-{d}-{p}]" for op in ("sigmoid", "cat") for d in ("float32", "float64", "bfloat16")
                for p in ("eager", "jit")] + ["suites/torchax_ops/test_modules.py::test_generated_forward_updates_buffers_as_torch_eager"]


def _run(tmp, seeds: list[str]):
    out = tmp / f"{'-'.join(seeds) or 'clean'}.jsonl"
    args = [a for s in seeds for a in ("-p", f"tests.seeds.{s}")] + [*TARGETS, *INPLACE, *ERRORS, *BEFORE_FORMS, OLDER]
    run_cell(catalogue().cell(CELL), out, args, timeout_s=300)
    res = read_results(out)
    assert res.status == "complete", res.reason
    return res


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("seeded-torchax-ops")
    return _run(tmp, []), _run(tmp, SEEDS), _run(tmp, FORMS)


def _older(res) -> dict[str, str]:
    return {i: c.raw for i, c in res.cases.items() if i.startswith(OLDER)}


def test_the_targets_pass_on_the_real_torchax_and_the_older_cases_are_blind_to_every_seed(runs):
    clean, seeded, _ = runs
    assert {i: clean.cases[i].raw for i in TARGETS} == {i: "pass" for i in TARGETS}
    assert len(_older(clean)) > 10, "the older torchax family did not run"
    assert _older(seeded) == _older(clean), "an older case changed its outcome under the seeds"


def test_floor_division_toward_zero_is_caught_by_the_opinfo_cases(runs):
    _, seeded, _ = runs
    for i in FLOOR:
        case, msg = seeded.cases[i], seeded.cases[i].message or ""
        assert case.raw == "fail" and ("are not equal" in msg or "are not close" in msg), case


def test_argmax_taking_the_last_maximum_is_caught_by_the_tied_sample(runs):
    _, seeded, _ = runs
    for i in ARGMAX:
        case = seeded.cases[i]
        assert case.raw == "fail" and "with ties" in (case.message or ""), case


def test_a_factory_that_leaves_the_trace_on_cpu_is_caught_by_the_generated_forwards(runs):
    _, seeded, _ = runs
    case = seeded.cases[FORWARD]
    assert case.raw == "fail", case
    assert "torch.Tensor" in (case.message or "") or "not a torchax Tensor" in (case.message or ""), case.message


def _before_forms(res) -> dict[str, str]:
    return {i: c.raw for i, c in res.cases.items()
            if i.startswith(OLDER) or i in BEFORE_FORMS or i == FORWARD}


def test_the_other_forms_targets_pass_clean_and_what_came_before_is_blind_to_their_seeds(runs):
    clean, _, forms = runs
    assert {i: clean.cases[i].raw for i in INPLACE + ERRORS} == {i: "pass" for i in INPLACE + ERRORS}
    before = _before_forms(clean)
    assert len([i for i in before if "test_op[" in i]) == 12 and len(before) > 20, sorted(before)
    assert _before_forms(forms) == before, "a case older than the in-place / error-input cases saw their seeds"


def test_an_inplace_update_that_is_never_written_back_is_caught_by_the_inplace_cases(runs):
    _, _, forms = runs
    for i in INPLACE:
        case = forms.cases[i]
        assert case.raw == "fail" and "the in-place call differs" in (case.message or ""), case


def test_a_missing_size_check_in_cat_is_caught_by_its_error_inputs(runs):
    _, _, forms = runs
    for i in ERRORS:
        case = forms.cases[i]
        assert case.raw == "fail" and "Sizes of tensors must match" in (case.message or "") and "returned" in case.message, case
