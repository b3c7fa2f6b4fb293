"""Every exported script is lint-clean: ruff's pyflakes rules (F: unused imports and names, undefined
names, f-strings with nothing to format, ...) over every case on every default-matrix cell.

The folding that makes a script short leaves things behind when it is wrong: a shim helper whose
name a local shadows (`pvary = pvary()`, an undefined name), a fact recorded for the report whose
computation then goes unread, an f-string folded to plain text. Each such leftover is a finding here.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.test_standalone_length import exported_scripts, short_op_scripts


def test_every_exported_script_passes_pyflakes_rules(tmp_path):
    pytest.importorskip("ruff", reason="ruff is in the [test] extra")
    scripts = exported_scripts()
    assert len(scripts) > 1000  # every case on every cell of its family, not a sample
    # and a failing run's op scripts (only the check that failed), every check of every form
    scripts += tuple((f"{case_id} (failing: {check})", cell, script) for case_id, cell, check, script in short_op_scripts())
    names = {}
    for i, (case_id, cell, script) in enumerate(scripts):
        path = tmp_path / f"s{i:04d}.py"
        path.write_text(script)
        names[path.name] = f"{cell}: {case_id}"
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F",
                           "--output-format", "concise", str(tmp_path)], capture_output=True, text=True, timeout=600)
    findings = [ln for ln in proc.stdout.splitlines() if ln.startswith(str(tmp_path))]
    shown = [f"{names[ln[len(str(tmp_path)) + 1:].split(':', 1)[0]]}: {ln.split(': ', 1)[-1]}" for ln in findings[:20]]
    assert proc.returncode == 0 and not findings, f"{len(findings)} findings:\n" + "\n".join(shown) + proc.stderr[-2000:]


def test_a_recorded_fact_is_printed_and_its_assertion_kept():
    """observe.record(values=assert_within_bound(...)) is a check and a number: standalone the script
    prints the number, and the assertion inside still runs (it went with the record before)."""
    case = "suites/torchax/test_entry_points.py::test_interop_jax_jit_of_a_torch_function"
    script = next(s for c, cell, s in exported_scripts() if c == case and cell == "torchax0013-cpu")
    assert "print('values:', assert_within_bound(got, s * b64 + 1.0, bound" in script, script
    assert "observe.record" not in script
