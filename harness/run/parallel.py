"""`harness run -j N`: run several cells at once, each in its own `harness run --cell` worker.

Each worker is the serial runner for one cell (the same run_cell, the same results and log
files), so a parallel run writes exactly what a serial one does; the parent only schedules,
shows progress and merges the report. Workers report progress as JSON lines on stdout. A worker
runs in its own session, so the terminal's Ctrl-C reaches only the parent, which then interrupts
every worker (SIGINT: the worker's own cleanup ends its pytest) and, after a grace period, kills
whatever those workers had started.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Sequence

from rich.markup import escape

from harness import faults, lifeline
from harness.cells.cell import Cell
from harness.errors import UserError
from harness.incell.resultsfile import signal_name
from harness.run.cellrun import close_dead_run
from harness.run.progress import CellProgress
from harness.run.workers import worker_count

# Seconds of CPU a cell's imports cost, relative to a core: torch (+ torch_xla) imports for
# 15-25 s of CPU, a jax-only cell is mostly idle waiting on small compiles.
HEAVY, LIGHT = 1.0, 0.5
GRACE_S = 3.0
_POLL_S = 0.2


def cores() -> int:
    """CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def cell_weight(cell: Cell) -> float:
    """How much of a core a running cell keeps busy (torch cells import for long; jax-only are light)."""
    return HEAVY if {"torch", "torch_xla", "torch-xla", "torchax"} & set(cell.pins) else LIGHT


def default_jobs(cells: Sequence[Cell]) -> int:
    """How many cells may run at once by default: as many as the cores carry by weight, at least 1."""
    n, load = 0, 0.0
    for w in sorted(cell_weight(c) for c in cells):
        if load + w > cores() + 1e-9:
            break
        n, load = n + 1, load + w
    return max(1, n)


@dataclass
class _Worker:
    cell: Cell
    proc: subprocess.Popen
    stderr: IO[bytes]
    reader: threading.Thread
    token: str = ""  # SEAMS_OWNER mark of everything this worker started (lifeline.sweep)
    started: float = field(default_factory=time.monotonic)
    started_wall: float = field(default_factory=time.time)


def cell_to_json(cell: Cell) -> str:
    """The whole cell as JSON, so a worker runs exactly the parent's cell (sweeps are in no file)."""
    return json.dumps(dataclasses.asdict(cell))


def cell_from_json(text: str) -> Cell:
    """Inverse of cell_to_json. The value comes from the parent's argv, but it is a command-line value all
    the same: anything but a cell this harness wrote (a named cell: its results path stays in --out) is one
    line, exit 2."""
    from harness.cells.devices import CUDA_MAJORS
    from harness.cells.matrix import _CELL_NAME_RE

    try:
        d = json.loads(text)
        tuples = {f.name for f in dataclasses.fields(Cell) if str(f.type).startswith("tuple")}
        cell = Cell(**{k: tuple(v) if k in tuples else v for k, v in d.items()})
    except (ValueError, TypeError, AttributeError):
        raise UserError("--worker-cell: not a cell written by `harness run -j` (an internal option)") from None
    if not isinstance(cell.name, str) or not _CELL_NAME_RE.match(cell.name):
        raise UserError(f"--worker-cell: cell name {cell.name!r} is not NAME-cpu|gpu|tpu")
    if cell.cuda not in CUDA_MAJORS:  # it becomes part of a requirement (jax[cudaN]) and a module name
        raise UserError(f"--worker-cell: cuda {str(cell.cuda)[:20]!r} is not one of {', '.join(CUDA_MAJORS)}")
    return cell


def _worker_argv(cell: Cell, out: Path, expectations: Path, timeout: int | None, verbose: bool,
                 pytest_args: Sequence[str], xdist: int = 0, build_only: bool = False) -> list[str]:
    argv = [sys.executable, "-m", "harness", "run", "--worker-cell", cell_to_json(cell), "--out", str(out),
            "--no-report", "--expectations", str(expectations), "--progress-events", "-j", "1",
            "--xdist", str(xdist)]
    if build_only:
        argv.append("--build-only")
    if timeout is not None:
        argv += ["--timeout", str(timeout)]
    if verbose:
        argv.append("-v")
    return argv + ["--", *pytest_args]


def _read_events(proc: subprocess.Popen, cell: str, progress: CellProgress) -> None:
    for raw in proc.stdout:  # type: ignore[union-attr]
        line = raw.decode("utf-8", "replace").rstrip("\n")
        try:
            ev = json.loads(line)
        except ValueError:
            ev = None
        if isinstance(ev, dict) and "event" in ev:
            ev.pop("cell", None)
            progress(cell, ev)
        elif line.strip():
            progress.print(f"[bold]{escape(cell)}[/]: {escape(line)}")


