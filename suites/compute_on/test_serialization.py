"""What holds for an exported module must hold after jax.export's serialize / deserialize.

The upstream-parity round trip checks one fact (the host attribute is still somewhere). Here the
in-memory export and the one read back are compared op by op: the compute-type and stream
attributes on each op, each argument's and result's sharding and memory kind on @main, the device
count, and the values of calling both. Serialization needs flatbuffers (jax leaves it optional):
the default matrix installs it in jax072-cpu and jax0102-cpu.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from harness.incell.compat import jax_api, require
from harness.incell.ir import main_signature_attribute, stablehlo_ops_with_attribute

N = 4
X = np.linspace(-1.0, 1.0, 8, dtype=np.float32)


@pytest.fixture(scope="module")
def mesh():
    if len(jax.devices()) < N:
        pytest.skip(f"needs {N} devices, have {len(jax.devices())}")
    return Mesh(np.array(jax.devices()[:N]), ("i",))


def _round_trip(export, exp):
    require("flatbuffers")
    return export.deserialize(exp.serialize())


def test_serialized_export_keeps_op_attributes_shardings_and_values(mesh, observe):
    export = jax_api.export_module()
    co = jax_api.compute_on()
    jax_api.lower_text_on_stream(lambda x: x, 2, jnp.asarray(X))  # api probe: gpu_stream:N from 0.5.1
    s_in = NamedSharding(mesh, P("i"))

    def f(x):
        h = co("device_host")(lambda x: x * np.float32(3.0))(x)
        s = co("gpu_stream:2")(lambda x: jnp.sin(x) * np.float32(2.0))(x)
        return h + s, jnp.sum(s)

    fj = jax.jit(f, in_shardings=s_in, out_shardings=(s_in, NamedSharding(mesh, P())))
    x = jax.device_put(X, s_in)
    exp = export.export(fj)(x)
    back = _round_trip(export, exp)
    before, after = exp.mlir_module(), back.mlir_module()
    for key in ("_xla_compute_type", "_xla_stream_annotation"):
        ops_before = stablehlo_ops_with_attribute(before, key)
        ops_after = stablehlo_ops_with_attribute(after, key)
        observe.record(**{key: [f"{op}={v}" for op, v in ops_after if v]})
        assert [v for _, v in ops_before if v], f"the export itself lost {key}: {ops_before}"
        assert ops_after == ops_before, f"{key} per op changed in the round trip: {ops_before} -> {ops_after}"
    m_before = re.search(r"func\.func public @main.*", before).group(0)
    m_after = re.search(r"func\.func public @main.*", after).group(0)
    shardings = lambda sig: re.findall(r"(?:sdy|mhlo)\.sharding = (#sdy\.sharding<[^>]*>|\"[^\"]*\")", sig)  # noqa: E731
    observe.record(main_shardings=shardings(m_after), nr_devices=back.nr_devices)
    assert shardings(m_before) and shardings(m_after) == shardings(m_before), \
        f"@main's shardings changed: {shardings(m_before)} -> {shardings(m_after)}"
    assert back.nr_devices == exp.nr_devices == N
    # Both calls run the same module on the same devices: bit for bit.
    for got, want in zip(back.call(x), exp.call(x)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_serialized_export_keeps_each_outputs_memory_kind(mesh, observe):
    """An output placed in pinned_host memory is still placed there after the round trip (the
    export only: running it on CPU fails on 0.7.1 - 0.10.1, see test_output_in_pinned_host_memory)."""
    export = jax_api.export_module()
    kinds = sorted(m.kind for m in jax.devices()[0].addressable_memories())
    observe.record(memory_kinds=kinds)
    if "pinned_host" not in kinds:
        pytest.skip(f"device {jax.devices()[0].platform} exposes no pinned_host memory (has {kinds})")
    s_dev = NamedSharding(mesh, P("i"))
    s_host = NamedSharding(mesh, P("i"), memory_kind="pinned_host")
    fj = jax.jit(lambda x: (x * 3.0, x + 1.0), in_shardings=s_dev, out_shardings=(s_host, s_dev))
    exp = export.export(fj)(jax.ShapeDtypeStruct(X.shape, X.dtype, sharding=s_dev))
    back = _round_trip(export, exp)
    _, before = main_signature_attribute(exp.mlir_module(), "mhlo.memory_kind")
    _, after = main_signature_attribute(back.mlir_module(), "mhlo.memory_kind")
    observe.record(memory_kind_before=before, memory_kind_after=after)
    assert before[0] == "pinned_host", f"the export itself lost the pinned_host output: {before}"
    assert after == before, f"output memory kinds changed in the round trip: {before} -> {after}"
    # Exported.out_shardings_jax: up to 0.7.x it reports "device" for every output even before
    # the round trip (the memory kind lives only in the module); what it says must not change.
    api_before = [s.memory_kind for s in exp.out_shardings_jax(mesh)]
    api_after = [s.memory_kind for s in back.out_shardings_jax(mesh)]
    observe.record(out_shardings_jax_memory_kinds=api_after)
    assert api_after == api_before, f"out_shardings_jax memory kinds changed in the round trip: {api_before} -> {api_after}"
