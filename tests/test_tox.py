"""tox.ini and the matrix YAML agree: every cell is a tox env and every tox env is a cell."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

from harness.matrix import catalogue

REPO = Path(__file__).resolve().parent.parent


def _tox_envs() -> list[str]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "tox.ini")
    raw = cfg["tox"]["env_list"]
    return [e.strip() for e in raw.replace(",", "\n").splitlines() if e.strip()]


def test_tox_env_list_equals_matrix_cells():
    assert _tox_envs() == catalogue().names(), "regenerate tox.ini env_list: python -m harness matrix --format tox"


def test_tox_commands_run_the_cell_named_by_the_env():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "tox.ini")
    assert "python -m harness run --cell {envname}" in cfg["testenv"]["commands"]


def test_matrix_format_tox_prints_the_same_list():
    out = subprocess.run([sys.executable, "-m", "harness", "matrix", "--format", "tox"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == _tox_envs()