def worker_error(stderr: bytes, code: int) -> str:
    """A worker's own one-line error (its last `error: ...` or `internal error: ...` line, prefix dropped),
    else its last line, with its exit status; printable, at most 300 characters."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    said = next((ln for ln in reversed(lines) if ln.startswith(("error: ", "internal error: "))),
                lines[-1] if lines else "")
    said = said.removeprefix("error: ")
    said = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in said)[:300]
    return f"{said} (exit {code})" if said else f"exit {code}"


def _descendant_groups(root: int) -> set[int]:
    """Process groups of every live descendant of `root` (Linux /proc; empty elsewhere)."""
    parent: dict[int, int] = {}
    group: dict[int, int] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state ppid pgrp ...
        parent[int(entry.name)], group[int(entry.name)] = int(fields[1]), int(fields[2])
    found, frontier = set(), [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, pp in parent.items() if pp == pid]
        found.update(group[k] for k in kids)
        frontier.extend(kids)
    found.add(root)  # the worker leads its own session's group
    return found - {os.getpgrp()}


def _stop_all(workers: list[_Worker]) -> None:
    """Interrupt every worker, give them GRACE_S to end their pytest, then kill what is left."""
    groups = set()
    for w in workers:
        if w.proc.poll() is None:
            groups |= _descendant_groups(w.proc.pid)
            try:
                w.proc.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + GRACE_S
    for w in workers:
        try:
            w.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for g in groups:
        try:
            os.killpg(g, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for w in workers:
        if w.proc.poll() is None:
            w.proc.kill()
        w.proc.wait()


def run_parallel(cells: Sequence[Cell], *, jobs: int, out: Path, expectations: Path, timeout: int | None,
                 verbose: bool, pytest_args: Sequence[str], progress: CellProgress,
                 weighted: bool, xdist: int | str = 0, build_only: bool = False) -> tuple[list[Path], list[int], list[str]]:
    """Run cells in up to `jobs` workers; returns results files and exit statuses in cell order, and errors.

    `weighted` (the default -j) also keeps the sum of running cells' weights within the cores.
    `xdist` (a number or 'auto') is resolved per cell with the cells running beside it counted.
    """
    beside = min(jobs, len(cells))
    # Heavy cells first (stable within a weight): the longest cell then starts at once instead of
    # ending the run alone. Results and the report keep the matrix's order whatever the start order.
    pending = sorted(cells, key=lambda c: -cell_weight(c))
    running: list[_Worker] = []
    codes: dict[str, int] = {}
    errors: list[str] = []
    child_env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child_env.pop("SEAMS_JOBS", None)
    child_env.pop("SEAMS_XDIST", None)  # each worker gets its own --xdist (resolved here with its neighbours)
    budget = float(cores())
    # SIGTERM and SIGHUP end the run like Ctrl-C (every worker is stopped first), unless the CLI
    # already installed handlers of its own that do so.
    mine = [sig for sig in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(sig) == signal.SIG_DFL]

    def on_signal(_sig, _frame):
        raise KeyboardInterrupt

    on_main = threading.current_thread() is threading.main_thread()
    for sig in mine if on_main else ():
        signal.signal(sig, on_signal)
    try:
        while pending or running:
            load = sum(cell_weight(w.cell) for w in running)
            while pending and len(running) < jobs and not errors and (
                    not running or not weighted or load + cell_weight(pending[0]) <= budget + 1e-9):
                cell = pending.pop(0)
                n = len(cells) - len(pending)
                progress.print(f"[bold]== cell {n}/{len(cells)}: {escape(cell.name)}[/] ({escape(cell.install_line())})")
                err = tempfile.TemporaryFile()
                argv = _worker_argv(cell, out, expectations, timeout, verbose, pytest_args,
                                    worker_count(cell.device, xdist, cores(), beside), build_only)
                token = uuid.uuid4().hex
                started_wall = time.time()
                faults.point("spawn", argv[0])
                proc = subprocess.Popen(argv,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                        env={**child_env, **lifeline.owner_env(token)}, start_new_session=True)
                reader = threading.Thread(target=_read_events, args=(proc, cell.name, progress), daemon=True,
                                          name=f"events-{cell.name}")
                reader.start()
                running.append(_Worker(cell, proc, err, reader, token, started_wall=started_wall))
                load += cell_weight(cell)
            if errors and not running:
                break
            time.sleep(_POLL_S)
            for w in [w for w in running if w.proc.poll() is not None]:
                running.remove(w)
                w.reader.join(timeout=5)
                codes[w.cell.name] = w.proc.returncode
                left = lifeline.sweep(w.token)  # a dead worker's cell cannot clean up after itself
                if w.proc.returncode < 0:  # the worker was killed (OOM killer, a stray kill): its cell's crash
                    why = (f"the -j worker running this cell died with {signal_name(w.proc.returncode)}"
                           + (f"; {len(left)} processes it had started were killed" if left else ""))
                    close_dead_run(w.cell, out / "results" / f"{w.cell.name}.jsonl", why, w.started_wall)
                    progress.print(f"[bold red]{escape(w.cell.name)}: {escape(why)}[/]")
                    codes[w.cell.name] = 1
                elif w.proc.returncode not in (0, 1):  # bad input or a harness bug: the worker said why
                    w.stderr.seek(0)
                    errors.append(f"{w.cell.name}: {worker_error(w.stderr.read(), w.proc.returncode)}")
                    progress.print(f"[bold red]{escape(errors[-1])}[/]")
                w.stderr.close()
    except BaseException:
        progress.close()
        _stop_all(running)
        raise
    finally:
        for sig in mine if on_main else ():
            signal.signal(sig, signal.SIG_DFL)
        progress.close()
    ran = [c for c in cells if c.name in codes]
    return ([out / "results" / f"{c.name}.jsonl" for c in ran], [codes[c.name] for c in ran], errors)
