"""The anomaly loop: fail each of the harness's file and process calls in turn, and the run stays honest.

SQLite's method (harness.faults): run a small cell plus its report once to count the fault points
(open, write, rename, fsync, mkdir, spawn, kill), then again once per point with that call failing.
Every time: no exit 3 and no traceback, one line for exit 2, finished results readable, exit 0 only
for a whole and complete report, no temporary file left, no process left behind.

The cell is real harness code end to end (cli.main -> run_cell -> pytest + plugin -> report); only
the env is the host's interpreter (tests/drills/test_tiny.py needs nothing a cell env adds), so
each pass takes a second or two instead of a jax import.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import cli, faults
from harness.cells import envs
from harness.errors import UserError
from harness.judge.results import read_results

REPO = Path(__file__).resolve().parent.parent
DRILL = "tests/drills/test_tiny.py"
CASES = 3
TAG = "SEAMS_ANOMALY_TAG"


@pytest.fixture
def harness_cli(monkeypatch, capsys):
    """cli.main in this process with the host interpreter as the cell's env; handlers restored after."""
    monkeypatch.setattr(envs, "ensure_env", lambda cell, log=None: envs.Env(Path(sys.prefix), Path(sys.executable),
                                                                            {}, True, 0.0))
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}

    def call(*argv: str) -> tuple[int, str]:
        monkeypatch.setenv(TAG, uuid.uuid4().hex)
        capsys.readouterr()
        rc = cli.main(list(argv))
        return rc, capsys.readouterr().err

    yield call
    faults.arm(None)
    for s, h in saved.items():
        signal.signal(s, h)


def _matrix(tmp_path: Path) -> Path:
    m = tmp_path / "m.yaml"
    m.write_text("include:\n  - name: tiny-cpu\n    pins: {jax: 0.6.0}\n")
    return m


