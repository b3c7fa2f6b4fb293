"""Run the suites in one cell: build its env, run pytest in a fresh process, survive crashes and hangs.

This is the one way a cell runs: `harness run`, tox envs, CI shards and bisect probes all call
run_cell(). pytest runs in a subprocess (spawned, never forked: JAX deadlocks after fork) in its
own process group. A watchdog reads the results file as it grows: a test running past the cell's
timeout is killed and recorded `timeout`; a process that dies mid-test is recorded `crash` with
its signal; either way pytest is started again with the finished tests deselected, so one bad
test never loses the rest of the run.

Every phase has a deadline, not only the tests: importing and collecting (SEAMS_COLLECT_TIMEOUT_S,
default 300 s) and interpreter exit after the last test (SEAMS_EXIT_TIMEOUT_S, default 60 s). A
hang there is killed and recorded as a `PhaseTimeout` (every finished result kept). The child
never outlives the harness: its process group is killed on every exit path, and it watches a
pipe from the harness and the kernel's parent-death signal (harness.lifeline).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from filelock import FileLock, Timeout

from harness import __version__, faults, lifeline
from harness.cells.cell import Cell
from harness.cells.devices import available, not_run_reason
from harness.cells.envs import Env, EnvError, ensure_env, verify
from harness.cells.startup_env import build_env_record, caller_env, drop_startup_vars
from harness.errors import UserError
from harness.redact import redact
from harness.safeio import atomic_write, refuse_special, refuse_special_dir
from harness.incell.resultsfile import file_tail, selected_paths, signal_name, whole_suite
from harness.run.backend import BackendDown, backend_timeout, needs_probe, probe, workers_for_chips
from harness.run.collecterror import collect_message
from harness.run.invocation import run_id
from harness.run.stream import ResultsStream, append_record
from harness.run.workers import BACKSTOP_S, user_chose, xdist_args

from harness.paths import REPO
SCHEMA_VERSION = 1
MAX_RESUMES = 50
RESUMED_NAMED = 50  # of the tests a Resumed record names (the count is whole)
COLLECT_TIMEOUT_S = 300  # starting the interpreter, importing the suites (jax, torch_xla) and collecting
EXIT_TIMEOUT_S = 60  # from the last test's end (or pytest's session end) to the process exit
_POLL_S = 0.2

ProgressFn = Callable[[str, dict], None]
# (nodeid, raw, message, observations, versions, device) -> verdict: the judge's, handed down by the
# caller (harness.judge.live); the runner itself judges nothing.
CaseJudge = Callable[[str, str, "str | None", Mapping[str, Any], Mapping[str, "str | None"], str], str]
_RAW_SHOWN = {"pass": "ok", "skip": "skipped"}


def _unjudged(_nodeid: str, raw: str, *_: object) -> str:
    """Without a judge (a bisect probe), progress shows the raw outcome."""
    return _RAW_SHOWN.get(raw, raw)


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
    left_processes: list[str] = field(default_factory=list)  # command lines the tests left running (killed)
    ignored_env: dict[str, str] = field(default_factory=dict)  # start-up variables of the caller not passed on


@dataclass
class _Watch:
    """What the watchdog learned from the results file so far (the whole cell, and this attempt)."""

    collected: list[str] | None = None
    running: dict[str, float] = field(default_factory=dict)  # started, not finished -> since when
    finished: set[str] = field(default_factory=set)
    collect_errors: set[str] = field(default_factory=set)
    outcomes: dict[str, int] = field(default_factory=dict)
    verdicts: dict[str, int] = field(default_factory=dict)
    # This attempt (one pytest process): what it collected, when it started, when its work was done.
    attempt_collected: list[str] | None = None
    attempt_started: float = 0.0
    done_since: float | None = None
    workers_died: int = 0  # this attempt: xdist workers that died on a test (recorded by the plugin)
    selection: dict | None = None  # what narrowed the first collection (-k, -m, paths), as the plugin saw it
    judge: CaseJudge = _unjudged
    device: str = "cpu"
    versions: dict = field(default_factory=dict)  # from the cell's RunInfo: what the judge needs

    def begin_attempt(self) -> None:
        """A new pytest process starts: its collection and exit are timed afresh."""
        self.attempt_collected, self.done_since, self.workers_died = None, None, 0
        self.running, self.attempt_started = {}, time.monotonic()

    @property
    def current(self) -> str | None:
        """The test running longest (the only one without xdist)."""
        return min(self.running, key=self.running.__getitem__) if self.running else None

    def finish(self, nodeid: str) -> None:
        """`nodeid` is done, however it ended."""
        self.finished.add(nodeid)
        self.running.pop(nodeid, None)

    def count(self, raw: str, verdict: str) -> None:
        """Count one finished case by raw outcome and in-run verdict."""
        self.outcomes[raw] = self.outcomes.get(raw, 0) + 1
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1

    def _check_done(self) -> None:
        if self.done_since is None and self.attempt_collected is not None and not self.running \
                and all(n in self.finished for n in self.attempt_collected):
            self.done_since = time.monotonic()

    def feed(self, rec: dict, progress: ProgressFn, cell: str) -> None:
        kind = rec.get("$report_type")
        if kind == "RunInfo" and isinstance(rec.get("versions"), dict):
            self.versions = rec["versions"]
        elif kind == "Collected":
            if self.attempt_collected is None:
                self.attempt_collected = list(rec.get("nodeids", []))
                self._check_done()
            if self.collected is None:
                self.collected = list(rec.get("nodeids", []))
                self.selection = rec.get("selection") if isinstance(rec.get("selection"), dict) else None
                progress(cell, {"event": "collected", "count": len(self.collected)})
        elif kind == "CollectReport" and rec.get("outcome") == "failed":
            if rec.get("nodeid") in self.collect_errors:
                return  # collected again after a resume: counted once
            self.collect_errors.add(rec.get("nodeid"))
            # judged as the report will judge it (a known collection error is a known bug live too)
            verdict = self.judge(rec.get("nodeid") or "", "error", collect_message(rec.get("longrepr")), {},
                                 self.versions, self.device)
            self.count("error", verdict)
            progress(cell, {"event": "test", "nodeid": rec.get("nodeid") or "(collection)", "raw": "error",
                            "verdict": verdict, "signal": "collection error"})
        elif kind == "TestStart":
            self.running[rec["nodeid"]] = time.monotonic()
        elif kind == "PhaseTimeout" and rec.get("worker") is not None:  # an xdist worker hung at exit
            self.count("timeout", "timeout")
            progress(cell, {"event": "test", "nodeid": "(exit)", "raw": "timeout", "verdict": "timeout"})
        elif kind in ("TestCrash", "TestTimeout") and rec.get("worker") is not None:
            # An xdist worker died on this test; the controller recorded it and carries on. (The
            # harness's own crash records carry no worker and are counted where they are written.)
            raw = "crash" if kind == "TestCrash" else "timeout"
            self.count(raw, raw)
            self.workers_died += 1
            progress(cell, {"event": "test", "nodeid": rec["nodeid"] or f"({rec.get('phase')})", "raw": raw, "verdict": raw,
                            "signal": rec.get("signal"), "done": len(self.finished) + 1,
                            "total": len(self.collected or [])})
            if rec["nodeid"]:
                self.finish(rec["nodeid"])
            self._check_done()
        elif kind == "TestReport":
            for name, value in rec.get("user_properties") or []:
                if name == "seams":
                    verdict = self.judge(rec["nodeid"], value["raw"], value.get("message"),
                                         value.get("observations") or {}, self.versions, self.device)
                    self.count(value["raw"], verdict)
                    progress(cell, {"event": "test", "nodeid": rec["nodeid"], "raw": value["raw"],
                                    "verdict": verdict, "done": len(self.finished) + 1,
                                    "total": len(self.collected or [])})
            if rec.get("when") == "teardown":
                self.finish(rec["nodeid"])
                self._check_done()
        elif kind == "SessionFinish":
            self.running.clear()
            if self.done_since is None:
                self.done_since = time.monotonic()

    def overdue(self, now: float, timeout_s: float, collect_s: float, exit_s: float) -> tuple[str, str] | None:
        """("test", nodeid) or ("phase", collection|exit) once the running phase is past its deadline."""
        if self.running:
            oldest = self.current
            return ("test", oldest) if now - self.running[oldest] > timeout_s else None
        if self.attempt_collected is None:
            return ("phase", "collection") if now - self.attempt_started > collect_s else None
        if self.done_since is not None and now - self.done_since > exit_s:
            return ("phase", "exit")
        return None


def _phase_timeouts(collect_s: int | None, exit_s: int | None) -> tuple[int, int]:
    """The collection and exit deadlines: arguments, else SEAMS_COLLECT/EXIT_TIMEOUT_S, else defaults."""
    out = []
    for given, var, default in ((collect_s, "SEAMS_COLLECT_TIMEOUT_S", COLLECT_TIMEOUT_S),
                                (exit_s, "SEAMS_EXIT_TIMEOUT_S", EXIT_TIMEOUT_S)):
        if given is None:
            text = os.environ.get(var, "").strip()
            if not text:
                given = default
            elif text.isdigit() and int(text) > 0:
                given = int(text)
            else:
                raise UserError(f"{var}={text!r}: must be a positive whole number of seconds")
        out.append(given)
    return out[0], out[1]


def run_cell(
    cell: Cell,
    results: Path,
    pytest_args: Sequence[str] = (),
    *,
    judge: CaseJudge | None = None,
    timeout_s: int | None = None,
    progress: ProgressFn = lambda _c, _e: None,
    log_dir: Path | None = None,
    extra_env: dict[str, str] | None = None,
    env_provider: Callable[[Cell, Callable[[str], None]], Env] = ensure_env,
    collect_timeout_s: int | None = None,
    exit_timeout_s: int | None = None,
    xdist: int = 0,
    build_only: bool = False,
    backend_timeout_s: int | None = None,
) -> CellRun:
    """Build the cell's env and run pytest in it, writing every result to `results` as it happens.

    env_provider lets a caller hand over an env it is already building in the background
    (`harness run` prepares the next cell's env while the current one runs its tests).
    xdist: pytest-xdist workers inside the cell (0: one pytest process; see harness.run.workers).
    judge: the verdict of each finished case for the progress lines (harness.judge.live); the results
    file holds raw outcomes only, judged again by every report.
    build_only: build and verify the env (whatever the device), record `EnvVerified`, run nothing.
    backend_timeout_s: the gpu/tpu backend-start probe's deadline (harness.run.backend).
    """
    phases = _phase_timeouts(collect_timeout_s, exit_timeout_s)
    backend_s = backend_timeout(backend_timeout_s)
    results = Path(results).absolute()  # pytest runs in the checkout, not in the caller's folder
    refuse_special_dir(results.parent)  # results/ a symlink: never written through
    faults.point("mkdir", results.parent)
    results.parent.mkdir(parents=True, exist_ok=True)
    refuse_special(results)
    lock = FileLock(str(results) + ".lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise UserError(f"{results}: another run of cell {cell.name} is writing this file; wait for it or use another --out") from None
    try:
        return _run_locked(cell, results, pytest_args, judge or _unjudged, timeout_s or cell.timeout_s, phases,
                           progress, log_dir or results.parent.parent / "logs", extra_env or {}, env_provider, xdist,
                           build_only, backend_s)
    finally:
        lock.release()


def _run_locked(cell: Cell, results: Path, pytest_args: Sequence[str], judge: CaseJudge,
                timeout_s: int, phases: tuple[int, int], progress: ProgressFn, log_dir: Path, extra_env: dict[str, str],
                env_provider: Callable[[Cell, Callable[[str], None]], Env], xdist: int,
                build_only: bool = False, backend_s: int = 30) -> CellRun:
    start = time.monotonic()
    # A re-run replaces the cell's previous results; write to a fresh file then move it into place
    # only as the first record lands, so a reader never sees a half-replaced file.
    tmp = results.with_name(results.name + ".new")
    tmp.unlink(missing_ok=True)
    try:
        append_record(tmp, {"$report_type": "CellStart", "schema_version": SCHEMA_VERSION,
                            **cell.describe(), "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                            "harness_version": __version__, "timeout_s": timeout_s, "ignored_env": _ignored_env(cell),
                            "dropped_env": caller_env(dict(os.environ))[2],
                            # what of the caller's environment building the env sees (startup_env.BUILD_ALLOWED)
                            "build_env": build_env_record(dict(os.environ)), **_run_id_field()})
        faults.point("rename", results)
        os.replace(tmp, results)
    except BaseException:
        tmp.unlink(missing_ok=True)  # the previous results stay as they were
        raise
    run = CellRun(cell=cell, results=results, status="complete", ignored_env=_ignored_env(cell))
    stream = ResultsStream(results)  # from here on only the harness writes the file (pytest's records come by pipe)

    def end(status: str, reason: str = "", exitstatus: int | None = None) -> CellRun:
        if run.left_processes:  # said in the cell's reason, so every report shows it
            reason = "; ".join(filter(None, [reason, _left_note(run.left_processes)]))
        if run.ignored_env:
            reason = "; ".join(filter(None, [reason, f"not passed from the caller's environment: "
                                                     f"{', '.join(sorted(run.ignored_env))}"]))
        stream.check(deep=True)
        reason = "; ".join(filter(None, [reason, *stream.notes()]))
        if status == "complete" and (stream.damage or stream.garbage or stream.oversize):
            status = "incomplete"  # restored, but a test that attacks the harness's stream is news
        run.status, run.reason = status, reason
        run.duration_s = time.monotonic() - start
        stream.append({"$report_type": "CellEnd", "cell": cell.name, "complete": True, "status": status,
                                "reason": reason, "exitstatus": exitstatus, "duration_s": round(run.duration_s, 3),
                                "left_processes": run.left_processes})
        progress(cell.name, {"event": "end", "status": status, "reason": reason, "outcomes": run.outcomes,
                             "verdicts": run.verdicts, "duration_s": run.duration_s})
        return run

    try:
        return _run_started(cell, stream, pytest_args, judge, timeout_s, phases, progress, log_dir,
                            extra_env, env_provider, run, end, xdist, build_only, backend_s)
    except BaseException as exc:
        # Interrupted (Ctrl-C, SIGTERM, SIGHUP) or a harness bug: the child is already dead (the
        # signal handler and the finally blocks kill it); close the file saying why, then unwind.
        what = (signal.Signals(exc.signum).name if isinstance(exc, lifeline.Terminated)
                else "SIGINT" if isinstance(exc, KeyboardInterrupt) else type(exc).__name__)
        try:
            end("incomplete", f"the harness was stopped ({what}) before the cell finished")
        except BaseException:
            pass
        raise
    finally:
        stream.close()


def _run_started(cell: Cell, stream: ResultsStream, pytest_args: Sequence[str], judge: CaseJudge,
                 timeout_s: int, phases: tuple[int, int], progress: ProgressFn, log_dir: Path,
                 extra_env: dict[str, str], env_provider: Callable[[Cell, Callable[[str], None]], Env],
                 run: CellRun, end: Callable[..., CellRun], xdist: int, build_only: bool = False,
                 backend_s: int = 30) -> CellRun:
    collect_s, exit_s = phases
    results = stream.path
    ok, why = available(cell.device)
    if not ok and not build_only:
        stream.append({"$report_type": "CellSkipped", "cell": cell.name, "reason": why})
        return end("skipped", why)

    progress(cell.name, {"event": "env"})
    try:
        env = env_provider(cell, lambda m: progress(cell.name, {"event": "env", "message": m}))
    except EnvError as exc:
        stream.append({"$report_type": "EnvError", "cell": cell.name, "reason": exc.reason,
                                "log_tail": exc.log_tail})
        return end("env-error", exc.reason)
    run.env_reused, run.env_s = env.reused, env.build_s
    progress(cell.name, {"event": "env-ready", "reused": env.reused, "seconds": env.build_s})
    if build_only:  # the recipe is proved (installed, imported, versions checked); nothing runs
        versions = env.versions
        if env.reused:  # checked again now: "verified" means by this run, runtime packages included
            try:
                versions = verify(env.python, cell)
            except EnvError as exc:
                stream.append({"$report_type": "EnvError", "cell": cell.name, "reason": exc.reason,
                                        "log_tail": exc.log_tail})
                return end("env-error", exc.reason)
        reason = f"env verified, not run: {not_run_reason(cell.device, why)}"
        stream.append({"$report_type": "EnvVerified", "cell": cell.name, "reason": reason,
                                "versions": versions, "reused": env.reused,
                                "build_s": round(env.build_s, 3)})
        return end("skipped", reason)
    if needs_probe(cell):
        progress(cell.name, {"event": "env", "message": f"starting the {cell.device} backend"})
        try:
            started = probe(env.python, cell, extra_env, backend_s)
        except BackendDown as exc:
            stream.append({"$report_type": "EnvError", "cell": cell.name, "reason": exc.reason,
                                    "log_tail": exc.log})
            return end("env-error", exc.reason)
        progress(cell.name, {"event": "env", "message": f"{cell.device} backend started in {started.seconds:.1f} s: "
                                                        f"{started.count} x {', '.join(started.kinds)}"})
        workers = workers_for_chips(xdist, started.count)
        if workers != xdist:
            progress(cell.name, {"event": "env", "message": f"--xdist {xdist}, but the backend shows {started.count} "
                                                            f"{cell.device} devices: {workers} workers, one chip each"})
            xdist = workers

    refuse_special_dir(log_dir)  # logs/ a symlink: the log would land wherever it points
    faults.point("mkdir", log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{cell.name}.log"
    # The previous log is replaced whole, in one step (a fresh empty file renamed over it), never truncated
    # in place: a FIFO or symlink there is refused, never followed, and a reader holding the old log keeps
    # it. The log is then written as the cell runs, so a crash keeps what was logged.
    atomic_write(log_path, b"", durable=False)
    watch = _Watch(judge=judge, device=cell.device)
    skip: list[str] = []
    exitstatus = None
    stopped = ""  # why the cell stopped before running everything (a hang or crash outside the tests)
    token = uuid.uuid4().hex  # marks every process this cell's tests start, wherever it goes (lifeline.sweep)
    run_env = {**extra_env, "SEAMS_CELL_LOG": str(log_path), **lifeline.owner_env(token),
               # xdist's own 10 s wait for a worker to exit is load, not a hang: scaled to half our deadline
               "SEAMS_XDIST_EXIT_WAIT_S": str(max(10, exit_s // 2))}
    lifeline.become_subreaper()  # a double-forked daemon comes back to us, not to init
    before = lifeline.descendants()  # ours already (a caller's own children): never the tests' leftovers
    cgroup = lifeline.Cgroup.create(token)  # where cgroup v2 is delegated to us: pytest starts inside it
    if cgroup is not None:
        run_env.update(cgroup.env())
    left: list[str] = []
    xdist_mode = bool(xdist) or user_chose(pytest_args)
    for _attempt in range(MAX_RESUMES):
        argv = _pytest_argv(env.python, cell, results, skip, pytest_args, xdist, timeout_s,
                            serial=not xdist_mode)
        # Under xdist each worker times its own tests (and records the stack); the harness's deadline
        # is only the backstop, so it comes later.
        test_limit = timeout_s + BACKSTOP_S if xdist_mode else timeout_s
        watch.begin_attempt()
        try:
            overdue, rc = _attempt_once(argv, cell, run_env, log_path, stream, watch, (test_limit, collect_s, exit_s),
                                        progress)
        except _NotStarted as exc:  # the machine refused the process or its log (EAGAIN, EMFILE): the cell's outcome
            stopped = f"could not start pytest: {exc}"
            break
        finally:  # processes that left pytest's group (setsid, double fork, daemons) end with it too
            left += lifeline.sweep(token, adopted_besides=before, cgroup=cgroup)  # in its cgroup, marked, or adopted
            for rec in stream.close_pipe():  # whatever came between the last poll and exit
                watch.feed(rec, progress, cell.name)
        stream.check(deep=True)
        if overdue is not None and overdue[0] == "test":
            _record(stream, {"$report_type": "TestTimeout", "nodeid": overdue[1], "timeout_s": test_limit},
                    watch, progress, cell.name)
            after = "a test overran the harness's deadline"  # why the next attempt, if there is one
        elif overdue is not None:  # a hang outside any test: record it, keep every result, move on
            phase = overdue[1]
            limit = collect_s if phase == "collection" else exit_s
            _record(stream, {"$report_type": "PhaseTimeout", "phase": phase, "timeout_s": limit,
                              "stderr_tail": file_tail(log_path, 2000)}, watch, progress, cell.name)
            if phase == "collection":
                stopped = f"hung while importing and collecting: killed after {limit} s; see {log_path}"
            exitstatus = rc
            break
        elif len(watch.running) > 1:
            # pytest's xdist controller died while its workers ran several tests: which one (if any)
            # caused it is unknown, so none is blamed; the rest runs again without xdist, where a
            # crash names its test.
            _record(stream, _died("", rc, log_path, phase="outside tests", running=sorted(watch.running)),
                    watch, progress, cell.name)
            watch.running.clear()
            xdist, xdist_mode = 0, False
            after = "the xdist controller died"
        elif watch.current is not None:
            _record(stream, _died(watch.current, rc, log_path), watch, progress, cell.name)
            after = "pytest died in a test"
        elif rc < 0:  # died by a signal outside any test: while collecting, between tests, or at exit
            phase = ("collection" if watch.attempt_collected is None
                     else "exit" if watch.done_since is not None else "outside tests")
            _record(stream, _died("", rc, log_path, phase=phase), watch, progress, cell.name)
            if phase == "collection":
                stopped = f"pytest died with {signal_name(rc)} while importing and collecting; see {log_path}"
            exitstatus = rc
            if phase != "outside tests":
                break
            after = "pytest died outside tests"
        else:
            exitstatus = rc
            if not (xdist_mode and watch.workers_died):
                break
            # xdist stopped replacing workers that died (--max-worker-restart), or lost a test a dead
            # worker held: resume what is left.
            after = "xdist's workers died and left tests unrun"
        remaining = [n for n in (watch.collected or []) if n not in watch.finished]
        if not remaining:
            break
        skip = sorted(watch.finished)
        # said in the results, not only on the terminal: a second pytest process is news to whoever reads them
        stream.append({"$report_type": "Resumed", "remaining": len(remaining), "after": after,
                       "nodeids": remaining[:RESUMED_NAMED]})
        progress(cell.name, {"event": "resume", "remaining": len(remaining)})
    if cgroup is not None:
        cgroup.remove()
    results.with_name(results.name + ".done.json").unlink(missing_ok=True)
    shutil.rmtree(results.with_name(results.name + ".hangs"), ignore_errors=True)
    run.outcomes = dict(watch.outcomes)
    run.verdicts = dict(watch.verdicts)
    if left:
        run.left_processes = left
    if watch.collected is None:
        reason = stopped or f"pytest ended before collecting (exit {exitstatus}){_telling_line(log_path)}; see {log_path}"
        return end("incomplete", reason, exitstatus)
    missing = [n for n in watch.collected if n not in watch.finished]
    if missing:
        why = stopped or f"pytest stopped early (exit {exitstatus}); see {log_path}"
        return end("incomplete", f"{len(missing)} of {len(watch.collected)} collected cases did not finish: {why}",
                   exitstatus)
    if not watch.collected and not watch.collect_errors:
        return end("incomplete", "no tests collected (zero tests is never a pass: check the selection after --)",
                   exitstatus)
    return end("complete", _narrowed(watch), exitstatus)


def close_dead_run(cell: Cell, results: Path, why: str, started_at: float) -> None:
    """Close the results of a cell whose runner died (a `-j` worker killed by a signal): its file ends
    with an `incomplete` CellEnd saying why, after every result it finished. A file older than the
    worker (it died before writing its own) is replaced by one that says so, never extended."""
    results = Path(results)
    try:
        fresh = results.stat().st_mtime >= started_at
    except FileNotFoundError:
        fresh = False
    if fresh and _closed(results):
        return  # it died after closing its cell (while judging or reporting): the results are whole
    if not fresh:
        tmp = results.with_name(results.name + ".new")
        append_record(tmp, {"$report_type": "CellStart", "schema_version": SCHEMA_VERSION, **cell.describe(),
                            "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                            "harness_version": __version__, "timeout_s": cell.timeout_s, **_run_id_field()})
        os.replace(tmp, results)
    append_record(results, {"$report_type": "CellEnd", "cell": cell.name, "complete": True, "status": "incomplete",
                            "reason": why})


def _run_id_field() -> dict[str, str]:
    """The CellStart's `run_id`: which invocation (a tox command, one `harness run`) the cell belongs to."""
    rid = run_id()
    return {"run_id": rid} if rid else {}


def _closed(results: Path) -> bool:
    """True if the file's last line is a CellEnd record."""
    last = file_tail(results, 4096).rstrip("\n").rsplit("\n", 1)[-1]
    try:
        return json.loads(last).get("$report_type") == "CellEnd"
    except (ValueError, AttributeError):
        return False


def _narrowed(watch: _Watch) -> str:
    """'2 of 101 cases selected (-k ok)' for a run narrowed by -k, -m, --deselect or paths, else ''.
    A narrowed run is never a plain "complete": it says what it left out."""
    sel, n = watch.selection or {}, len(watch.collected or [])
    if whole_suite(sel):
        return ""
    by = [f"-k {sel['keyword']!r}"] if sel.get("keyword") else []
    by += [f"-m {sel['markexpr']!r}"] if sel.get("markexpr") else []
    paths = selected_paths(sel)
    by += [", ".join(paths[:3]) + (" ..." if len(paths) > 3 else "")] if paths else []
    deselected = sel.get("deselected") or 0
    whole = f"{n} of {n + deselected}" if deselected else f"{n}"
    scope = "" if deselected and not paths else " (not the whole suite)"
    return f"{whole} cases selected" + (f" by {'; '.join(by)}" if by else "") + scope


def _ignored_env(cell: Cell) -> dict[str, str]:
    """The caller's variables that would change what a cell runs (PYTEST_ADDOPTS, LD_PRELOAD, JAX_*, ...): not
    passed on. One the cell sets itself (its matrix's PJRT_DEVICE, XLA_FLAGS) is left out: the cell's value
    wins whatever the caller holds (it is still in CellStart's dropped_env)."""
    own = cell.run_env()
    return {k: v for k, v in drop_startup_vars(dict(os.environ))[1].items() if k not in own}


def _left_note(commands: list[str]) -> str:
    """'a test left 2 processes running (killed at cell end: sleep 600; ...)'."""
    n = len(commands)
    shown = "; ".join(redact(c)[:80] for c in commands[:3]) + ("; ..." if n > 3 else "")
    return f"a test left {n} process{'es' if n != 1 else ''} running (killed at cell end: {shown})"


def _died(nodeid: str, rc: int, log_path: Path, **extra: object) -> dict:
    """The TestCrash record of a pytest process that died with `rc` (nodeid '' outside any test)."""
    return {"$report_type": "TestCrash", "nodeid": nodeid, "signal": signal_name(rc), "returncode": rc, **extra,
            "stderr_tail": file_tail(log_path, 2000)}


def _record(stream: ResultsStream, rec: dict, watch: _Watch, progress: ProgressFn, cell: str) -> None:
    """Append a crash or timeout record the runner itself saw, show it, count it, mark its test done."""
    stream.append(rec)
    raw = "crash" if rec["$report_type"] == "TestCrash" else "timeout"
    shown = rec.get("nodeid") or f"({rec.get('phase', 'outside tests')})"
    progress(cell, {"event": "test", "nodeid": shown, "raw": raw, "verdict": raw, "signal": rec.get("signal")})
    watch.count(raw, raw)
    if rec.get("nodeid"):
        watch.finish(rec["nodeid"])


class _NotStarted(Exception):
    """The machine refused to start pytest (no processes or file descriptors left): the cell's outcome."""


def _attempt_once(argv: list[str], cell: Cell, extra_env: dict[str, str], log_path: Path, stream: ResultsStream,
                  watch: _Watch, limits: tuple[int, int, int], progress: ProgressFn
                  ) -> tuple[tuple[str, str] | None, int]:
    """One pytest process, watched to its end: (what overran its deadline, if anything; return code).

    Its records come over a pipe (`--seams-stream FD`) and only the harness writes them to the file.
    Its process group is killed on the way out whatever happens, so nothing it started survives it.
    """
    read_fd, write_fd = os.pipe()  # the lifeline: EOF in the child means the harness is gone
    stream_fd = stream.open_pipe()
    argv = [*argv[:3], "--seams-stream", str(stream_fd), *argv[3:]]  # after `python -m pytest`
    passed = caller_env(dict(os.environ))[0]  # the allow-list: nothing else of the caller's reaches the cell
    child_env = {**passed, **cell.run_env(), **extra_env, "PYTHONPATH": str(REPO),
                 "PYTHONUNBUFFERED": "1", "SEAMS_CELL": cell.name, "SEAMS_DEVICE": cell.device,
                 lifeline.LIFELINE_ENV: str(read_fd),
                 # RunInfo records each of these (values with credentials masked), so the report shows them
                 "SEAMS_RECORD_ENV": ",".join(sorted({*passed, *cell.run_env()}))}
    child_env.pop("VIRTUAL_ENV", None)
    try:
        try:
            faults.point("open", log_path)
            # O_NOFOLLOW: a symlink put where the log is (after it was made) is refused, never written through
            fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "ab") as log:
                faults.point("spawn", argv[0])
                proc = subprocess.Popen(lifeline.wrap(argv), cwd=REPO, env=child_env, stdout=log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, pass_fds=(read_fd, stream_fd))
        except OSError as exc:
            raise _NotStarted(f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")) from None
        lifeline.track(proc)
        for fd in (read_fd, stream_fd):  # the child holds its ends now; the pipe's EOF is the child's
            os.close(fd)
        read_fd = stream_fd = -1
        try:
            overdue = _watch(proc, stream, watch, limits, progress, cell.name)
        finally:
            lifeline.kill_group(proc)
            lifeline.untrack(proc)
            lifeline.wait_group_gone(proc.pid)  # its pipe guard too, before the sweep looks for leftovers
    finally:
        for fd in (read_fd, write_fd, stream_fd):
            if fd >= 0:
                os.close(fd)
    return overdue, proc.returncode


def _telling_line(log_path: Path) -> str:
    """': <the last error line of the log>' (pytest's `E   ...` or `ERROR: ...`), or ''."""
    lines = [ln.strip() for ln in file_tail(log_path, 4000).splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith(("E ", "ERROR", "ImportError", "ModuleNotFoundError")) or "Error:" in ln:
            return ": " + ln.removeprefix("E").strip()[:300]
    return ""


def _pytest_argv(python: Path, cell: Cell, results: Path,
                 skip: Sequence[str], pytest_args: Sequence[str], xdist: int = 0, timeout_s: int = 0,
                 serial: bool = False) -> list[str]:
    argv = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(REPO),
            # values from the matrix as --opt=VALUE: a name or pin can never be read as an option of its own
            "--seams-results", str(results), f"--seams-cell={cell.name}", f"--seams-device={cell.device}",
            f"--seams-pins={json.dumps(cell.pins)}", "-q", "-rfEsx",
            # Python's own traceback format in the cell's log: pytest's default ("long") parses the source
            # file of every frame with ast to find statement ranges (torch's OpInfo database is 25k lines),
            # about 85 ms a failure, where an op family fails hundreds of times per cell as known bugs;
            # native is about 15 ms. The judge reads the plugin's message, a collection error's reprcrash,
            # never the traceback's text. A `--tb` among the caller's pytest args comes later and wins.
            "--tb=native",
            # One module that fails to import is recorded as its own error; the others still run.
            "--continue-on-collection-errors"]
    argv += xdist_args(xdist, list(pytest_args))
    if xdist or user_chose(pytest_args):  # read only by xdist workers: the deadline each one arms
        argv += ["--seams-timeout", str(timeout_s)]
    if xdist:
        argv += ["--seams-chips", str(xdist)]
    if skip:
        done = results.with_name(results.name + ".done.json")
        faults.point("open", done)
        done.write_text(json.dumps(list(skip)))
        argv += ["--seams-done", str(done)]
    # Run the suites unless the caller named what to run (a path or node id inside this checkout).
    if not any(not a.startswith("-") and (REPO / a.split("::")[0]).exists() for a in pytest_args):
        argv.append("suites")
    # serial after the xdist controller died: `-n 0` last, so it wins over a -n among pytest_args.
    return argv + list(pytest_args) + (["-n", "0"] if serial and user_chose(pytest_args) else [])


def _watch(proc: subprocess.Popen, stream: ResultsStream, watch: _Watch, limits: tuple[int, int, int],
           progress: ProgressFn, cell: str) -> tuple[str, str] | None:
    """Wait for the child; kill its process group once a test or a phase outlives its deadline."""
    while proc.poll() is None:
        for rec in stream.pump():
            watch.feed(rec, progress, cell)
        late = watch.overdue(time.monotonic(), *limits)
        if late is not None:
            lifeline.kill_group(proc)
            return late
        try:
            proc.wait(timeout=_POLL_S)  # returns as soon as pytest exits, unlike a sleep
        except subprocess.TimeoutExpired:
            pass
    return None
