"""compute_on scenario cores: plain functions over their inputs, called by the tests and inlined
by `harness report` into standalone reproducers (harness/report/standalone.py).

A core may use jax, numpy, the compat shim (`jax_api.X`, resolved per cell when exported), the IR
helpers, `pytest.skip` (a standalone script exits 125 instead) and the `observe` it is given; it
raises AssertionError (or the upstream error) while the bug is there. `CORES` maps each test to
its core; the test's parameter ids are the core's leading arguments.
"""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from harness.incell.compat import jax_api, require
from harness.incell.defaults import check_defaults
from harness.incell.ir import (compiled_host_placement, frontend_attribute_values, has_frontend_attribute,
                               lines_mentioning, main_signature_attribute, outermost_host_calls,
                               stablehlo_ops_with_attribute)

from harness.incell.numerics import OP_ULPS, assert_within_bound, gamma, ulp

HOST_KEY = "_xla_compute_type"
X = np.arange(8, dtype=np.float32) / 3.0


def _grad_bound(x):
    """|error| of cos(sin(x)) * cos(x) in float32 for float32 x: sin(x) within OP_ULPS reaches
    cos(.) through |sin(sin(x))| <= 1; each cos within OP_ULPS; the product rounds once."""
    u = np.sin(x)
    outer, inner = np.cos(u), np.cos(x)
    err_u = OP_ULPS["sin"][0] * ulp(u, "float32")
    err_outer = np.abs(np.sin(u)) * err_u + OP_ULPS["cos"][0] * ulp(outer, "float32")
    err_inner = OP_ULPS["cos"][0] * ulp(inner, "float32")
    return np.abs(inner) * err_outer + np.abs(outer) * err_inner + 0.5 * ulp(outer * inner, "float32")


def body(x):
    return jax.lax.platform_dependent(x, cpu=lambda x: x + 1.0, default=lambda x: x + 2.0)


def eager_vs_aot(order: str, observe) -> None:
    """compute_on('device_host') eager vs f.lower(x).compile(): both keep the host placement."""
    co = jax_api.compute_on()
    f = co("device_host")(jax.jit(body)) if order == "compute_on_outside_jit" else jax.jit(co("device_host")(body))
    x = jnp.asarray(X)
    eager = f(x)
    observe.close(eager, X + 1.0, rtol=0, atol=0, name="eager")  # the host is a CPU: its branch adds 1; one IEEE add on both sides: bit-equal

    # AOT the way the user writes it: f.lower(x).compile(). Where the decorated function no longer
    # offers .lower (0.6.0+: lower on a wrapped jit is disallowed), the supported spelling is
    # jax.jit(f).lower(x); the old attribute must then be absent, not silently wrong.
    if hasattr(f, "lower"):
        lowered = f.lower(x)
        observe.record(aot_path="f.lower")
    else:
        assert not hasattr(f, "lower")
        lowered = jax.jit(f).lower(x)
        observe.record(aot_path="jax.jit(f).lower")
    lowered_text = lowered.as_text()
    compiled = lowered.compile()
    compiled_text = compiled.as_text()
    aot = compiled(x)
    observe.record(lowered_host_attr=frontend_attribute_values(lowered_text, HOST_KEY),
                   compiled_host_attr=frontend_attribute_values(compiled_text, HOST_KEY),
                   compiled_host_placement=compiled_host_placement(compiled_text)[:8],
                   stablehlo=lowered_text[:6000])
    if not has_frontend_attribute(lowered_text, HOST_KEY, "host"):
        observe.record(observed_ir=lines_mentioning(lowered_text, "stablehlo.", limit=8))
    assert has_frontend_attribute(lowered_text, HOST_KEY, "host"), \
        f"AOT ({observe['aot_path']}) lowered without {HOST_KEY} = \"host\": the host placement was dropped"
    assert compiled_host_placement(compiled_text), \
        f"compiled module lost {HOST_KEY}=\"host\""
    observe.close(aot, eager, rtol=0, atol=0, name="aot_vs_eager")


def output_in_pinned_host_memory(observe) -> None:
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
    observe.close(out, X * 3.0, rtol=0, atol=0)  # one IEEE multiply on both sides: bit-equal


def host_multiply_next_to_a_device_multiply(order: str, observe) -> None:
    """The host computes x * 2, the caller multiplies its result by 2 on the device: the compiled
    module must still hold the host computation."""
    co = jax_api.compute_on()
    body = lambda x: x * 2  # noqa: E731
    host = co("device_host")(jax.jit(body)) if order == "compute_on_outside_jit" else jax.jit(co("device_host")(body))
    f = jax.jit(lambda x: host(x) * 2 + 1)
    x_host = np.arange(4, dtype=np.float32)
    x = jnp.asarray(x_host)
    observe.close(f(x), x_host * 4 + 1, rtol=0, atol=0, name="eager")
    lowered = jax.jit(f).lower(x)
    lowered_text, compiled_text = lowered.as_text(), lowered.compile().as_text()
    observe.record(lowered_host_attr=frontend_attribute_values(lowered_text, HOST_KEY)[:8],
                   compiled_host_attr=frontend_attribute_values(compiled_text, HOST_KEY)[:8],
                   compiled_host_placement=compiled_host_placement(compiled_text)[:8])
    assert has_frontend_attribute(lowered_text, HOST_KEY, "host"), "lowered without the host placement"
    assert compiled_host_placement(compiled_text), \
        f"the compiled module lost {HOST_KEY}=\"host\": the host multiply was merged into the device's"


