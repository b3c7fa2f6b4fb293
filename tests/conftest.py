"""The harness's own tests. tests/drills and tests/seeds hold material the tests hand to real cells
(crashing scenarios, bug-seeding plugins): never collect them here.

The tests build cells named drill-gpu, secret-cpu, bisect.seamtoy...: those envs, bisect answers
and clones go to a cache of the tests' own ($SEAMS_TEST_CACHE, default ~/.cache/xla-seams-tests),
never into the user's ~/.cache/xla-seams. uv's download cache stays shared, so a warm machine
builds them from local wheels. Set here, at import, so every subprocess a test starts inherits it.
"""

import os
from pathlib import Path

TEST_CACHE = Path(os.environ.get("SEAMS_TEST_CACHE") or Path.home() / ".cache" / "xla-seams-tests")
os.environ["SEAMS_ENVS_DIR"] = str(TEST_CACHE / "envs")
os.environ["SEAMS_BISECT_CACHE"] = str(TEST_CACHE / "bisect")
os.environ["SEAMS_REPOS_DIR"] = str(TEST_CACHE / "repos")

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
