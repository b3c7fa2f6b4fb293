"""shard_map + jax.linearize + jax.linear_transpose (jax-ml/jax#28260, #28193).

The issue's case: linearize f(x) = mean(x**2) at a replicated primal p, apply the linear map to a
sharded tangent t, transpose it back; p is bound with functools.partial. It worked on jax 0.5.3;
from 0.6.0 the varying-manual-axes type check rejects it unless p is marked varying
(jax.lax.pvary, later jax.lax.pcast(..., to='varying')) or the check is turned off.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from harness.incell.compat import jax_api
from suites.shard_map import cores

N_DEVICES = 8
AXIS = "x"


@pytest.fixture(scope="module")
def mesh():
    if len(jax.devices()) < N_DEVICES:
        pytest.skip(f"needs {N_DEVICES} devices, have {len(jax.devices())} (set XLA_FLAGS=--xla_force_host_platform_device_count=8)")
    return jax_api.make_mesh(N_DEVICES, AXIS)


@pytest.mark.parametrize("variant", ["base", "pvary", "pcast", "no_replication_check"])
def test_linearize_transpose(variant, mesh, observe):
    cores.linearize_transpose(variant, observe)


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
    observe.close(grad, ref, rtol=1e-5, atol=1e-5)  # 16 float32 terms 2 x^2 w summed in XLA's psum order vs NumPy's: gamma_16 ~ 1e-6 relative, with margin
    jaxpr = str(jax.make_jaxpr(jax.grad(loss))(w, x))
    prims = cores.jaxpr_primitives(jaxpr)
    observe.record(jaxpr_primitives=prims)
    assert "pvary" in prims, prims
    # The transpose of pvary is a psum over the axis: the cotangent of a replicated weight.
    assert "psum" in prims or "psum_invariant" in prims or "psum2" in prims, prims