def nesting_different_compute_types_is_refused(observe) -> None:
    """Upstream test_nested_compute_error: `device` inside `device_host` is a clear error: a
    NotImplementedError from compute_on(compute_type), a ValueError from the transform that replaced it
    (jax 0.11.1; upstream's test changed with it), each with the same message."""
    co = jax_api.compute_on()
    expected = jax_api.compute_on_nesting_error()
    inner = co("device")(jax.jit(lambda x: x * 2))
    outer = co("device_host")(jax.jit(lambda x: inner(x)))
    try:
        jax.jit(lambda x: outer(x))(jnp.arange(8))
    except expected as exc:  # what pytest.raises(expected, match=...) checked
        assert re.search("Nesting `compute_on` with different compute types", str(exc)), str(exc)
    else:
        raise AssertionError(f"DID NOT RAISE {expected}")
    observe.record(refused=True, raised=expected.__name__)


def exported_host_function_keeps_the_placement(observe) -> None:
    """jax.export of a jit(compute_on(host)) function keeps the host placement and the value."""
    export = jax_api.export_module()
    co = jax_api.compute_on()

    @jax.jit
    @co("device_host")
    def f(x):
        return jax.lax.platform_dependent(x, cpu=lambda x: x + np.float32(1.0), default=lambda x: x + np.float32(2.0))

    x = np.float32(0.0)
    exp = export.export(f, platforms=("cpu",))(x)
    text = exp.mlir_module()
    observe.record(exported_host_attr=has_frontend_attribute(text, HOST_KEY, "host"))
    assert has_frontend_attribute(text, HOST_KEY, "host"), "the exported module lost the host placement"
    with jax.default_device(jax.devices("cpu")[0]):  # exported for cpu: called there, on a GPU machine too
        observe.close(exp.call(x), np.float32(1.0), rtol=0, atol=0)


def serialized_host_function_keeps_the_placement(observe) -> None:
    """The same export serialized and read back keeps the placement and the value (needs flatbuffers)."""
    export = jax_api.export_module()
    require("flatbuffers")
    co = jax_api.compute_on()

    @jax.jit
    @co("device_host")
    def f(x):
        return x + np.float32(1.0)

    x = np.float32(0.0)
    back = export.deserialize(export.export(f, platforms=("cpu",))(x).serialize())
    assert has_frontend_attribute(back.mlir_module(), HOST_KEY, "host"), "deserialized module lost the host placement"
    with jax.default_device(jax.devices("cpu")[0]):  # exported for cpu: called there, on a GPU machine too
        observe.close(back.call(x), np.float32(1.0), rtol=0, atol=0, name="deserialized")


# --- test_serialization.py (issue 23: what holds in memory holds after serialize/deserialize) ---

SERIAL_N = 4
SERIAL_X = np.linspace(-1.0, 1.0, 8, dtype=np.float32)


def serial_mesh():
    if len(jax.devices()) < SERIAL_N:
        pytest.skip(f"needs {SERIAL_N} devices, have {len(jax.devices())}")
    return jax.sharding.Mesh(np.array(jax.devices()[:SERIAL_N]), ("i",))


def _main_shardings(text: str) -> list[str]:
    sig = re.search(r"func\.func public @main.*", text).group(0)
    return re.findall(r"(?:sdy|mhlo)\.sharding = (#sdy\.sharding<[^>]*>|\"[^\"]*\")", sig)


