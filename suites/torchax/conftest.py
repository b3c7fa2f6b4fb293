"""Shared fixture for the torchax family: torchax's default env."""

from __future__ import annotations

import pytest

# The modules import jax at the top (through cores): without jax in the cell (torchax0013declared-cpu)
# the family skips at collection, `not in cell`, instead of failing to import.
pytest.importorskip("jax", reason="not in cell: jax is not installed in this cell")

from suites.torchax import cores


@pytest.fixture(scope="module")
def env():
    """torchax's default env, built at setup: where torchax cannot import, every case is an error
    (test_properties.py overrides it: its round trips need no torchax.interop)."""
    return cores.torchax_env()
