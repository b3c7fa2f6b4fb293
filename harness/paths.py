"""Where the project's own files are, found from the package (so any working directory works)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MATRICES_DIR = REPO / "matrices"
SUITES_DIR = REPO / "suites"
SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
