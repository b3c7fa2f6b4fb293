"""call_jax as a space: every input kind, every output kind, positional and keyword, both paths.

Each example draws one to three inputs, each a dtype (float32, float16, bfloat16, int8, int32,
bool, complex64), a shape kind (0-d, one element, empty, 3x4), a layout (contiguous, transposed,
strided, starting inside its storage) and whether it is passed positionally or by keyword; and one
to three outputs, each an input returned unchanged, returned twice, a constant, a 0-d reduction or
an elementwise op. `xla` passes torch_xla tensors (call_jax's own lowering and trace cache);
`torchax` passes torchax tensors (from 2.8 call_jax hands those to torchax.interop.call_jax).

Checked against jax.jit of the same function on the same values: every output's dtype, shape and
bits; the inputs unchanged by the call; on the xla path the same call again adds no trace-cache
entry, and writing every output in place leaves every input as it was (no shared memory: JAX
aliases nothing without donation).
"""

from __future__ import annotations

import pytest

from suites.call_jax import cores

pytest.importorskip("hypothesis")
from hypothesis import example, given, strategies as st  # noqa: E402


@st.composite
def calls(draw) -> dict:
    inputs = tuple((draw(st.sampled_from(cores.SPACE_DTYPES)), draw(st.sampled_from(sorted(cores.SHAPE_KINDS))),
                    draw(st.sampled_from(cores.LAYOUTS)), draw(st.sampled_from(["positional", "kwarg"])))
                   for _ in range(draw(st.integers(1, 3))))
    outputs = tuple((draw(st.sampled_from(cores.OUTPUT_KINDS)), draw(st.integers(0, len(inputs) - 1)))
                    for _ in range(draw(st.integers(1, 3))))
    return {"inputs": inputs, "outputs": outputs, "seed": draw(st.integers(0, 2**16))}


@pytest.mark.parametrize("path", ["xla", "torchax"])
@example(call=cores.SPACE_CALL_EXAMPLE)
@given(call=calls())
def test_generated_calls_match_jax_and_leave_inputs_alone(path, call, xla_inputs, observe):
    cores.generated_call(path, observe=observe, **call)
