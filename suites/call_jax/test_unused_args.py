"""call_jax with arguments the JAX function never uses (pytorch/xla#8794, fixed by #8830 in 2.7.0).

JAX drops unused arguments from the lowered module unless keep_unused=True; torch_xla then calls
a computation of fewer parameters than tensors passed, and XLA aborts the process ("Call applied
function arity must match number of arguments", SIGABRT). The harness records that as `crash`.
The invariant: the output graph's HLO has one parameter per tensor passed, used or not.
"""

from __future__ import annotations

import pytest

from suites.call_jax import cores


@pytest.mark.parametrize("case", ["uses_two_of_four", "unused_first", "unused_middle_of_three", "none_used", "unused_kwarg"])
def test_unused_arguments(case, observe):
    cores.unused_arguments(case, observe)


def test_call_jax_grad(observe):
    """Upstream test_call_jax_grad: jax.grad folds both gradients to constants, so the traced
    gradient function uses none of its inputs; compare with torch autograd on CPU."""
    cores.call_jax_grad(observe)
