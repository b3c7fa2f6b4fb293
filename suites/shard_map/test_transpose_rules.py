"""How shard_map's replication boundaries transpose (upstream's fan-out / fan-in transpose tests).

Upstream checks these by primitive names in the jaxpr (psum_invariant, pvary), which change across
releases (psum2 / pbroadcast before 0.6.0). Here the cotangents are checked by value against NumPy
on every release, and the IR invariant is stated in what stays true: a replicated -> sharded
boundary transposes to a sum over the axis (some psum-family primitive), never to a gather.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from harness.incell.compat import jax_api
from harness.incell.numerics import assert_within_bound, gamma

N = 4  # mesh size, as upstream's tests use
PSUM_FAMILY = {"psum", "psum2", "psum_invariant"}


@pytest.fixture(scope="module")
def mesh():
    if len(jax.devices()) < N:
        pytest.skip(f"needs {N} devices, have {len(jax.devices())}")
    return jax_api.make_mesh(N, "x")


def _prims(jaxpr) -> set[str]:
    return set(re.findall(r"\b([a-z_0-9]+)\[", str(jaxpr))) | set(re.findall(r"= ([a-z_0-9]+) ", str(jaxpr)))


def test_fanout_transposes_to_a_sum_over_the_axis(mesh, observe):
    """in P(), out P('x'): every shard returns the replicated input; the cotangent of the input is
    the sum of every shard's cotangent block (upstream test_fanout_specs_transpose_to_psum)."""
    f = jax_api.shard_map(lambda x: x, mesh=mesh, in_specs=(P(),), out_specs=P("x"))
    x = np.array([1.0, -2.0], np.float32)
    ct = np.arange(N * 2, dtype=np.float32) / 3.0
    _y, vjp = jax.vjp(f, jnp.asarray(x))
    (xt,) = vjp(jnp.asarray(ct))
    blocks = ct.astype(np.float64).reshape(N, 2)
    observe.record(transpose=assert_within_bound(xt, blocks.sum(axis=0), gamma(N - 1, "float32") * np.abs(blocks).sum(axis=0),
                                                 why=f"a {N}-term float32 sum in any order: gamma_{N - 1}"))
    prims = _prims(jax.make_jaxpr(vjp)(jnp.asarray(ct)))
    observe.record(transpose_primitives=sorted(prims))
    assert prims & PSUM_FAMILY, f"the transpose of a fan-out has no psum: {sorted(prims)}"
    assert "all_gather" not in prims, sorted(prims)


def test_psum_to_replicated_transposes_to_a_broadcast(mesh, observe):
    """in P('x'), out P() of psum: each shard's input cotangent is the whole output cotangent
    (upstream test_fanin_psum_transposes_to_fanout)."""
    f = jax_api.shard_map(lambda x: jax.lax.psum(x, "x"), mesh=mesh, in_specs=(P("x"),), out_specs=P())
    x = jax.device_put(jnp.arange(N * 2, dtype=jnp.float32), NamedSharding(mesh, P("x")))
    ct = np.array([0.5, -1.5], np.float32)
    y, vjp = jax.vjp(f, x)
    observe.close(y, np.arange(N * 2, dtype=np.float32).reshape(N, 2).sum(axis=0), rtol=0, atol=0, name="forward")  # small integers: exact
    (xt,) = vjp(jnp.asarray(ct))
    observe.close(xt, np.tile(ct, N), rtol=0, atol=0, name="transpose")
    prims = _prims(jax.make_jaxpr(vjp)(jnp.asarray(ct)))
    observe.record(transpose_primitives=sorted(prims))
    # A broadcast of the cotangent: summing it again would scale the gradient by N.
    assert not (prims & PSUM_FAMILY), f"the transpose of psum -> replicated sums again: {sorted(prims)}"


def test_psum_to_sharded_transposes_to_a_psum(mesh, observe):
    """in P('x'), out P('x') of psum: the output is replicated data laid out per shard, so the
    input cotangent is the psum of the cotangent blocks (upstream test_psum_with_implicit_fanout_self_transposes)."""
    f = jax_api.shard_map(lambda x: jax.lax.psum(x, "x"), mesh=mesh, in_specs=(P("x"),), out_specs=P("x"))
    x = jax.device_put(jnp.arange(N * 2, dtype=jnp.float32), NamedSharding(mesh, P("x")))
    ct = (np.arange(N * 2, dtype=np.float32) - 3.0) / 2.0
    _y, vjp = jax.vjp(f, x)
    (xt,) = vjp(jax.device_put(jnp.asarray(ct), NamedSharding(mesh, P("x"))))
    observe.close(xt, np.tile(ct.reshape(N, 2).sum(axis=0), N), rtol=0, atol=0)  # sums of halves: exact in any order


def test_replicated_identity_transposes_to_identity(mesh, observe):
    """in P(), out P() identity: its vjp is the identity (upstream test_transpose_identity), also
    for the vjp of the vjp."""
    f = jax_api.shard_map(lambda x: x, mesh=mesh, in_specs=(P(),), out_specs=P())
    _y, vjp = jax.vjp(f, jnp.float32(1.0))
    (ct,) = vjp(jnp.float32(2.5))
    observe.close(ct, np.float32(2.5), rtol=0, atol=0, name="vjp")
    _y2, vjp2 = jax.vjp(vjp, jnp.float32(1.0))
    (ct2,) = vjp2((jnp.float32(-4.0),))
    observe.close(ct2, np.float32(-4.0), rtol=0, atol=0, name="vjp_of_vjp")
    prims = _prims(jax.make_jaxpr(vjp)(jnp.float32(2.5)))
    observe.record(transpose_primitives=sorted(prims))
    assert not (prims & PSUM_FAMILY), f"a replicated identity transposes with a collective: {sorted(prims)}"


@pytest.mark.parametrize("mark", ["pvary", "pcast"])
def test_marking_a_replicated_input_varying_and_grad_sums_back(mark, mesh, observe):
    """Upstream test_pvary (pcast from 0.8.2): marking a replicated input varying over x gives a
    value whose type says so, returned sharded; grad of the sum is N per element."""
    marker = jax_api.mark_varying(mark)
    seen = {}

    def body(x):
        y = marker(x, "x")
        seen["vma"] = jax_api.varying_axes(y)
        return y

    f = jax_api.shard_map(body, mesh=mesh, in_specs=(P(),), out_specs=P("x"))
    x = jnp.arange(8.0)
    observe.close(f(x), np.tile(np.arange(8.0), N), rtol=0, atol=0, name="forward")
    observe.close(jax.grad(lambda x: f(x).sum())(x), np.full(8, float(N)), rtol=0, atol=0, name="grad")
    observe.record(varying_axes=seen["vma"])
    assert seen["vma"] == ["x"], seen
