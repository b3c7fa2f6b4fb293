"""compute_on("gpu_stream:N") checked where no GPU is: the annotation in the lowering, per op.

`test_eager_vs_aot.py::test_stream_annotation_reaches_the_lowering` runs the stream on a GPU and
skips elsewhere, so on a CPU matrix nothing checked the stream annotation at all (a coverage gap).
The lowering is the same on every platform, so this case checks it on any device: every op the
annotated function computes carries `_xla_stream_annotation = "N"` and no op outside it does (an
attribute found *somewhere* in the module would also pass with the annotation on one op only).
On CPU the annotated program also runs; the annotation must not change its values.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from harness.incell.compat import jax_api
from harness.incell.ir import stablehlo_ops_with_attribute

KEY = "_xla_stream_annotation"
INSIDE = {"sine", "multiply", "add"}  # what the annotated function computes
OUTSIDE = {"subtract", "cosine"}  # what the caller computes around it
X = np.linspace(-2.0, 2.0, 8, dtype=np.float32)


def program(stream: int):
    inner = jax_api.compute_on()(f"gpu_stream:{stream}")(lambda x: jnp.sin(x) * 2.0 + x)
    return lambda x: inner(jnp.cos(x)) - 1.0


@pytest.mark.parametrize("stream", [1, 3])
def test_stream_annotation_marks_exactly_the_ops_inside(stream, observe):
    x = jnp.asarray(X)
    jax_api.lower_text_on_stream(lambda x: x * 2.0, stream, x)  # the API probe: api absent before 0.5.1
    ops = stablehlo_ops_with_attribute(jax.jit(program(stream)).lower(x).as_text(), KEY)
    observe.record(annotated_ops=[f"{op}={v}" for op, v in ops if op in INSIDE | OUTSIDE])
    inside = [(op, v) for op, v in ops if op in INSIDE]
    outside = [(op, v) for op, v in ops if op in OUTSIDE]
    assert {op for op, _ in inside} == INSIDE and {op for op, _ in outside} == OUTSIDE, f"ops lowered: {ops}"
    wrong = [(op, v) for op, v in inside if v != str(stream)]
    assert not wrong, f"ops of the gpu_stream:{stream} region without {KEY} = \"{stream}\": {wrong}"
    leaked = [(op, v) for op, v in outside if v is not None]
    assert not leaked, f"ops outside the region carry {KEY}: {leaked}"
    if jax.devices()[0].platform == "cpu":  # a GPU runs it in test_eager_vs_aot.py
        x64 = X.astype(np.float64)
        reference = np.sin(np.cos(x64)) * 2.0 + np.cos(x64) - 1.0
        # Six float32 ops on values below 4 in magnitude, each within 2 ulp of its exact result
        # (XLA's CPU sin/cos are within 1-2 ulp; mul/add/sub round once): 6 * 2 ulp at 4.0.
        observe.close(jax.jit(program(stream))(x), reference, rtol=0, atol=12 * float(np.spacing(np.float32(4.0))),
                      name="values")
