"""The harness's own tests. tests/drills and tests/seeds hold material the tests hand to real cells
(crashing scenarios, bug-seeding plugins): never collect them here."""

collect_ignore = ["drills", "seeds"]

import os  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _callers_env_without_telling_variables(monkeypatch):
    """The harness's own tests run cells as a caller would: the root conftest's XLA_FLAGS / PJRT_DEVICE
    defaults (meant for `pytest suites/...`) and a developer's JAX_* are not this caller's settings, and a
    cell's reason names such variables (harness.cells.startup_env), so they are cleared for each test."""
    from harness.cells.startup_env import is_telling

    if os.environ.get("SEAMS_CELL"):  # a drill running inside a cell keeps the cell's environment
        return
    for name in [n for n in os.environ if is_telling(n)]:
        monkeypatch.delenv(name)
