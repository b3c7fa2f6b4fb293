"""torchax.interop entry points no other case calls: jax_jit, jax_value_and_grad (the autograd
bridge: jax.value_and_grad of a torch function, checked against torch autograd), call_torch
(a torch function on JAX arrays, under jax.grad) and j2t_autograd (torch autograd through
jax.vjp), each with gradients against the float64 closed form.

Each is looked up through torch_api.torchax_entry, so its presence is recorded and judged
against matrices/apis/torchax.yaml (an entry point missing inside its range is api-drift).
Cores in suites/torchax/cores.py.
"""

from __future__ import annotations

from suites.torchax import cores


def test_interop_jax_jit_of_a_torch_function(env, observe):
    cores.interop_jax_jit_of_a_torch_function(observe)


def test_interop_jax_value_and_grad_matches_torch_autograd(env, observe):
    cores.interop_jax_value_and_grad_matches_torch_autograd(observe)


def test_interop_call_torch_under_jax_grad(env, observe):
    cores.interop_call_torch_under_jax_grad(observe)


def test_interop_j2t_autograd_of_a_torch_function(env, observe):
    cores.interop_j2t_autograd_of_a_torch_function(observe)


def test_interop_j2t_autograd_of_a_jax_function(env, observe):
    cores.interop_j2t_autograd_of_a_jax_function(observe)
