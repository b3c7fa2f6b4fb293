"""Bisection on real jax releases (builds probe envs; warm uv cache makes each a few seconds)."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BASE = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[base]"
pytestmark = pytest.mark.e2e


def _bisect(tmp_path, *args):
    env = {**__import__("os").environ, "SEAMS_BISECT_CACHE": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "harness", "bisect", *args, "--out", str(tmp_path / "out")],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=1200)


def test_shard_map_base_case_first_bad_is_0_6_0(tmp_path):
    proc = _bisect(tmp_path, BASE, "--package", "jax", "--good", "0.5.3", "--bad", "0.10.2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "first bad: jax 0.6.0; last good: jax 0.5.3" in proc.stdout
    n_between = int(re.search(r"(\d+) releases between", proc.stdout).group(1))
    probes = int(re.search(r"probes run: (\d+)", proc.stdout).group(1))
    assert probes <= math.ceil(math.log2(n_between)) + 1, proc.stdout
    # A second run answers from the probe cache without building or running anything.
    again = _bisect(tmp_path, BASE, "--package", "jax", "--good", "0.5.3", "--bad", "0.10.2")
    assert "probes run: 0" in again.stdout and "first bad: jax 0.6.0" in again.stdout


def test_unknown_bound_fails_at_once_with_one_line(tmp_path):
    proc = _bisect(tmp_path, BASE, "--package", "jax", "--good", "0.5.4", "--bad", "0.10.2")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "0.5.4 is not a release" in proc.stderr
    assert "nearest: 0.5.3, 0.6.0" in proc.stderr


def test_from_report_takes_the_bad_bound_from_a_cell_and_proposes_the_good_one(tmp_path):
    from harness.report.command import report_command
    from tests.results_fixtures import case, cell_file, known_issues

    files = [cell_file(tmp_path, "jax053-cpu", "0.5.3", [case(BASE, "pass")]),
             cell_file(tmp_path, "jax060-cpu", "0.6.0", [case(BASE, "fail", "ValueError: linearized function")])]
    report_command(files, tmp_path / "rep", known_issues(tmp_path, ""))
    proc = _bisect(tmp_path, "--from-report", str(tmp_path / "rep" / "report.json"), "--cell", "jax060-cpu",
                   "--case", BASE)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "good bound 0.5.3 proposed" in proc.stderr
    assert "first bad: jax 0.6.0; last good: jax 0.5.3" in proc.stdout