def serialized_export_keeps_op_attributes_shardings_and_values(observe) -> None:
    """Host and stream regions, sharded in and out: per-op attributes, @main's shardings, the device
    count and the values are the same after serialize / deserialize (needs flatbuffers)."""
    from jax.sharding import NamedSharding, PartitionSpec as P

    mesh = serial_mesh()
    export = jax_api.export_module()
    co = jax_api.compute_on()
    jax_api.lower_text_on_stream(lambda x: x, 2, jnp.asarray(SERIAL_X))  # api probe: gpu_stream:N from 0.5.1
    s_in = NamedSharding(mesh, P("i"))

    def f(x):
        h = co("device_host")(lambda x: x * np.float32(3.0))(x)
        s = co("gpu_stream:2")(lambda x: jnp.sin(x) * np.float32(2.0))(x)
        return h + s, jnp.sum(s)

    fj = jax.jit(f, in_shardings=s_in, out_shardings=(s_in, NamedSharding(mesh, P())))
    x = jax.device_put(SERIAL_X, s_in)
    exp = export.export(fj)(x)
    require("flatbuffers")
    back = export.deserialize(exp.serialize())
    before, after = exp.mlir_module(), back.mlir_module()
    for key in ("_xla_compute_type", "_xla_stream_annotation"):
        ops_before = stablehlo_ops_with_attribute(before, key)
        ops_after = stablehlo_ops_with_attribute(after, key)
        observe.record(**{key: [f"{op}={v}" for op, v in ops_after if v]})
        assert [v for _, v in ops_before if v], f"the export itself lost {key}: {ops_before}"
        assert ops_after == ops_before, f"{key} per op changed in the round trip: {ops_before} -> {ops_after}"
    observe.record(main_shardings=_main_shardings(after), nr_devices=back.nr_devices)
    assert _main_shardings(before) and _main_shardings(after) == _main_shardings(before), \
        f"@main's shardings changed: {_main_shardings(before)} -> {_main_shardings(after)}"
    assert back.nr_devices == exp.nr_devices == SERIAL_N
    # Both calls run the same module on the same devices: bit for bit.
    for got, want in zip(back.call(x), exp.call(x)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def serialized_export_keeps_each_outputs_memory_kind(observe) -> None:
    """An output placed in pinned_host memory is still placed there after the round trip (the
    export only: running it on CPU fails on 0.7.1 - 0.10.1, see test_output_in_pinned_host_memory)."""
    from jax.sharding import NamedSharding, PartitionSpec as P

    mesh = serial_mesh()
    export = jax_api.export_module()
    kinds = sorted(m.kind for m in jax.devices()[0].addressable_memories())
    observe.record(memory_kinds=kinds)
    if "pinned_host" not in kinds:
        pytest.skip(f"device {jax.devices()[0].platform} exposes no pinned_host memory (has {kinds})")
    s_dev = NamedSharding(mesh, P("i"))
    s_host = NamedSharding(mesh, P("i"), memory_kind="pinned_host")
    # Host, device, host: the memory kind is checked on each output, so a lowering that keeps it on
    # the first output only (or spreads it to the device one) is seen, not only "it appears".
    fj = jax.jit(lambda x: (x * 3.0, x + 1.0, x - 1.0), in_shardings=s_dev, out_shardings=(s_host, s_dev, s_host))
    exp = export.export(fj)(jax.ShapeDtypeStruct(SERIAL_X.shape, SERIAL_X.dtype, sharding=s_dev))
    require("flatbuffers")
    back = export.deserialize(exp.serialize())
    _, before = main_signature_attribute(exp.mlir_module(), "mhlo.memory_kind")
    _, after = main_signature_attribute(back.mlir_module(), "mhlo.memory_kind")
    observe.record(memory_kind_before=before, memory_kind_after=after)
    placed = ["pinned_host" if k == "pinned_host" else "device" for k in before]
    assert placed == ["pinned_host", "device", "pinned_host"], \
        f"the export itself misplaced outputs: memory kinds {before} for outputs placed (pinned_host, device, pinned_host)"
    assert after == before, f"output memory kinds changed in the round trip: {before} -> {after}"
    # Exported.out_shardings_jax: up to 0.7.x it reports "device" for every output even before
    # the round trip (the memory kind lives only in the module); what it says must not change.
    api_before = [s.memory_kind for s in exp.out_shardings_jax(mesh)]
    api_after = [s.memory_kind for s in back.out_shardings_jax(mesh)]
    observe.record(out_shardings_jax_memory_kinds=api_after)
    assert api_after == api_before, f"out_shardings_jax memory kinds changed in the round trip: {api_before} -> {api_after}"


# --- test_defaults.py (jax.export called bare: the default backend) ---

def export_with_its_defaults(observe) -> None:
    """export(f)(x) with no platforms=: targets the default backend and keeps the host placement."""
    export = jax_api.export_module()
    check_defaults(observe, "jax.export.export", export.export, {"platforms": None})
    co = jax_api.compute_on()

    @jax.jit
    def f(x):
        return co("device_host")(lambda x: x * np.float32(3.0))(x) + np.float32(1.0)

    x = np.arange(4, dtype=np.float32)
    exp = export.export(f)(x)
    observe.record(platforms=list(exp.platforms))
    # export names a GPU by its runtime ('cuda' or 'rocm') where default_backend() says 'gpu'
    backend = jax.default_backend()
    names = {"gpu": ("cuda", "rocm")}.get(backend, (backend,))
    assert len(exp.platforms) == 1 and exp.platforms[0] in names, \
        f"export with its defaults targets {exp.platforms}, not the default backend {backend!r}"
    ops = stablehlo_ops_with_attribute(exp.mlir_module(), HOST_KEY)
    observe.record(placed_ops=[f"{op}={v}" for op, v in ops if v])
    # Per op: the multiply is the host function's, the add the caller's (the constant's broadcast
    # may go either way).
    assert {v for op, v in ops if op == "multiply"} == {"host"}, f"the host multiply is not placed on the host: {ops}"
    assert {v for op, v in ops if op == "add"} == {None}, f"the caller's add is placed: {ops}"
    # x * 3 + 1 on small integers is exact in float32: no tolerance.
    observe.close(exp.call(x), x * 3.0 + 1.0, rtol=0, atol=0)


# --- test_eager_vs_aot.py: the stream annotation, run on a GPU ---

def stream_annotation_reaches_the_lowering(observe) -> None:
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


# --- test_stream_lowering.py (the stream annotation per op, on any device) ---

STREAM_KEY = "_xla_stream_annotation"
STREAM_INSIDE = {"sine", "multiply", "add"}  # what the annotated function computes
STREAM_OUTSIDE = {"subtract", "cosine"}  # what the caller computes around it
STREAM_X = np.linspace(-2.0, 2.0, 8, dtype=np.float32)


def stream_program(stream: int):
    inner = jax_api.compute_on()(f"gpu_stream:{stream}")(lambda x: jnp.sin(x) * 2.0 + x)
    return lambda x: inner(jnp.cos(x)) - 1.0


def stream_annotation_marks_exactly_the_ops_inside(stream: int, observe) -> None:
    x = jnp.asarray(STREAM_X)
    jax_api.lower_text_on_stream(lambda x: x * 2.0, stream, x)  # the API probe: api absent before 0.5.1
    ops = stablehlo_ops_with_attribute(jax.jit(stream_program(stream)).lower(x).as_text(), STREAM_KEY)
    observe.record(annotated_ops=[f"{op}={v}" for op, v in ops if op in STREAM_INSIDE | STREAM_OUTSIDE])
    inside = [(op, v) for op, v in ops if op in STREAM_INSIDE]
    outside = [(op, v) for op, v in ops if op in STREAM_OUTSIDE]
    assert {op for op, _ in inside} == STREAM_INSIDE and {op for op, _ in outside} == STREAM_OUTSIDE, f"ops lowered: {ops}"
    wrong = [(op, v) for op, v in inside if v != str(stream)]
    assert not wrong, f"ops of the gpu_stream:{stream} region without {STREAM_KEY} = \"{stream}\": {wrong}"
    leaked = [(op, v) for op, v in outside if v is not None]
    assert not leaked, f"ops outside the region carry {STREAM_KEY}: {leaked}"
    if jax.devices()[0].platform == "cpu":  # a GPU runs it in test_eager_vs_aot.py
        x64 = STREAM_X.astype(np.float64)
        reference = np.sin(np.cos(x64)) * 2.0 + np.cos(x64) - 1.0
        # Six float32 ops on values below 4 in magnitude, each within 2 ulp of its exact result
        # (XLA's CPU sin/cos are within 1-2 ulp; mul/add/sub round once): 6 * 2 ulp at 4.0.
        observe.close(jax.jit(stream_program(stream))(x), reference, rtol=0, atol=12 * float(np.spacing(np.float32(4.0))),
                      name="values")


# --- test_upstream_parity.py: grad / remat through a host function, a host function in shard_map ---



def grad_through_a_host_function(remat: str, observe) -> None:
    """Upstream test_compute_on_grad / test_compute_on_remat: d/dx sum(sin(sin(x))) with the sins on
    the host, under jit (and under jax.checkpoint saving nothing): the forward host call and the
    derivative's stay host calls, and the gradient is right."""
    co = jax_api.compute_on()
    g = co("device_host")(jax.jit(lambda x: jnp.sin(jnp.sin(x))))

    def f(x):
        return jnp.sum(g(x))

    if remat == "remat":
        f = jax.checkpoint(f, policy=jax.checkpoint_policies.nothing_saveable)
    df = jax.jit(jax.grad(f))
    x_host = np.linspace(-2.0, 2.0, 8, dtype=np.float32)
    x64 = x_host.astype(np.float64)
    observe.record(grad=assert_within_bound(df(jnp.asarray(x_host)), np.cos(np.sin(x64)) * np.cos(x64),
                                            _grad_bound(x64), why="sin/cos within OP_ULPS, propagated; one multiply"))
    hlo = df.lower(jnp.asarray(x_host)).as_text(dialect="hlo")
    calls = outermost_host_calls(hlo)  # a host call inside another (the inner jit's, jax 0.11+) is not a third
    observe.record(host_calls=len(calls))
    assert len(calls) == 2, f"expected 2 host calls in the grad's HLO (forward, derivative), found {len(calls)}"


def host_function_inside_shard_map(observe) -> None:
    """Upstream test_compute_offload_inside_shmap: x*3 -> host x*2 -> x*4 per shard of a 2x2 mesh."""
    if len(jax.devices()) < 4:
        pytest.skip(f"needs 4 devices, have {len(jax.devices())}")
    co = jax_api.compute_on()
    mesh = jax_api.make_mesh_nd((2, 2), ("x", "y"))
    spec = P("x", "y")
    g = co("device_host")(jax.jit(lambda x: x * 2))
    sm = jax.jit(jax_api.shard_map(lambda x: g(x * 3) * 4, mesh=mesh, in_specs=(spec,), out_specs=spec))
    x_host = np.arange(16, dtype=np.int32).reshape(8, 2)
    x = jax.device_put(x_host, NamedSharding(mesh, spec))
    observe.close(sm(x), x_host * 24, rtol=0, atol=0)
    lowered = sm.lower(x).as_text()
    observe.record(host_attr_in_lowered=has_frontend_attribute(lowered, HOST_KEY, "host"))
    assert has_frontend_attribute(lowered, HOST_KEY, "host"), "the host placement inside shard_map was dropped"


# --- test_properties.py: generated host programs, eager vs AOT vs NumPy, host IR ---

# name -> (jax op, NumPy op, valid for integers)
HOST_OPS = {
    "add": (lambda x: x + 3, lambda x: x + 3, True),
    "mul": (lambda x: x * 2, lambda x: x * 2, True),
    "neg": (lambda x: -x, lambda x: -x, True),
    "abs": (jnp.abs, np.abs, True),
    "square": (lambda x: x * x, lambda x: x * x, True),
    "sin": (jnp.sin, np.sin, False),
    "tanh": (jnp.tanh, np.tanh, False),
    "sum_last": (lambda x: jnp.sum(x, axis=-1, keepdims=True), lambda x: np.sum(x, axis=-1, keepdims=True), True),
    "max_first": (lambda x: jnp.max(x, axis=0, keepdims=True), lambda x: np.max(x, axis=0, keepdims=True), True),
}
VALUE_CHANGING = {"add", "mul", "square", "sin", "tanh"}
HOST_DTYPES = {"float32": (np.float32, 2e-5), "int32": (np.int32, 0), "float16": (np.float16, 2e-2)}  # (dtype, tol): float32 2e-5 = 168 ulps at 1, a chain of up to 4 ops and a reduction vs float64; float16 2e-2 = 20 ulps


def host_reference(ops, context: str, x: np.ndarray) -> np.ndarray:
    """The chain in NumPy, in the input's dtype (integers wrap as XLA's do), then the context's epilogue."""
    y = x.astype(np.float64) if x.dtype.kind == "f" else x
    for name in ops:
        y = HOST_OPS[name][1](y)
    if context != "bare":
        y = np.maximum(y, 0) * 2 + 1
    return y.astype(x.dtype) if x.dtype.kind == "i" else y


def host_input(shape, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.RandomState(seed)
    dt = HOST_DTYPES[dtype][0]
    if dt == np.int32:
        return rng.randint(-20, 20, size=shape).astype(dt)
    return rng.uniform(-2.0, 2.0, size=shape).astype(dt)


def epilogue(y):
    """What the caller does with the host result on the device. Not a multiply first: XLA folds a
    host `x * c` into a caller's `* c` and no host computation is left (frozen separately)."""
    return jnp.maximum(y, 0) * 2 + 1


def host_program_in_context(order: str, ops, context: str):
    """The host function (in the given decorator order) called bare, under a jit, or an inlined jit."""
    co = jax_api.compute_on()

    def body(x):
        for name in ops:
            x = HOST_OPS[name][0](x)
        return x

    host = co("device_host")(jax.jit(body)) if order == "compute_on_outside_jit" else jax.jit(co("device_host")(body))
    if context == "bare":
        return host
    if context == "nested":
        return jax.jit(lambda x: epilogue(host(x)))
    inner = functools.partial(jax.jit, inline=True)(lambda x: epilogue(host(x)))
    return jax.jit(lambda x: inner(x))


def host_program_eager_equals_aot(order: str, ops, shape, dtype: str, context: str, seed: int, observe) -> None:
    """Eager vs NumPy, AOT (jax.jit(f).lower(x).compile()) vs eager bit for bit, and the host
    placement in both the lowered and the compiled module."""
    f = host_program_in_context(order, ops, context)
    x_host = host_input(shape, dtype, seed)
    x = jnp.asarray(x_host)
    tol = HOST_DTYPES[dtype][1]
    ref = host_reference(ops, context, x_host)
    scale = max(1.0, float(np.max(np.abs(ref.astype(np.float64)))))
    eager = f(x)
    observe.close(eager, ref, rtol=tol, atol=tol * scale, name="eager")

    lowered = jax.jit(f).lower(x)
    lowered_text = lowered.as_text()
    compiled = lowered.compile()
    compiled_text = compiled.as_text()
    aot = compiled(x)
    observe.record(program={"ops": list(ops), "shape": list(shape), "dtype": dtype, "context": context},
                   lowered_host_attr=frontend_attribute_values(lowered_text, HOST_KEY)[:8],
                   compiled_host_attr=frontend_attribute_values(compiled_text, HOST_KEY)[:8],
                   compiled_host_placement=compiled_host_placement(compiled_text)[:8])
    assert has_frontend_attribute(lowered_text, HOST_KEY, "host"), \
        f"jax.jit(f).lower(x) lowered without {HOST_KEY} = \"host\" ({order}, {context})"
    assert compiled_host_placement(compiled_text), \
        f"the compiled module lost {HOST_KEY}=\"host\" ({order}, {context})"
    assert aot.dtype == eager.dtype and aot.shape == eager.shape, (aot.dtype, aot.shape, eager.dtype, eager.shape)
    observe.close(aot, eager, rtol=0, atol=0, name="aot_vs_eager")


# the property's pinned examples (the tests run both): upstream's reduction case, and its 2-D case
HOST_PROGRAM_EXAMPLE = {"ops": ("sum_last", "square"), "shape": (3, 4), "dtype": "float32", "context": "nested", "seed": 1}
HOST_PROGRAM_2D_EXAMPLE = {"ops": ("mul",), "shape": (61, 163), "dtype": "float32", "context": "bare", "seed": 2}


# --- test_space.py: the compute_on API as a space (compute types, host code forms, nestings, modes) ---
#
# The compute types come from jax itself: the ones its refusal of an unknown type lists
# (`accepted_compute_types`), `#` standing for a stream number. A program is one host-code form
# (plain, cond, switch, scan, while_loop, fori_loop, vmap, custom_jvp, custom_vjp, remat, grad)
# placed with one compute type in one nesting, followed by the caller's device epilogue; its float64
# NumPy value is written out per form.

STREAM_KEY_ = "_xla_stream_annotation"
UNKNOWN_COMPUTE_TYPE = "no_such_compute_type"
# the attribute each compute type lowers to: (key, accepted values). tpu_sparsecore's value is XLA's
# own name for the SparseCore, renamed from "sparse" (0.4.38 - 0.9) to "sparseoffload" (0.10): both
# place the region on the SparseCore, so both are right; the value seen is recorded.
COMPUTE_TYPE_ATTRIBUTES = {"device_host": (HOST_KEY, ("host",)), "device": (HOST_KEY, ("dense",)),
                           "tpu_sparsecore": (HOST_KEY, ("sparse", "sparseoffload"))}


def accepted_compute_types() -> tuple[list[str], str]:
    """(the compute types jax lists as supported, its refusal message) read from the refusal itself."""
    co = jax_api.compute_on()
    try:  # pytest.raises written out: a standalone script imports no pytest
        jax.jit(co(UNKNOWN_COMPUTE_TYPE)(jnp.sin)).lower(jnp.zeros(2, jnp.float32))
    except ValueError as exc:
        message = str(exc)
    else:
        raise AssertionError(f"DID NOT RAISE <class 'ValueError'> for {UNKNOWN_COMPUTE_TYPE!r}")
    assert "Invalid compute type" in message, message
    listed = re.findall(r"`([^`]+)`", message.split("supported values are", 1)[-1])
    assert listed, f"the refusal lists no supported values: {message}"
    return listed, message


def compute_type_attribute(compute_type: str) -> tuple[str, tuple[str, ...]]:
    """The frontend attribute a compute type lowers to: (key, accepted values)."""
    if compute_type.startswith("gpu_stream:"):
        return STREAM_KEY_, (compute_type.split(":", 1)[1],)
    return COMPUTE_TYPE_ATTRIBUTES[compute_type]


def _sin_with_rule(kind: str):
    """sin with a hand-written derivative rule (custom_jvp or custom_vjp): the rule gives cos."""
    if kind == "custom_jvp":
        f = jax.custom_jvp(jnp.sin)
        f.defjvp(lambda primals, tangents: (jnp.sin(primals[0]), jnp.cos(primals[0]) * tangents[0]))
        return f
    f = jax.custom_vjp(jnp.sin)
    f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (jnp.cos(x) * g,))  # the residual is x
    return f


def _value_and_own_grad(f):
    return lambda v: jnp.concatenate([f(v), jax.grad(lambda w: jnp.sum(f(w)))(v)])


def host_form(form: str, branch: int):
    """The host code of one form, as jax (x is 1-D of even length)."""
    if form == "plain":
        return lambda v: jnp.sin(v) * 2.0
    if form == "cond":
        return lambda v: jax.lax.cond(jnp.sum(v) > 0, jnp.sin, jnp.cos, v)
    if form == "switch":
        return lambda v: jax.lax.switch(branch, [jnp.sin, jnp.cos, lambda w: w * w], v)
    if form == "scan":
        return lambda v: jax.lax.scan(lambda c, e: (c + jnp.sin(e), c + jnp.sin(e)), jnp.float32(0), v)[1]
    if form == "while_loop":
        return lambda v: jax.lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, jnp.sin(s[1]) + 0.5), (0, v))[1]
    if form == "fori_loop":
        return lambda v: jax.lax.fori_loop(0, 3, lambda i, w: w * 0.5 + jnp.cos(w), v)
    if form == "vmap":
        return lambda v: jax.vmap(lambda r: jnp.sin(r) * jnp.sum(r))(v.reshape(-1, 2)).reshape(-1)
    if form in ("custom_jvp", "custom_vjp"):
        return _value_and_own_grad(_sin_with_rule(form))
    if form == "remat":
        return _value_and_own_grad(jax.checkpoint(lambda w: jnp.sin(jnp.sin(w))))
    if form == "grad":
        return jax.grad(lambda w: jnp.sum(jnp.sin(w) ** 2))
    raise AssertionError(f"no host form {form!r}")


