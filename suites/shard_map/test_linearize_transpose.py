"""shard_map + jax.linearize + jax.linear_transpose (jax-ml/jax#28260, #28193).

The issue's case: linearize f(x) = mean(x**2) at a replicated primal p, apply the linear map to a
sharded tangent t, transpose it back; p is bound with functools.partial. It worked on jax 0.5.3;
from 0.6.0 the varying-manual-axes type check rejects it unless p is marked varying
(jax.lax.pvary, later jax.lax.pcast(..., to='varying')) or the check is turned off.
"""

from __future__ import annotations

import jax
import pytest

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
    cores.grad_of_shard_map_with_pvary(observe)