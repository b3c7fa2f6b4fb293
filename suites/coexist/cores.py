"""coexist scenario cores: plain functions the tests call and `harness report` inlines into
standalone reproducers (see suites/compute_on/cores.py for the rules).

`CORES` maps each test to its core.
"""

from __future__ import annotations

from importlib.util import find_spec

import pytest

from harness.incell.compat import NOT_IN_CELL
from suites.coexist.census import Bridge, describe, locate, take_census
from suites.coexist.declared import imports_of, undeclared
from suites.coexist.living import BASELINE, differences, facts


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


def torch_feature_is_unchanged_by_importing(bridge, feature, observe=None):
    """After importing the bridge (and jax), a torch feature behaves as in a fresh process without it."""
    b = _need(bridge)
    _need_package("jax")
    _need_package("torch")  # a bridge installed without torch (torchax declares none) has nothing to live with
    after = facts((bridge, "jax"))[feature]  # first: where the bridge does not import, no baseline is needed
    fresh = facts(BASELINE)[feature]
    if observe is not None:
        observe["facts"] = {"fresh process": fresh, f"after import {bridge}": after}
    diffs = differences(fresh, after)
    assert not diffs, (f"after `import {bridge}` ({b.label}), torch's {feature} differs from a fresh process "
                       f"without it:\n  " + "\n  ".join(diffs))


def import_order_gives_the_same_results(bridge, observe=None):
    """jax imported first, then the bridge, gives what the bridge first, then jax gives: torch's
    features, jax's state and a call through the bridge."""
    b = _need(bridge)
    _need_package("jax")
    _need_package("torch")
    jax_first = facts(("jax", bridge), compile_too=False)  # torch.compile is compared by the case above
    bridge_first = facts((bridge, "jax"))
    if observe is not None:
        observe["facts"] = {"jax first": jax_first, f"{bridge} first": bridge_first}
    diffs = [f"{group}: {d}" for group in sorted(set(jax_first) | set(bridge_first)) if group != "compile"
             for d in differences(jax_first.get(group) or {}, bridge_first.get(group) or {})]
    assert not diffs, (f"{b.label}: importing jax first, then {bridge}, differs from {bridge} first "
                       f"(jax first -> {bridge} first):\n  " + "\n  ".join(diffs))


def bridge_imports_only_what_it_declares(bridge, observe=None):
    """Importing the bridge and calling its entry points needs nothing its metadata does not declare."""
    b = _need(bridge)
    record = imports_of(bridge)
    found = undeclared(b.dist, record)
    if observe is not None:
        observe["imports"] = {"steps": record["steps"], "undeclared": found}
    assert not found, (f"{b.label}: importing it and calling its entry points needs {len(found)} package(s) "
                       f"its metadata does not declare:\n  "
                       + "\n  ".join(f"{e['package']} (imported by {e['module']}; installed: {e['installed']}"
                                     + (f"; declared only by its extra(s) {e['only_in_extras']}" if e.get("only_in_extras") else "")
                                     + ")" for e in found))


CORES = {
    "test_census.py::test_bridge_uses_only_jax_apis_the_cell_has": bridge_uses_only_jax_apis_the_cell_has,
    "test_census.py::test_torchax_registers_only_torch_ops_the_cell_has": torchax_registers_only_torch_ops_the_cell_has,
    "test_census.py::test_bridge_has_no_silent_fallbacks": bridge_has_no_silent_fallbacks,
    "test_living_together.py::test_torch_feature_is_unchanged_by_importing": torch_feature_is_unchanged_by_importing,
    "test_living_together.py::test_import_order_gives_the_same_results": import_order_gives_the_same_results,
    "test_declared.py::test_bridge_imports_only_what_it_declares": bridge_imports_only_what_it_declares,
}
