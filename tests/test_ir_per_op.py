"""Per-op IR facts: which op carries which attribute, and @main's per-argument / per-result ones."""

from __future__ import annotations

import pytest

from harness.incell.ir import main_signature_attribute, stablehlo_ops_with_attribute

TEXT = '''module @jit_f {
  func.func public @main(%arg0: tensor<8xf32> {mhlo.memory_kind = "device", sdy.sharding = #sdy.sharding<@mesh, [{"i"}]>} loc("x"), %arg1: tensor<f32>) -> (tensor<8xf32> {jax.result_info = "result[0]", mhlo.memory_kind = "pinned_host"}, tensor<f32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.sine %arg0 {mhlo.frontend_attributes = {_xla_stream_annotation = "2", inlineable = "false"}} : tensor<8xf32>
    %1 = stablehlo.multiply %0, %0 : tensor<8xf32>
    %2 = "stablehlo.add"(%1, %1) {mhlo.frontend_attributes = {_xla_compute_type = "host"}} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    return %2, %arg1 : tensor<8xf32>, tensor<f32>
  }
}
'''


def test_each_op_with_its_attribute_value_or_none_in_order():
    assert stablehlo_ops_with_attribute(TEXT, "_xla_stream_annotation") == [("sine", "2"), ("multiply", None), ("add", None)]
    assert stablehlo_ops_with_attribute(TEXT, "_xla_compute_type") == [("sine", None), ("multiply", None), ("add", "host")]


def test_main_attributes_per_argument_and_result():
    assert main_signature_attribute(TEXT, "mhlo.memory_kind") == (["device", None], ["pinned_host", None])


def test_a_module_without_a_public_main_is_an_error():
    with pytest.raises(AssertionError, match="no public @main"):
        main_signature_attribute("module {}", "mhlo.memory_kind")
