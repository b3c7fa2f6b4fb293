"""The one place where API moves between versions are bridged (never behaviour differences).

Scenarios import what moved from here: `harness.incell.compat.jax_api` for jax (shard_map's path,
pvary/pcast, vma, compute_on), `harness.incell.compat.torch_api` for torch_xla / torchax. Every probe
for an API records whether it was there (`found(NAME, present)`); the results plugin attaches
that to the case as the observation `apis: {NAME: present?}`. When the API a scenario needs is
missing, skip with `api_absent(NAME)`: the raw outcome `skip: api absent: NAME`. Whether that is
right is judged against the API's recorded release range (matrices/apis/, harness.judge.apis):
outside it the case is `skipped`, inside it the case is `api-drift`, which is news.
"""

from __future__ import annotations

from types import ModuleType
from typing import NoReturn

API_ABSENT = "api absent"
APIS_OBSERVATION = "apis"  # the observation key the plugin records what was probed under
NOT_IN_CELL = "not in cell"

# What the running case probed: {api name: present?}. Reset by the plugin before each test.
_seen: dict[str, bool] = {}


def found(api: str, present: bool) -> bool:
    """Record that `api` was looked for and whether it was there; returns `present`."""
    _seen[api] = present
    return present


def seen_apis() -> dict[str, bool]:
    """What the running case probed so far (a copy)."""
    return dict(_seen)


def reset_seen() -> None:
    """Forget the previous case's probes (called by the plugin before each test)."""
    _seen.clear()


def api_absent(api: str, detail: str = "") -> NoReturn:
    """Skip: this version does not have `api` (a name listed in matrices/apis/).

    The message starts `api absent: NAME` so reports and bisection can tell it from any other skip.
    """
    import pytest  # late: the harness CLI imports this module (bisect, sweeps) where pytest is absent (tox envs)

    found(api, False)
    pytest.skip(f"{API_ABSENT}: {api}" + (f" ({detail})" if detail else ""))


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
