"""shard_map primal outputs held to bounds derived per op, against float64 references.

The shard_map cases compare at rtol/atol 2e-5 (168 float32 ulps at 1.0), wide enough for their
linearize / transpose chains but blind to a primal output that is off by tens of ulps. Here one
elementwise op runs sharded over the mesh (each element must be within the op's own ulp bound,
harness.incell.numerics.OP_ULPS, of the float64 result) and then a sharded sum (a psum): within
the elementwise bounds summed plus gamma_{n-1} of the sum of |terms| (any summation order).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, PartitionSpec as P

from harness.incell import numerics
from harness.incell.compat import jax_api

N = 4
AXIS = "i"
X = np.random.default_rng(5).uniform(-4.0, 4.0, (N * 8, 16)).astype(np.float32)
OPS = {"sin": (jnp.sin, np.sin), "exp": (jnp.exp, np.exp), "tanh": (jnp.tanh, np.tanh),
       "logistic": (jax.nn.sigmoid, lambda v: 1.0 / (1.0 + np.exp(-v))), "mul": (lambda v: v * 1.5, lambda v: v * 1.5)}


@pytest.fixture(scope="module")
def mesh():
    if len(jax.devices()) < N:
        pytest.skip(f"needs {N} devices, have {len(jax.devices())}")
    return Mesh(np.array(jax.devices()[:N]), (AXIS,))


@pytest.mark.parametrize("op", list(OPS))
def test_sharded_op_and_psum_are_within_their_bounds(op, mesh, observe):
    jax_op, ref_op = OPS[op]
    max_ulps, why = numerics.OP_ULPS[op]

    def body(x):
        y = jax_op(x)
        return y, jax.lax.psum(jnp.sum(y, axis=0, keepdims=True), AXIS)

    f = jax.jit(jax_api.shard_map(body, mesh=mesh, in_specs=P(AXIS), out_specs=(P(AXIS), P()), check=True))
    y, total = f(X)
    y_ref = ref_op(X.astype(np.float64))
    observe.record(elementwise=numerics.assert_within_ulps(y, y_ref, max_ulps=max_ulps, why=why))
    # The sum of R rows: each term carries its op error (<= max_ulps ulp at the term), then R - 1
    # additions in some order (local sums, then the psum across shards): gamma_{R-1} * sum |terms|.
    rows = X.shape[0]
    bound = (max_ulps * numerics.ulp(y_ref, "float32")).sum(axis=0, keepdims=True) \
        + numerics.gamma(rows - 1, "float32") * np.abs(y_ref).sum(axis=0, keepdims=True)
    observe.record(psum=numerics.assert_within_bound(
        total, y_ref.sum(axis=0, keepdims=True), bound,
        why=f"{rows} terms each within {max_ulps} ulp ({why}), summed in float32: gamma_{rows - 1}"))
