"""Shared fixture for the call_jax property layer: device-data inputs (the cores' xla_inputs)."""

from __future__ import annotations

import pytest

# The modules import jax at the top (through cores): without jax in the cell (torchax0013declared-cpu)
# the family skips at collection, `not in cell`, instead of failing to import.
pytest.importorskip("jax", reason="not in cell: jax is not installed in this cell")

from harness.incell.compat import torch_api
from suites.call_jax import cores


@pytest.fixture
def xla_inputs():
    """make(*shapes) -> (cpu tensors, the same as XLA device data): every input is an HLO parameter."""
    pytest.importorskip("torch")
    torch_api.call_jax()  # api absent / not in cell skip at setup, before the test body probes anything
    return cores.xla_inputs
