"""pytest plugin loaded inside every cell: crash-safe results and observations, facts only.

It extends pytest-reportlog (every report becomes one flushed JSON line) with:
a RunInfo header, a TestStart line before each test (so a crash or hang names its test),
the raw outcome and the scenario's observations on each report, and what was selected.
It judges nothing: known issues and API ranges are policy, applied on the host (harness.judge),
so a plain `pytest` run inside a cell shows every failure as it is, and this code needs only
what a cell env installs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pytest_reportlog.plugin import ReportLogPlugin

from harness.incell.resultsfile import file_tail, signal_name
from harness.incell.runinfo import collect_run_info
from harness.incell.compat import APIS_OBSERVATION, reset_seen, seen_apis
from harness.incell import summary, xdist_worker

SCHEMA_VERSION = 1
# How long xdist (NodeManager.EXIT_TIMEOUT, 10 s upstream) waits for a worker to exit before killing
# it. 10 s is not a verdict on the code under test: a busy 2-core runner takes that long to tear a
# worker down. The runner scales it (SEAMS_XDIST_EXIT_WAIT_S, half its own exit deadline).
XDIST_EXIT_WAIT_S = 10
_MESSAGE_LINES = 6


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("xla-seams")
    group.addoption("--seams-results", metavar="PATH", help="append crash-safe JSONL results here")
    group.addoption("--seams-stream", metavar="FD", type=int, default=None,
                    help="send the records over this pipe instead; the harness writes the results file")
    group.addoption("--seams-cell", metavar="NAME", default=os.environ.get("SEAMS_CELL", "adhoc"),
                    help="cell name recorded in the results")
    group.addoption("--seams-device", metavar="TYPE", default=os.environ.get("SEAMS_DEVICE", "cpu"),
                    help="device type of this cell (cpu, gpu, tpu)")
    group.addoption("--seams-done", metavar="FILE",
                    help="JSON list of node ids already finished (exact match; deselected on resume)")
    group.addoption("--seams-pins", metavar="JSON", default=os.environ.get("SEAMS_PINS", "{}"),
                    help="the cell's pins, recorded in RunInfo")
    group.addoption("--seams-timeout", metavar="S", type=float, default=None,
                    help="under xdist: each worker's deadline per test (past it: a timeout with the stack)")
    group.addoption("--seams-chips", metavar="N", type=int, default=None,
                    help="under xdist on gpu/tpu: chips to share out, one per worker (default: the worker count)")


class ResultsLog(ReportLogPlugin):
    """pytest-reportlog's writer, opened for append so a resumed cell run extends one file."""

    def __init__(self, config: pytest.Config, log_path: Path) -> None:  # noqa: D107
        self._config = config
        self._log_path = log_path
        fd = config.getoption("seams_stream", None)
        if fd is not None:  # the harness's pipe: it checks, writes and guards the file (harness.run.stream)
            self._file = os.fdopen(fd, "w", buffering=1, encoding="utf-8", errors="backslashreplace")
        else:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self._file = log_path.open("a", buffering=1, encoding="utf-8")
        self._collected = False
        self._deselected = 0  # by -k/-m/--deselect: the run says "21 of 101 cases selected"
        self._nodes: list[Any] = []  # xdist workers, to check how each one exited
        self._finished_nodes: set[str | None] = set()
        self._dead_workers: set[str | None] = set()

    def _write_json_data(self, data: dict[str, Any]) -> None:
        super()._write_json_data(_bounded(data))

    def write(self, data: dict[str, Any]) -> None:
        """Write one record and flush it: once flushed it is the kernel's, so a crash or kill -9
        of this process loses nothing (no fsync per record: it cost more than the tests)."""
        self._write_json_data(data)

    def pytest_sessionstart(self) -> None:
        cfg = self._config
        shared_out = _xdist_workers(cfg) and cfg.getoption("seams_device") in xdist_worker.ACCELERATORS
        info = collect_run_info(with_devices=not shared_out)
        if shared_out:
            info["devices"] = {"note": "one chip per xdist worker; the controller does not open the device"}
        info.update({
            "$report_type": "RunInfo",
            "schema_version": SCHEMA_VERSION,
            "cell": cfg.getoption("seams_cell"),
            "device": cfg.getoption("seams_device"),
            "pins": json.loads(cfg.getoption("seams_pins") or "{}"),
            "pytest_version": pytest.__version__,
        })
        self.write(info)
        super().pytest_sessionstart()

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        self.write({"$report_type": "TestStart", "nodeid": nodeid})

    def pytest_warning_recorded(self, *args: Any, **kwargs: Any) -> None:
        """Warnings are noise in a results file meant to stay small; pytest still prints them."""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if getattr(report, "when", None) == "???":  # xdist: the worker running this test died
            self._worker_died(report)
        else:
            super().pytest_runtest_logreport(report)

    def collected(self, ids: list[str]) -> None:
        """The runner needs the full list to know what is left after a crash: written once per run,
        with what narrowed it (a judge needs that: a stale known issue means something only for a
        full run)."""
        if not self._collected:
            self._collected = True
            self.write({"$report_type": "Collected", "count": len(ids), "nodeids": ids,
                        "selection": {**_selection(self._config), "deselected": self._deselected}})

    def pytest_deselected(self, items: list[Any]) -> None:
        self._deselected += len(items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist the controller collects nothing itself: the first worker's list is the cell's
        (xdist refuses to run if the workers' lists differ); a replaced worker's is not written again."""
        self.collected(list(ids))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        self._nodes.append(node)  # replacements too: each one's exit status is checked at the end

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        if error is None:
            self._finished_nodes.add(getattr(getattr(node, "gateway", None), "id", None))

    def check_worker_exits(self) -> None:
        """After xdist took its workers down: a worker that died after its last test (a runtime's
        teardown that segfaults), or that xdist had to kill because it did not exit within its wait (SEAMS_XDIST_EXIT_WAIT_S)
        (a hang at exit), is a result, not a silent pass. A worker already recorded is skipped."""
        for node in self._nodes:
            worker = getattr(getattr(node, "gateway", None), "id", None)
            if worker in self._dead_workers:
                continue
            rc = _worker_returncode(node)
            if not rc:  # 0, or not readable from this execnet
                continue
            phase = "exit" if worker in self._finished_nodes else "outside tests"
            if rc == -9 and phase == "exit":
                self.write({"$report_type": "PhaseTimeout", "phase": "exit", "timeout_s": XDIST_EXIT_WAIT_S,
                            "worker": worker, "stderr_tail": file_tail(os.environ.get("SEAMS_CELL_LOG"), 2000)})
            else:
                self.write({"$report_type": "TestCrash", "nodeid": "", "phase": phase, "worker": worker,
                            "signal": signal_name(rc), "returncode": rc,
                            "stderr_tail": file_tail(os.environ.get("SEAMS_CELL_LOG"), 2000)})

    def _worker_died(self, report: pytest.TestReport) -> None:
        """One record for the test whose worker died: a timeout if its HangGuard fired (with the hung
        stack), else a crash (with the worker's signal where it can be read)."""
        nodeid, node = report.nodeid, getattr(report, "node", None)
        worker = getattr(getattr(node, "gateway", None), "id", None)
        self._dead_workers.add(worker)
        stack = xdist_worker.hung_stack(_hangs_dir(self._config), nodeid)
        if stack is not None:
            self.write({"$report_type": "TestTimeout", "nodeid": nodeid, "worker": worker,
                        "timeout_s": self._config.getoption("seams_timeout"), "stack": stack})
            return
        rc = _worker_returncode(node)
        self.write({"$report_type": "TestCrash", "nodeid": nodeid, "worker": worker, "signal": signal_name(rc),
                    "returncode": rc, "stderr_tail": file_tail(os.environ.get("SEAMS_CELL_LOG"), 2000)})


class Observations(dict):
    """What a scenario measured beside its outcome (errors, HLO facts, attributes found)."""

    def record(self, **facts: Any) -> None:
        """Record named facts; values must be JSON-serialisable (str() is used otherwise)."""
        self.update(facts)

    def close(self, actual: Any, expected: Any, *, rtol: float, atol: float, name: str = "") -> dict:
        """Assert actual ~= expected, recording max abs/rel error (under `name` if given)."""
        from harness.incell import numerics  # here, not at import: the harness's own tests need no numpy

        err = numerics.errors(actual, expected)
        err.update(rtol=rtol, atol=atol)
        key = f"numerics.{name}" if name else "numerics"
        self[key] = err
        numerics.assert_close(actual, expected, rtol=rtol, atol=atol)
        return err


@pytest.fixture
def observe(request: pytest.FixtureRequest) -> Observations:
    """Per-test observations, attached to the test's report and results record."""
    obs = Observations()
    request.node._seams_observations = obs
    return obs


def _xdist_workers(config: pytest.Config) -> int:
    """How many xdist workers this (controller) session starts; 0 without xdist."""
    n = getattr(config.option, "numprocesses", None)
    dist = getattr(config.option, "dist", "no")
    return int(n) if isinstance(n, int) and n > 0 and dist != "no" else 0


def _hangs_dir(config: pytest.Config) -> Path:
    """Where the workers' HangGuards write (beside the results file, which both sides know)."""
    results = config.getoption("seams_results", None)
    return Path(str(results) + ".hangs") if results else Path(".seams-hangs")


def _worker_returncode(node: Any) -> int | None:
    """The dead worker's exit status from execnet's Popen, if this execnet keeps it there."""
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    try:
        return popen.wait(timeout=2) if popen is not None else None
    except Exception:  # noqa: BLE001 - best effort: the crash is recorded either way
        return None


def _start_worker(config: pytest.Config) -> None:
    """Inside an xdist worker: take a chip (gpu/tpu) before the suites import jax, and arm a deadline
    per test when the harness gave one."""
    device = config.getoption("seams_device")
    if device in xdist_worker.ACCELERATORS:
        chips = config.getoption("seams_chips") or int(config.workerinput.get("workercount", 1))
        xdist_worker.claim_chip(device, _hangs_dir(config) / "chips", chips)
    timeout = config.getoption("seams_timeout")
    if timeout:
        config.pluginmanager.register(_Deadline(xdist_worker.HangGuard(_hangs_dir(config), timeout)),
                                      "seams-deadline")


class _Deadline:
    def __init__(self, guard: xdist_worker.HangGuard) -> None:  # noqa: D107
        self.guard = guard

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any):
        self.guard.arm(item.nodeid)
        try:
            yield
        finally:
            self.guard.disarm()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_devices(n): the scenario needs n devices of the cell's type")
    if hasattr(config, "workerinput"):
        _start_worker(config)
    _scale_xdist_exit_wait(config)
    path = config.getoption("seams_results", None)
    # every process builds the summary (an xdist worker's goes nowhere, and took 0.5 s at exit)
    config.pluginmanager.register(summary.LinearSummary(), "seams-linear-summary")
    if path and not hasattr(config, "workerinput"):
        log = ResultsLog(config, Path(path))
        config._seams_log = log
        config.pluginmanager.register(log, "seams-results-log")


def _scale_xdist_exit_wait(config: pytest.Config) -> None:
    global XDIST_EXIT_WAIT_S
    raw = os.environ.get("SEAMS_XDIST_EXIT_WAIT_S", "")
    if hasattr(config, "workerinput") or not raw.isdigit() or int(raw) <= 0:
        return
    try:
        from xdist.workermanage import NodeManager
    except ImportError:
        return
    XDIST_EXIT_WAIT_S = NodeManager.EXIT_TIMEOUT = int(raw)


def pytest_unconfigure(config: pytest.Config) -> None:
    log = getattr(config, "_seams_log", None)
    if log is not None:
        log.check_worker_exits()  # xdist's session end has taken the workers down by now
        log.close()


def pytest_report_header(config: pytest.Config) -> list[str]:
    info = collect_run_info(with_devices=False)
    pkgs = ", ".join(f"{k}=={v}" for k, v in info["versions"].items() if v)
    env = ", ".join(f"{k}={v}" for k, v in info["env"].items())
    return [f"xla-seams cell: {config.getoption('seams_cell')} ({config.getoption('seams_device')})",
            f"packages: {pkgs or 'none of jax/torch installed'}",
            f"env: {env or '(none set)'}"]


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    done_file = config.getoption("seams_done")
    if done_file:
        # Exact ids: pytest's own --deselect matches prefixes (test_a would drop test_abort).
        done = set(json.loads(Path(done_file).read_text()))
        keep = [i for i in items if i.nodeid not in done]
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid in done])
        items[:] = keep


