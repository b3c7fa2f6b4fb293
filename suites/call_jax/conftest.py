"""Shared fixture for the call_jax property layer: device-data inputs (the cores' xla_inputs)."""

from __future__ import annotations

import pytest

from suites.call_jax import cores


@pytest.fixture
def xla_inputs():
    """make(*shapes) -> (cpu tensors, the same as XLA device data): every input is an HLO parameter."""
    pytest.importorskip("torch")
    return cores.xla_inputs
