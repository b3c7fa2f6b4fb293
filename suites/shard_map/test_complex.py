"""Complex inputs for the linear maps shard_map's transpose rules handle.

jax.linear_transpose gives the transpose, not the conjugate (Hermitian) transpose: for
f(x) = c * x with complex c, f^T(ct) = c * ct, and <f(x), y> = <x, f^T(y)> holds for the bilinear
(unconjugated) pairing. Every other shard_map case is real, where the two coincide, so a release
that conjugated (or dropped the imaginary part) in a transpose rule would pass them all.
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
rng = np.random.default_rng(13)
C = (rng.normal(size=(N * 2,)) + 1j * rng.normal(size=(N * 2,))).astype(np.complex64)
X = (rng.normal(size=(N * 2,)) + 1j * rng.normal(size=(N * 2,))).astype(np.complex64)
CT = (rng.normal(size=(N * 2,)) + 1j * rng.normal(size=(N * 2,))).astype(np.complex64)
W = (rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))).astype(np.complex64)


@pytest.fixture(scope="module")
def mesh():
    if len(jax.devices()) < N:
        pytest.skip(f"needs {N} devices, have {len(jax.devices())}")
    return Mesh(np.array(jax.devices()[:N]), (AXIS,))


def _close(observe, got, want, name):
    # One complex multiply per element: |err| <= sqrt(2) * gamma_2 * |c||x| (Higham 3.6); in ulps
    # of each component that is a few ulps: 4 ulps of the magnitude, per component.
    bound = 4 * numerics.ulp(np.abs(want), "float32")
    observe.record(**{name: numerics.assert_within_bound(np.asarray(got).real, want.real, bound, why="complex multiply, 4 ulp")})
    observe.record(**{f"{name}.imag": numerics.assert_within_bound(np.asarray(got).imag, want.imag, bound, why="complex multiply, 4 ulp")})


@pytest.mark.parametrize("sharding", ["sharded", "replicated_coefficient"])
def test_transpose_of_a_complex_scaling_is_not_conjugated(sharding, mesh, observe):
    c_spec = P(AXIS) if sharding == "sharded" else P()
    c = C if sharding == "sharded" else C[:1]
    f = jax_api.shard_map(lambda c, x: c * x, mesh=mesh, in_specs=(c_spec, P(AXIS)), out_specs=P(AXIS), check=True)
    fx = lambda x: f(jnp.asarray(c), x)  # noqa: E731
    y = jax.jit(fx)(X)
    _close(observe, y, c.astype(np.complex128) * X, "primal")
    (xt,) = jax.linear_transpose(fx, X)(jnp.asarray(CT))
    want = c.astype(np.complex128) * CT
    conj = np.conj(c.astype(np.complex128)) * CT
    observe.record(transpose_minus_conjugate=float(np.max(np.abs(np.asarray(xt) - conj))))
    _close(observe, xt, want, "transpose")
    # the bilinear pairing: sum(f(x) * y) == sum(x * f^T(y)), no conjugation anywhere
    lhs, rhs = np.sum(np.asarray(y) * CT), np.sum(X * np.asarray(xt))
    # Both sides sum the same 8 products |c||x||ct|: y and xt each carry 4 ulps (relative 2**-21),
    # and each side's complex products and sum add sqrt(2) gamma_10 (Higham 3.6), in float64 here.
    terms = float(np.sum(np.abs(c) * np.abs(X) * np.abs(CT)))
    tol = (2 * 2.0**-21 + 2 * np.sqrt(2) * numerics.gamma(10, "float32")) * terms
    observe.record(pairing_gap=float(abs(lhs - rhs)), pairing_tol=tol)
    assert abs(lhs - rhs) <= tol, f"<f(x), y> = {lhs} but <x, f^T(y)> = {rhs} (allowed {tol:.3g})"


def test_grad_of_a_complex_matmul_under_shard_map_uses_the_transpose(mesh, observe):
    """vjp of x -> x @ W (rows sharded) with complex W is ct @ W^T, not ct @ W^H."""
    xs = (rng.normal(size=(N * 2, 3)) + 1j * rng.normal(size=(N * 2, 3))).astype(np.complex64)
    cts = (rng.normal(size=(N * 2, 3)) + 1j * rng.normal(size=(N * 2, 3))).astype(np.complex64)
    f = jax_api.shard_map(lambda x, w: x @ w, mesh=mesh, in_specs=(P(AXIS), P()), out_specs=P(AXIS), check=True)
    _, vjp = jax.vjp(lambda x: f(x, jnp.asarray(W)), xs)
    (gx,) = vjp(jnp.asarray(cts))
    want = cts.astype(np.complex128) @ W.T.astype(np.complex128)
    # a 3-term complex dot per element: gamma_{3+2} of sum |ct_k||w_k| per component (Higham 3.6)
    bound = np.sqrt(2) * numerics.gamma(5, "float32") * (np.abs(cts) @ np.abs(W).T)
    observe.record(vjp=numerics.assert_within_bound(np.asarray(gx).real, want.real, bound, why="3-term complex dot: sqrt(2) gamma_5"))
    observe.record(vjp_imag=numerics.assert_within_bound(np.asarray(gx).imag, want.imag, bound, why="3-term complex dot: sqrt(2) gamma_5"))