def _tagged_processes(tag: str) -> list[int]:
    """Live processes whose environment carries this pass's tag: the cell's pytest and anything it started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if f"{TAG}={tag}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def _check_invariants(where: str, rc: int, err: str, out: Path, results: Path | None) -> None:
    assert rc in (0, 1, 2), f"{where}: exit {rc}: {err[-800:]}"
    assert "Traceback" not in err and "internal error" not in err, f"{where}: {err[-800:]}"
    if rc == 2:
        assert len([ln for ln in err.splitlines() if ln.startswith("error:")]) == 1, f"{where}: {err[-800:]}"
    stray = [str(p) for p in out.rglob("*") if p.name.endswith((".tmp", ".new")) or ".seams-write-check" in p.name]
    assert not stray, f"{where}: temporary files left: {stray}"
    res = None
    if results is not None and results.exists():
        try:
            res = read_results(results)  # finished results stay readable whatever failed
        except UserError as exc:
            pytest.fail(f"{where}: results unreadable after the fault: {exc}")
        tests = {k: c.raw for k, c in res.cases.items() if not k.startswith("(")}
        # a case whose record the harness could not write is `incomplete`, never claimed
        assert set(tests.values()) <= {"pass", "incomplete"}, f"{where}: {tests}"
        if "incomplete" in tests.values():
            assert res.status == "incomplete" and rc != 0, f"{where}: {res.status} {rc}"
        if res.status == "complete":
            assert len(tests) == len(res.cases) == CASES, f"{where}: complete with {res.cases}"
        else:
            assert res.reason, f"{where}: incomplete without a reason"
    report = out / "report.json"
    if report.exists():
        doc = json.loads(report.read_text())  # whole, or not there: never half a file
        assert doc["cells"], where
    if (out / "junit.xml").exists():
        ET.parse(out / "junit.xml")
    if rc == 0:  # exit 0 is earned: every file of a whole, complete report, and every case judged
        assert res is not None and res.status == "complete" and len(res.cases) == CASES, f"{where}: exit 0 but {res}"
        for name in ("report.json", "report.html", "report.md", "junit.xml"):
            assert (out / name).exists(), f"{where}: exit 0 without {name}"
        doc = json.loads(report.read_text())
        assert doc["counts"] == {"ok": CASES}, f"{where}: exit 0 but {doc['counts']}"


def _points(call, argv_for) -> dict[str, int]:
    faults.arm("count")
    rc, err = call(*argv_for(0))
    assert rc == 0, err
    counts = faults.counts()
    counts.pop("any")
    return counts


def test_every_fault_point_of_run_on_a_cell_keeps_the_run_honest(harness_cli, tmp_path):
    matrix = _matrix(tmp_path)

    def argv(i: int) -> list[str]:
        return ["run", "--matrix", str(matrix), "--out", str(tmp_path / f"o{i}"), "--xdist", "0", "--", DRILL]

    counts = _points(harness_cli, argv)
    assert counts.get("spawn") and counts.get("kill") and counts.get("fsync"), counts
    i, fired = 0, 0
    for op, total in sorted(counts.items()):
        for n in range(1, total + 1):
            i += 1
            faults.arm(f"{op}:{n}")
            rc, err = harness_cli(*argv(i))
            fired += bool(faults.fired())
            tag = os.environ[TAG]
            faults.arm(None)
            out = tmp_path / f"o{i}"
            _check_invariants(f"run with {op}:{n} failing", rc, err, out, out / "results" / "tiny-cpu.jsonl")
            assert not _tagged_processes(tag), f"{op}:{n}: processes left behind"
    assert fired == i == sum(counts.values()), (fired, i, counts)


def test_every_fault_point_of_report_keeps_the_report_whole_or_absent(harness_cli, tmp_path):
    matrix = _matrix(tmp_path)
    rc, err = harness_cli("run", "--matrix", str(matrix), "--out", str(tmp_path / "run"), "--xdist", "0",
                          "--no-report", "--", DRILL)
    assert rc == 0, err
    results = tmp_path / "run" / "results"

    def argv(i: int) -> list[str]:
        return ["report", str(results), "--out", str(tmp_path / f"r{i}")]

    counts = _points(harness_cli, argv)
    i = 0
    for op, total in sorted(counts.items()):
        for n in range(1, total + 1):
            i += 1
            faults.arm(f"{op}:{n}")
            rc, err = harness_cli(*argv(i))
            assert faults.fired(), f"{op}:{n} never fired"
            faults.arm(None)
            _check_invariants(f"report with {op}:{n} failing", rc, err, tmp_path / f"r{i}", None)
            assert rc == 2, f"report with {op}:{n} failing exited {rc}: a report not written is never a pass"
    assert read_results(results / "tiny-cpu.jsonl").status == "complete", "a report never touches its inputs"


def test_a_malformed_fault_spec_is_one_line_of_bad_input(harness_cli, monkeypatch, tmp_path):
    monkeypatch.setenv(faults.FAULT_ENV, "write:zero")
    rc, err = harness_cli("report", str(tmp_path), "--out", str(tmp_path / "r"))
    assert rc == 2 and err.startswith("error: SEAMS_FAULT='write:zero'") and err.count("\n") == 1


def test_pytest_killed_at_every_record_boundary_and_inside_every_record_loses_nothing_finished(
        harness_cli, tmp_path, monkeypatch):
    matrix = _matrix(tmp_path)
    selection = [f"{DRILL}::test_one", f"{DRILL}::test_two", "-p", "tests.drills.killer"]

    def run(name: str) -> tuple[int, str, Path]:
        out = tmp_path / name
        rc, err = harness_cli("run", "--matrix", str(matrix), "--out", str(out), "--xdist", "0", "--", *selection)
        return rc, err, out

    rc, err, out = run("plain")
    assert rc == 0, err
    lines = (out / "results" / "tiny-cpu.jsonl").read_text().splitlines()
    written = len(lines) - 2  # every record but the harness's own CellStart and CellEnd is pytest's
    assert written >= 10, lines
    for i in range(written):
        for part in ("0", "half"):
            where = f"pytest killed at record {i} ({'boundary' if part == '0' else 'torn'})"
            monkeypatch.setenv("SEAMS_DRILL_KILL_AT", f"{i}:{part}:{tmp_path / f'killed-{i}-{part}'}")
            rc, err, out = run(f"k{i}{part}")
            assert (tmp_path / f"killed-{i}-{part}").exists(), f"{where}: the kill never happened"
            results = out / "results" / "tiny-cpu.jsonl"
            assert rc == 1, f"{where}: exit {rc}: {err[-800:]}"
            assert "Traceback" not in err and "internal error" not in err, f"{where}: {err[-800:]}"
            res = read_results(results)
            doc = json.loads((out / "report.json").read_text())
            assert doc["cells"][0]["status"] == res.status, where
            crashes = {k: c for k, c in res.cases.items() if c.raw == "crash"}
            assert len(crashes) == 1 and next(iter(crashes.values())).signal == "SIGKILL", f"{where}: {res.cases}"
            tests = {k.split("::")[-1]: c.raw for k, c in res.cases.items() if "::" in k}
            if res.status == "complete":  # the rest ran after the kill: each test passed or was the one killed
                assert set(tests) == {"test_one", "test_two"} and list(tests.values()).count("pass") >= 1, where
            else:  # killed before collection ended: said so, nothing claimed
                assert "collecting" in res.reason and not tests, f"{where}: {res.reason} {tests}"
            torn = [ln for ln in results.read_bytes().split(b"\n")[:-1] if not ln.startswith(b"{") or not ln.endswith(b"}")]
            assert not torn, f"{where}: a torn record was kept: {torn}"
    monkeypatch.delenv("SEAMS_DRILL_KILL_AT")


def test_the_fault_hook_works_through_the_real_entry_point(tmp_path):
    import subprocess

    from tests.results_fixtures import case, cell_file

    results = cell_file(tmp_path, "h-cpu", "0.6.0", [case("suites/x/test_a.py::test_a", "pass")])
    env = {**os.environ, faults.FAULT_ENV: "rename:2:EIO"}
    proc = subprocess.run([sys.executable, "-m", "harness", "report", str(results), "--out", str(tmp_path / "out")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("error: cannot write ") and "injected by SEAMS_FAULT" in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    # the set is rendered into a staging folder first: a failed rename leaves nothing of it, and no temporary
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [], "nothing of a set that failed, no temporary"