def host_form_reference(form: str, branch: int, x: np.ndarray) -> np.ndarray:
    """The same in float64 NumPy, then the caller's epilogue (maximum(y, 0) * 2 + 1)."""
    v = x.astype(np.float64)
    if form == "plain":
        y = np.sin(v) * 2.0
    elif form == "cond":
        y = np.sin(v) if v.sum() > 0 else np.cos(v)
    elif form == "switch":
        y = [np.sin, np.cos, lambda w: w * w][branch](v)
    elif form == "scan":
        y = np.cumsum(np.sin(v))
    elif form == "while_loop":
        y = v
        for _ in range(3):
            y = np.sin(y) + 0.5
    elif form == "fori_loop":
        y = v
        for _ in range(3):
            y = y * 0.5 + np.cos(y)
    elif form == "vmap":
        pairs = v.reshape(-1, 2)
        y = (np.sin(pairs) * pairs.sum(axis=1, keepdims=True)).reshape(-1)
    elif form in ("custom_jvp", "custom_vjp"):
        y = np.concatenate([np.sin(v), np.cos(v)])
    elif form == "remat":
        y = np.concatenate([np.sin(np.sin(v)), np.cos(np.sin(v)) * np.cos(v)])
    elif form == "grad":
        y = 2 * np.sin(v) * np.cos(v)
    else:
        raise AssertionError(f"no host form {form!r}")
    return np.maximum(y, 0) * 2 + 1


