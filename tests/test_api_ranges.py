"""API presence ranges: validated as data, judged in the plugin and again in reports (no real jax)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.judge.apis import DEFAULT_PATH, api_drift, load_api_ranges, observed_apis
from harness.errors import UserError
from harness.judge.outcomes import FAILING_VERDICTS
from harness.report.command import report_command
from harness.judge.verdicts import judge_case
from tests.results_fixtures import cell_file, known_issues

REPO = Path(__file__).resolve().parent.parent
PVARY_CASE = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[pvary]"
RANGES = """apis:
  - api: jax.lax.pvary
    package: jax
    shipped: ">=0.6.0,<0.10.0"
    evidence: jax/lax/__init__.py at the tags
    link: https://github.com/jax-ml/jax/blob/main/CHANGELOG.md
  - api: torch_xla.core.xla_builder.call_jax
    package: torch_xla
    shipped: ">=2.7.0"
    evidence: cells
    link: none filed
"""


@pytest.fixture
def ranges(tmp_path):
    path = tmp_path / "apis.yaml"
    path.write_text(RANGES)
    return load_api_ranges(path)


def _judge(raw, ranges, jax=None, message=None, observations=None, torch_xla=None):
    versions = {"jax": jax, "torch_xla": torch_xla}
    return judge_case(raw, [], message, observations, versions, ranges)


def test_absent_outside_the_range_is_a_plain_skip(ranges):
    for version in ("0.5.3", "0.4.38", "0.10.0", "0.10.2"):
        v, basis = _judge("skip", ranges, version, "api absent: jax.lax.pvary (jax x)", {"apis": {"jax.lax.pvary": False}})
        assert (v, basis) == ("skipped", None), version


def test_absent_inside_the_range_is_api_drift_naming_range_and_version(ranges):
    v, basis = _judge("skip", ranges, "0.7.2", "api absent: jax.lax.pvary (jax 0.7.2)", {"apis": {"jax.lax.pvary": False}})
    assert v == "api-drift" and v in FAILING_VERDICTS
    assert "jax.lax.pvary" in basis.reason and "0.7.2" in basis.reason
    assert "<0.10.0" in basis.reason and ">=0.6.0" in basis.reason and "apis.yaml" in basis.reason
    assert basis.id == "api-range:jax.lax.pvary" and basis.link.startswith("https://")


def test_present_outside_the_range_is_api_drift_even_when_the_case_passed(ranges):
    v, basis = _judge("pass", ranges, "0.5.3", observations={"apis": {"jax.lax.pvary": True}})
    assert v == "api-drift"
    assert "present in jax 0.5.3" in basis.reason and "outside" in basis.reason


def test_present_inside_the_range_leaves_the_verdict_alone(ranges):
    assert _judge("pass", ranges, "0.6.0", observations={"apis": {"jax.lax.pvary": True}})[0] == "ok"
    assert _judge("fail", ranges, "0.6.0", "boom", {"apis": {"jax.lax.pvary": True}})[0] == "regression"


def test_a_case_already_news_keeps_its_verdict(ranges):
    # A regression is news already; the drift does not hide it behind another name.
    assert _judge("fail", ranges, "0.5.3", "boom", {"apis": {"jax.lax.pvary": True}})[0] == "regression"


def test_the_skip_message_alone_is_judged_for_results_without_the_observation(ranges):
    assert _judge("skip", ranges, "0.6.0", "api absent: jax.lax.pvary (jax 0.6.0)")[0] == "api-drift"
    assert _judge("skip", ranges, "0.5.3", "api absent: jax.lax.pvary")[0] == "skipped"


def test_an_absence_with_no_recorded_range_is_news_not_green(ranges):
    v, basis = _judge("skip", ranges, "0.6.0", "api absent: jax.lax.pmagic")
    assert v == "api-drift" and "no recorded release range" in basis.reason


def test_other_skips_and_absent_packages_are_not_api_judgements(ranges):
    assert _judge("skip", ranges, "0.6.0", "needs 8 devices, have 1")[0] == "skipped"
    # call_jax absent where torch_xla is not installed says nothing about torch_xla's releases.
    assert _judge("skip", ranges, "0.6.0", observations={"apis": {"torch_xla.core.xla_builder.call_jax": False}})[0] == "skipped"
    assert _judge("skip", ranges, None, "api absent: torch_xla.core.xla_builder.call_jax", torch_xla="2.6.0")[0] == "skipped"
    assert _judge("skip", ranges, None, "api absent: torch_xla.core.xla_builder.call_jax", torch_xla="2.8.1")[0] == "api-drift"


def test_observed_apis_reads_observation_then_message():
    assert observed_apis({"apis": {"a.b": True}}, "api absent: c.d (x)") == {"a.b": True, "c.d": False}
    assert observed_apis(None, "api absent: jax.experimental.compute_on(gpu_stream:N) (jax 0.5.0)") == \
        {"jax.experimental.compute_on(gpu_stream:N)": False}
    assert observed_apis(None, "skipped for another reason") == {}


def test_api_drift_uses_canonical_package_names(ranges):
    assert api_drift({"torch_xla.core.xla_builder.call_jax": False}, {"torch-xla": "2.9.0"}, ranges)


@pytest.mark.parametrize("text, where, words", [
    ("apis:\n  - {api: a, package: jax, shipped: '=>0.6', evidence: e, link: 'https://x'}\n", 2, "PEP 440"),
    ("apis:\n  - {api: a, package: jax, shipped: '>=0.6', evidence: e, link: 'see slack'}\n", 2, "link"),
    ("apis:\n  - {api: a, package: jax, shipped: '>=0.6', link: 'https://x'}\n", 2, "evidence"),
    ("apis:\n  - {api: a, package: jax, shipped: '>=0.6', evidence: e, link: 'https://x', since: 1}\n", 2, "since"),
    ("apis:\n  - {api: a, package: jax, shipped: '>=0.6', evidence: e, link: 'https://x'}\n"
     "  - {api: a, package: jax, shipped: '>=0.7', evidence: e, link: 'https://x'}\n", 3, "duplicate"),
    ("apiz: []\n", 1, "apis:"),
])
def test_bad_ranges_name_file_and_line(tmp_path, text, where, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        load_api_ranges(path)
    assert f"{path}:{where}:" in str(err.value) and words in str(err.value)


def test_validate_reports_a_bad_range_in_one_line_exit_2(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("apis:\n  - {api: a, package: jax, shipped: '=>0.6', evidence: e, link: 'https://x'}\n")
    proc = subprocess.run([sys.executable, "-m", "harness", "validate", str(path)], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and f"{path}:2:" in proc.stderr


def test_the_shipped_ranges_load_and_cover_every_bridged_api():
    ranges = load_api_ranges(DEFAULT_PATH)
    names = {"jax.lax.pvary", "jax.lax.pcast", "jax.shard_map", "jax.experimental.shard_map",
             "jax.experimental.compute_on", "jax.experimental.compute_on(gpu_stream:N)",
             "torch_xla.core.xla_builder.call_jax"}
    assert names <= set(ranges)


def _skip_case(nodeid: str, api: str) -> list[dict]:
    seams = {"raw": "skip", "verdict": "", "error_type": None, "message": f"api absent: {api} (jax x)",
             "observations": {"apis": {api: False}}}
    return [{"$report_type": "TestStart", "nodeid": nodeid},
            {"$report_type": "TestReport", "nodeid": nodeid, "when": "setup", "outcome": "skipped",
             "duration": 0.0, "user_properties": [["seams", seams]]}]


def test_a_report_rerendered_with_a_corrected_range_changes_without_rerunning(tmp_path, monkeypatch):
    files = [cell_file(tmp_path, "jax072-cpu", "0.7.2", [_skip_case(PVARY_CASE, "jax.lax.pvary")])]
    ranges = tmp_path / "apis.yaml"
    ranges.write_text(RANGES)
    monkeypatch.setenv("SEAMS_APIS", str(ranges))
    out = tmp_path / "out"
    assert report_command(files, out, known_issues(tmp_path, "")) == 1
    rep = json.loads((out / "report.json").read_text())
    result = rep["cases"][0]["results"]["jax072-cpu"]
    assert result["verdict"] == "api-drift" and result["raw"] == "skip"
    assert "0.7.2" in result["expectation"]["reason"]
    md = (out / "report.md").read_text()
    assert "API drift" in md and "0.6.0" in md and "jax.lax.pvary is absent from jax 0.7.2" in md
    # Upstream's real range turns out narrower (say it left in 0.7.0): only the data changes.
    ranges.write_text(RANGES.replace(">=0.6.0,<0.10.0", ">=0.6.0,<0.7.0"))
    assert report_command(files, out, known_issues(tmp_path, "")) == 0
    rep = json.loads((out / "report.json").read_text())
    assert rep["cases"][0]["results"]["jax072-cpu"]["verdict"] == "skipped"


FAKE_SUITE = """
from hypothesis import example, given, settings, strategies as st

