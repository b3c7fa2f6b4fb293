"""Small synthetic results files in the real format, for the reader/report/diff tests."""

from __future__ import annotations

import json
from pathlib import Path

SHARD = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[base]"
PVARY = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[pvary]"
COMPUTE = "suites/compute_on/test_eager_vs_aot.py::test_eager_vs_aot[compute_on_outside_jit]"


def case(nodeid: str, raw: str, message: str | None = None, err: float = 0.0) -> list[dict]:
    seams = {"raw": raw, "verdict": "", "error_type": "ValueError" if raw == "fail" else None, "message": message,
             "observations": {"numerics": {"max_abs_err": err, "max_rel_err": err, "rtol": 1e-6, "atol": 1e-6}}}
    return [{"$report_type": "TestStart", "nodeid": nodeid},
            {"$report_type": "TestReport", "nodeid": nodeid, "when": "call",
             "outcome": "passed" if raw == "pass" else ("skipped" if raw == "skip" else "failed"),
             "duration": 0.1, "user_properties": [["seams", seams]]},
            {"$report_type": "TestReport", "nodeid": nodeid, "when": "teardown", "outcome": "passed",
             "duration": 0.0, "user_properties": []}]


def cell_file(tmp: Path, name: str, jax: str, cases: list[list[dict]], end: bool = True,
              extra: list[dict] | None = None) -> Path:
    recs = [{"$report_type": "CellStart", "schema_version": 1, "cell": name, "device": "cpu",
             "pins": {"jax": jax, "jaxlib": jax}, "install_line": f"pip install jax=={jax} jaxlib=={jax}"},
            {"$report_type": "RunInfo", "schema_version": 1, "versions": {"jax": jax, "jaxlib": jax},
             "python": "3.11.7", "platform": "linux-x86_64", "env": {}, "devices": {"device_count": 8}},
            {"$report_type": "Collected", "count": len(cases)}]
    for c in cases:
        recs += c
    recs += extra or []
    if end:
        recs.append({"$report_type": "CellEnd", "cell": name, "complete": True, "status": "complete", "duration_s": 1.0})
    path = tmp / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def known_issues(tmp: Path, entries: str) -> Path:
    path = tmp / "known.yaml"
    path.write_text("issues:\n" + entries)
    return path


SHARD_ISSUE = f"""  - id: jax-28260
    tests: ["{SHARD}"]
    when: {{jax: ">=0.6.0"}}
    expect: fail
    match: "linearized function"
    link: https://github.com/jax-ml/jax/issues/28260
    reason: vma check
"""