HOST_FORMS = ("plain", "cond", "switch", "scan", "while_loop", "fori_loop", "vmap", "custom_jvp", "custom_vjp",
              "remat", "grad")
NESTINGS = ("jit_outside", "compute_on_outside", "same_type_nested", "under_outer_jit")
# Roundings per form, in float32 at values within [-8, 8] (|x| <= 2, sums of <= 8 sines): sin/cos
# count 2 (within 1 ulp = 2u, OP_ULPS), a multiply or add 1; scan sums up to 8 terms (gamma_8);
# while/fori run 3 rounds of 2 ops; the grad forms add the derivative's ops; the epilogue's * 2 + 1
# adds 2. Errors do not grow through these ops by more than 2x (|d sin|, |d cos| <= 1; w * w at
# |w| <= 1 doubles), so gamma_(2k) of the largest |value| bounds each element (normwise).
FORM_ROUNDINGS = {"plain": 3, "cond": 2, "switch": 2, "scan": 18, "while_loop": 9, "fori_loop": 12, "vmap": 5,
                  "custom_jvp": 2, "custom_vjp": 2, "remat": 6, "grad": 6}


def placed_program(compute_type: str, form: str, nesting: str, branch: int):
    """epilogue(host code placed with compute_type) in one nesting of compute_on and jit."""
    co = jax_api.compute_on()
    region = host_form(form, branch)
    if nesting == "jit_outside":
        placed = jax.jit(co(compute_type)(region))
    elif nesting == "compute_on_outside":
        placed = co(compute_type)(jax.jit(region))
    elif nesting == "same_type_nested":
        placed = co(compute_type)(lambda v: co(compute_type)(region)(v))
    else:  # under_outer_jit: the placed region is traced inside the caller's jit, device code before it
        placed = co(compute_type)(region)
        return jax.jit(lambda v: epilogue_plus_one(placed(v * 1.0 + 0.0)))
    return lambda v: epilogue_plus_one(placed(v))


