"""Reports: verdicts re-applied without re-running, every output written, scale, diff."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.report.diff import compare
from harness.report.command import report_command
from harness.report.synthetic import write_synthetic_results
from tests.results_fixtures import COMPUTE, PVARY, SHARD, SHARD_ISSUE, case, cell_file, known_issues


def _report(tmp_path: Path, files, issues: str) -> dict:
    out = tmp_path / "out"
    report_command(files, out, known_issues(tmp_path, issues))
    return json.loads((out / "report.json").read_text())


def _verdict(report: dict, case_id: str, cell: str) -> str:
    return next(c for c in report["cases"] if c["id"] == case_id)["results"][cell]["verdict"]


@pytest.fixture
def two_cells(tmp_path):
    return [cell_file(tmp_path, "jax053-cpu", "0.5.3", [case(SHARD, "pass"), case(PVARY, "skip", "api absent: jax.lax.pvary")]),
            cell_file(tmp_path, "jax060-cpu", "0.6.0", [case(SHARD, "fail", "ValueError: linearized function called"),
                                                        case(PVARY, "pass")])]


def test_known_issue_makes_the_failure_a_known_bug(tmp_path, two_cells):
    rep = _report(tmp_path, two_cells, SHARD_ISSUE)
    assert _verdict(rep, SHARD, "jax053-cpu") == "ok"
    assert _verdict(rep, SHARD, "jax060-cpu") == "known-bug"
    assert _verdict(rep, PVARY, "jax053-cpu") == "skipped"
    out = tmp_path / "out"
    for name in ("report.json", "report.html", "report.md", "junit.xml"):
        assert (out / name).stat().st_size > 0
    assert "jax-28260" in (out / "report.md").read_text()


def test_removing_the_expectation_turns_it_into_a_regression_without_rerunning(tmp_path, two_cells):
    rep = _report(tmp_path, two_cells, "")
    assert _verdict(rep, SHARD, "jax060-cpu") == "regression"
    assert rep["counts"]["regression"] == 1


def test_an_expectation_for_a_passing_case_shows_fixed(tmp_path, two_cells):
    issue = SHARD_ISSUE.replace('">=0.6.0"', '">=0.5.0"')
    rep = _report(tmp_path, two_cells, issue)
    assert _verdict(rep, SHARD, "jax053-cpu") == "fixed"
    assert "Fixed upstream?" in (tmp_path / "out" / "report.md").read_text()


def test_failing_differently_from_the_known_issue_is_a_regression(tmp_path):
    f = [cell_file(tmp_path, "jax060-cpu", "0.6.0", [case(SHARD, "fail", "TypeError: something else")])]
    assert _verdict(_report(tmp_path, f, SHARD_ISSUE), SHARD, "jax060-cpu") == "regression"


def test_exit_status_is_one_only_for_news(tmp_path, two_cells):
    assert report_command(two_cells, tmp_path / "a", known_issues(tmp_path, SHARD_ISSUE)) == 0
    assert report_command(two_cells, tmp_path / "b", known_issues(tmp_path, "")) == 1


def test_repro_has_the_pip_line_and_the_scenario(tmp_path, two_cells):
    _report(tmp_path, two_cells, SHARD_ISSUE)
    repro = next((tmp_path / "out" / "repro").glob("jax060-cpu__*linearize*.md")).read_text()
    assert "pip install jax==0.6.0 jaxlib==0.6.0" in repro
    # the scenario as its core (what is checked), not the pytest wrapper that hands it a fixture
    assert "def linearize_transpose(" in repro and "def test_linearize_transpose" not in repro, repro


def test_junit_is_well_formed(tmp_path, two_cells):
    import xml.etree.ElementTree as ET

    _report(tmp_path, two_cells, "")
    root = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    suites = {s.get("name"): s for s in root}
    assert suites["jax060-cpu"].get("failures") == "1" and suites["jax053-cpu"].get("skipped") == "1"


def test_ten_thousand_results_render_small(tmp_path):
    # Speed is the benchmark's business (`python -m harness bench report`), not a timed test's.
    files = write_synthetic_results(tmp_path / "in", results=10_000)
    report_command(files, tmp_path / "out", known_issues(tmp_path, ""))
    size = (tmp_path / "out" / "report.html").stat().st_size
    assert size < 1_000_000, f"report.html is {size} bytes"


def test_diff_categories(tmp_path):
    old = [cell_file(tmp_path, "a-cpu", "0.6.0", [case(SHARD, "pass", err=1e-9), case(PVARY, "fail", "x"), case(COMPUTE, "pass")])]
    rep_old = _report(tmp_path, old, "")
    new_dir = tmp_path / "new"
    new_dir.mkdir()
    new = [cell_file(new_dir, "a-cpu", "0.6.0", [case(SHARD, "fail", "y"), case(PVARY, "pass"),
                                                 case("suites/x.py::test_new", "pass")])]
    (new_dir / "known.yaml").write_text("issues: []\n")
    report_command(new, new_dir / "out", new_dir / "known.yaml")
    rep_new = json.loads((new_dir / "out" / "report.json").read_text())
    ch = compare(rep_old, rep_new)
    assert [r["case"] for r in ch["regressed"]] == [SHARD]
    assert [r["case"] for r in ch["fixed"]] == [PVARY]
    assert [r["case"] for r in ch["new"]] == ["suites/x.py::test_new"]
    assert [r["case"] for r in ch["gone"]] == [COMPUTE]


def test_numeric_drift_is_reported(tmp_path):
    a = _report(tmp_path, [cell_file(tmp_path, "a-cpu", "0.6.0", [case(SHARD, "pass", err=1e-9)])], "")
    b_dir = tmp_path / "b"
    b_dir.mkdir()
    (b_dir / "known.yaml").write_text("issues: []\n")
    report_command([cell_file(b_dir, "a-cpu", "0.6.0", [case(SHARD, "pass", err=8e-7)])], b_dir / "out", b_dir / "known.yaml")
    ch = compare(a, json.loads((b_dir / "out" / "report.json").read_text()))
    assert [r["case"] for r in ch["drift"]] == [SHARD]


@pytest.mark.browser
def test_html_report_renders_in_a_real_browser(tmp_path, two_cells):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    _report(tmp_path, two_cells, SHARD_ISSUE)
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--disable-component-update", "--no-first-run", "--virtual-time-budget=3000",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           (tmp_path / "out" / "report.html").as_uri()], capture_output=True, text=True, timeout=120)
    dom = proc.stdout
    assert "known-bug 1" in dom, "the verdict badges were rendered by the page's script"
    assert "test_linearize_transpose[base]" in dom and 'class="v"' in dom, "the grid was rendered"
