"""The harness's tests keep their envs, bisect answers and clones out of the user's cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.bisect.probe import _cache_dir
from harness.cells.envs import envs_root
from harness.cells.sources import repos_root
from harness.paths import REPO

USER_CACHE = Path.home() / ".cache" / "xla-seams"


def test_the_tests_build_envs_outside_the_users_cache():
    for where in (envs_root(), _cache_dir(), repos_root()):
        assert USER_CACHE not in where.resolve().parents and where.resolve() != USER_CACHE, where


def test_a_cell_run_by_a_test_inherits_the_tests_cache():
    """What a test's subprocess (python -m harness ...) sees: the tests' env cache, not the user's."""
    code = "from harness.cells.envs import envs_root; print(envs_root())"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env={**os.environ},
                         check=True).stdout.strip()
    assert out == os.environ["SEAMS_ENVS_DIR"] and USER_CACHE not in Path(out).parents