def epilogue_plus_one(y):
    """The caller's device code after the region (no multiply first: see `epilogue`)."""
    return jnp.maximum(y, 0) * 2 + 1


def space_input(n: int, seed: int) -> np.ndarray:
    return np.random.RandomState(seed).uniform(-2.0, 2.0, size=n).astype(np.float32)


def _placement(text: str, compute_type: str, where: str, observe) -> None:
    """The region's ops carry the compute type's attribute, and the caller's maximum does not. In a
    compiled module a host region may show as a call on the host thread instead (the GPU compiler's
    form: harness.incell.ir.compiled_host_placement), which counts as the host attribute."""
    key, values = compute_type_attribute(compute_type)
    seen = sorted(set(frontend_attribute_values(text, key)))
    if where == "compiled" and not seen and "host" in values and compiled_host_placement(text):
        seen = ["host"]
        observe.record(compiled_host_placement=compiled_host_placement(text)[:8])
    observe.record(**{f"{where}_attribute": seen})
    assert seen and set(seen) <= set(values), f"{where}: {key} values {seen}, expected one of {list(values)} ({compute_type})"
    misplaced = [op for op, value in stablehlo_ops_with_attribute(text, key) if op == "maximum" and value is not None]
    assert not misplaced, f"{where}: the caller's maximum carries {key}: {misplaced}"


# The transform of jax 0.11.1+ refuses any nesting, the same compute type too (upstream's
# test_nested_no_op_compute), where compute_on(compute_type) ran the inner region in the outer.
def _nesting_refused(nesting: str, f, x, observe) -> bool:
    """True where the program nests compute_on in itself and this jax must refuse it (checked)."""
    if nesting != "same_type_nested" or jax_api.compute_on_nesting_error() is not ValueError:
        return False
    for call in (f, jax.jit(f)):  # eagerly and under jit; try, not pytest.raises: a script has no pytest
        try:
            call(x)
        except ValueError as exc:
            assert re.search("Nesting `compute_on`", str(exc)), str(exc)
        else:
            raise AssertionError("same-type nesting ran; the compute_on transform refuses it")
    observe.record(refused="same compute type nested")
    return True


