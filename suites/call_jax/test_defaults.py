"""call_jax and the jax.jit default it must override, called with their defaults.

jax.jit drops unused arguments by default (keep_unused=False); call_jax has to pass
keep_unused=True or torch_xla calls a computation with fewer parameters than tensors
(pytorch/xla#8794). The other call_jax cases pass `kwargs` explicitly; users mostly call
`call_jax(f, args)`. Each signature's defaults are recorded and the relied-on ones are API facts
judged against matrices/apis/ (a flipped default is news even where behaviour agrees).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from harness.incell.compat import torch_api
from harness.incell.defaults import check_defaults
from harness.incell.ir import count_entry_parameters
from suites.call_jax.cores import record_hlo


def test_jit_drops_unused_arguments_by_default(observe):
    """The default call_jax overrides, checked where it lives (no torch needed: every cell)."""
    check_defaults(observe, "jax.jit", jax.jit, {"keep_unused": False})
    x, unused = np.ones(3, np.float32), np.zeros(3, np.float32)
    bare = count_entry_parameters(jax.jit(lambda x, y: x * 2.0).lower(x, unused).compile().as_text())
    kept = count_entry_parameters(jax.jit(lambda x, y: x * 2.0, keep_unused=True).lower(x, unused).compile().as_text())
    observe.record(entry_parameters_default=bare, entry_parameters_keep_unused=kept)
    assert (bare, kept) == (1, 2), f"jit(f)(x, unused) has {bare} parameters by default and {kept} with keep_unused=True"


def test_call_jax_with_its_defaults_keeps_unused_arguments_and_returns_both_outputs(xla_inputs, observe):
    """call_jax(f, args): no kwargs, no name; f ignores its second tensor and returns a tuple."""
    call_jax = torch_api.call_jax()
    check_defaults(observe, torch_api.CALL_JAX, call_jax, {"kwargs": None, "name": None, "override_hash": None})
    cpu, on_xla = xla_inputs((3,), (3,), seed=2)
    out = call_jax(lambda a, b: (a * 2.0, jnp.sin(a)), tuple(on_xla))
    assert isinstance(out, tuple) and len(out) == 2, \
        f"output structure {type(out).__name__} of {len(out)} differs from JAX's: a tuple of 2"
    record_hlo(observe, list(out), tensors_passed=2)
    torch = pytest.importorskip("torch")
    # a * 2 is exact; sin in float32 on XLA's CPU within 2 ulp of torch's (both round to float32).
    observe.close(out[0], cpu[0] * 2.0, rtol=0, atol=0, name="double")
    observe.close(out[1], torch.sin(cpu[0]), rtol=2 * float(np.finfo(np.float32).eps), atol=0, name="sin")