MAX_TEXT = 64 * 1024  # per captured section or message: a test printing 200 MB makes a record of ~64 KB


def _bounded(value: Any) -> Any:
    """value with every string over MAX_TEXT cut to its head and tail (captured output, tracebacks)."""
    if isinstance(value, str):
        if len(value) <= MAX_TEXT:
            return value
        half = MAX_TEXT // 2
        return f"{value[:half]}\n[... {len(value) - 2 * half} characters cut by xla-seams ...]\n{value[-half:]}"
    if isinstance(value, dict):
        return {k: _bounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_bounded(v) for v in value]
    return value


def _selection(config: pytest.Config) -> dict[str, Any]:
    """What narrowed this run: -k, -m, paths or node ids other than the suites folder, a resume."""
    return {"keyword": config.option.keyword or "", "markexpr": config.option.markexpr or "",
            "args": [str(a) for a in config.args], "resumed": bool(config.getoption("seams_done"))}


def pytest_collection_finish(session: pytest.Session) -> None:
    log = getattr(session.config, "_seams_log", None)
    if log is not None:
        log.collected([i.nodeid for i in session.items])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    reset_seen()  # the API probes recorded from here on belong to this test


def _falsifying_example(exc: BaseException) -> str | None:
    """Hypothesis's note naming the failing input (and what follows it), if the failure carries one."""
    notes = [str(n) for n in getattr(exc, "__notes__", None) or []]
    for i, note in enumerate(notes):
        # "Falsifying example: ..." (hypothesis < 6.16x), "Failing test case: ..." (later),
        # "Falsifying/Failing explicit example: ..." for an @example.
        if note.startswith(("Falsifying example", "Falsifying explicit example", "Failing explicit example",
                            "Failing test case")):
            return "\n".join(notes[i:])[:2000]
    return None


