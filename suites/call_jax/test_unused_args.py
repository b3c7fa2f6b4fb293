"""call_jax with arguments the JAX function never uses (pytorch/xla#8794, fixed by #8830 in 2.7.0).

JAX drops unused arguments from the lowered module unless keep_unused=True; torch_xla then calls
a computation of fewer parameters than tensors passed, and XLA aborts the process ("Call applied
function arity must match number of arguments", SIGABRT). The harness records that as `crash`.
The invariant: the output graph's HLO has one parameter per tensor passed, used or not.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from harness.incell.compat import torch_api
from suites.call_jax.conftest import record_hlo

# id -> (jax function, how many tensors as args, kwarg names that get tensors, torch reference)
CASES = {
    "uses_two_of_four": (lambda a, b, c, d: a + b * 2.0, 4, (), lambda a, b, c, d: a + b * 2.0),
    "unused_first": (lambda a, b: b * 3.0, 2, (), lambda a, b: b * 3.0),
    "unused_middle_of_three": (lambda a, b, c: a - c, 3, (), lambda a, b, c: a - c),
    "none_used": (lambda a, b: jnp.full((3,), 7.0), 2, (), None),
    # kwargs given in sorted order here: test_non_tensor_inputs checks the unsorted order separately
    "unused_kwarg": (lambda a, *, extra, scale: a * scale, 1, ("extra", "scale"), lambda a, *, extra, scale: a * scale),
}


@pytest.mark.parametrize("case", list(CASES))
def test_unused_arguments(case, xla_inputs, observe):
    fn, n_args, kw_names, ref = CASES[case]
    cpu, on_xla = xla_inputs(*([(3,)] * (n_args + len(kw_names))))
    args, kwargs = tuple(on_xla[:n_args]), dict(zip(kw_names, on_xla[n_args:]))
    out = torch_api.call_jax()(fn, args, kwargs)  # pre-fix: the process aborts here
    record_hlo(observe, [out], tensors_passed=len(on_xla))
    torch = pytest.importorskip("torch")
    expected = ref(*cpu[:n_args], **dict(zip(kw_names, cpu[n_args:]))) if ref else torch.full((3,), 7.0)
    observe.close(out, expected, rtol=1e-6, atol=1e-6)


def test_call_jax_grad(xla_inputs, observe):
    """Upstream test_call_jax_grad: jax.grad folds both gradients to constants, so the traced
    gradient function uses none of its inputs; compare with torch autograd on CPU."""
    torch = pytest.importorskip("torch")
    cpu, on_xla = xla_inputs((4,), (4,), seed=1)

    def loss(a, b):
        return jnp.sum(a * 3.0 + b)

    ga, gb = torch_api.call_jax()(jax.grad(loss, argnums=(0, 1)), tuple(on_xla))
    record_hlo(observe, [ga, gb], tensors_passed=2)

    a, b = (t.clone().requires_grad_(True) for t in cpu)
    torch.sum(a * 3.0 + b).backward()
    observe.close(ga, a.grad, rtol=1e-6, atol=1e-6, name="grad_a")
    observe.close(gb, b.grad, rtol=1e-6, atol=1e-6, name="grad_b")
