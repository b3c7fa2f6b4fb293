"""coexist scenario cores: plain functions the tests call and `harness report` inlines into
standalone reproducers (see suites/compute_on/cores.py for the rules).

`CORES` maps each test to its core.
"""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from harness.incell.compat import NOT_IN_CELL
from suites.coexist.census import Bridge, describe, locate, take_census


def _need(module: str) -> Bridge:
    """The installed bridge, or skip where the cell has none (or lacks what it is checked against)."""
    bridge = locate(module)
    if bridge is None:
        pytest.skip(f"{NOT_IN_CELL}: {module} is not installed in this cell")
    return bridge


def _need_package(name: str) -> None:
    if find_spec(name) is None:
        pytest.skip(f"{NOT_IN_CELL}: {name} is not installed in this cell")


def bridge_uses_only_jax_apis_the_cell_has(bridge, observe=None):
    """Every jax API the bridge's source uses outside a guard exists in this jax."""
    b = _need(bridge)
    _need_package("jax")
    found = take_census(bridge, "jax")
    if observe is not None:
        observe["census"] = found
    missing = [e for e in found["absent"] if e["guard"] == "none"]
    assert not missing, (f"{b.label} uses {len(missing)} jax API(s) that jax "
                         f"{found['against'].get('jax')} lacks:\n  {describe(missing)}")


def torchax_registers_only_torch_ops_the_cell_has(observe=None):
    """Every torch.ops overload torchax's source names exists in this torch."""
    b = _need("torchax")
    _need_package("torch")
    found = take_census("torchax", "torch-ops")
    if observe is not None:
        observe["census"] = found
    missing = [e for e in found["absent"] if e["guard"] == "none"]
    assert not missing, (f"{b.label} names {len(missing)} torch operator(s) that torch "
                         f"{found['against'].get('torch')} lacks:\n  {describe(missing)}")


def bridge_has_no_silent_fallbacks(bridge, observe=None):
    """No API the bridge uses inside try/except is missing here (else it falls back without saying so)."""
    b = _need(bridge)
    _need_package("jax")
    kinds = ("jax", "torch-ops") if bridge == "torchax" else ("jax",)
    guarded = [e for kind in kinds for e in take_census(bridge, kind)["absent"] if e["guard"] == "try"]
    if observe is not None:
        observe["silent_fallbacks"] = [e["api"] for e in guarded]
    assert not guarded, (f"{b.label} uses {len(guarded)} API(s) this cell lacks inside "
                         f"try/except, so it falls back without saying so:\n  {describe(guarded)}")


CORES = {
    "test_census.py::test_bridge_uses_only_jax_apis_the_cell_has": bridge_uses_only_jax_apis_the_cell_has,
    "test_census.py::test_torchax_registers_only_torch_ops_the_cell_has": torchax_registers_only_torch_ops_the_cell_has,
    "test_census.py::test_bridge_has_no_silent_fallbacks": bridge_has_no_silent_fallbacks,
}
