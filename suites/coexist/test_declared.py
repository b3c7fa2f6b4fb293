"""Declared dependencies: importing a bridge and calling its main entry points (torchax:
default_env, extract_jax, interop.call_jax, interop.jax_jit; torch_xla: a tensor on the XLA
device, mark_step, call_jax where it exists) needs only what the bridge's metadata declares.

A package the bridge's own modules import that its Requires-Dist (every extra included) does not
reach is a finding naming the package and the module that imports it, whether the cell installed
it (the matrix's extras put it there: the import worked by luck) or not (the import failed).
Because the check reads the closure, a lucky package shows in every cell; a cell without the
matrix's extras adds the failing import: xla29noflax-cpu is the declared-only torch_xla cell (its
bundled torchax then fails on flax). No declared-only torchax cell: torchax 0.0.13 imports neither
flax nor optax on the paths above, so such a cell would show nothing torchax0013-cpu does not.
"""

from __future__ import annotations

import pytest

from suites.coexist import cores

BRIDGES = ("torchax", "torch_xla")  # literals: case ids are read statically (harness/judge/testids.py)


@pytest.mark.parametrize("bridge", BRIDGES)
def test_bridge_imports_only_what_it_declares(bridge, observe):
    cores.bridge_imports_only_what_it_declares(bridge, observe)
