"""Any working directory: relative paths resolve against the caller's folder, the project's own files
are found from the package (harness.paths), for run, report, diff and bisect's probes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from harness import cli
from harness.cells import envs
from tests.host_cell import host_env

REPO = Path(__file__).resolve().parent.parent


def test_run_report_and_diff_with_relative_paths_from_another_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(envs, "ensure_env", host_env)
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    (elsewhere / "m.yaml").write_text("include:\n  - name: host-cpu\n    pins: {jax: 0.6.0}\n")
    monkeypatch.chdir(elsewhere)
    try:
        assert cli.main(["run", "--matrix", "m.yaml", "--out", "out", "--xdist", "0", "--",
                         "tests/drills/test_tiny.py"]) == 0, capsys.readouterr().err
        assert cli.main(["report", "out/results", "--out", "rep"]) == 0
        assert cli.main(["diff", "out/report.json", "rep/report.json", "--markdown", "d.md"]) == 0
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    assert json.loads((elsewhere / "out" / "report.json").read_text())["counts"] == {"ok": 3}
    assert (elsewhere / "out" / "results" / "host-cpu.jsonl").exists() and (elsewhere / "rep" / "report.md").exists()
    assert (elsewhere / "d.md").exists()
    assert not (REPO / "out").exists() and not (REPO / "rep").exists(), "nothing landed in the checkout"


def test_the_entry_point_works_from_a_folder_outside_the_checkout(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's harness, as the installed entry point has it
    for argv in (["--help"], ["matrix", "--format", "names"], ["validate"]):
        proc = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, (argv, proc.stderr[-500:])
    assert "jax060-cpu" in subprocess.run([sys.executable, "-m", "harness", "matrix", "--format", "names"], cwd=tmp_path,
                                          env=env, capture_output=True, text=True, timeout=120).stdout
