"""compute_on("device_host") called eagerly versus compiled ahead of time (jax-ml/jax#27825).

The body takes a different branch per platform (x + 1 on cpu, x + 2 elsewhere), so on an
accelerator the host placement is visible in the numbers; on every device the lowered and the
compiled IR must both carry `_xla_compute_type = "host"`. Up to 0.5.3, `compute_on(...)(jax.jit(f))`
exposed the inner jit's `.lower`, which lowered *without* the host placement (the bug); from 0.6.0
that attribute is gone and AOT goes through `jax.jit(...)`, which keeps it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from suites.compute_on import cores
from harness.incell.compat import jax_api
from harness.incell.ir import frontend_attribute_values

HOST_KEY = "_xla_compute_type"


X = np.arange(8, dtype=np.float32) / 3.0


@pytest.mark.parametrize("order", ["compute_on_outside_jit", "jit_outside_compute_on"])
def test_eager_vs_aot(order, observe):
    cores.eager_vs_aot(order, observe)


def test_stream_annotation_reaches_the_lowering(observe):
    """compute_on('gpu_stream:1') annotates the ops with _xla_stream_annotation = "1"."""
    x = jnp.asarray(X)
    text = jax_api.lower_text_on_stream(lambda x: x * 2.0, 1, x)
    values = frontend_attribute_values(text, "_xla_stream_annotation")
    observe.record(stream_annotations=sorted(set(values)))
    assert values and set(values) == {"1"}, f"expected _xla_stream_annotation = \"1\", got {values}"
    if jax.devices()[0].platform != "gpu":
        pytest.skip(f"needs gpu to run on a stream (lowering checked on {jax.devices()[0].platform})")
    f = jax.jit(jax_api.compute_on()("gpu_stream:1")(lambda x: x * 2.0))
    observe.close(f(x), X * 2.0, rtol=0, atol=0)  # times 2 is exact


def test_output_in_pinned_host_memory(observe):
    """An output placed in pinned_host memory arrives there with the right values."""
    cores.output_in_pinned_host_memory(observe)
