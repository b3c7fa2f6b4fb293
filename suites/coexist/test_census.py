"""The dependency API census: the jax APIs and torch operators each bridge's installed source uses
(read with ast, never imported) checked against this cell's jax and torch.

- `test_bridge_uses_only_jax_apis_the_cell_has[BRIDGE]`: a jax API used outside any guard that this
  jax lacks is a finding with the bridge's file and line (a moved or removed API the bridge still
  calls: an ImportError at import, or an AttributeError on the code path that uses it);
- `test_torchax_registers_only_torch_ops_the_cell_has`: every `torch.ops.NS.OP.OVERLOAD` torchax
  names (its lowering table registers them at import) exists in this torch;
- `test_bridge_has_no_silent_fallbacks[BRIDGE]`: a missing API used inside `try:` is a fallback the
  bridge takes without saying so (a slower path, a feature quietly off): reported as its own case.

Each case records the `census` observation (suites/coexist/census.py); the report renders it as the
census table (bridge version x jax / torch version) and judges the presence of every API with a
release range in matrices/apis/ against that range (api-drift).
"""

from __future__ import annotations

import pytest

from suites.coexist import cores

BRIDGES = ("torchax", "torch_xla")  # a literal: case ids are read statically (harness/judge/testids.py)


@pytest.mark.parametrize("bridge", BRIDGES)
def test_bridge_uses_only_jax_apis_the_cell_has(bridge, observe):
    cores.bridge_uses_only_jax_apis_the_cell_has(bridge, observe)


def test_torchax_registers_only_torch_ops_the_cell_has(observe):
    cores.torchax_registers_only_torch_ops_the_cell_has(observe)


@pytest.mark.parametrize("bridge", BRIDGES)
def test_bridge_has_no_silent_fallbacks(bridge, observe):
    cores.bridge_has_no_silent_fallbacks(bridge, observe)
