"""The one place where API moves between versions are bridged (never behaviour differences).

Scenarios import what moved from here: `harness.compat.jax_api` for jax (shard_map's path,
pvary/pcast, vma), `harness.compat.torch_api` for torch_xla / torchax. When the API a scenario
needs does not exist in this cell, skip with `api_absent(...)`: "api absent" is its own verdict
in reports and bisection, distinct from a failure.
"""

from __future__ import annotations

from types import ModuleType
from typing import NoReturn

API_ABSENT = "api absent"
NOT_IN_CELL = "not in cell"


def api_absent(what: str) -> NoReturn:
    """Skip: this version does not have the API the scenario exercises."""
    import pytest  # late: the harness CLI imports this module (bisect, sweeps) where pytest is absent (tox envs)

    pytest.skip(f"{API_ABSENT}: {what}")


def require(module: str) -> ModuleType:
    """Import a package the scenario needs, or skip when the cell does not install it.

    Only a module that is not there at all skips (torchax may come as its own distribution or
    bundled inside torch_xla); if it is there but fails to import, that error propagates (it is
    a finding, e.g. torchax 0.0.13 with torch 2.13).
    """
    import importlib.util

    top = module.split(".")[0]
    if importlib.util.find_spec(top) is None:
        import pytest

        pytest.skip(f"{NOT_IN_CELL}: {top} is not installed in this cell")
    return importlib.import_module(module)
