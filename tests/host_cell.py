"""A cell whose env is the host's own interpreter: the real runner, plugin and report, with no uv and
no jax import. For drills that test the harness (faults, hostile tests), not the versions under test."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.cells.cell import Cell
from harness.cells.envs import Env

CELL = Cell(name="host-cpu", device="cpu", pins={"jax": "0.6.0"}, timeout_s=60)


def host_env(_cell: Cell, log=None) -> Env:
    """The env provider for run_cell: the interpreter running these tests."""
    return Env(Path(sys.prefix), Path(sys.executable), {}, True, 0.0)
