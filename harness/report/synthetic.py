"""Synthetic results files (for benchmarks and tests of the report at scale): real format, fake runs."""

from __future__ import annotations

import json
import random
from pathlib import Path

_RAWS = ["pass"] * 80 + ["fail"] * 8 + ["skip"] * 10 + ["error"]


def write_synthetic_results(out_dir: Path, results: int = 10_000, cells: int = 20, seed: int = 0) -> list[Path]:
    """Write `cells` results files holding `results` test results in total; returns their paths."""
    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    per_cell = results // cells
    paths = []
    for c in range(cells):
        name = f"syn{c:02d}-cpu"
        path = out_dir / f"{name}.jsonl"
        recs = [{"$report_type": "CellStart", "schema_version": 1, "cell": name, "device": "cpu",
                 "pins": {"jax": f"0.{4 + c % 7}.{c % 3}"}, "install_line": f"pip install jax==0.{4 + c % 7}.{c % 3}"},
                {"$report_type": "RunInfo", "schema_version": 1, "versions": {"jax": f"0.{4 + c % 7}.{c % 3}"},
                 "python": "3.11.7", "platform": "linux-x86_64", "env": {}, "devices": {"device_count": 8}},
                {"$report_type": "Collected", "count": per_cell}]
        for i in range(per_cell):
            nodeid = f"suites/fam{i % 5}/test_x.py::test_case[{i}]"
            raw = rng.choice(_RAWS)
            seams = {"raw": raw, "verdict": "", "error_type": "AssertionError" if raw == "fail" else None,
                     "message": f"mismatch at index {i}" if raw == "fail" else ("not in cell: torch_xla is not installed in this cell" if raw == "skip" else None),
                     "observations": {"numerics": {"max_abs_err": rng.random() * 1e-7, "max_rel_err": 1e-7, "rtol": 1e-6, "atol": 1e-6}}}
            recs.append({"$report_type": "TestStart", "nodeid": nodeid})
            recs.append({"$report_type": "TestReport", "nodeid": nodeid, "when": "call",
                         "outcome": "passed" if raw == "pass" else "failed", "duration": 0.01,
                         "user_properties": [["seams", seams]]})
            recs.append({"$report_type": "TestReport", "nodeid": nodeid, "when": "teardown", "outcome": "passed",
                         "duration": 0.0, "user_properties": []})
        recs.append({"$report_type": "CellEnd", "cell": name, "complete": True, "status": "complete", "duration_s": 1.0})
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
        paths.append(path)
    return paths
