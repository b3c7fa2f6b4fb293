"""What may cross interop.jax_jit's boundary. The op cases return a torch.return_types structseq
as a tuple (so the op itself is tested traced); this pins the structseq itself, once."""

from __future__ import annotations

from suites.torchax_ops import cores


def test_jax_jit_of_a_function_returning_torch_return_types(observe):
    cores.jit_of_torch_return_types(observe)