def placed_program_eager_jit_aot(compute_type: str, form: str, nesting: str, n: int, branch: int, seed: int,
                                 observe) -> None:
    """Eager vs float64 NumPy; jit and AOT (lower, compile, call) equal to eager bit for bit; the
    compute type's attribute in the lowered and the compiled module, off the caller's ops."""
    f = placed_program(compute_type, form, nesting, branch)
    x_host = space_input(n, seed)
    x = jnp.asarray(x_host)
    if _nesting_refused(nesting, f, x, observe):
        return
    ref = host_form_reference(form, branch, x_host)
    bound = gamma(2 * (FORM_ROUNDINGS[form] + 2), "float32") * max(1.0, float(np.abs(ref).max()))
    eager = f(x)
    observe.record(program={"compute_type": compute_type, "form": form, "nesting": nesting, "n": n},
                   eager=assert_within_bound(eager, ref, bound, why=f"{form}: normwise gamma bound (FORM_ROUNDINGS)"))
    jitted = jax.jit(f)(x)
    lowered = jax.jit(f).lower(x)
    lowered_text = lowered.as_text()
    compiled = lowered.compile()
    aot = compiled(x)
    _placement(lowered_text, compute_type, "lowered", observe)
    _placement(compiled.as_text(), compute_type, "compiled", observe)
    observe.close(jitted, eager, rtol=0, atol=0, name="jit_vs_eager")  # one program, one backend: bit for bit
    observe.close(aot, eager, rtol=0, atol=0, name="aot_vs_eager")


def placed_program_exported(how: str, compute_type: str, form: str, nesting: str, n: int, branch: int, seed: int,
                            observe) -> None:
    """jax.export of the placed program (and its serialize/deserialize round trip): the call equals
    jit bit for bit and the exported module keeps the compute type's attribute off the caller's ops."""
    export = jax_api.export_module()
    if how == "serialized":
        require("flatbuffers")  # jax's serializer needs it and jax leaves it optional
    f = placed_program(compute_type, form, nesting, branch)
    x = jnp.asarray(space_input(n, seed))
    if _nesting_refused(nesting, f, x, observe):
        return
    exp = export.export(jax.jit(f))(x)
    if how == "serialized":
        exp = export.deserialize(exp.serialize())
    observe.record(program={"compute_type": compute_type, "form": form, "nesting": nesting, "n": n}, how=how)
    _placement(exp.mlir_module(), compute_type, "exported", observe)
    observe.close(exp.call(x), jax.jit(f)(x), rtol=0, atol=0, name="export_vs_jit")  # the same module compiled: bit for bit


def compute_types_accepted_and_refused(observe) -> None:
    """Every compute type jax lists is accepted and lowers to its attribute; names beside them
    (case, spelling, empty) are refused with the listing message."""
    listed, message = accepted_compute_types()
    observe.record(listed=listed, refusal=message[:300])
    co = jax_api.compute_on()
    x = jnp.asarray(STREAM_X)
    accepted = []
    for entry in listed:
        for compute_type in ([entry.replace("#", "0"), entry.replace("#", "3")] if "#" in entry else [entry]):
            text = jax.jit(co(compute_type)(lambda v: jnp.sin(v) * 2.0)).lower(x).as_text()
            key, values = compute_type_attribute(compute_type)
            assert set(frontend_attribute_values(text, key)) & set(values), f"{compute_type}: no {key} in {values}"
            accepted.append(compute_type)
    observe.record(accepted=accepted)
    near = ["host", "DEVICE_HOST", "", "device-host", "gpu_stream", "tpu"] + [e.upper() for e in listed]
    for name in near:
        try:
            jax.jit(co(name)(jnp.sin)).lower(x)
        except ValueError as exc:
            message = str(exc)
        else:
            raise AssertionError(f"DID NOT RAISE <class 'ValueError'> for {name!r}")
        assert "Invalid compute type" in message and all(f"`{e}`" in message for e in listed), \
            f"{name!r} refused with another message: {message}"


def stream_number_required(observe) -> None:
    """jax lists the stream form as `gpu_stream:#`: a stream that is not a number must be refused
    (XLA parses the annotation as an integer stream id)."""
    listed, _ = accepted_compute_types()
    if "gpu_stream:#" not in listed:
        jax_api.api_absent(jax_api.COMPUTE_ON_STREAM, f"jax {jax.__version__}")
    co = jax_api.compute_on()
    try:
        text = jax.jit(co("gpu_stream:x")(jnp.sin)).lower(jnp.asarray(STREAM_X)).as_text()
    except ValueError as exc:
        observe.record(refusal=str(exc)[:200])
        return
    raise AssertionError(f"gpu_stream:x accepted: lowered with {STREAM_KEY_} = "
                         f"{frontend_attribute_values(text, STREAM_KEY_)[:1]}")


SPACE_EXAMPLE = {"compute_type": "device_host", "form": "scan", "nesting": "under_outer_jit", "n": 6, "branch": 0,
                 "seed": 4}


# --- test_space.py: memory kinds, read from the device itself ---

MEMORY_X = np.arange(16, dtype=np.float32) / 4.0  # quarters: x * 2 + 1 is exact in float32


def device_memory_kinds() -> list[str]:
    """The memory kinds jax's first device exposes (collected per cell: the ids are these)."""
    return sorted(m.kind for m in jax.devices()[0].addressable_memories())


def _kind_sharding(kind: str):
    if kind not in device_memory_kinds():
        pytest.skip(f"the device has no {kind} memory (it has {device_memory_kinds()})")
    return jax.sharding.SingleDeviceSharding(jax.devices()[0], memory_kind=kind)


