"""How shard_map's replication boundaries transpose (upstream's fan-out / fan-in transpose tests).

Upstream checks these by primitive names in the jaxpr (psum_invariant, pvary), which change across
releases (psum2 / pbroadcast before 0.6.0). Here the cotangents are checked by value against NumPy
on every release, and the IR invariant is stated in what stays true: a replicated -> sharded
boundary transposes to a sum over the axis (some psum-family primitive), never to a gather.
"""

from __future__ import annotations

import pytest

from suites.shard_map import cores


@pytest.fixture(scope="module")
def mesh():
    """Skips at setup with fewer than 4 devices (each core builds its own mesh)."""
    cores.need_devices(cores.N_SMALL)


def test_fanout_transposes_to_a_sum_over_the_axis(mesh, observe):
    """in P(), out P('x'): every shard returns the replicated input; the cotangent of the input is
    the sum of every shard's cotangent block (upstream test_fanout_specs_transpose_to_psum)."""
    cores.fanout_transposes_to_a_sum(observe)


def test_psum_to_replicated_transposes_to_a_broadcast(mesh, observe):
    """in P('x'), out P() of psum: each shard's input cotangent is the whole output cotangent
    (upstream test_fanin_psum_transposes_to_fanout)."""
    cores.psum_to_replicated_transposes_to_a_broadcast(observe)


def test_psum_to_sharded_transposes_to_a_psum(mesh, observe):
    """in P('x'), out P('x') of psum: the output is replicated data laid out per shard, so the
    input cotangent is the psum of the cotangent blocks (upstream test_psum_with_implicit_fanout_self_transposes)."""
    cores.psum_to_sharded_transposes_to_a_psum(observe)


def test_replicated_identity_transposes_to_identity(mesh, observe):
    """in P(), out P() identity: its vjp is the identity (upstream test_transpose_identity), also
    for the vjp of the vjp."""
    cores.replicated_identity_transposes_to_identity(observe)


@pytest.mark.parametrize("mark", ["pvary", "pcast"])
def test_marking_a_replicated_input_varying_and_grad_sums_back(mark, mesh, observe):
    """Upstream test_pvary (pcast from 0.8.2): marking a replicated input varying over x gives a
    value whose type says so, returned sharded; grad of the sum is N per element."""
    cores.marking_varying_and_grad_sums_back(mark, observe)
