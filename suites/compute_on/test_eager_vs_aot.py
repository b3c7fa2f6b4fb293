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

from harness.incell.compat import jax_api
from harness.incell.ir import frontend_attribute_values, has_frontend_attribute, lines_mentioning

HOST_KEY = "_xla_compute_type"


def body(x):
    return jax.lax.platform_dependent(x, cpu=lambda x: x + 1.0, default=lambda x: x + 2.0)


def _decorate(order: str):
    co = jax_api.compute_on()
    if order == "compute_on_outside_jit":
        return co("device_host")(jax.jit(body))
    return jax.jit(co("device_host")(body))


X = np.arange(8, dtype=np.float32) / 3.0
HOST_REFERENCE = X + 1.0  # the host is a CPU: its branch adds 1, whatever the default device


@pytest.mark.parametrize("order", ["compute_on_outside_jit", "jit_outside_compute_on"])
def test_eager_vs_aot(order, observe):
    f = _decorate(order)
    x = jnp.asarray(X)
    eager = f(x)
    observe.close(eager, HOST_REFERENCE, rtol=0, atol=1e-6, name="eager")

    # AOT the way the user writes it: f.lower(x).compile(). Where the decorated function no longer
    # offers .lower (0.6.0+: lower on a wrapped jit is disallowed), the supported spelling is
    # jax.jit(f).lower(x); the old attribute must then be absent, not silently wrong.
    if hasattr(f, "lower"):
        lowered = f.lower(x)
        observe.record(aot_path="f.lower")
    else:
        with pytest.raises(AttributeError):
            f.lower  # noqa: B018 - the attribute's absence is the documented resolution
        lowered = jax.jit(f).lower(x)
        observe.record(aot_path="jax.jit(f).lower")
    lowered_text = lowered.as_text()
    compiled = lowered.compile()
    compiled_text = compiled.as_text()
    aot = compiled(x)
    observe.record(lowered_host_attr=frontend_attribute_values(lowered_text, HOST_KEY),
                   compiled_host_attr=frontend_attribute_values(compiled_text, HOST_KEY),
                   stablehlo=lowered_text[:6000])
    if not has_frontend_attribute(lowered_text, HOST_KEY, "host"):
        observe.record(observed_ir=lines_mentioning(lowered_text, "stablehlo.", limit=8))
    assert has_frontend_attribute(lowered_text, HOST_KEY, "host"), \
        f"AOT ({observe['aot_path']}) lowered without {HOST_KEY} = \"host\": the host placement was dropped"
    assert has_frontend_attribute(compiled_text, HOST_KEY, "host"), \
        f"compiled module lost {HOST_KEY}=\"host\""
    observe.close(aot, eager, rtol=0, atol=0, name="aot_vs_eager")


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
    observe.close(f(x), X * 2.0, rtol=0, atol=1e-6)


def test_output_in_pinned_host_memory(observe):
    """An output placed in pinned_host memory arrives there with the right values."""
    dev = jax.devices()[0]
    kinds = sorted(m.kind for m in dev.addressable_memories())
    observe.record(memory_kinds=kinds)
    if "pinned_host" not in kinds:
        pytest.skip(f"device {dev.platform} exposes no pinned_host memory (has {kinds})")
    s = jax.sharding.SingleDeviceSharding(dev, memory_kind="pinned_host")
    out = jax.jit(lambda x: x * 3.0, out_shardings=s)(jnp.asarray(X))
    observe.record(out_memory_kind=out.sharding.memory_kind)
    assert out.sharding.memory_kind == "pinned_host"
    observe.close(out, X * 3.0, rtol=0, atol=1e-6)
