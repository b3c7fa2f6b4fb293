"""The suite can see each bug: put it back into real jax / torch_xla and the scenario must go red.

Each test runs one real scenario case in a real cell through the harness runner, with a pytest
plugin from tests/seeds/ that re-introduces the upstream bug, and checks the raw outcome.
"""

from __future__ import annotations

import pytest

from harness.run.cellrun import run_cell
from harness.cells.matrix import catalogue
from harness.judge.results import read_results

pytestmark = pytest.mark.e2e


def _run(tmp_path, cell_name: str, seed: str | None, test_id: str):
    cell = catalogue().cell(cell_name)
    out = tmp_path / f"{cell_name}-{seed or 'clean'}.jsonl"
    args = (["-p", f"tests.seeds.{seed}"] if seed else []) + [test_id]
    run_cell(cell, out, args, timeout_s=300)
    res = read_results(out)
    assert res.status == "complete", res.reason
    return res.cases[test_id]


UNUSED = "suites/call_jax/test_unused_args.py::test_unused_arguments[unused_first]"
PVARY = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[pvary]"
X64 = "suites/call_jax/test_upstream_parity.py::test_cache_by_jax_config_x64"
PYTREE_PROPERTY = "suites/call_jax/test_properties.py::test_generated_pytrees_match_jax"
HOST = "suites/compute_on/test_eager_vs_aot.py::test_eager_vs_aot[jit_outside_compute_on]"


def test_call_jax_without_keep_unused_crashes_or_fails(tmp_path):
    assert _run(tmp_path, "xla29-cpu", None, UNUSED).raw == "pass"
    seeded = _run(tmp_path, "xla29-cpu", "no_keep_unused", UNUSED)
    assert seeded.raw in ("crash", "fail"), seeded
    if seeded.raw == "crash":
        assert seeded.signal == "SIGABRT", "the pre-fix failure mode is an abort from XLA"


def test_removing_pvary_makes_the_pvary_case_fail_on_jax_0_6(tmp_path):
    assert _run(tmp_path, "jax060-cpu", None, PVARY).raw == "pass"
    seeded = _run(tmp_path, "jax060-cpu", "no_pvary", PVARY)
    assert seeded.raw == "fail" and "linearized function called on tangent values" in (seeded.message or "")


def test_stripping_the_host_attribute_makes_compute_on_fail(tmp_path):
    assert _run(tmp_path, "jax0102-cpu", None, HOST).raw == "pass"
    seeded = _run(tmp_path, "jax0102-cpu", "strip_host_attr", HOST)
    assert seeded.raw == "fail" and "_xla_compute_type" in (seeded.message or "")


TRANSPOSE_PROPERTY = "suites/shard_map/test_properties.py::test_linear_transpose_is_the_adjoint"
VECTOR_CASE = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[no_replication_check]"


def test_the_shard_map_property_finds_a_transpose_bug_the_hand_written_case_misses(tmp_path):
    assert _run(tmp_path, "jax060-cpu", None, TRANSPOSE_PROPERTY).raw == "pass"
    # The hand-written case transposes a vector: blind to this seed.
    assert _run(tmp_path, "jax060-cpu", "transpose_off_for_matrices", VECTOR_CASE).raw == "pass"
    seeded = _run(tmp_path, "jax060-cpu", "transpose_off_for_matrices", TRANSPOSE_PROPERTY)
    assert seeded.raw == "fail", seeded
    # The results record names the input hypothesis shrank to (the report and repro show it).
    assert "prog=Program(" in (seeded.message or ""), seeded.message
    assert "prog=Program(" in seeded.observations.get("falsifying_example", "")


def test_call_jax_cache_blind_to_jax_config_fails(tmp_path):
    assert _run(tmp_path, "xla29-cpu", None, X64).raw == "pass"
    seeded = _run(tmp_path, "xla29-cpu", "cache_ignores_jax_config", X64)
    assert seeded.raw == "fail" and "cache entries added without x64, then with x64: [1, 0]" in (seeded.message or "")


def test_the_call_jax_property_catches_flattened_outputs(tmp_path):
    """No hand-written output-tree case runs here: the generated trees alone must see it."""
    seeded = _run(tmp_path, "xla29-cpu", "flat_call_jax_outputs", PYTREE_PROPERTY)
    assert seeded.raw == "fail" and "output tree" in (seeded.message or "") and "differs from JAX's" in seeded.message


