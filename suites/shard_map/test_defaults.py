"""shard_map called the way most users call it: with its own defaults.

Every other shard_map case passes the replication check (check_rep / check_vma) explicitly, so a
release that turned the check off by default would pass them all while users silently get one
shard's value for an output they declared replicated. Here shard_map is called bare; its
signature's defaults are recorded, and the one these cases rely on (the check on) is an API fact
judged against matrices/apis/jax.yaml, so a flipped default is news even if no case changed.
"""

from __future__ import annotations

import pytest

from suites.shard_map import cores


@pytest.fixture(scope="module")
def mesh():
    """Skips at setup with fewer than 4 devices (each core builds its own mesh)."""
    cores.need_devices(cores.N_SMALL)


def test_shard_map_with_its_defaults_refuses_an_output_it_cannot_prove_replicated(mesh, observe):
    """x * 2 varies over the axis; out_specs=P() claims it is replicated. With the check on (the
    default) that is an error at trace time; with it off, each device's shard is returned as if
    it were the whole replicated value (a wrong answer, no error)."""
    cores.defaults_refuse_an_unprovable_replicated_output(observe)


def test_shard_map_with_its_defaults_matches_numpy(mesh, observe):
    """The common call: a sharded input, a psum, a replicated output, nothing else passed."""
    cores.defaults_match_numpy(observe)


def test_all_gather_and_psum_scatter_with_their_defaults_match_the_model(mesh, observe):
    """The generated space passes `tiled` every time; here both are called bare (untiled, axis 0)."""
    cores.gather_and_scatter_with_their_defaults_match_the_model(observe)
