"""shard_map called the way most users call it: with its own defaults.

Every other shard_map case passes the replication check (check_rep / check_vma) explicitly, so a
release that turned the check off by default would pass them all while users silently get one
shard's value for an output they declared replicated. Here shard_map is called bare; its
signature's defaults are recorded, and the one these cases rely on (the check on) is an API fact
judged against matrices/apis/jax.yaml, so a flipped default is news even if no case changed.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.sharding import Mesh, PartitionSpec as P

from harness.incell.compat import jax_api
from harness.incell.defaults import check_defaults

N = 4
AXIS = "i"
X = np.arange(2 * N, dtype=np.float32)  # small integers: every sum below is exact in float32
CHECK = {jax_api.SHARD_MAP: "check_vma", jax_api.EXPERIMENTAL_SHARD_MAP: "check_rep"}


@pytest.fixture(scope="module")
def mesh():
    if len(jax.devices()) < N:
        pytest.skip(f"needs {N} devices, have {len(jax.devices())}")
    return Mesh(np.array(jax.devices()[:N]), (AXIS,))


def _shard_map(observe):
    api, shard_map = jax_api.shard_map_itself()
    check_defaults(observe, api, shard_map, {CHECK[api]: True})
    observe.record(shard_map=api)
    return shard_map


def test_shard_map_with_its_defaults_refuses_an_output_it_cannot_prove_replicated(mesh, observe):
    """x * 2 varies over the axis; out_specs=P() claims it is replicated. With the check on (the
    default) that is an error at trace time; with it off, each device's shard is returned as if
    it were the whole replicated value (a wrong answer, no error)."""
    shard_map = _shard_map(observe)
    f = jax.jit(shard_map(lambda x: x * 2.0, mesh=mesh, in_specs=P(AXIS), out_specs=P()))
    with pytest.raises(ValueError, match="out_specs which require replication which can't be statically inferred"):
        f(X)


def test_shard_map_with_its_defaults_matches_numpy(mesh, observe):
    """The common call: a sharded input, a psum, a replicated output, nothing else passed."""
    shard_map = _shard_map(observe)
    f = jax.jit(shard_map(lambda x: jax.lax.psum(x, AXIS), mesh=mesh, in_specs=P(AXIS), out_specs=P()))
    # Sums of small integers in float32 are exact: no tolerance.
    observe.close(f(X), X.reshape(N, -1).sum(axis=0), rtol=0, atol=0)