STREAM_CPU = "suites/compute_on/test_stream_lowering.py::test_stream_annotation_marks_exactly_the_ops_inside[3]"
STREAM_GPU = "suites/compute_on/test_eager_vs_aot.py::test_stream_annotation_reaches_the_lowering"


def test_the_cpu_stream_case_catches_an_annotation_on_one_op_only(tmp_path):
    """The GPU case skips on a CPU cell (a coverage gap): the CPU case alone must see the seed."""
    assert _run(tmp_path, "jax060-cpu", None, STREAM_CPU).raw == "pass"
    assert _run(tmp_path, "jax060-cpu", "stream_on_first_op_only", STREAM_GPU).raw == "skip"
    seeded = _run(tmp_path, "jax060-cpu", "stream_on_first_op_only", STREAM_CPU)
    assert seeded.raw == "fail" and "region without _xla_stream_annotation" in (seeded.message or ""), seeded


def _run_ids(tmp_path, cell_name: str, seed: str | None, test_ids: list[str]):
    """Several cases of one cell in one run (one jax import): the CellResults."""
    cell = catalogue().cell(cell_name)
    out = tmp_path / f"{cell_name}-{seed or 'clean'}-many.jsonl"
    run_cell(cell, out, (["-p", f"tests.seeds.{seed}"] if seed else []) + list(test_ids), timeout_s=300)
    res = read_results(out)
    assert res.status == "complete", res.reason
    return res


def _clean_then_seeded(tmp_path, cell_name: str, seed: str, test_ids: list[str]):
    """Every case passes on the real packages, then the run with the seed: its CellResults."""
    clean = _run_ids(tmp_path, cell_name, None, test_ids)
    assert [clean.cases[i].raw for i in test_ids] == ["pass"] * len(test_ids), {i: clean.cases[i].raw for i in test_ids}
    return _run_ids(tmp_path, cell_name, seed, test_ids)


def _drift(res, test_id: str) -> list[str]:
    from harness.judge.apis import api_drift, default_api_ranges, observed_apis

    case = res.cases[test_id]
    return [d.api for d in api_drift(observed_apis(case.observations, case.message), res.versions(), default_api_ranges())]


SM_REFUSES = "suites/shard_map/test_defaults.py::test_shard_map_with_its_defaults_refuses_an_output_it_cannot_prove_replicated"
SM_NUMPY = "suites/shard_map/test_defaults.py::test_shard_map_with_its_defaults_matches_numpy"


PCAST = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[pcast]"


def test_a_flipped_shard_map_default_fails_the_bare_call_and_is_api_drift(tmp_path):
    """jax.shard_map's check_vma default flipped to False (the seed flips check_rep on the
    experimental shard_map of releases without jax.shard_map the same way)."""
    cell = "jax0102-cpu"
    ids = [SM_REFUSES, SM_NUMPY, PCAST]
    clean = _run_ids(tmp_path, cell, None, ids)
    assert [clean.cases[i].raw for i in ids] == ["pass"] * 3
    assert _drift(clean, SM_REFUSES) == [] and _drift(clean, SM_NUMPY) == []
    seeded = _run_ids(tmp_path, cell, "shard_map_unchecked_by_default", ids)
    refused = seeded.cases[SM_REFUSES]
    assert refused.raw == "fail" and "DID NOT RAISE" in (refused.message or ""), refused
    # Where behaviour agrees (psum with the check off is still right), the recorded default is news.
    assert seeded.cases[SM_NUMPY].raw == "pass"
    assert _drift(seeded, SM_NUMPY) == ["jax.shard_map(check_vma=True)"]
    assert seeded.cases[SM_NUMPY].observations["defaults"]["jax.shard_map"]["check_vma"] == "False"
    assert seeded.cases[ids[2]].raw == "pass", "the cases that pass the check explicitly are blind to it"


STRUCTURE_PROPERTY = "suites/call_jax/test_structure.py::test_generated_output_trees_come_back_as_jax_returns_them"
NONE_IN_DICT = "suites/call_jax/test_structure.py::test_output_structure[none_in_dict]"
OUTPUT_PYTREE = "suites/call_jax/test_upstream_parity.py::test_output_pytree_comes_back_complete[dict]"


