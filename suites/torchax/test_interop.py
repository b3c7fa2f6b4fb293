"""Running JAX code from PyTorch through torchax (successor of torch_xla2; seed 003, google/torchax).

Round trips between torch tensors and JAX arrays, jax.grad through a torch nn.Module, an optax
step against the same step in torch.optim, torchax.interop.call_jax, and jax_view/torch_view on
pytrees. References are torch eager on CPU.
"""

from __future__ import annotations

import pytest

from suites.torchax import cores


@pytest.mark.parametrize("kind", ["float32", "bfloat16", "int32", "int64", "zero_size", "non_contiguous"])
def test_round_trip(kind, env, observe):
    cores.round_trip(kind, observe)


def test_jax_grad_through_torch_module(env, observe):
    cores.jax_grad_through_torch_module(observe)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_optax_step_matches_torch_optim(opt, env, observe):
    cores.optax_step_matches_torch_optim(opt, observe)


def test_interop_call_jax(env, observe):
    cores.interop_call_jax(observe)


def test_jax_view_and_torch_view_on_pytrees(env, observe):
    cores.jax_view_and_torch_view_on_pytrees(observe)


def test_interop_call_jax_jnp_scalar_type_static(env, observe):
    """A jnp scalar type (jnp.int32, a class, so callable) passed as a static must reach the JAX
    function unchanged, as the call_jax family's generated trees pass it (found by the property)."""
    cores.interop_call_jax_jnp_scalar_type_static(observe)


def test_interop_call_jax_torch_dtype_static(env, observe):
    """A torch dtype passed as a static reaches the JAX function as the matching JAX dtype
    (found by the property on torch_xla 2.8.1's bundled torchax)."""
    cores.interop_call_jax_torch_dtype_static(observe)
