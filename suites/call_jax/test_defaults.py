"""call_jax and the jax.jit default it must override, called with their defaults.

jax.jit drops unused arguments by default (keep_unused=False); call_jax has to pass
keep_unused=True or torch_xla calls a computation with fewer parameters than tensors
(pytorch/xla#8794). The other call_jax cases pass `kwargs` explicitly; users mostly call
`call_jax(f, args)`. Each signature's defaults are recorded and the relied-on ones are API facts
judged against matrices/apis/ (a flipped default is news even where behaviour agrees).
The bodies are cores in suites/call_jax/cores.py (exported as standalone reproducers).
"""

from __future__ import annotations

from suites.call_jax import cores


def test_jit_drops_unused_arguments_by_default(observe):
    """The default call_jax overrides, checked where it lives (no torch needed: every cell)."""
    cores.jit_drops_unused_arguments_by_default(observe)


def test_call_jax_with_its_defaults_keeps_unused_arguments_and_returns_both_outputs(xla_inputs, observe):
    """call_jax(f, args): no kwargs, no name; f ignores its second tensor and returns a tuple."""
    cores.call_jax_with_its_defaults(observe)
