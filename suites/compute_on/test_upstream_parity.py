"""compute_on cases written after upstream's memories_test / export_test, run on every device.

Upstream runs its ComputeOffload tests on TPU only ("Memories do not work on CPU and GPU backends
yet"), so a CPU regression in these paths is invisible to it; here each case checks numerics
against NumPy and where the host placement must survive in the IR.
"""

from __future__ import annotations

import pytest

from suites.compute_on import cores


@pytest.mark.parametrize("remat", ["plain", "remat"])
def test_grad_through_a_host_function_keeps_both_host_calls(remat, observe):
    """Upstream test_compute_on_grad / test_compute_on_remat: d/dx sum(sin(sin(x))) with the sins on
    the host, under jit (and under jax.checkpoint saving nothing): the forward host call and the
    derivative's stay host calls, and the gradient is right."""
    cores.grad_through_a_host_function(remat, observe)


def test_nesting_different_compute_types_is_refused(observe):
    """Upstream test_nested_compute_error: `device` inside `device_host` is a clear NotImplementedError."""
    cores.nesting_different_compute_types_is_refused(observe)


def test_host_function_inside_shard_map(observe):
    """Upstream test_compute_offload_inside_shmap: x*3 -> host x*2 -> x*4 per shard of a 2x2 mesh."""
    cores.host_function_inside_shard_map(observe)


def test_exported_host_function_keeps_the_placement(observe):
    """Upstream export_test test_compute_on_host: jax.export of a jit(compute_on(host)) function
    keeps the host placement in the serialized module, and calling the export gives the value."""
    cores.exported_host_function_keeps_the_placement(observe)


def test_serialized_host_function_keeps_the_placement(observe):
    """The same export serialized and read back keeps the placement and the value. Serialization
    needs flatbuffers, which jax leaves optional (its error says to install it): skip without it."""
    cores.serialized_host_function_keeps_the_placement(observe)