def _raw_outcome(call: pytest.CallInfo) -> tuple[str, str | None, str | None]:
    """(raw outcome, error type, first lines of the message) from the call's exception.

    A failed hypothesis property's message ends with its failing example, so the report and the
    repro name the input that failed.
    """
    if call.excinfo is None:
        return "pass", None, None
    exc = call.excinfo.value
    if call.excinfo.errisinstance(pytest.skip.Exception):
        return "skip", None, str(getattr(exc, "msg", exc))
    lines = str(exc).strip().splitlines()[:_MESSAGE_LINES]
    example = _falsifying_example(exc)
    if example:  # after the error's own lines: a report's one-line summary stays the error
        lines = [*lines, example]
    message = "\n".join(lines)[:4000]
    outcome = "fail" if call.when == "call" else "error"
    return outcome, call.excinfo.typename, message


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    raw, etype, message = _raw_outcome(call)
    if call.when != "call" and raw == "pass":
        return  # setup/teardown that passed carries nothing new
    if call.when == "teardown" and getattr(item, "_seams_recorded", "pass") != "pass":
        return  # the test already failed; one record per test
    item._seams_recorded = raw
    observations = dict(getattr(item, "_seams_observations", {}) or {})
    apis = seen_apis()
    if apis:
        observations[APIS_OBSERVATION] = apis
    if call.excinfo is not None and (example := _falsifying_example(call.excinfo.value)):
        observations["falsifying_example"] = example
    record = {"raw": raw, "error_type": etype, "message": message, "observations": observations}
    # Plain JSON values only: under xdist the report crosses execnet, which cannot serialize a
    # numpy.float64 (or any type beside the builtins) and takes the whole session down with it
    # (DumpError: xla29-cpu stopped with 171 of 266 cases unrun). The results file writes the same
    # round trip (default=str), so nothing recorded changes.
    record = json.loads(json.dumps(record, default=str))
    report.user_properties.append(("seams", record))
