"""compute_on cases written after upstream's memories_test / export_test, run on every device.

Upstream runs its ComputeOffload tests on TPU only ("Memories do not work on CPU and GPU backends
yet"), so a CPU regression in these paths is invisible to it; here each case checks numerics
against NumPy and where the host placement must survive in the IR.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from suites.compute_on import cores
from harness.incell.compat import jax_api
from harness.incell.ir import has_frontend_attribute
from harness.incell.numerics import OP_ULPS, assert_within_bound, ulp

HOST_KEY = "_xla_compute_type"
HOST_CALL = re.compile(r"call.*to_apply.*_xla_compute_type")


def _grad_bound(x):
    """|error| of cos(sin(x)) * cos(x) in float32 for float32 x: sin(x) within OP_ULPS reaches
    cos(.) through |sin(sin(x))| <= 1; each cos within OP_ULPS; the product rounds once."""
    u = np.sin(x)
    outer, inner = np.cos(u), np.cos(x)
    err_u = OP_ULPS["sin"][0] * ulp(u, "float32")
    err_outer = np.abs(np.sin(u)) * err_u + OP_ULPS["cos"][0] * ulp(outer, "float32")
    err_inner = OP_ULPS["cos"][0] * ulp(inner, "float32")
    return np.abs(inner) * err_outer + np.abs(outer) * err_inner + 0.5 * ulp(outer * inner, "float32")


@pytest.mark.parametrize("remat", ["plain", "remat"])
def test_grad_through_a_host_function_keeps_both_host_calls(remat, observe):
    """Upstream test_compute_on_grad / test_compute_on_remat: d/dx sum(sin(sin(x))) with the sins on
    the host, under jit (and under jax.checkpoint saving nothing): the forward host call and the
    derivative's stay host calls, and the gradient is right."""
    co = jax_api.compute_on()
    g = co("device_host")(jax.jit(lambda x: jnp.sin(jnp.sin(x))))

    def f(x):
        return jnp.sum(g(x))

    if remat == "remat":
        f = jax.checkpoint(f, policy=jax.checkpoint_policies.nothing_saveable)
    df = jax.jit(jax.grad(f))
    x_host = np.linspace(-2.0, 2.0, 8, dtype=np.float32)
    x64 = x_host.astype(np.float64)
    observe.record(grad=assert_within_bound(df(jnp.asarray(x_host)), np.cos(np.sin(x64)) * np.cos(x64),
                                            _grad_bound(x64), why="sin/cos within OP_ULPS, propagated; one multiply"))
    hlo = df.lower(jnp.asarray(x_host)).as_text(dialect="hlo")
    calls = HOST_CALL.findall(hlo)
    observe.record(host_calls=len(calls))
    assert len(calls) == 2, f"expected 2 host calls in the grad's HLO (forward, derivative), found {len(calls)}"


def test_nesting_different_compute_types_is_refused(observe):
    """Upstream test_nested_compute_error: `device` inside `device_host` is a clear NotImplementedError."""
    cores.nesting_different_compute_types_is_refused(observe)


def test_host_function_inside_shard_map(observe):
    """Upstream test_compute_offload_inside_shmap: x*3 -> host x*2 -> x*4 per shard of a 2x2 mesh."""
    if len(jax.devices()) < 4:
        pytest.skip(f"needs 4 devices, have {len(jax.devices())}")
    co = jax_api.compute_on()
    mesh = jax_api.make_mesh_nd((2, 2), ("x", "y"))
    spec = P("x", "y")
    g = co("device_host")(jax.jit(lambda x: x * 2))
    sm = jax.jit(jax_api.shard_map(lambda x: g(x * 3) * 4, mesh=mesh, in_specs=(spec,), out_specs=spec))
    x_host = np.arange(16, dtype=np.int32).reshape(8, 2)
    x = jax.device_put(x_host, NamedSharding(mesh, spec))
    observe.close(sm(x), x_host * 24, rtol=0, atol=0)
    lowered = sm.lower(x).as_text()
    observe.record(host_attr_in_lowered=has_frontend_attribute(lowered, HOST_KEY, "host"))
    assert has_frontend_attribute(lowered, HOST_KEY, "host"), "the host placement inside shard_map was dropped"


def test_exported_host_function_keeps_the_placement(observe):
    """Upstream export_test test_compute_on_host: jax.export of a jit(compute_on(host)) function
    keeps the host placement in the serialized module, and calling the export gives the value."""
    cores.exported_host_function_keeps_the_placement(observe)


def test_serialized_host_function_keeps_the_placement(observe):
    """The same export serialized and read back keeps the placement and the value. Serialization
    needs flatbuffers, which jax leaves optional (its error says to install it): skip without it."""
    cores.serialized_host_function_keeps_the_placement(observe)
