"""The layout is the data flow: import-linter's contracts (pyproject.toml) hold, and they bite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LINT = shutil.which("lint-imports")
pytestmark = pytest.mark.skipif(LINT is None, reason="import-linter is not installed (pip install -e '.[test]')")


def _lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([LINT, "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_contracts_hold():
    proc = _lint(REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "2 kept, 0 broken" in proc.stdout


@pytest.mark.parametrize("module, line, broken", [
    # a stage importing one above it (the report reaching into the nightly)
    ("harness/report/model.py", "import harness.nightly.news", "harness.report is not allowed to import harness.nightly"),
    # the cells stage reaching into the runner (what envs -> lifeline looked like when lifeline was the run's)
    ("harness/cells/envs.py", "import harness.run.cellrun", "harness.cells is not allowed to import harness.run"),
    # in-cell code importing the judge, or a library the cell env does not install
    ("harness/incell/plugin.py", "import harness.judge.verdicts", "harness.incell is not allowed to import harness.judge"),
    ("harness/incell/ir.py", "import rich", "harness.incell is not allowed to import rich"),
])
def test_a_wrong_way_import_fails_with_the_contracts_message(tmp_path, module, line, broken):
    shutil.copytree(REPO / "harness", tmp_path / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    proc = _lint(tmp_path)
    assert proc.returncode != 0 and broken in proc.stdout, proc.stdout[-3000:]


# Building the parser (what `--help` of any command does) may import the modules that register a
# command's options, never a stage's machinery nor the heavy libraries the commands use.
_SHARED_GROUND = {"harness.errors", "harness.paths", "harness.safeio", "harness.lifeline", "harness.faults"}
_PARSER_MAY_IMPORT = _SHARED_GROUND | {"harness", "harness.cli", "harness.bench",
                      "harness.bisect", "harness.bisect.cli", "harness.nightly", "harness.nightly.filing",
                      "harness.report", "harness.report.history", "harness.reduce", "harness.reduce.cli"}
_HEAVY = ("rich", "jinja2", "jsonschema", "yaml", "filelock", "urllib.request", "http.client", "markdown_it")


def test_building_the_parser_imports_no_stage_and_no_heavy_library():
    code = ("import sys, harness.cli; harness.cli.build_parser(); "
            f"heavy = {_HEAVY!r}; "
            "print('\\n'.join(sorted(m for m in sys.modules if m == 'harness' or m.startswith('harness.') "
            "or any(m == h or m.startswith(h + '.') for h in heavy))))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = set(proc.stdout.split())
    assert not loaded - _PARSER_MAY_IMPORT, f"--help imports more than it needs: {sorted(loaded - _PARSER_MAY_IMPORT)}"
