"""pytest-xdist inside a cell: the worker policy, the chip claims, the per-worker deadline, and the
runner's view of several tests running at once (the e2e drills are in tests/test_drills.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.run import workers
from harness.incell import xdist_worker
from harness.run.cellrun import _pytest_argv, _Watch
from harness.cells.cell import Cell
from harness.judge.results import read_results

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("text, expected", [("auto", "auto"), ("AUTO", "auto"), ("0", 0), ("4", 4), (" 2 ", 2)])
def test_parse_workers(text, expected):
    assert workers.parse_workers(text) == expected


@pytest.mark.parametrize("text", ["", "-1", "two", "2.5", "auto2"])
def test_parse_workers_rejects_what_is_not_a_count(text):
    with pytest.raises(ValueError):
        workers.parse_workers(text)


@pytest.mark.parametrize("device, requested, cores, beside, expected", [
    ("cpu", "auto", 2, 1, 2),    # a cell alone on 2 cores: both
    ("cpu", "auto", 2, 2, 0),    # two cells at once on 2 cores: one each, so none
    ("cpu", "auto", 16, 4, 4),
    ("gpu", "auto", 16, 1, 0),   # a chip cannot be shared, and the scenarios want every chip
    ("tpu", "auto", 96, 1, 0),
    ("tpu", 4, 96, 1, 4),        # asked for: one chip per worker
    ("cpu", 1, 8, 1, 0),         # one worker only adds a process
    ("cpu", 0, 8, 1, 0),
])
def test_worker_count_is_device_aware(device, requested, cores, beside, expected):
    assert workers.worker_count(device, requested, cores, beside, load=0.0) == expected


@pytest.mark.parametrize("cores, load, beside, expected", [
    (2, 0.0, 1, 2), (2, 0.4, 1, 2),  # idle, or nearly: both cores
    (2, 0.6, 1, 0), (2, 8.7, 1, 0),  # half a core or more taken by others: serial is faster than 2 imports
    (16, 8.0, 2, 4), (16, 30.0, 1, 0),
])
def test_auto_takes_the_load_into_account(cores, load, beside, expected):
    assert workers.worker_count("cpu", "auto", cores, beside, load=load) == expected
    assert workers.worker_count("cpu", 2, cores, beside, load=load) == 2, "an explicit count is left alone"


def test_xdist_args_leave_a_users_choice_alone():
    assert workers.xdist_args(2, []) == ["-n", "2", "--dist", "worksteal", "--max-worker-restart", "8"]
    assert workers.xdist_args(0, []) == ["-p", "no:xdist"]
    for given in (["-n", "3"], ["-n3"], ["-nauto"], ["--numprocesses=3"], ["--numprocesses", "3"]):
        assert workers.user_chose(given) and workers.xdist_args(2, given) == []
    assert not workers.user_chose(["-k", "linearize", "--no-header"])


def test_pytest_argv_forces_serial_last_after_the_controller_died():
    cell = Cell(name="jax060-cpu", device="cpu", pins={"jax": "0.6.0"})
    argv = _pytest_argv(Path("python"), cell, Path("/tmp/r.jsonl"), [], ["-n", "2"], 0, 60, serial=True)
    assert argv[-2:] == ["-n", "0"], "a later -n wins in argparse"
    argv = _pytest_argv(Path("python"), cell, Path("/tmp/r.jsonl"), [], [], 2, 60)
    assert argv[argv.index("--seams-timeout") + 1] == "60" and argv[argv.index("-n") + 1] == "2"


def test_pytest_argv_asks_for_native_tracebacks_and_the_caller_can_ask_otherwise():
    cell = Cell(name="jax060-cpu", device="cpu", pins={"jax": "0.6.0"})
    argv = _pytest_argv(Path("python"), cell, Path("/tmp/r.jsonl"), [], [], 0, 60)
    assert "--tb=native" in argv
    argv = _pytest_argv(Path("python"), cell, Path("/tmp/r.jsonl"), [], ["--tb=long"], 0, 60)
    assert argv.index("--tb=native") < argv.index("--tb=long"), "the caller's --tb comes later: argparse keeps the last"


def test_chip_claims_are_one_per_process_and_free_again_when_it_ends(tmp_path, monkeypatch):
    # Two claims from one process conflict like two processes would (flock is per open file).
    monkeypatch.delenv("TPU_VISIBLE_CHIPS", raising=False)
    monkeypatch.setattr(xdist_worker, "_held", [])
    assert xdist_worker.claim_chip("tpu", tmp_path, 2) == 0 and os.environ["TPU_VISIBLE_CHIPS"] == "0"
    assert os.environ["ALLOW_MULTIPLE_LIBTPU_LOAD"] == "true"
    assert xdist_worker.claim_chip("tpu", tmp_path, 2) == 1 and os.environ["TPU_VISIBLE_CHIPS"] == "1"
    with pytest.raises(RuntimeError, match="all 2 tpu chips are held"):
        xdist_worker.claim_chip("tpu", tmp_path, 2)
    for fh in xdist_worker._held:
        fh.close()  # the process "ends": its locks go with it
    xdist_worker._held.clear()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    assert xdist_worker.claim_chip("gpu", tmp_path, 2) == 0 and os.environ["CUDA_VISIBLE_DEVICES"] == "4"
    assert xdist_worker.claim_chip("cpu", tmp_path, 2) is None


def test_a_hung_test_is_killed_by_its_worker_and_its_stack_names_the_hang(tmp_path):
    code = ("import sys, time; from pathlib import Path; from harness.incell.xdist_worker import HangGuard\n"
            "g = HangGuard(Path(sys.argv[1]), 0.5); g.arm('suites/x.py::test_ok'); g.disarm()\n"
            "g.arm('suites/x.py::test_hangs')\n"
            "def hung_here(): time.sleep(30)\n"
            "hung_here()\n")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=REPO, capture_output=True, timeout=60)
    assert proc.returncode != 0 and time.monotonic() - start < 20, "faulthandler ended the worker at its deadline"
    assert xdist_worker.hung_stack(tmp_path, "suites/x.py::test_ok") is None, "a disarmed test left nothing"
    stack = xdist_worker.hung_stack(tmp_path, "suites/x.py::test_hangs")
    assert stack is not None and stack.startswith("Timeout (")
    assert "hung_here" in "\n".join(stack.splitlines()[:4]), "the main thread's stack comes first"
    assert xdist_worker.hung_stack(tmp_path, "suites/x.py::test_hangs") is None, "consumed once"


def test_the_watch_tracks_several_running_tests_and_times_out_the_oldest():
    w = _Watch()
    w.begin_attempt()
    events = []
    w.feed({"$report_type": "Collected", "count": 3, "nodeids": ["a", "b", "c"]}, lambda c, e: events.append(e), "x")
    w.feed({"$report_type": "TestStart", "nodeid": "a"}, lambda c, e: None, "x")
    w.running["a"] -= 100  # started long ago
    w.feed({"$report_type": "TestStart", "nodeid": "b"}, lambda c, e: None, "x")
    assert w.overdue(time.monotonic(), 50, 300, 60) == ("test", "a")
    w.feed({"$report_type": "TestCrash", "nodeid": "a", "worker": "gw0", "signal": "SIGSEGV", "returncode": -11},
           lambda c, e: events.append(e), "x")
    assert "a" in w.finished and w.outcomes == {"crash": 1} and w.workers_died == 1
    assert w.overdue(time.monotonic(), 50, 300, 60) is None, "b is young"
    # The harness's own crash record (no worker) is counted where it is written, not again here.
    w.feed({"$report_type": "TestCrash", "nodeid": "c", "signal": "SIGKILL", "returncode": -9}, lambda c, e: None, "x")
    assert w.outcomes == {"crash": 1}


def _write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_interleaved_tests_a_worker_crash_with_its_stack_and_two_left_running(tmp_path):
    f = tmp_path / "r.jsonl"
    _write(f, [
        {"$report_type": "CellStart", "schema_version": 1, "cell": "c", "device": "cpu", "pins": {}},
        {"$report_type": "Collected", "count": 4, "nodeids": ["t::a", "t::b", "t::c", "t::d"]},
        {"$report_type": "TestStart", "nodeid": "t::a"},
        {"$report_type": "TestStart", "nodeid": "t::b"},
        {"$report_type": "TestTimeout", "nodeid": "t::a", "worker": "gw0", "timeout_s": 4.0,
         "stack": "Timeout (0:00:04)!\nThread 0x1 (most recent call first):\n  File \"t.py\", line 3 in hang"},
        {"$report_type": "TestStart", "nodeid": "t::c"},
        {"$report_type": "TestCrash", "nodeid": "t::b", "worker": "gw1", "signal": None, "returncode": None},
        {"$report_type": "TestStart", "nodeid": "t::d"},
    ])
    res = read_results(f)
    assert res.status == "incomplete"
    assert res.cases["t::a"].raw == "timeout" and "line 3 in hang" in res.cases["t::a"].message
    assert res.cases["t::a"].message.startswith("xdist worker gw0: killed after 4.0 s")
    assert res.cases["t::b"].raw == "crash" and "an unknown status" in res.cases["t::b"].message
    assert {res.cases["t::c"].raw, res.cases["t::d"].raw} == {"incomplete"}, "both were running when it ended"


@pytest.mark.parametrize("env, expected", [
    ({}, "auto"), ({"SEAMS_XDIST": "0"}, 0), ({"SEAMS_XDIST": "3"}, 3),
    ({"TOX_PARALLEL_ENV": "jax060-cpu"}, 0),  # `tox -p`: the cells already share the cores
])
def test_run_defaults_to_auto_from_the_environment(monkeypatch, env, expected):
    from harness.cli import _check_run_options, build_parser

    for var in ("SEAMS_XDIST", "TOX_PARALLEL_ENV"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    args = build_parser().parse_args(["run"])
    _check_run_options(args)
    assert args.xdist == expected


def test_a_bad_seams_xdist_is_one_line_exit_2():
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--cell", "jax060-cpu", "--out", "/tmp/never"],
                          cwd=REPO, capture_output=True, text=True, env={**os.environ, "SEAMS_XDIST": "many"})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "SEAMS_XDIST='many'" in proc.stderr


def test_a_numpy_scalar_recorded_under_xdist_does_not_end_the_session(tmp_path):
    """An observation holding a numpy.float64 crossed execnet as is: DumpError took the whole xdist
    session down (xla29-cpu stopped with 171 of 266 cases unrun). Every case must still be recorded."""
    (tmp_path / "test_np.py").write_text(
        "import numpy as np\nimport pytest\n\n"
        "@pytest.mark.parametrize('i', range(4))\n"
        "def test_records(i, observe):\n"
        "    observe.record(err=np.float64(i) / 3, n=np.int64(i), arr=np.arange(2))\n")
    results = tmp_path / "r.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "harness.incell.plugin",
                           "--rootdir", str(tmp_path), "--seams-results", str(results), "-n", "2", "-q",
                           str(tmp_path / "test_np.py")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    records = [r for r in lines if r.get("$report_type") == "TestReport" and r.get("when") == "call"]
    assert len(records) == 4, proc.stdout[-2000:]
