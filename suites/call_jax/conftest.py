"""Shared helpers for the call_jax families: device-data inputs and the HLO facts they produce."""

from __future__ import annotations

import pytest

from harness.incell.compat import torch_api
from harness.incell.ir import called_computation_parameter_counts, count_entry_parameters


@pytest.fixture
def xla_inputs():
    """make(*shapes) -> (cpu tensors, the same as XLA device data): every input is an HLO parameter."""
    torch = pytest.importorskip("torch")
    torch_api.call_jax()  # api absent / not in cell skip before anything is built

    def make(*shapes, seed: int = 0):
        gen = torch.Generator().manual_seed(seed)
        cpu = [torch.randn(*s, generator=gen) for s in shapes]
        dev = torch_api.device()
        on_xla = [t.to(dev) for t in cpu]
        torch_api.sync()  # device data, not pending IR: one ENTRY parameter per tensor
        return cpu, on_xla

    return make


def record_hlo(observe, outputs: list, tensors_passed: int) -> str:
    """Record and check the parameter invariant of the output graph's HLO; returns the HLO text."""
    hlo = torch_api.tensors_hlo(outputs)
    entry = count_entry_parameters(hlo)
    called = called_computation_parameter_counts(hlo)
    observe.record(tensors_passed=tensors_passed, hlo_entry_parameters=entry,
                   hlo_called_parameters=called, hlo=hlo[:6000])
    assert entry == tensors_passed, f"ENTRY has {entry} parameters for {tensors_passed} tensors passed"
    assert called and all(c == tensors_passed for c in called), \
        f"the JAX computation takes {called} parameters for {tensors_passed} tensors passed"
    return hlo
