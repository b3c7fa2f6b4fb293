"""The API-space cases (issue 28) see bugs no older case can: each seed is planted in the real
installed package, caught by a generated space case, and missed by the older cases beside it.

Same machinery as tests/test_seeded_bugs.py (a real cell through the harness runner, a pytest
plugin from tests/seeds/ that re-introduces the bug); kept apart so the families' space work and
the older seeds do not collide in one file.
"""

from __future__ import annotations

import pytest

from tests.test_seeded_bugs import _clean_then_seeded

pytestmark = pytest.mark.e2e

SPACE_UNCHECKED = "suites/shard_map/test_space.py::test_generated_collective_programs_match_the_float64_model[unchecked]"
SM_TRANSPOSE_PROPERTY = "suites/shard_map/test_properties.py::test_linear_transpose_is_the_adjoint"
SM_GRAD_PROPERTY = "suites/shard_map/test_properties.py::test_grad_with_a_replicated_weight_matches_numpy[implicit]"
SM_FANOUT = "suites/shard_map/test_transpose_rules.py::test_fanout_transposes_to_a_sum_over_the_axis"


def test_an_all_to_all_transpose_that_reverses_chunks_is_caught_by_the_generated_space_only(tmp_path):
    """No older case calls all_to_all: the generated space is the only place a collective outside
    the issues' list is transposed at all."""
    ids = [SPACE_UNCHECKED, SM_TRANSPOSE_PROPERTY, SM_GRAD_PROPERTY, SM_FANOUT]
    seeded = _clean_then_seeded(tmp_path, "jax060-cpu", "all_to_all_transpose_reverses_chunks", ids)
    case = seeded.cases[SPACE_UNCHECKED]
    assert case.raw == "fail" and "its bound" in (case.message or ""), case
    assert "all_to_all" in (case.message or ""), "the falsifying program names the collective"
    for i in (SM_TRANSPOSE_PROPERTY, SM_GRAD_PROPERTY, SM_FANOUT):
        assert seeded.cases[i].raw == "pass", f"{i} never transposes an all_to_all: blind to the seed"


CO_SPACE = "suites/compute_on/test_space.py::test_generated_placed_programs_agree_eager_jit_aot"
CO_TYPES = "suites/compute_on/test_space.py::test_every_listed_compute_type_is_accepted_and_its_neighbours_refused"
CO_HOST_PROPERTY = "suites/compute_on/test_properties.py::test_host_program_eager_equals_aot_and_keeps_the_host_placement[jit_outside_compute_on]"
CO_EAGER_AOT = "suites/compute_on/test_eager_vs_aot.py::test_eager_vs_aot[jit_outside_compute_on]"
CO_GRAD = "suites/compute_on/test_upstream_parity.py::test_grad_through_a_host_function_keeps_both_host_calls[plain]"


def test_a_device_region_lowered_as_host_is_caught_by_the_compute_type_space_only(tmp_path):
    """Every older case places code with device_host (or a stream): only the space, which draws
    every compute type jax lists, lowers a `device` region at all."""
    ids = [CO_SPACE, CO_TYPES, CO_HOST_PROPERTY, CO_EAGER_AOT, CO_GRAD]
    seeded = _clean_then_seeded(tmp_path, "jax0102-cpu", "device_compute_type_lowered_as_host", ids)
    for i in (CO_SPACE, CO_TYPES):
        case = seeded.cases[i]
        assert case.raw == "fail" and "_xla_compute_type" in (case.message or "") and "dense" in case.message, case
    for i in (CO_HOST_PROPERTY, CO_EAGER_AOT, CO_GRAD):
        assert seeded.cases[i].raw == "pass", f"{i} places with device_host only: blind to the seed"


CJ_SPACE = "suites/call_jax/test_space.py::test_generated_calls_match_jax_and_leave_inputs_alone[xla]"
CJ_STRUCTURE = "suites/call_jax/test_structure.py::test_generated_output_trees_come_back_as_jax_returns_them"
CJ_PYTREES = "suites/call_jax/test_properties.py::test_generated_pytrees_match_jax"
CJ_OUTPUT_PYTREE = "suites/call_jax/test_upstream_parity.py::test_output_pytree_comes_back_complete[tuple]"


def test_an_output_aliasing_its_input_is_caught_by_the_in_place_write_of_the_space_only(tmp_path):
    """The values are right: only writing an output in place and reading the input back sees it."""
    ids = [CJ_SPACE, CJ_STRUCTURE, CJ_PYTREES, CJ_OUTPUT_PYTREE]
    seeded = _clean_then_seeded(tmp_path, "xla29-cpu", "call_jax_returns_inputs_for_unchanged_outputs", ids)
    case = seeded.cases[CJ_SPACE]
    assert case.raw == "fail" and "share memory" in (case.message or ""), case
    for i in (CJ_STRUCTURE, CJ_PYTREES, CJ_OUTPUT_PYTREE):
        assert seeded.cases[i].raw == "pass", f"{i} compares values only: blind to the seed"