def test_dropped_none_outputs_are_caught_by_the_structure_cases_only(tmp_path):
    ids = [STRUCTURE_PROPERTY, NONE_IN_DICT, OUTPUT_PYTREE]
    seeded = _clean_then_seeded(tmp_path, "xla29-cpu", "call_jax_drops_none_outputs", ids)
    for i in (STRUCTURE_PROPERTY, NONE_IN_DICT):
        assert seeded.cases[i].raw == "fail" and "output structure" in (seeded.cases[i].message or ""), seeded.cases[i]
    assert "None" in seeded.cases[NONE_IN_DICT].message, "the message shows the None JAX returned"
    assert seeded.cases[OUTPUT_PYTREE].raw == "pass", "no None in its outputs: blind to the seed"


TIGHT_SIN = "suites/shard_map/test_tight_numerics.py::test_sharded_op_and_psum_are_within_their_bounds[sin]"
TIGHT_MUL = "suites/shard_map/test_tight_numerics.py::test_sharded_op_and_psum_are_within_their_bounds[mul]"
LINEARIZE_PROPERTY = "suites/shard_map/test_properties.py::test_linearize_and_jvp_match_the_unsharded_derivative"


def test_a_primal_off_by_80_ulps_is_caught_by_the_ulp_bounds_not_by_rtol_2e_5(tmp_path):
    ids = [TIGHT_SIN, TIGHT_MUL, LINEARIZE_PROPERTY]
    seeded = _clean_then_seeded(tmp_path, "jax0102-cpu", "shard_map_outputs_off_by_80_ulps", ids)
    for i in (TIGHT_SIN, TIGHT_MUL):
        assert seeded.cases[i].raw == "fail" and "ulps from the float64 reference" in (seeded.cases[i].message or ""), seeded.cases[i]
    assert seeded.cases[LINEARIZE_PROPERTY].raw == "pass", "its primal check at rtol 2e-5 is blind to 80 ulps"


COMPLEX_TRANSPOSE = "suites/shard_map/test_complex.py::test_transpose_of_a_complex_scaling_is_not_conjugated[sharded]"


def test_a_conjugating_transpose_is_caught_by_the_complex_case_only(tmp_path):
    ids = [COMPLEX_TRANSPOSE, TRANSPOSE_PROPERTY]
    seeded = _clean_then_seeded(tmp_path, "jax0102-cpu", "complex_transpose_conjugates", ids)
    assert seeded.cases[COMPLEX_TRANSPOSE].raw == "fail" and "its bound" in (seeded.cases[COMPLEX_TRANSPOSE].message or "")
    assert seeded.cases[TRANSPOSE_PROPERTY].raw == "pass", "real inputs cannot tell a transpose from its conjugate"


OFFSET_VIEW = "suites/torchax/test_layouts.py::test_round_trip_of_a_view_starting_inside_its_storage[tail_slice]"
GENERATED_ROUND_TRIPS = "suites/torchax/test_properties.py::test_generated_round_trips_are_exact"


def test_a_dropped_storage_offset_is_caught_by_the_offset_views_only(tmp_path):
    ids = [OFFSET_VIEW, GENERATED_ROUND_TRIPS]
    seeded = _clean_then_seeded(tmp_path, "xla29-cpu", "t2j_ignores_storage_offset", ids)
    assert seeded.cases[OFFSET_VIEW].raw == "fail" and "to JAX" in (seeded.cases[OFFSET_VIEW].message or "")
    assert seeded.cases[GENERATED_ROUND_TRIPS].raw == "pass", "its views all start at offset 0"


ROUND_TRIP_ATTRS = "suites/compute_on/test_serialization.py::test_serialized_export_keeps_op_attributes_shardings_and_values"
ROUND_TRIP_MEMORY = "suites/compute_on/test_serialization.py::test_serialized_export_keeps_each_outputs_memory_kind"
ROUND_TRIP_HOST = "suites/compute_on/test_upstream_parity.py::test_serialized_host_function_keeps_the_placement"


