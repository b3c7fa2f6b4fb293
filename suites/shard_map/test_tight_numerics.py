"""shard_map primal outputs held to bounds derived per op, against float64 references.

The shard_map cases compare at rtol/atol 2e-5 (168 float32 ulps at 1.0), wide enough for their
linearize / transpose chains but blind to a primal output that is off by tens of ulps. Here one
elementwise op runs sharded over the mesh (each element must be within the op's own ulp bound,
harness.incell.numerics.OP_ULPS, of the float64 result) and then a sharded sum (a psum): within
the elementwise bounds summed plus gamma_{n-1} of the sum of |terms| (any summation order).
"""

from __future__ import annotations

import pytest

from suites.shard_map import cores


@pytest.fixture(scope="module")
def mesh():
    """Skips at setup with fewer than 4 devices (each core builds its own mesh)."""
    cores.need_devices(cores.N_SMALL)


@pytest.mark.parametrize("op", ["sin", "exp", "tanh", "logistic", "mul"])
def test_sharded_op_and_psum_are_within_their_bounds(op, mesh, observe):
    cores.sharded_op_and_psum_within_bounds(op, observe)
