"""Shared fixture for the torchax family: torchax's default env."""

from __future__ import annotations

import pytest

from suites.torchax import cores


@pytest.fixture(scope="module")
def env():
    """torchax's default env, built at setup: where torchax cannot import, every case is an error
    (test_properties.py overrides it: its round trips need no torchax.interop)."""
    return cores.torchax_env()
