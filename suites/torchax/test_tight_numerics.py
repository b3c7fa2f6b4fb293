"""Primal outputs through torchax held to bounds derived per op, against float64 references.

The other torchax cases compare with torch eager at rtol 1e-5 (84 float32 ulps) or 1e-6: a
conversion or a lowering that is off by tens of ulps passes them. Here each elementwise op through
`torchax.interop.call_jax` must be within its own ulp bound (harness.incell.numerics.OP_ULPS, each
with its reason) of the float64 result, and a torch module's forward through `extract_jax` within
the rounding-error bound of its float32 arithmetic (Higham's gamma_n for each dot product, the
tanh bound between them). Cores in suites/torchax/cores.py.
"""

from __future__ import annotations

import pytest

from suites.torchax import cores


@pytest.mark.parametrize("op", ["sin", "exp", "tanh", "logistic", "log", "sqrt"])
def test_interop_call_jax_is_within_the_ops_ulp_bound(op, env, observe):
    cores.interop_call_jax_within_ulps(op, observe)


def test_extract_jax_forward_is_within_its_rounding_bound(env, observe):
    cores.extract_jax_forward_within_bound(observe)
