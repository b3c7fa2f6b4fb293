"""shard_map scenario cores: plain functions over their inputs, called by the tests and inlined
by `harness report` into standalone reproducers (see suites/compute_on/cores.py for the rules).

`CORES` maps each test to its core; a property test maps to (core, the @example it pins).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from harness.incell.compat import jax_api

N_DEVICES = 8
AXIS = "x"
P_PRIMAL = np.array([1.5, -0.5], dtype=np.float32)  # replicated primal (2 elements per shard)
MESHES = [((1,), ("x",)), ((2,), ("x",)), ((4,), ("x",)), ((8,), ("x",)), ((2, 4), ("x", "y")), ((4, 2), ("x", "y"))]
TOL = dict(rtol=2e-5, atol=2e-5)  # generated chains (exp, tanh, ...) through linearize/transpose, means over shards vs float64: 168 ulps at 1 (ulp-tight: test_tight_numerics.py)


@dataclass(frozen=True)
class Unary:
    """An elementwise function with its NumPy value and closed-form derivative."""

    name: str
    jax_fn: object
    np_fn: object
    np_deriv: object


UNARY = [
    Unary("sin", jnp.sin, np.sin, np.cos),
    Unary("tanh", jnp.tanh, np.tanh, lambda x: 1.0 - np.tanh(x) ** 2),
    Unary("square", lambda x: x * x, lambda x: x * x, lambda x: 2.0 * x),
    Unary("affine", lambda x: 1.5 * x - 0.25, lambda x: 1.5 * x - 0.25, lambda x: np.full_like(x, 1.5)),
    Unary("softplus", jax.nn.softplus, lambda x: np.logaddexp(0.0, x), lambda x: 1.0 / (1.0 + np.exp(-x))),
]


def need_devices(n: int = N_DEVICES) -> None:
    if len(jax.devices()) < n:
        pytest.skip(f"needs {n} devices, have {len(jax.devices())} (set XLA_FLAGS=--xla_force_host_platform_device_count=8)")


def reference(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The unsharded computation, per shard, in NumPy: bwd(fwd(t_s)) for f = mean(x**2)."""
    n = p.size
    out = []
    for t_s in t.reshape(N_DEVICES, n):
        tangent_out = np.mean(2 * p * t_s)  # fwd: d/dp mean(p**2) . t_s
        out.append(2 * p * tangent_out / n)  # bwd: transpose of fwd applied to tangent_out
    return np.concatenate(out)


def jaxpr_primitives(jaxpr_text: str) -> list[str]:
    return sorted(set(re.findall(r"= (\w+)\[", jaxpr_text)) | set(re.findall(r"= (\w+) ", jaxpr_text)))


def linearize_transpose(variant: str, observe) -> None:
    """jax#28260: linearize mean(x**2) at a replicated primal, transpose, apply to a sharded tangent."""
    need_devices()
    mesh = jax_api.make_mesh(N_DEVICES, AXIS)
    mark = None  # the primal marking each variant applies inside the shard_map body
    if variant == "pvary":
        pvary = jax_api.pvary()
        mark = lambda p: pvary(p, AXIS)  # noqa: E731
    elif variant == "pcast":
        pcast = jax_api.pcast_varying()
        mark = lambda p: pcast(p, AXIS)  # noqa: E731
    seen: dict[str, list[str] | None] = {}

    def f(x):
        return jnp.mean(x**2)

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
    observe.close(out, reference(P_PRIMAL, t_host), rtol=1e-6, atol=1e-6)  # mean of 2 products per shard, NumPy float32 reference in another order: a few ulps; 1e-6 is ~8 at 1

    jaxpr = str(jax.make_jaxpr(g)(t))
    prims = jaxpr_primitives(jaxpr)
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


def replicated_primal_linearize_transpose(marking: str, mesh_index: int, per_shard: int, op: str, seed: int,
                                          observe) -> None:
    """bwd(fwd(t)) per shard for f = mean(op(p)), p replicated (closed over), t sharded, vs NumPy."""
    need_devices()
    shape, names = MESHES[mesh_index]
    mesh = jax_api.make_mesh_nd(shape, names)
    n_shards = int(np.prod(shape))
    marker = jax_api.mark_varying(marking) if marking in ("pvary", "pcast") else None
    unary = next(u for u in UNARY if u.name == op)
    rng = np.random.RandomState(seed)
    p_host = rng.uniform(-1.5, 1.5, size=per_shard).astype(np.float32)
    t_host = rng.uniform(-1.0, 1.0, size=per_shard * n_shards).astype(np.float32)

    def f(x):
        return jnp.mean(unary.jax_fn(x))

    def m(p, t):
        if marker is not None:
            p = marker(p, names)
        _y, fwd = jax.linearize(f, p)
        bwd = jax.linear_transpose(fwd, p)
        return bwd(fwd(t))

    spec = P(names if len(names) > 1 else names[0])
    g = jax_api.shard_map(functools.partial(m, jnp.asarray(p_host)), mesh=mesh, in_specs=(spec,),
                          out_specs=(spec,), check=marking != "no_check")
    t = jax.device_put(t_host, NamedSharding(mesh, spec))
    (out,) = jax.jit(g)(t)  # the vma error of jax#28260 surfaces here, uncaught

    dp = unary.np_deriv(p_host.astype(np.float64))
    ref = np.concatenate([dp * np.mean(dp * ts) / per_shard for ts in t_host.reshape(n_shards, -1)])
    observe.close(out, ref, **TOL)
    observe.record(mesh=dict(zip(names, shape)), op=op, per_shard=per_shard, marking=marking)


CORES = {
    "test_linearize_transpose.py::test_linearize_transpose": linearize_transpose,
    # the upstream report's case, pinned by the property's @example: mean(x**2), 2 elements a shard
    "test_properties.py::test_replicated_primal_linearize_transpose":
        (replicated_primal_linearize_transpose, {"mesh_index": 1, "per_shard": 2, "op": "square", "seed": 0}),
}
