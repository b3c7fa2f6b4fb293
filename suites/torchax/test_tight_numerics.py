"""Primal outputs through torchax held to bounds derived per op, against float64 references.

The other torchax cases compare with torch eager at rtol 1e-5 (84 float32 ulps) or 1e-6: a
conversion or a lowering that is off by tens of ulps passes them. Here each elementwise op through
`torchax.interop.call_jax` must be within its own ulp bound (harness.incell.numerics.OP_ULPS, each
with its reason) of the float64 result, and a torch module's forward through `extract_jax` within
the rounding-error bound of its float32 arithmetic (Higham's gamma_n for each dot product, the
tanh bound between them).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from harness.incell import numerics
from harness.incell.compat import require, torch_api
from suites.torchax import cores

X = np.random.default_rng(7).uniform(-4.0, 4.0, 512).astype(np.float32)
POSITIVE = np.abs(X) + np.float32(0.01)
OPS = {  # name -> (jax op, float64 reference, input)
    "sin": (jnp.sin, np.sin, X),
    "exp": (jnp.exp, np.exp, X),
    "tanh": (jnp.tanh, np.tanh, X),
    "logistic": (jax.nn.sigmoid, lambda v: 1.0 / (1.0 + np.exp(-v)), X),
    "log": (jnp.log, np.log, POSITIVE),
    "sqrt": (jnp.sqrt, np.sqrt, POSITIVE),
}


@pytest.fixture(scope="module")
def env():
    return cores.torchax_env()


@pytest.mark.parametrize("op", list(OPS))
def test_interop_call_jax_is_within_the_ops_ulp_bound(op, env, observe):
    torch = require("torch")
    jax_op, ref_op, x = OPS[op]
    with env:
        out = cores.interop("call_jax")(jax_op, env.to_xla(torch.from_numpy(x.copy())))
    got = np.asarray(cores.interop("jax_view")(out))
    max_ulps, why = numerics.OP_ULPS[op]
    observe.record(**{f"ulps.{op}": numerics.assert_within_ulps(got, ref_op(x.astype(np.float64)),
                                                               max_ulps=max_ulps, why=why)})


def forward_bound(w1, b1, w2, b2, x):
    """Elementwise bound on |y32 - y64| for y = tanh(x W1^T + b1) W2^T + b2 computed in float32.

    Inputs are float32 values (exact in float64). A dot of K products plus a bias is within
    gamma_{K+1} * (|x||W|^T + |b|) of exact (any summation order, FMA or not). tanh is 1-Lipschitz,
    so the hidden layer's error is the first layer's error plus tanh's own (OP_ULPS at h). The
    second layer sees that error through |W2| and adds its own gamma term.
    """
    g = lambda n: numerics.gamma(n, "float32")  # noqa: E731
    z = x @ w1.T + b1
    h = np.tanh(z)
    err_z = g(w1.shape[1] + 1) * (np.abs(x) @ np.abs(w1).T + np.abs(b1))
    err_h = err_z + numerics.OP_ULPS["tanh"][0] * numerics.ulp(h, "float32")
    # h carries err_h into the second dot; |h32| <= |h| + err_h bounds the rounding term.
    return np.abs(w2) @ err_h.T + (g(w2.shape[1] + 1) * (np.abs(w2) @ (np.abs(h) + err_h).T + np.abs(b2)[:, None])), h


def test_extract_jax_forward_is_within_its_rounding_bound(env, observe):
    torch = require("torch")
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    x = torch.from_numpy(np.random.default_rng(11).normal(size=(32, 16)).astype(np.float32))
    states, jfn = torch_api.torchax_entry("extract_jax")(model)
    got = np.asarray(jfn(states, (torch_api.t2j(env, x),)))
    p = {k: v.detach().numpy().astype(np.float64) for k, v in model.named_parameters()}
    w1, b1, w2, b2 = p["0.weight"], p["0.bias"], p["2.weight"], p["2.bias"]
    x64 = x.numpy().astype(np.float64)
    ref = np.tanh(x64 @ w1.T + b1) @ w2.T + b2
    bound, _ = forward_bound(w1, b1, w2, b2, x64)
    observe.record(forward=numerics.assert_within_bound(
        got, ref, bound.T, why="float32 rounding of two dot products (gamma_17, gamma_9) and tanh (4 ulp)"))
