"""A collection error is judged live (the cell's progress lines, its count) as the report judges it:
against the known issues, from the same message. It used to be a 'regression' live whatever the known
issues said, while the report called the same error a known bug."""

from __future__ import annotations

from pathlib import Path

from harness.judge import results
from harness.judge.live import case_judge
from harness.run import cellrun
from harness.run.cellrun import _Watch

KNOWN = """\
schema: 1
issues:
  - id: bridge-import-broken
    tests: ["suites/x/test_a.py"]
    when: {jax: ">=0.9"}
    devices: [cpu]
    expect: error
    match: "cannot import name 'gone' from 'jax\\\\.experimental'"
    link: none filed
    reason: "a test fixture for the live judge"
"""

LONGREPR = {"reprcrash": {"path": "/x/bridge.py", "lineno": 19,
                          "message": "ImportError: cannot import name 'gone' from 'jax.experimental' (/x/jax.py)"}}


def _verdicts(tmp_path: Path, nodeid: str, jax: str) -> tuple[dict, list]:
    known = tmp_path / "known.yaml"
    known.write_text(KNOWN)
    watch = _Watch(judge=case_judge(known), versions={"jax": jax})
    events: list = []
    watch.feed({"$report_type": "CollectReport", "outcome": "failed", "nodeid": nodeid, "longrepr": LONGREPR},
               lambda _cell, event: events.append(event), "c")
    return watch.verdicts, events


def test_a_known_collection_error_is_a_known_bug_live(tmp_path):
    verdicts, events = _verdicts(tmp_path, "suites/x/test_a.py", "0.10.2")
    assert verdicts == {"known-bug": 1}
    assert events[0]["verdict"] == "known-bug" and events[0]["signal"] == "collection error"


def test_an_unknown_one_is_a_regression_live(tmp_path):
    assert _verdicts(tmp_path, "suites/x/test_b.py", "0.10.2")[0] == {"regression": 1}
    assert _verdicts(tmp_path, "suites/x/test_a.py", "0.8.0")[0] == {"regression": 1}, "outside the range"


def test_live_and_report_read_the_same_message():
    assert cellrun.collect_message is results.collect_message
