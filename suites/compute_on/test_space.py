"""compute_on as a space: every compute type jax lists, every host-code form, every nesting, every mode.

The compute types are read from jax's own refusal of an unknown one (`cores.accepted_compute_types`:
`device_host`, `device`, `tpu_sparsecore`, and `gpu_stream:#` from 0.5.1), so a type a release adds
is generated without an edit here. Each example draws a compute type (a stream number for the
stream form), a form of host code (plain, cond, switch, scan, while_loop, fori_loop, vmap,
custom_jvp, custom_vjp, remat, grad: the derivative forms return the value and its own gradient),
a nesting (jit outside compute_on, compute_on outside jit, compute_on nested in the same type, the
placed region traced inside the caller's jit) and the data. Checked: eager against float64 NumPy
within a normwise bound per form; jit and AOT bit for bit equal to eager; the compute type's
attribute in the lowered and compiled modules and never on the caller's ops; and, as its own ids
(the absl known issue of 0.5.3 / 0.6.0 covers only them), jax.export with and without the
serialize / deserialize round trip, called, equal to jit bit for bit, the attribute kept.
"""

from __future__ import annotations

import pytest

from suites.compute_on import cores

pytest.importorskip("hypothesis")
from hypothesis import example, given, strategies as st  # noqa: E402


@st.composite
def placed_programs(draw) -> dict:
    listed, _ = cores.accepted_compute_types()
    entry = draw(st.sampled_from(listed))
    compute_type = entry.replace("#", str(draw(st.integers(0, 7)))) if "#" in entry else entry
    return {"compute_type": compute_type, "form": draw(st.sampled_from(cores.HOST_FORMS)),
            "nesting": draw(st.sampled_from(cores.NESTINGS)), "n": 2 * draw(st.integers(1, 4)),
            "branch": draw(st.integers(0, 2)), "seed": draw(st.integers(0, 2**16))}


@example(prog=cores.SPACE_EXAMPLE)
@given(prog=placed_programs())
def test_generated_placed_programs_agree_eager_jit_aot(prog, observe):
    cores.placed_program_eager_jit_aot(observe=observe, **prog)


@pytest.mark.parametrize("how", ["exported", "serialized"])
@example(prog=cores.SPACE_EXAMPLE)
@given(prog=placed_programs())
def test_generated_placed_programs_survive_export(how, prog, observe):
    cores.placed_program_exported(how, observe=observe, **prog)


def test_every_listed_compute_type_is_accepted_and_its_neighbours_refused(observe):
    cores.compute_types_accepted_and_refused(observe)


def test_a_stream_that_is_not_a_number_is_refused(observe):
    cores.stream_number_required(observe)


# Memory kinds jax has named on some device. Each cell's own are read from its device: a kind this
# one lacks skips with that reason, and a kind missing from this list fails the first test below.
KINDS = ["device", "pinned_host", "unpinned_host"]
KIND_PAIRS = [("device", "device"), ("device", "pinned_host"), ("device", "unpinned_host"),
              ("pinned_host", "device"), ("pinned_host", "pinned_host"), ("pinned_host", "unpinned_host"),
              ("unpinned_host", "device"), ("unpinned_host", "pinned_host"), ("unpinned_host", "unpinned_host")]  # every (in, out) of KINDS, written out so the ids read statically


def test_every_memory_kind_the_device_has_is_generated(observe):
    assert KINDS == cores.MEMORY_KINDS and sorted(KIND_PAIRS) == sorted((a, b) for a in KINDS for b in KINDS)
    cores.memory_kinds_are_listed(observe)


@pytest.mark.parametrize("kind", KINDS)
def test_device_put_to_each_memory_kind(kind, observe):
    cores.device_put_to_memory_kind(kind, observe)


def test_device_put_with_its_defaults_leaves_the_array_uncommitted_and_the_source_alive(observe):
    cores.device_put_with_its_defaults(observe)


@pytest.mark.parametrize("in_kind,out_kind", KIND_PAIRS)
def test_jit_between_memory_kinds(in_kind, out_kind, observe):
    cores.jit_between_memory_kinds(in_kind, out_kind, observe)
