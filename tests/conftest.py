"""The harness's own tests. tests/drills and tests/seeds hold material the tests hand to real cells
(crashing scenarios, bug-seeding plugins): never collect them here."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cells.matrix import load_matrix
from harness.judge.expectations import load_expectations
from harness.paths import MATRICES_DIR, REPO

collect_ignore = ["drills", "seeds"]


def _known_issue_ids() -> list[str]:
    """Every case id (or file, or folder) a known issue names: what the fidelity run selects.
    `suites/` itself (a cell that cannot be built) selects nothing a script could reproduce."""
    ids: set[str] = set()
    for exp in load_expectations():
        ids.update(t.removesuffix("::") for t in exp.tests if t.rstrip("/") != "suites")
    return sorted(ids)


# Session-scoped: the standalone and the reduced-script fidelity tests check the same run (issue 32).
@pytest.fixture(scope="session")
def fidelity_report(tmp_path_factory) -> Path:
    given = os.environ.get("SEAMS_FIDELITY_REPORT")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("fidelity")
    cells = [] if os.environ.get("SEAMS_FIDELITY") == "all" else [
        a for c in load_matrix(MATRICES_DIR / "default.yaml").cells
        if not set(c.pins) & {"torch", "torch_xla", "torch-xla", "torchax"} for a in ("--cell", c.name)]
    cmd = [sys.executable, "-m", "harness", "run", *cells, "--out", str(out / "results"),
           "--report-dir", str(out / "report"), "--", *_known_issue_ids()]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=3000)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return out / "report"
