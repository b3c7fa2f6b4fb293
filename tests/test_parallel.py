"""`harness run -j N`: the scheduler's defaults, the same results as a serial run, and no pytest
left behind when the run is interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.run import parallel
from harness.cells.cell import Cell

REPO = Path(__file__).resolve().parent.parent
CELLS = ("jax053-cpu", "jax060-cpu")


def _cell(name: str, **pins: str) -> Cell:
    return Cell(name=name, device="cpu", pins=pins)


def test_torch_cells_weigh_a_core_jax_cells_half():
    assert parallel.cell_weight(_cell("x", torch="2.9.0", torch_xla="2.9.0", jax="0.7.1")) == parallel.HEAVY
    assert parallel.cell_weight(_cell("t", torch="2.9.0", torchax="0.0.4")) == parallel.HEAVY
    assert parallel.cell_weight(_cell("j", jax="0.6.0", jaxlib="0.6.0")) == parallel.LIGHT < parallel.HEAVY


@pytest.mark.parametrize("ncores, kinds, expected", [
    (2, "jjjj", 4), (2, "jjjjj", 4), (2, "xxxx", 2), (2, "jjxx", 3), (1, "x", 1), (1, "xxx", 1), (8, "jjxx", 4),
])
def test_default_jobs_fill_the_cores_by_weight(monkeypatch, ncores, kinds, expected):
    monkeypatch.setattr(parallel, "cores", lambda: ncores)
    cells = [_cell(f"c{i}", jax="0.6.0") if k == "j" else _cell(f"c{i}", torch="2.9.0", torch_xla="2.9.0")
             for i, k in enumerate(kinds)]
    assert parallel.default_jobs(cells) == expected


def test_bad_jobs_value_is_one_line_and_exit_2():
    for argv, env in ((["-j", "0"], {}), ([], {"SEAMS_JOBS": "many"}), ([], {"SEAMS_TIMEOUT": "-3"})):
        proc = subprocess.run([sys.executable, "-m", "harness", "run", "--cell", "jax053-cpu", *argv], cwd=REPO,
                              capture_output=True, text=True, env={**os.environ, **env}, timeout=60)
        assert proc.returncode == 2, (argv, env, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def _run(out: Path, jobs: int, *pytest_args: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "harness", "run", *sum((["--cell", c] for c in CELLS), []), "-j", str(jobs),
            "--out", str(out), "--", *pytest_args]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)


def _verdicts(report: Path) -> dict:
    doc = json.loads(report.read_text())
    cells = {c["cell"]: (c["status"], c["counts"]) for c in doc["cells"]}
    cases = {(case["id"], cell): (r["raw"], r["verdict"], r["message"])
             for case in doc["cases"] for cell, r in case["results"].items()}
    return {"cells": cells, "cases": cases, "counts": doc["counts"]}


@pytest.mark.e2e
def test_parallel_run_writes_what_a_serial_run_writes(tmp_path):
    serial, par = _run(tmp_path / "serial", 1, "-k", "linearize"), _run(tmp_path / "par", 2, "-k", "linearize")
    assert serial.returncode == par.returncode == 0, serial.stderr[-2000:] + par.stderr[-2000:]
    for sub in ("results", "logs"):
        assert sorted(p.name for p in (tmp_path / "serial" / sub).iterdir() if not p.name.endswith(".lock")) == \
            sorted(p.name for p in (tmp_path / "par" / sub).iterdir() if not p.name.endswith(".lock"))
    s, p = _verdicts(tmp_path / "serial" / "report.json"), _verdicts(tmp_path / "par" / "report.json")
    assert s == p and set(s["cells"]) == set(CELLS) and s["cases"]
    for name in ("report.html", "report.md", "junit.xml"):
        assert (tmp_path / "par" / name).is_file()
    assert "== cell 2/2" in par.stderr


def _pytests_writing_to(root: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if "pytest" in cmd and str(root) in cmd:
                found.append(int(entry.name))
    return found


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_interrupting_a_parallel_run_ends_every_cells_pytest(tmp_path, sig):
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", *sum((["--cell", c] for c in CELLS), []),
                             "-j", "2", "--out", str(out), "--no-report", "--", "tests/drills/test_slow.py"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(_pytests_writing_to(out)) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_pytests_writing_to(out)) >= 2, "both cells' pytest should be running"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and "Traceback" not in err, err
    deadline = time.monotonic() + parallel.GRACE_S + 2
    while _pytests_writing_to(out) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _pytests_writing_to(out), "a cell's pytest outlived the interrupted run"


def test_a_worker_gets_exactly_the_parents_cell():
    import dataclasses

    from harness.cells.matrix import catalogue

    cells = list(catalogue().cells)
    cells.append(dataclasses.replace(cells[0], name="float-cpu", floating={"jax": "nightly"},
                                     extra_index_urls=("https://example.invalid/simple",), find_links=("wheels",)))
    for c in cells:
        assert parallel.cell_from_json(parallel.cell_to_json(c)) == c, c.name


@pytest.mark.e2e
def test_a_worker_that_cannot_run_its_cell_fails_the_run_without_a_report(tmp_path):
    from filelock import FileLock

    out = tmp_path / "out"
    (out / "results").mkdir(parents=True)
    with FileLock(str(out / "results" / "jax053-cpu.jsonl.lock")):  # another run is writing that cell
        proc = _run(out, 2, "-k", "linearize_transpose and base")
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]  # one error line, the last: the worker's reason, what finished
    assert last.startswith("error: jax053-cpu: ") and "another run" in last and "(exit 2)" in last, proc.stderr
    assert "finished, their results kept" in last and last.endswith(": jax060-cpu"), last
    assert [ln for ln in proc.stderr.splitlines() if ln.startswith("error")] == [last], proc.stderr
    assert not (out / "report.json").exists(), "no report from a partial run"


@pytest.mark.e2e
def test_parallel_no_report_names_the_news_and_exits_1(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "harness", "run", *sum((["--cell", c] for c in CELLS), []), "-j", "2",
                           "--out", str(tmp_path), "--no-report", "--", "tests/drills/test_faults.py", "-k",
                           "ok_before or abort"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr
    for cell in CELLS:
        assert f"news: {cell}: crash: tests/drills/test_faults.py::test_abort" in proc.stdout, proc.stdout  # the summary: stdout


@pytest.mark.e2e
def test_a_worker_killed_by_a_signal_is_its_cells_crash_and_the_rest_is_reported(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "-j", "2", *sum((["--cell", c] for c in CELLS), []),
                             "--out", str(tmp_path), "--xdist", "0", "--", "tests/drills/test_slow.py"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim, deadline = None, time.monotonic() + 240
    while victim is None and time.monotonic() < deadline:  # jax053-cpu's worker, once its tests run
        results = tmp_path / "results" / "jax053-cpu.jsonl"
        if results.exists() and '"TestStart"' in results.read_text():
            for entry in Path("/proc").iterdir():
                try:
                    cmd = (entry / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"--worker-cell" in cmd and any(b'"jax053-cpu"' in part for part in cmd):
                    victim = int(entry.name)
        time.sleep(0.1)
    assert victim, "the worker never started its tests"
    os.kill(victim, signal.SIGKILL)
    _out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "internal error" not in err and "Traceback" not in err
    doc = json.loads((tmp_path / "report.json").read_text())
    cells = {c["cell"]: c for c in doc["cells"]}
    assert cells["jax060-cpu"]["status"] == "complete"
    assert cells["jax053-cpu"]["status"] == "incomplete" and "died with SIGKILL" in cells["jax053-cpu"]["reason"]
