"""nightly.yml wires the sweeps, floating cells, history and the bisect-and-file step, with matrix files that load."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.cells.matrix import load_matrix
from harness.cells.sweep import is_sweep_file

REPO = Path(__file__).resolve().parent.parent
NIGHTLY = REPO / ".github" / "workflows" / "nightly.yml"


def _doc() -> dict:
    doc = yaml.safe_load(NIGHTLY.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


def test_nightly_runs_sweeps_floating_cells_history_and_filing():
    text = NIGHTLY.read_text()
    for path in ("matrices/sweeps/jax.yaml", "matrices/sweeps/torch_xla.yaml", "matrices/nightly/floating.yaml"):
        assert path in text and (REPO / path).exists()
    assert is_sweep_file(REPO / "matrices/sweeps/jax.yaml")
    assert [c.name for c in load_matrix(REPO / "matrices/nightly/floating.yaml").cells] == [
        "jaxlatest-cpu", "jaxnightly-cpu", "xlalatest-cpu"]
    doc = _doc()
    assert "pull_request" in doc["on"] and "schedule" in doc["on"]
    report = doc["jobs"]["report"]
    assert report["permissions"]["issues"] == "write" and doc["permissions"].get("issues") is None
    runs = "\n".join(s.get("run", "") for s in report["steps"])
    assert "python -m harness history" in runs and "python -m harness news" in runs
    assert '"pull_request" ]; then dry=(--dry-run)' in runs, "news is only a dry run on pull requests"
    assert set(doc["jobs"]["sweep-report"]["strategy"]["matrix"]["sweep"]) == {"jax", "torch_xla"}


def test_matrix_values_reach_the_shell_only_through_env():
    doc = _doc()
    for job in ("cell", "sweep"):
        for step in doc["jobs"][job]["steps"]:
            assert "${{ matrix." not in step.get("run", ""), f"{job}: {step['run']!r} splices a matrix value into shell"
