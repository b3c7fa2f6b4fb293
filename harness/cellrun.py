"""Run the suites in one cell: build its env, run pytest in a fresh process, survive crashes and hangs.

This is the one way a cell runs: `harness run`, tox envs, CI shards and bisect probes all call
run_cell(). pytest runs in a subprocess (spawned, never forked: JAX deadlocks after fork) in its
own process group. A watchdog reads the results file as it grows: a test running past the cell's
timeout is killed and recorded `timeout`; a process that dies mid-test is recorded `crash` with
its signal; either way pytest is started again with the finished tests deselected, so one bad
test never loses the rest of the run.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from filelock import FileLock, Timeout

from harness import __version__
from harness.cell import Cell
from harness.devices import available
from harness.envs import Env, EnvError, ensure_env
from harness.errors import UserError
from harness.resultsfile import Tail, append_record

REPO = Path(__file__).resolve().parent.parent
SCHEMA_VERSION = 1
MAX_RESUMES = 50
_POLL_S = 0.2

ProgressFn = Callable[[str, dict], None]


@dataclass
class CellRun:
    """What running a cell produced: where its results are and how the run ended."""

    cell: Cell
    results: Path
    status: str  # complete | env-error | skipped | incomplete
    reason: str = ""
    duration_s: float = 0.0
    env_reused: bool = False
    env_s: float = 0.0
    outcomes: dict[str, int] = field(default_factory=dict)  # raw outcome -> count
    verdicts: dict[str, int] = field(default_factory=dict)  # in-run verdict -> count


def _signal_name(returncode: int) -> str | None:
    if returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _log_tail(path: Path, n: int = 4000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - n))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


@dataclass
class _Watch:
    """What the watchdog learned from the results file so far."""

    collected: list[str] | None = None
    current: str | None = None
    current_since: float = 0.0
    finished: set[str] = field(default_factory=set)
    session_finished: bool = False
    outcomes: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)

    def feed(self, rec: dict, progress: ProgressFn, cell: str) -> None:
        kind = rec.get("$report_type")
        if kind == "Collected":
            if self.collected is None:
                self.collected = list(rec.get("nodeids", []))
                progress(cell, {"event": "collected", "count": len(self.collected)})
        elif kind == "TestStart":
            self.current, self.current_since = rec["nodeid"], time.monotonic()
        elif kind == "TestReport":
            for name, value in rec.get("user_properties") or []:
                if name == "seams":
                    self.outcomes[value["raw"]] = self.outcomes.get(value["raw"], 0) + 1
                    self.verdicts[value["verdict"]] = self.verdicts.get(value["verdict"], 0) + 1
                    progress(cell, {"event": "test", "nodeid": rec["nodeid"], "raw": value["raw"],
                                    "verdict": value["verdict"], "done": len(self.finished) + 1,
                                    "total": len(self.collected or [])})
            if rec.get("when") == "teardown":
                self.finished.add(rec["nodeid"])
                if self.current == rec["nodeid"]:
                    self.current = None
        elif kind == "SessionFinish":
            self.session_finished = True


def run_cell(
    cell: Cell,
    results: Path,
    pytest_args: Sequence[str] = (),
    *,
    expectations: Path | None = None,
    timeout_s: int | None = None,
    progress: ProgressFn = lambda _c, _e: None,
    log_dir: Path | None = None,
    extra_env: dict[str, str] | None = None,
    env_provider: Callable[[Cell, Callable[[str], None]], Env] = ensure_env,
) -> CellRun:
    """Build the cell's env and run pytest in it, writing every result to `results` as it happens.

    env_provider lets a caller hand over an env it is already building in the background
    (`harness run` prepares the next cell's env while the current one runs its tests).
    """
    results = Path(results)
    results.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(results) + ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise UserError(f"{results}: another run of cell {cell.name} is writing this file; wait for it or use another --out") from None
    try:
        return _run_locked(cell, results, pytest_args, expectations, timeout_s or cell.timeout_s,
                           progress, log_dir or results.parent.parent / "logs", extra_env or {}, env_provider)
    finally:
        lock.release()


def _run_locked(cell: Cell, results: Path, pytest_args: Sequence[str], expectations: Path | None,
                timeout_s: int, progress: ProgressFn, log_dir: Path, extra_env: dict[str, str],
                env_provider: Callable[[Cell, Callable[[str], None]], Env]) -> CellRun:
    start = time.monotonic()
    # A re-run replaces the cell's previous results; write to a fresh file then move it into place
    # only as the first record lands, so a reader never sees a half-replaced file.
    tmp = results.with_name(results.name + ".new")
    tmp.unlink(missing_ok=True)
    append_record(tmp, {"$report_type": "CellStart", "schema_version": SCHEMA_VERSION,
                        **cell.describe(), "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                        "harness_version": __version__, "timeout_s": timeout_s})
    os.replace(tmp, results)
    run = CellRun(cell=cell, results=results, status="complete")

    def end(status: str, reason: str = "", exitstatus: int | None = None) -> CellRun:
        run.status, run.reason = status, reason
        run.duration_s = time.monotonic() - start
        append_record(results, {"$report_type": "CellEnd", "cell": cell.name, "complete": True, "status": status,
                                "reason": reason, "exitstatus": exitstatus, "duration_s": round(run.duration_s, 3)})
        progress(cell.name, {"event": "end", "status": status, "reason": reason, "outcomes": run.outcomes,
                             "verdicts": run.verdicts, "duration_s": run.duration_s})
        return run

    ok, why = available(cell.device)
    if not ok:
        append_record(results, {"$report_type": "CellSkipped", "cell": cell.name, "reason": why})
        return end("skipped", why)

    progress(cell.name, {"event": "env"})
    try:
        env = env_provider(cell, lambda m: progress(cell.name, {"event": "env", "message": m}))
    except EnvError as exc:
        append_record(results, {"$report_type": "EnvError", "cell": cell.name, "reason": exc.reason,
                                "log_tail": exc.log_tail})
        return end("env-error", exc.reason)
    run.env_reused, run.env_s = env.reused, env.build_s
    progress(cell.name, {"event": "env-ready", "reused": env.reused, "seconds": env.build_s})

    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{cell.name}.log"
    log_path.write_text("")
    watch = _Watch()
    tail = Tail(results)
    skip: list[str] = []
    exitstatus = None
    for _attempt in range(MAX_RESUMES):
        argv = _pytest_argv(env.python, cell, results, expectations, skip, pytest_args)
        child_env = {**os.environ, **cell.run_env(), **extra_env, "PYTHONPATH": str(REPO),
                     "PYTHONUNBUFFERED": "1", "SEAMS_CELL": cell.name, "SEAMS_DEVICE": cell.device}
        child_env.pop("VIRTUAL_ENV", None)
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(argv, cwd=REPO, env=child_env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            timed_out = _watch(proc, tail, watch, timeout_s, progress, cell.name)
        for rec in tail.records():  # whatever landed between the last poll and exit
            watch.feed(rec, progress, cell.name)
        rc = proc.returncode
        if timed_out is not None:
            append_record(results, {"$report_type": "TestTimeout", "nodeid": timed_out, "timeout_s": timeout_s})
            progress(cell.name, {"event": "test", "nodeid": timed_out, "raw": "timeout", "verdict": "timeout"})
            run.outcomes["timeout"] = run.outcomes.get("timeout", 0) + 1
            watch.finished.add(timed_out)
            watch.current = None
        elif watch.current is not None and watch.current not in watch.finished:
            sig = _signal_name(rc)
            append_record(results, {"$report_type": "TestCrash", "nodeid": watch.current, "signal": sig,
                                    "returncode": rc, "stderr_tail": _log_tail(log_path, 2000)})
            progress(cell.name, {"event": "test", "nodeid": watch.current, "raw": "crash", "verdict": "crash",
                                 "signal": sig})
            run.outcomes["crash"] = run.outcomes.get("crash", 0) + 1
            watch.finished.add(watch.current)
            watch.current = None
        elif watch.collected is None or watch.session_finished or rc >= 0:
            exitstatus = rc
            break
        else:  # died by a signal outside any test (collection, session start/finish)
            append_record(results, {"$report_type": "TestCrash", "nodeid": "", "signal": _signal_name(rc),
                                    "returncode": rc, "stderr_tail": _log_tail(log_path, 2000)})
            exitstatus = rc
            break
        remaining = [n for n in (watch.collected or []) if n not in watch.finished]
        if not remaining:
            exitstatus = rc
            break
        skip = sorted(watch.finished)
        progress(cell.name, {"event": "resume", "remaining": len(remaining)})
    results.with_name(results.name + ".done.json").unlink(missing_ok=True)
    run.outcomes = {**watch.outcomes, **{k: v for k, v in run.outcomes.items() if k in ("crash", "timeout")}}
    run.verdicts = dict(watch.verdicts)
    if watch.collected is None:
        reason = f"pytest ended before collecting (exit {exitstatus}); see {log_path}"
        return end("incomplete", reason, exitstatus)
    if not watch.collected and not pytest_args:
        return end("incomplete", "no tests collected", exitstatus)
    return end("complete", "", exitstatus)


def _pytest_argv(python: Path, cell: Cell, results: Path, expectations: Path | None,
                 skip: Sequence[str], pytest_args: Sequence[str]) -> list[str]:
    argv = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(REPO),
            "--seams-results", str(results), "--seams-cell", cell.name, "--seams-device", cell.device,
            "--seams-pins", json.dumps(cell.pins), "-q", "-rfEsx"]
    if expectations is not None:
        argv += ["--seams-expectations", str(expectations)]
    if skip:
        done = results.with_name(results.name + ".done.json")
        done.write_text(json.dumps(list(skip)))
        argv += ["--seams-done", str(done)]
    # Run the suites unless the caller named what to run (a path or node id inside this checkout).
    if not any(not a.startswith("-") and (REPO / a.split("::")[0]).exists() for a in pytest_args):
        argv.append("suites")
    return argv + list(pytest_args)


def _watch(proc: subprocess.Popen, tail: Tail, watch: _Watch, timeout_s: int,
           progress: ProgressFn, cell: str) -> str | None:
    """Wait for the child; kill its process group if one test outlives timeout_s (returns that test)."""
    while proc.poll() is None:
        for rec in tail.records():
            watch.feed(rec, progress, cell)
        if watch.current is not None and time.monotonic() - watch.current_since > timeout_s:
            hung = watch.current
            _kill_group(proc)
            return hung
        try:
            proc.wait(timeout=_POLL_S)  # returns as soon as pytest exits, unlike a sleep
        except subprocess.TimeoutExpired:
            pass
    return None


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
