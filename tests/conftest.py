"""The harness's own tests. tests/drills and tests/seeds hold material the tests hand to real cells
(crashing scenarios, bug-seeding plugins): never collect them here.

The tests build cells named drill-gpu, secret-cpu, bisect.seamtoy...: those envs, bisect answers
and clones go to a cache of the tests' own ($SEAMS_TEST_CACHE, default ~/.cache/xla-seams-tests),
never into the user's ~/.cache/xla-seams; kept reductions to a folder of the session's own. uv's download cache stays shared, so a warm machine
builds them from local wheels. Set here, at import, so every subprocess a test starts inherits it.
"""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TEST_CACHE = Path(os.environ.get("SEAMS_TEST_CACHE") or Path.home() / ".cache" / "xla-seams-tests")
os.environ["SEAMS_ENVS_DIR"] = str(TEST_CACHE / "envs")
os.environ["SEAMS_BISECT_CACHE"] = str(TEST_CACHE / "bisect")
os.environ["SEAMS_REPOS_DIR"] = str(TEST_CACHE / "repos")
# Earlier batches' reductions (harness.reduce.memo): this session's own, empty at its start, so a test's
# `harness reduce` searches unless the test itself reduced the same script before.
_REDUCTIONS = tempfile.mkdtemp(prefix="seams-test-reductions-")
atexit.register(shutil.rmtree, _REDUCTIONS, True)
os.environ["SEAMS_REDUCE_CACHE"] = _REDUCTIONS

import pytest  # noqa: E402

from harness.cells.matrix import load_matrix  # noqa: E402
from harness.judge.expectations import load_expectations  # noqa: E402
from harness.paths import MATRICES_DIR, REPO  # noqa: E402

collect_ignore = ["drills", "seeds"]


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
    # An in-process `harness run` sets its run id into os.environ for its -j workers; a later test's
    # tox or harness command would inherit it and join that run (harness.run.invocation).
    monkeypatch.delenv("SEAMS_RUN_ID", raising=False)


def _known_issue_ids() -> list[str]:
    """Every case id (or file, or folder) a known issue names: what the fidelity run selects.
    `suites/` itself (a cell that cannot be built) selects nothing a script could reproduce."""
    ids: set[str] = set()
    for exp in load_expectations():
        # a prefix that ends inside the brackets (`test_x[torchax-`) selects its function's cases
        ids.update((t.split("[")[0] if t.count("[") > t.count("]") else t).removesuffix("::")
                   for t in exp.tests if t.rstrip("/") != "suites")
    return sorted(ids)


# Session-scoped: the standalone and the reduced-script fidelity tests check the same run (issue 32).
@pytest.fixture(scope="session")
def fidelity_report(tmp_path_factory) -> Path:
    given = os.environ.get("SEAMS_FIDELITY_REPORT")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("fidelity")
    from tests.test_standalone_fidelity import in_scope

    matrix = {c.name: c for c in load_matrix(MATRICES_DIR / "default.yaml").cells}
    cells = [] if os.environ.get("SEAMS_FIDELITY") == "all" else [a for n in sorted(in_scope(matrix)) for a in ("--cell", n)]
    cmd = [sys.executable, "-m", "harness", "run", *cells, "--out", str(out / "results"),
           "--report-dir", str(out / "report"), "--", *_known_issue_ids()]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=3000)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return out / "report"
