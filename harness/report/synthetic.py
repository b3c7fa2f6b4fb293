"""Synthetic results files (for benchmarks and tests of the report at scale): real format, fake runs."""

from __future__ import annotations

import json
import random
from pathlib import Path

from packaging.version import Version

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


# The jax releases of the real sweep (matrices/sweeps/jax.yaml), oldest first.
JAX_SWEEP = ("0.4.38", "0.5.0", "0.5.1", "0.5.2", "0.5.3", "0.6.0", "0.6.1", "0.6.2", "0.7.0", "0.7.1", "0.7.2",
             "0.8.0", "0.8.1", "0.8.2", "0.9.0", "0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.2")
LINEARIZE = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose"
EAGER_AOT = "suites/compute_on/test_eager_vs_aot.py::test_eager_vs_aot"


def sweep_cell_name(version: str) -> str:
    """jax 0.10.2 -> jax0102-cpu, as the sweep names its cells."""
    return "jax" + version.replace(".", "") + "-cpu"


def _sweep_case(version: Version, nodeid: str) -> tuple[str, str | None]:
    """(raw outcome, message) of one case at one jax release: the shapes a real sweep shows."""
    boundary = Version("0.6.0")
    if nodeid == f"{LINEARIZE}[base]":  # jax-ml/jax#28260: fails from 0.6.0 on
        return ("fail", "ValueError: linearized function called on tangent values inconsistent with the original primal values") \
            if version >= boundary else ("pass", None)
    if nodeid == f"{LINEARIZE}[pvary]":  # the API appeared in 0.6.0
        return ("pass", None) if version >= boundary else ("skip", "api absent: jax.lax.pvary")
    if nodeid == f"{EAGER_AOT}[compute_on_outside_jit]":  # jax-ml/jax#27825, fixed in 0.6.0
        return ("pass", None) if version >= boundary else ("fail", 'AssertionError: compute_on lowered without _xla_compute_type = "host"')
    if nodeid.startswith("suites/call_jax/"):  # a torch_xla family: not installed in a jax-only cell
        return "skip", "not in cell: torch_xla is not installed in this cell"
    if nodeid.startswith("suites/torchax/"):
        return "skip", "not in cell: torchax is not installed in this cell"
    return "pass", None


def sweep_case_ids() -> list[str]:
    """The case ids of the synthetic sweep: real ids of the shard_map and compute_on families, and skipped families."""
    return ([f"{LINEARIZE}[{p}]" for p in ("base", "pvary", "pcast")]
            + [f"{EAGER_AOT}[{p}]" for p in ("compute_on_outside_jit", "compute_on_inside_jit")]
            + [f"suites/call_jax/test_unused_args.py::test_unused_arg[{i}]" for i in range(6)]
            + [f"suites/torchax/test_roundtrip.py::test_roundtrip[{d}]" for d in ("float32", "bfloat16", "int32")])


def write_jax_sweep_results(out_dir: Path, versions: tuple[str, ...] = JAX_SWEEP,
                            drop: dict[str, str] | None = None) -> list[Path]:
    """One results file per jax release, as `run --matrix matrices/sweeps/jax.yaml` writes them.

    The 0.6.0 boundary is there the way the real sweep shows it: linearize-transpose fails from
    0.6.0, pvary is absent before it, compute_on eager vs AOT is fixed in it; the torch_xla and
    torchax families are skipped in every cell. `drop` maps a version to a case id missing there.
    Files come back in name order (jax0100 before jax0438), which is not version order.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ver in versions:
        name = sweep_cell_name(ver)
        pins = {"jax": ver, "jaxlib": ver}
        ids = [i for i in sweep_case_ids() if (drop or {}).get(ver) != i]
        recs = [{"$report_type": "CellStart", "schema_version": 1, "cell": name, "device": "cpu", "pins": pins,
                 "install_line": f"pip install jax=={ver} jaxlib=={ver}", "started_at": "2026-11-23T12:00:00+00:00"},
                {"$report_type": "RunInfo", "schema_version": 1, "versions": pins, "python": "3.11.7",
                 "platform": "linux-x86_64", "env": {}, "devices": {"device_count": 8}},
                {"$report_type": "Collected", "count": len(ids)}]
        for nodeid in ids:
            raw, message = _sweep_case(Version(ver), nodeid)
            seams = {"raw": raw, "verdict": "", "error_type": message.split(":")[0] if raw == "fail" else None,
                     "message": message, "observations": {}}
            recs += [{"$report_type": "TestStart", "nodeid": nodeid},
                     {"$report_type": "TestReport", "nodeid": nodeid, "when": "call",
                      "outcome": {"pass": "passed", "skip": "skipped"}.get(raw, "failed"), "duration": 0.01,
                      "user_properties": [["seams", seams]]},
                     {"$report_type": "TestReport", "nodeid": nodeid, "when": "teardown", "outcome": "passed",
                      "duration": 0.0, "user_properties": []}]
        recs.append({"$report_type": "CellEnd", "cell": name, "complete": True, "status": "complete", "duration_s": 1.0})
        path = out_dir / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
        paths.append(path)
    return sorted(paths)
