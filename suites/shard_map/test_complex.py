"""Complex inputs for the linear maps shard_map's transpose rules handle.

jax.linear_transpose gives the transpose, not the conjugate (Hermitian) transpose: for
f(x) = c * x with complex c, f^T(ct) = c * ct, and <f(x), y> = <x, f^T(y)> holds for the bilinear
(unconjugated) pairing. Every other shard_map case is real, where the two coincide, so a release
that conjugated (or dropped the imaginary part) in a transpose rule would pass them all.
"""

from __future__ import annotations

import pytest

from suites.shard_map import cores


@pytest.fixture(scope="module")
def mesh():
    """Skips at setup with fewer than 4 devices (each core builds its own mesh)."""
    cores.need_devices(cores.N_SMALL)


@pytest.mark.parametrize("sharding", ["sharded", "replicated_coefficient"])
def test_transpose_of_a_complex_scaling_is_not_conjugated(sharding, mesh, observe):
    cores.complex_scaling_transpose(sharding, observe)


def test_grad_of_a_complex_matmul_under_shard_map_uses_the_transpose(mesh, observe):
    """vjp of x -> x @ W (rows sharded) with complex W is ct @ W^T, not ct @ W^H."""
    cores.complex_matmul_grad(observe)