def test_a_lossy_deserialize_is_caught_by_the_op_by_op_round_trip(tmp_path):
    ids = [ROUND_TRIP_ATTRS, ROUND_TRIP_MEMORY, ROUND_TRIP_HOST]
    seeded = _clean_then_seeded(tmp_path, "jax0102-cpu", "deserialize_drops_placements", ids)
    attrs, memory = seeded.cases[ROUND_TRIP_ATTRS], seeded.cases[ROUND_TRIP_MEMORY]
    assert attrs.raw == "fail" and "_xla_stream_annotation per op changed" in (attrs.message or ""), attrs
    assert memory.raw == "fail" and "output memory kinds changed" in (memory.message or ""), memory
    assert seeded.cases[ROUND_TRIP_HOST].raw == "pass", "the host attribute survives: the older case is blind"


# --- every public entry point exercised (issue 23 class 3) ---

HOST_GRAD = "suites/compute_on/test_upstream_parity.py::test_grad_through_a_host_function_keeps_both_host_calls[plain]"


def test_a_host_placement_on_the_first_call_site_only_is_caught_per_call_site(tmp_path):
    """The per-op invariant: every host call site carries the compute type, not only some op."""
    ids = [HOST_GRAD, HOST]
    seeded = _clean_then_seeded(tmp_path, "jax0102-cpu", "host_placement_on_first_call_only", ids)
    grad = seeded.cases[HOST_GRAD]
    assert grad.raw == "fail" and "expected 2 host calls" in (grad.message or "") and "found 1" in grad.message, grad
    assert seeded.cases[HOST].raw == "pass", "one call site, attribute present: the older case is blind"


VALUE_AND_GRAD = "suites/torchax/test_entry_points.py::test_interop_jax_value_and_grad_matches_torch_autograd"
TORCH_MODULE_GRAD = "suites/torchax/test_interop.py::test_jax_grad_through_torch_module"
MODULE_GRAD_PROPERTY = "suites/torchax/test_properties.py::test_generated_module_grads_match_torch_autograd"


def test_a_wrong_gradient_from_jax_value_and_grad_is_caught_by_the_entry_point_case_only(tmp_path):
    ids = [VALUE_AND_GRAD, TORCH_MODULE_GRAD, MODULE_GRAD_PROPERTY]
    seeded = _clean_then_seeded(tmp_path, "xla29-cpu", "value_and_grad_gradient_off", ids)
    case = seeded.cases[VALUE_AND_GRAD]
    assert case.raw == "fail" and "its bound" in (case.message or ""), case
    for i in (TORCH_MODULE_GRAD, MODULE_GRAD_PROPERTY):
        assert seeded.cases[i].raw == "pass", f"{i} takes jax.grad directly: blind to the seed"


J2T_AUTOGRAD = "suites/torchax/test_entry_points.py::test_interop_j2t_autograd_of_a_torch_function"
CALL_TORCH = "suites/torchax/test_entry_points.py::test_interop_call_torch_under_jax_grad"


def test_a_lost_gradient_in_j2t_autograd_is_caught_by_its_entry_point_case(tmp_path):
    ids = [J2T_AUTOGRAD, CALL_TORCH, MODULE_GRAD_PROPERTY]
    seeded = _clean_then_seeded(tmp_path, "xla29-cpu", "j2t_autograd_drops_later_gradients", ids)
    case = seeded.cases[J2T_AUTOGRAD]
    assert case.raw == "fail" and "its bound" in (case.message or ""), case
    # The forward value and w's gradient were right: the failure is x's gradient, not the value.
    assert {"value", "grad_w"} <= set(case.observations) and "grad_x" not in case.observations, case.observations
    for i in (CALL_TORCH, MODULE_GRAD_PROPERTY):
        assert seeded.cases[i].raw == "pass", f"{i} does not go through j2t_autograd: blind to the seed"


def test_an_export_that_keeps_the_memory_kind_on_the_first_output_only_is_caught_per_output(tmp_path):
    """Outputs placed (pinned_host, device, pinned_host): the seed leaves pinned_host on the first
    only, in the export itself, so before == after still holds; only the per-output check sees it."""
    assert _run(tmp_path, "jax0102-cpu", None, ROUND_TRIP_MEMORY).raw == "pass"
    seeded = _run(tmp_path, "jax0102-cpu", "export_keeps_first_memory_kind_only", ROUND_TRIP_MEMORY)
    assert seeded.raw == "fail" and "misplaced outputs" in (seeded.message or ""), seeded
    assert seeded.observations.get("memory_kind_before") == seeded.observations.get("memory_kind_after"), \
        "the round trip kept what the export held: a before/after comparison alone is blind"