MEMORY_KINDS = ["device", "pinned_host", "unpinned_host"]  # the memory cases' parameters (test_space.KINDS)


def memory_kinds_are_listed(observe) -> None:
    """Every memory kind the device exposes is one the memory cases are parametrized over."""
    listed = MEMORY_KINDS
    kinds = device_memory_kinds()
    observe.record(kinds=kinds, default=jax.devices()[0].default_memory().kind)
    assert set(kinds) <= set(listed), f"memory kinds not generated: {sorted(set(kinds) - set(listed))}"


def device_put_to_memory_kind(kind: str, observe) -> None:
    """device_put to the kind lands there with the same values, and comes back unchanged."""
    y = jax.device_put(jnp.asarray(MEMORY_X), _kind_sharding(kind))
    observe.record(memory_kind=y.sharding.memory_kind, default=jax.devices()[0].default_memory().kind)
    assert y.sharding.memory_kind == kind, f"device_put to {kind} gave {y.sharding.memory_kind}"
    observe.close(y, MEMORY_X, rtol=0, atol=0, name="placed")  # a copy: bit for bit
    back = jax.device_put(y, _kind_sharding(jax.devices()[0].default_memory().kind))
    observe.close(back, MEMORY_X, rtol=0, atol=0, name="back")


def device_put_with_its_defaults(observe) -> None:
    """device_put called bare (every memory case passes a sharding): device=None leaves the array
    uncommitted in the default memory kind, donate=False leaves the source readable."""
    check_defaults(observe, "jax.device_put", jax.device_put, {"device": None, "donate": False})
    src = jnp.asarray(MEMORY_X)
    y = jax.device_put(src)
    observe.record(committed=y.committed, memory_kind=y.sharding.memory_kind)
    assert not y.committed, "device_put with no device committed the array to a device"
    assert y.sharding.memory_kind == jax.devices()[0].default_memory().kind, y.sharding.memory_kind
    observe.close(y, MEMORY_X, rtol=0, atol=0, name="put")  # a copy: bit for bit
    observe.close(src, MEMORY_X, rtol=0, atol=0, name="source")  # not donated: still there


def jit_between_memory_kinds(in_kind: str, out_kind: str, observe) -> None:
    """jit with in_shardings / out_shardings in the given kinds: the result is in out_kind with
    f's exact values, and the lowered @main says out_kind for it where it is not the default."""
    f = jax.jit(lambda v: v * 2.0 + 1.0, in_shardings=_kind_sharding(in_kind), out_shardings=_kind_sharding(out_kind))
    x = jax.device_put(jnp.asarray(MEMORY_X), _kind_sharding(in_kind))
    text = f.lower(x).as_text()
    _args, results = main_signature_attribute(text, "mhlo.memory_kind")
    observe.record(lowered_result_kinds=results)
    y = f(x)
    observe.record(memory_kind=y.sharding.memory_kind)
    observe.close(y, MEMORY_X * 2.0 + 1.0, rtol=0, atol=0, name="value")  # quarters doubled plus one: exact
    assert y.sharding.memory_kind == out_kind, f"jit out_shardings={out_kind} gave {y.sharding.memory_kind}"


CORES = {
    "test_eager_vs_aot.py::test_eager_vs_aot": eager_vs_aot,
    "test_eager_vs_aot.py::test_output_in_pinned_host_memory": output_in_pinned_host_memory,
    "test_properties.py::test_host_multiply_next_to_a_device_multiply_keeps_the_host_placement":
        host_multiply_next_to_a_device_multiply,
    "test_upstream_parity.py::test_nesting_different_compute_types_is_refused": nesting_different_compute_types_is_refused,
    "test_upstream_parity.py::test_exported_host_function_keeps_the_placement": exported_host_function_keeps_the_placement,
    "test_upstream_parity.py::test_serialized_host_function_keeps_the_placement":
        serialized_host_function_keeps_the_placement,
    "test_serialization.py::test_serialized_export_keeps_op_attributes_shardings_and_values":
        serialized_export_keeps_op_attributes_shardings_and_values,
    "test_serialization.py::test_serialized_export_keeps_each_outputs_memory_kind":
        serialized_export_keeps_each_outputs_memory_kind,
    "test_defaults.py::test_export_with_its_defaults_targets_the_default_backend_and_keeps_the_host_placement":
        export_with_its_defaults,
    "test_eager_vs_aot.py::test_stream_annotation_reaches_the_lowering": stream_annotation_reaches_the_lowering,
    "test_stream_lowering.py::test_stream_annotation_marks_exactly_the_ops_inside":
        stream_annotation_marks_exactly_the_ops_inside,
    "test_upstream_parity.py::test_grad_through_a_host_function_keeps_both_host_calls": grad_through_a_host_function,
    "test_upstream_parity.py::test_host_function_inside_shard_map": host_function_inside_shard_map,
    "test_properties.py::test_host_program_eager_equals_aot_and_keeps_the_host_placement":
        (host_program_eager_equals_aot, HOST_PROGRAM_EXAMPLE),
    "test_space.py::test_generated_placed_programs_agree_eager_jit_aot":
        (placed_program_eager_jit_aot, SPACE_EXAMPLE),
    "test_space.py::test_generated_placed_programs_survive_export": (placed_program_exported, SPACE_EXAMPLE),
    "test_space.py::test_every_listed_compute_type_is_accepted_and_its_neighbours_refused":
        compute_types_accepted_and_refused,
    "test_space.py::test_a_stream_that_is_not_a_number_is_refused": stream_number_required,
    "test_space.py::test_device_put_to_each_memory_kind": device_put_to_memory_kind,
    "test_space.py::test_device_put_with_its_defaults_leaves_the_array_uncommitted_and_the_source_alive":
        device_put_with_its_defaults,
    "test_space.py::test_every_memory_kind_the_device_has_is_generated": memory_kinds_are_listed,
    "test_space.py::test_jit_between_memory_kinds": jit_between_memory_kinds,
}
