"""Declared dependencies: importing a bridge and calling its main entry points (torchax:
default_env, extract_jax, interop.call_jax, interop.jax_jit; torch_xla: a tensor on the XLA
device, mark_step, call_jax where it exists) needs only what the bridge's metadata declares.

A package the bridge's own modules import that its Requires-Dist (with the bridge's extras the
cell holds) does not reach is a finding naming the package and the module that imports it, whether
the cell installed it (the matrix's extras put it there: the import worked by luck) or not (the
import failed; a package only an absent extra declares says so). Because the check reads the
closure, a lucky package shows in every cell; the declared-only cells add the failing import:
xla29noflax-cpu for torch_xla 2.9 (its pins and nothing the matrix adds: the bundled torchax fails
on flax) and torchax0013declared-cpu (`pip install torchax==0.0.13` alone: `import torchax` fails
on jax, which only its extras declare).
"""

from __future__ import annotations

import pytest

from suites.coexist import cores

BRIDGES = ("torchax", "torch_xla")  # literals: case ids are read statically (harness/judge/testids.py)


@pytest.mark.parametrize("bridge", BRIDGES)
def test_bridge_imports_only_what_it_declares(bridge, observe):
    cores.bridge_imports_only_what_it_declares(bridge, observe)
