"""compute_on("device_host") called eagerly versus compiled ahead of time (jax-ml/jax#27825).

The body takes a different branch per platform (x + 1 on cpu, x + 2 elsewhere), so on an
accelerator the host placement is visible in the numbers; on every device the lowered and the
compiled IR must both carry `_xla_compute_type = "host"`. Up to 0.5.3, `compute_on(...)(jax.jit(f))`
exposed the inner jit's `.lower`, which lowered *without* the host placement (the bug); from 0.6.0
that attribute is gone and AOT goes through `jax.jit(...)`, which keeps it.
"""

from __future__ import annotations

import pytest

from suites.compute_on import cores


@pytest.mark.parametrize("order", ["compute_on_outside_jit", "jit_outside_compute_on"])
def test_eager_vs_aot(order, observe):
    cores.eager_vs_aot(order, observe)


def test_stream_annotation_reaches_the_lowering(observe):
    """compute_on('gpu_stream:1') annotates the ops with _xla_stream_annotation = "1"."""
    cores.stream_annotation_reaches_the_lowering(observe)


def test_output_in_pinned_host_memory(observe):
    """An output placed in pinned_host memory arrives there with the right values."""
    cores.output_in_pinned_host_memory(observe)
