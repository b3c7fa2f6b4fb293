"""shard_map + jax.linearize + jax.linear_transpose (jax-ml/jax#28260, #28193).

The issue's case: linearize f(x) = mean(x**2) at a replicated primal p, apply the linear map to a
sharded tangent t, transpose it back; p is bound with functools.partial. It worked on jax 0.5.3;
from 0.6.0 the varying-manual-axes type check rejects it unless p is marked varying
(jax.lax.pvary, later jax.lax.pcast(..., to='varying')) or the check is turned off.
"""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from harness.incell.compat import jax_api

N_DEVICES = 8
AXIS = "x"
P_PRIMAL = np.array([1.5, -0.5], dtype=np.float32)  # replicated primal (2 elements per shard)


def f(x):
    return jnp.mean(x**2)


def reference(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The unsharded computation, per shard, in NumPy: bwd(fwd(t_s)) for f = mean(x**2)."""
    n = p.size
    out = []
    for t_s in t.reshape(N_DEVICES, n):
        tangent_out = np.mean(2 * p * t_s)  # fwd: d/dp mean(p**2) . t_s
        out.append(2 * p * tangent_out / n)  # bwd: transpose of fwd applied to tangent_out
    return np.concatenate(out)


def _mark(variant: str):
    """The primal marking each variant applies inside the shard_map body (None: no marking)."""
    if variant == "pvary":
        pvary = jax_api.pvary()
        return lambda p: pvary(p, AXIS)
    if variant == "pcast":
        pcast = jax_api.pcast_varying()
        return lambda p: pcast(p, AXIS)
    return None


def _jaxpr_primitives(jaxpr_text: str) -> list[str]:
    return sorted(set(re.findall(r"= (\w+)\[", jaxpr_text)) | set(re.findall(r"= (\w+) ", jaxpr_text)))


@pytest.fixture(scope="module")
def mesh():
    if len(jax.devices()) < N_DEVICES:
        pytest.skip(f"needs {N_DEVICES} devices, have {len(jax.devices())} (set XLA_FLAGS=--xla_force_host_platform_device_count=8)")
    return jax_api.make_mesh(N_DEVICES, AXIS)


@pytest.mark.parametrize("variant", ["base", "pvary", "pcast", "no_replication_check"])
def test_linearize_transpose(variant, mesh, observe):
    mark = _mark(variant)
    seen: dict[str, list[str] | None] = {}

    def m(p, t):
        if mark is not None:
            p = mark(p)
        seen["primal_varying_axes"] = jax_api.varying_axes(p)
        seen["tangent_varying_axes"] = jax_api.varying_axes(t)
        _y, fwd = jax.linearize(f, p)
        bwd = jax.linear_transpose(fwd, p)
        return bwd(fwd(t))

    p = jnp.asarray(P_PRIMAL)
    t_host = np.arange(N_DEVICES * P_PRIMAL.size, dtype=np.float32) / 7.0
    t = jax.device_put(jnp.asarray(t_host), NamedSharding(mesh, P(AXIS)))
    g = jax_api.shard_map(functools.partial(m, p), mesh=mesh, in_specs=(P(AXIS),), out_specs=(P(AXIS),),
                          check=variant != "no_replication_check")
    observe.record(shard_map=jax_api.shard_map_home(), check_kwarg=jax_api.check_kwarg())

    (out,) = g(t)  # the failure (ValueError on 0.6.0+) surfaces here, uncaught
    observe.close(out, reference(P_PRIMAL, t_host), rtol=1e-6, atol=1e-6)

    jaxpr = str(jax.make_jaxpr(g)(t))
    prims = _jaxpr_primitives(jaxpr)
    lowered = jax.jit(g).lower(t).as_text()
    shardy = bool(getattr(jax.config, "jax_use_shardy_partitioner", False))
    markers = {"gspmd": "@Sharding" in lowered and "SPMDFullToShardShape" in lowered,
               "shardy": "sdy.manual_computation" in lowered}
    observe.record(jaxpr_primitives=prims, sharding_markers=markers, shardy_partitioner=shardy, **seen)
    observe.record(jaxpr=jaxpr[:4000], stablehlo=lowered[:6000])

    # The manual region must reach the lowered module, as the partitioner in use spells it.
    assert markers["shardy" if shardy else "gspmd"], f"no {'sdy.manual_computation' if shardy else 'GSPMD @Sharding/SPMDFullToShardShape'} in the lowered module"
    if variant in ("pvary", "pcast"):
        # The marking is a real primitive on the primal and its type says it varies over the axis.
        assert "pvary" in prims or "pcast" in prims, f"no pvary/pcast equation in the jaxpr: {prims}"
        assert seen["primal_varying_axes"] == [AXIS], seen
    if seen.get("tangent_varying_axes") is not None and variant != "no_replication_check":
        assert AXIS in seen["tangent_varying_axes"] or seen["tangent_varying_axes"] == [], seen


def test_grad_of_shard_map_with_pvary(mesh, observe):
    """Upstream test_pvary_in_shmap_of_grad: grad through a shard_map whose body marks a replicated
    weight varying; the gradient must equal the unsharded one (psum of per-shard contributions)."""
    pvary = jax_api.pvary()
    w = jnp.asarray(np.array([0.5, -2.0], dtype=np.float32))
    x_host = (np.arange(N_DEVICES * 2, dtype=np.float32).reshape(N_DEVICES, 2) - 3.0) / 5.0
    x = jax.device_put(jnp.asarray(x_host), NamedSharding(mesh, P(AXIS)))

    def body(w, x):
        w = pvary(w, AXIS)
        return jax.lax.psum(jnp.sum((x * w) ** 2), AXIS)

    def loss(w, x):
        return jax_api.shard_map(body, mesh=mesh, in_specs=(P(), P(AXIS)), out_specs=P())(w, x)

    grad = jax.grad(loss)(w, x)
    ref = np.sum(2 * x_host**2 * np.asarray(w), axis=0)  # d/dw sum((x*w)**2), all shards
    observe.close(grad, ref, rtol=1e-5, atol=1e-5)
    jaxpr = str(jax.make_jaxpr(jax.grad(loss))(w, x))
    prims = _jaxpr_primitives(jaxpr)
    observe.record(jaxpr_primitives=prims)
    assert "pvary" in prims, prims
    # The transpose of pvary is a psum over the axis: the cotangent of a replicated weight.
    assert "psum" in prims or "psum_invariant" in prims or "psum2" in prims, prims
