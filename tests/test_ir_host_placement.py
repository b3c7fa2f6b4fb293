"""The IR readers the compute_on family asserts with, on text shaped as each compiler writes it (the
GPU forms copied from jax 0.11.2 on an H100; the CPU form from the cpu cells)."""

from __future__ import annotations

from harness.incell.ir import compiled_host_placement, outermost_host_calls

GPU_COMPILED = '''
%called_computation (param_0: f32[4]) -> f32[4] {
  %param_0 = f32[4]{0} parameter(0)
  ROOT %mul.2.0 = f32[4]{0} multiply(%param_0, %broadcast.1.0)
}, execution_thread="host"

ENTRY %main.2 (x.1: f32[4]) -> f32[4] {
  %x.1 = f32[4]{0} parameter(0), metadata={op_name="x"}
  %host-call.cloned.1.call-start.1 = ((f32[4]{0}), f32[4]{0}, u32[]) custom-call-start(%x.1), async_execution_thread="host", custom_call_target="HostExecute", called_computations={%called_computation}
  %host-call.cloned.1.call-done.1 = f32[4]{0} custom-call-done(%host-call.cloned.1.call-start.1)
  ROOT %loop_add_fusion = f32[4]{0} fusion(%host-call.cloned.1.call-done.1), kind=kLoop, calls=%fused_add
}
'''
GPU_MERGED = '''
ENTRY %main.2 (x.1: f32[4]) -> f32[4] {
  %x.1 = f32[4]{0} parameter(0), metadata={op_name="x"}
  ROOT %loop_multiply_add_fusion = f32[4]{0} fusion(%x.1), kind=kLoop, calls=%fused_add
}
'''
CPU_COMPILED = 'ENTRY %main {\n  %call = f32[4]{0} call(%x), to_apply=%host, frontend_attributes={_xla_compute_type="host"}\n}\n'

# jax 0.11.2's grad of compute_on(jax.jit(sin . sin)): the compute_on calls and the jit calls inside them
GRAD_WITH_INNER_JIT = '''
_lambda_.1 {
  Arg_0.2 = f32[8]{0} parameter(0)
}

compute_on.2 {
  Arg_0.3 = f32[8]{0} parameter(0)
  jit__lambda__.3 = (f32[8]{0}, f32[8]{0}) call(Arg_0.3), to_apply=_lambda_.1, frontend_attributes={_xla_compute_type="host"}
}

_lambda__1.3 {
  Arg_0.5 = f32[8]{0} parameter(0)
}

compute_on_0.4 {
  Arg_0.7 = f32[8]{0} parameter(0)
  ROOT jit__lambda__.7 = f32[8]{0} call(Arg_0.7, Arg_1.3, Arg_2.3), to_apply=_lambda__1.3, frontend_attributes={_xla_compute_type="host"}
}

ENTRY main.13 {
  x.1 = f32[8]{0} parameter(0)
  compute_on.7 = (f32[8]{0}, f32[8]{0}) call(x.1), to_apply=compute_on.2, frontend_attributes={_xla_compute_type="host"}
  compute_on.12 = f32[8]{0} call(compute_on.10, compute_on.11, broadcast.1), to_apply=compute_on_0.4, frontend_attributes={_xla_compute_type="host"}
}
'''
# the earlier form: the jit calls are the host calls, nothing encloses them
GRAD_OLD = '''
ENTRY main.9 {
  x.1 = f32[8]{0} parameter(0)
  a = (f32[8]{0}, f32[8]{0}) call(x.1), to_apply=_lambda_.1, frontend_attributes={_xla_compute_type="host"}
  b = f32[8]{0} call(x.1), to_apply=_lambda__1.3, frontend_attributes={_xla_compute_type="host"}
}
'''


def test_host_placement_is_read_from_either_compilers_form_and_missing_when_merged():
    assert compiled_host_placement(GPU_COMPILED) == ['async_execution_thread="host"']
    assert compiled_host_placement(CPU_COMPILED) == ['_xla_compute_type="host"']
    assert compiled_host_placement(GPU_MERGED) == []
    assert compiled_host_placement(CPU_COMPILED.replace('"host"', '"device"')) == []


def test_host_calls_enclosed_by_a_host_call_are_not_counted_again():
    assert sorted(outermost_host_calls(GRAD_WITH_INNER_JIT)) == ["compute_on.2", "compute_on_0.4"]
    assert sorted(outermost_host_calls(GRAD_OLD)) == ["_lambda_.1", "_lambda__1.3"]
    # a derivative that lost its host placement: one outermost host call left, which the scenario refuses
    lost = GRAD_WITH_INNER_JIT.replace('to_apply=compute_on_0.4, frontend_attributes={_xla_compute_type="host"}',
                                       'to_apply=compute_on_0.4')
    assert sorted(outermost_host_calls(lost)) == ["_lambda__1.3", "compute_on.2"]  # the inner jit's mark, now outermost