from harness.incell.compat import api_absent, found


def test_gone():
    api_absent("fake.gone", "numpy x")


def test_there():
    found("fake.there", True)


@settings(max_examples=50, derandomize=True, database=None)
@given(st.integers(min_value=0, max_value=1000))
def test_property(n):
    assert n < 17, "too big"


@example(n=5)
@given(st.integers(min_value=0, max_value=3))
def test_explicit(n):
    assert n < 5, "explicit too big"
"""
FAKE_RANGES = """apis:
  - {api: fake.gone, package: numpy, shipped: "%s", evidence: e, link: none filed}
  - {api: fake.there, package: numpy, shipped: "%s", evidence: e, link: none filed}
"""


def _run_fake(tmp_path: Path, gone: str, there: str) -> tuple[int, dict[str, dict]]:
    suite = tmp_path / "suite"
    suite.mkdir(exist_ok=True)
    (suite / "conftest.py").write_text('pytest_plugins = ["harness.incell.plugin"]\n')
    (suite / "test_fake.py").write_text(FAKE_SUITE)
    (tmp_path / "ranges.yaml").write_text(FAKE_RANGES % (gone, there))
    results = tmp_path / "results.jsonl"
    results.unlink(missing_ok=True)
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite),
                           "--seams-results", str(results)],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    out = {}
    for line in results.read_text().splitlines():
        rec = json.loads(line)
        for name, value in rec.get("user_properties") or []:
            if name == "seams":
                out[rec["nodeid"].split("::")[-1]] = value
    return proc.returncode, out


def _judged(tmp_path: Path, value: dict) -> tuple[str, object]:
    """The host-side judgement of one recorded case against the fake ranges (numpy's real version)."""
    import numpy

    from harness.judge.apis import load_api_ranges
    from harness.judge.verdicts import judge_case

    ranges = load_api_ranges(tmp_path / "ranges.yaml")
    return judge_case(value["raw"], [], value["message"], value["observations"], {"numpy": numpy.__version__}, ranges)


def test_the_plugin_records_probes_and_the_host_judges_them(tmp_path):
    rc, res = _run_fake(tmp_path, gone="<1", there=">=1")
    assert "verdict" not in res["test_gone"], "the plugin records facts; verdicts are the host's"
    assert res["test_gone"]["raw"] == "skip" and res["test_gone"]["message"].startswith("api absent: fake.gone")
    assert res["test_gone"]["observations"]["apis"] == {"fake.gone": False}
    assert res["test_there"]["observations"]["apis"] == {"fake.there": True}
    assert _judged(tmp_path, res["test_gone"])[0] == "skipped" and _judged(tmp_path, res["test_there"])[0] == "ok"
    # Probes belong to one test: the next test does not inherit them.
    assert "apis" not in res["test_property"]["observations"]
    assert rc == 1  # the failing property
    rc, res = _run_fake(tmp_path, gone=">=1", there="<1")
    verdict, basis = _judged(tmp_path, res["test_gone"])
    assert verdict == "api-drift" and "absent from numpy" in basis.reason
    verdict, basis = _judged(tmp_path, res["test_there"])
    assert verdict == "api-drift" and "present in numpy" in basis.reason
    assert rc == 1


def test_a_failed_property_names_its_falsifying_example(tmp_path):
    _rc, res = _run_fake(tmp_path, gone="<1", there=">=1")
    prop = res["test_property"]
    assert prop["raw"] == "fail"
    assert prop["message"].startswith("too big")
    assert ("Falsifying example" in prop["message"] or "Failing test case" in prop["message"]) and "n=17" in prop["message"]
    assert "n=17" in prop["observations"]["falsifying_example"]
    explicit = res["test_explicit"]
    assert "explicit example" in explicit["message"] and "n=5" in explicit["message"]


@pytest.mark.e2e
def test_api_drift_on_a_real_cell_in_run_and_rejudged(tmp_path, monkeypatch):
    """jax 0.5.3 has no jax.lax.pvary: `skipped` under the real range; under a range claiming it
    shipped from 0.5.0, the same run is `api-drift` (exit 1), and the report re-judges it back.
    The cell records facts only; the run's judge (handed in by the caller) and the report decide."""
    from harness.run.cellrun import run_cell
    from harness.cells.matrix import catalogue
    from harness.judge.live import case_judge
    from harness.judge.results import read_results

    case_id = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[pvary]"
    wrong = tmp_path / "apis"
    wrong.mkdir()
    text = (DEFAULT_PATH / "jax.yaml").read_text().replace('">=0.6.0,<0.10.0"', '">=0.5.0,<0.10.0"')
    (wrong / "jax.yaml").write_text(text)
    out = tmp_path / "jax053.jsonl"
    run = run_cell(catalogue().cell("jax053-cpu"), out, [case_id], timeout_s=300,
                   judge=case_judge(known_issues(tmp_path, ""), wrong))
    case = read_results(out).cases[case_id]
    assert case.raw == "skip" and case.message.startswith("api absent: jax.lax.pvary")
    assert case.observations["apis"] == {"jax.lax.pvary": False}
    assert run.status == "complete" and run.verdicts.get("api-drift") == 1, run.verdicts
    rec = [json.loads(line) for line in out.read_text().splitlines() if '"seams"' in line]
    assert all("verdict" not in v for r in rec for n, v in r["user_properties"] if n == "seams"), "facts only"
    # The report under the wrong ranges says api-drift; with the real ranges (no rerun) it says skipped.
    monkeypatch.setenv("SEAMS_APIS", str(wrong))
    assert report_command([out], tmp_path / "drift", known_issues(tmp_path, "")) == 1
    drift = json.loads((tmp_path / "drift" / "report.json").read_text())
    assert drift["cases"][0]["results"]["jax053-cpu"]["verdict"] == "api-drift"
    monkeypatch.delenv("SEAMS_APIS", raising=False)
    rep_out = tmp_path / "rep"
    assert report_command([out], rep_out, known_issues(tmp_path, "")) == 0
    rep = json.loads((rep_out / "report.json").read_text())
    assert rep["cases"][0]["results"]["jax053-cpu"]["verdict"] == "skipped"
