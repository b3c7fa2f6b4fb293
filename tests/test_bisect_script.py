"""`harness bisect --script FILE.py`: an exported reproducer as the probe (no real cell: the probe's
env is this interpreter, so only the wiring is under test; real cells are in test_standalone_fidelity)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.bisect import probe as probe_mod
from harness.bisect.probe import Prober, _package_import_error, script_file
from harness.bisect.report import render
from harness.bisect.search import BAD, GOOD, SKIP
from harness.cells.cell import Cell
from harness.cells.envs import Env


@pytest.fixture
def prober(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAMS_BISECT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(probe_mod, "ensure_env", lambda cell: Env(Path(sys.prefix), Path(sys.executable), {}, True, 0.0))

    def make(body: str, package: str = "jax") -> Prober:
        script = tmp_path / "repro_case.py"
        script.write_text(body)
        base = Cell(name="probe", device="cpu", pins={"jax": "0.6.0"})
        return Prober(base, package, None, "fail", {}, tmp_path / "probes", script=[str(script)])
    return make


@pytest.mark.parametrize("body, answer", [
    ("print('no failure')\n", GOOD),
    ("raise AssertionError('AOT lowered without the host placement')\n", BAD),
    ("raise SystemExit(125)\n", SKIP),
    ("import jax.experimental.nonexistent_api\n", SKIP),                 # the bisected package lacks it
    ("from jax import not_there\n", SKIP),
    ("import absl_not_installed_anywhere\n", BAD),                       # another package: the finding
])
def test_exit_status_and_import_errors_map_to_answers(prober, body, answer):
    if "jax" in body:  # make the package's own import error without installing jax here
        body = "raise ModuleNotFoundError(\"No module named 'jax.experimental.nonexistent_api'\")\n" if "nonexistent" in body \
            else "raise ImportError(\"cannot import name 'not_there' from 'jax' (/x/jax/__init__.py)\")\n"
    ans = prober(body).probe("0.6.0")
    assert ans.answer == answer, ans
    if answer == BAD:  # the probe table shows the exception, not "Traceback (most recent call last):"
        assert ans.reason.startswith(("AssertionError: AOT lowered", "ModuleNotFoundError: No module named 'absl")), ans.reason
    if answer == SKIP and "raise SystemExit" not in body:
        assert ans.reason.startswith("api absent:") and ans.api_absent


def test_the_script_runs_isolated_from_this_checkout(prober, tmp_path):
    # (this interpreter has the project installed editable; a cell env does not: only the path is checked)
    repo = str(Path(__file__).resolve().parent.parent)
    # the interpreter's own site-packages may lie in the checkout (the README's `python3 -m venv .venv`)
    body = ("import sys, os\nassert not [p for p in sys.path if (p.startswith(%r) and not p.startswith(sys.prefix))"
            " or p in ('', '.')], sys.path\n"
            "assert not os.getcwd().startswith(%r)\nprint('isolated')\n" % (repo, repo))
    ans = prober(body).probe("0.6.0")
    assert ans.answer == GOOD, ans.message


def test_the_callers_environment_reaches_a_script_probe_only_through_the_allow_list(prober, monkeypatch):
    """As a cell's pytest: XLA_FLAGS, JAX_*, LD_PRELOAD of the caller's shell are not the probe's; the
    cell's own variables (its matrix's env) and the allow-listed ones are."""
    monkeypatch.setenv("XLA_FLAGS", "--from-the-caller")
    monkeypatch.setenv("JAX_ENABLE_X64", "1")
    monkeypatch.setenv("SOME_TOKEN", "secret")
    monkeypatch.setenv("LANG", "C.UTF-8")
    body = ("import os\nleaked = [k for k in ('XLA_FLAGS', 'JAX_ENABLE_X64', 'SOME_TOKEN') if k in os.environ]\n"
            "assert not leaked, leaked\nassert os.environ.get('LANG') == 'C.UTF-8'\nprint('clean')\n")
    ans = prober(body).probe("0.6.0")
    assert ans.answer == GOOD, ans.message


def test_an_edited_script_is_probed_again(prober):
    p = prober("print('ok')\n")
    assert p.probe("0.6.0").answer == GOOD
    p2 = prober("raise AssertionError('bug')\n")
    assert p2.probe("0.6.0").answer == BAD and not p2.answers["0.6.0"].cached


def test_script_file_only_for_one_existing_py(tmp_path):
    f = tmp_path / "r.py"
    f.write_text("")
    assert script_file([str(f)]) == f.resolve()
    assert script_file(["python", str(f)]) is None
    assert script_file([str(tmp_path / "missing.py")]) is None


def test_import_error_of_other_modules_is_not_an_absence():
    assert _package_import_error("ModuleNotFoundError: No module named 'flax'", "torch-xla") is None
    assert _package_import_error("ModuleNotFoundError: No module named 'torch_xla.core'", "torch-xla")
    assert _package_import_error("AssertionError: x", "jax") is None


def test_the_report_embeds_the_script():
    text = "print('x')\n# ```` fences inside\n"
    summary = {"target": "repro.py", "conclusion": "first bad: jax 0.6.0", "order": [], "probes_run": 2, "cached": 0,
               "n_between": 3, "wall_s": 1.0, "command": "python -m harness bisect ...", "script": ["/tmp/x/repro.py"],
               "script_text": text}
    md = render(summary, [], None, markdown=True)
    assert "<details><summary>repro.py</summary>" in md and "`````python" in md and text.strip() in md
    assert "/tmp/x" not in md
    assert "print('x')" in render(summary, [], None, markdown=False)


def test_a_scripts_reproduce_block_runs_it_with_python_and_installs_only_the_cells_packages():
    """Issue 30: the reproduce block of `bisect --script CASE.py` ran the .py without `python`
    (Permission denied) after installing pytest and hypothesis; now `python CASE.py` after the
    cell's own pins."""
    from harness.bisect.report import reproduce_lines, shown_command
    from harness.cells.cell import Cell

    cell = Cell(name="bisect.jax0.6.0-cpu", device="cpu", pins={"jax": "0.6.0", "jaxlib": "0.6.0"})
    summary = {"script": ["/tmp/x/jax060-cpu__case.py"], "script_text": "print(1)\n"}
    install, run = reproduce_lines(summary, cell)
    assert run == "python jax060-cpu__case.py"
    assert install.startswith("pip install jax==0.6.0 jaxlib==0.6.0") and "pytest" not in install and "hypothesis" not in install
    shown = shown_command(["bisect", "--package", "jax", "--good", "0.5.3", "--bad", "0.6.0", "--out", "/tmp/o",
                           "--markdown", "/tmp/o/b.md", "--script", "/tmp/x/jax060-cpu__case.py"])
    assert shown == "python -m harness bisect --package jax --good 0.5.3 --bad 0.6.0 --script jax060-cpu__case.py"
