"""tox.ini and the matrix YAML agree, and tox behaves as its users expect: what follows `--` reaches
pytest in the cell, SEAMS_* carries harness options, cells never overwrite each other's report,
and the `report` env merges every cell (also under `tox -p`)."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cells.matrix import catalogue

REPO = Path(__file__).resolve().parent.parent
MERGE_ENV = "report"


def _cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(REPO / "tox.ini")
    return cfg


def _tox_envs() -> list[str]:
    raw = _cfg()["tox"]["env_list"]
    return [e.strip() for e in raw.replace(",", "\n").splitlines() if e.strip()]


def test_tox_env_list_is_every_matrix_cell_then_the_merge():
    assert _tox_envs() == [*catalogue().names(), MERGE_ENV], \
        "regenerate tox.ini env_list: python -m harness matrix --format tox (then `report` last)"


def test_tox_commands_run_the_cell_named_by_the_env_and_hand_posargs_to_pytest():
    cmd = _cfg()["testenv"]["commands"]
    assert "python -m harness run --cell {envname}" in cmd
    assert cmd.rstrip().endswith("-- {posargs}"), "what follows tox's -- must reach pytest, never the harness"
    assert "--report-dir" in cmd and "cells/{envname}" in cmd, "each env writes its own report"


def test_report_env_runs_after_every_cell():
    sec = _cfg()[f"testenv:{MERGE_ENV}"]
    assert sec["depends"].strip() == "{[tox]env_list}"
    assert "python -m harness report" in sec["commands"]


def test_matrix_format_tox_prints_the_cells():
    out = subprocess.run([sys.executable, "-m", "harness", "matrix", "--format", "tox"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == catalogue().names()


# --- real tox on cheap jax cells -------------------------------------------------------------

def _tox(*args: str, reports: Path, expect: int = 0, **env: str) -> subprocess.CompletedProcess:
    tox = shutil.which("tox")
    if tox is None:
        pytest.fail("tox is not installed: pip install -e '.[test]' installs it")
    proc = subprocess.run([tox, *args], cwd=REPO, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "SEAMS_REPORTS": str(reports), **env})
    assert proc.returncode == expect, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _ran(path: Path) -> set[str]:
    return {r["nodeid"] for r in _records(path) if r.get("$report_type") == "TestReport" and r["when"] == "call"}


def _report_cells(path: Path) -> list[str]:
    return sorted(c["cell"] for c in json.loads(path.read_text())["cells"])


@pytest.mark.e2e
def test_tox_posargs_reach_pytest_and_cells_in_a_row_keep_their_reports(tmp_path):
    reports = tmp_path / "reports"
    _tox("-e", "jax053-cpu", "--", "-k", "linearize", reports=reports, SEAMS_TIMEOUT="777")
    ran = _ran(reports / "results" / "jax053-cpu.jsonl")
    assert ran and all("linearize" in n for n in ran), ran
    start = _records(reports / "results" / "jax053-cpu.jsonl")[0]
    assert start["$report_type"] == "CellStart" and start["timeout_s"] == 777, "SEAMS_TIMEOUT reaches the harness"

    _tox("-e", "jax060-cpu", "--", "-k", "linearize", reports=reports)
    assert _report_cells(reports / "cells" / "jax053-cpu" / "report.json") == ["jax053-cpu"]
    assert _report_cells(reports / "cells" / "jax060-cpu" / "report.json") == ["jax060-cpu"]
    assert not (reports / "report.json").exists(), "a cell env never writes the matrix's report"

    # Two tox commands are two runs: `report` alone belongs to neither, so it names them and stops;
    # merging every file is the harness's own report command.
    proc = _tox("-e", MERGE_ENV, reports=reports, expect=2)
    said = proc.stdout + proc.stderr
    assert "no results file here comes from this tox command" in said and "2 files from other runs" in said
    assert not (reports / "report.json").exists()
    subprocess.run([sys.executable, "-m", "harness", "report", str(reports / "results"), "--out", str(reports)],
                   cwd=REPO, check=True, capture_output=True, text=True, timeout=300)
    assert _report_cells(reports / "report.json") == ["jax053-cpu", "jax060-cpu"]


@pytest.mark.e2e
def test_tox_parallel_cells_then_one_merged_report(tmp_path):
    reports = tmp_path / "reports"
    proc = _tox("-p", "-e", f"jax053-cpu,jax060-cpu,{MERGE_ENV}", "--", "-k", "linearize", reports=reports)
    for cell in ("jax053-cpu", "jax060-cpu"):
        assert _ran(reports / "results" / f"{cell}.jsonl"), cell
        assert _records(reports / "results" / f"{cell}.jsonl")[-1]["$report_type"] == "CellEnd"
    assert _report_cells(reports / "report.json") == ["jax053-cpu", "jax060-cpu"], proc.stdout[-2000:]


# --- what a one-cell run does to an existing report, and merging a results folder -------------

def test_report_of_a_results_folder_merges_every_cell(tmp_path):
    from tests.results_fixtures import case, cell_file

    plain = "suites/x/test_x.py::test_plain"  # no known issue names it
    res = tmp_path / "results"
    res.mkdir()
    cell_file(res, "jax053-cpu", "0.5.3", [case(plain, "pass")])
    cell_file(res, "jax060-cpu", "0.6.0", [case(plain, "pass")])
    (res / "jax060-cpu.jsonl.lock").write_text("")
    proc = subprocess.run([sys.executable, "-m", "harness", "report", str(res), "--out", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert _report_cells(tmp_path / "report.json") == ["jax053-cpu", "jax060-cpu"]


def test_a_run_that_replaces_a_wider_report_says_so(tmp_path):
    from rich.console import Console

    from harness.cells.cell import Cell
    from harness.cli import _note_replaced_report

    (tmp_path / "report.json").write_text(json.dumps({"cells": [{"cell": "jax053-cpu"}, {"cell": "xla29-cpu"}]}))
    console = Console(record=True, width=300)
    _note_replaced_report(tmp_path, [Cell(name="jax053-cpu", device="cpu", pins={"jax": "0.5.3"})], console)
    said = console.export_text()
    assert "replacing" in said and "xla29-cpu" in said and "harness report" in said
    console = Console(record=True, width=300)
    _note_replaced_report(tmp_path, [Cell(name=n, device="cpu", pins={}) for n in ("jax053-cpu", "xla29-cpu")],
                          console)
    assert console.export_text() == "", "a report over the same cells is replaced silently, as before"


def test_the_harness_cli_needs_no_pytest_on_the_host():
    # A tox env installs the harness's own dependencies only; pytest lives in the cell envs.
    code = ("import sys; sys.modules['pytest'] = None\n"
            "from harness.cli import build_parser, _cells\n"
            "args = build_parser().parse_args(['run', '--cell', 'jax053-cpu', '--', '-k', 'x'])\n"
            "print([c.name for c in _cells(args.matrix, args.cell, args)], args.pytest_args)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0 and "['jax053-cpu'] ['-k', 'x']" in proc.stdout, proc.stderr


def test_report_of_an_empty_results_folder_is_one_line_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "harness", "report", str(tmp_path), "--out", str(tmp_path / "o")],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "no results files" in proc.stderr
