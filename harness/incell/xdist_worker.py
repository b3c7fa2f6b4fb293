"""Inside an xdist worker of a cell: take one chip (gpu/tpu) and arm a deadline per test.

Loaded by harness.incell.plugin; the harness side that decides the worker count is
harness.run.workers. Why a deadline inside the worker: with several tests running at once, the
harness cannot kill pytest's process group for one hung test without killing the others. A worker
instead arms faulthandler's watchdog (a C thread: a hang holding the GIL cannot stop it) for each
test; past the deadline it writes the hung stack to a side file and exits, xdist reports the worker
crashed on that test, and the controller, finding the side file, records a timeout with the stack.
"""

from __future__ import annotations

import faulthandler
import fcntl
import os
import re
import threading
from pathlib import Path
from typing import IO

# A device that one process owns: two processes on one TPU chip fail, on one GPU they fight over
# memory (jax preallocates 75% of it) - so accelerator cells get one chip per worker, or no xdist.
ACCELERATORS = ("gpu", "tpu")


def claim_chip(device: str, lock_dir: Path, chips: int) -> int | None:
    """Inside a worker on gpu/tpu: hold the first free chip's lock and make it the only one this
    process sees. The lock dies with the process, so a replaced worker takes the chip its crashed
    predecessor held (xdist numbers replacements gw2, gw3..., so the worker number is no guide)."""
    if device not in ACCELERATORS:
        return None
    lock_dir.mkdir(parents=True, exist_ok=True)
    for chip in range(chips):
        fh = open(lock_dir / f"chip{chip}.lock", "w")  # noqa: SIM115 - held for the process's life
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            continue
        _held.append(fh)
        if device == "gpu":
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
            ids = [v for v in visible.split(",") if v.strip()] or [str(i) for i in range(chips)]
            os.environ["CUDA_VISIBLE_DEVICES"] = ids[chip % len(ids)]
        else:  # as jax's own conftest does for TPU xdist, plus one chip's process bounds
            os.environ["TPU_VISIBLE_CHIPS"] = str(chip)
            os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "true")
            os.environ.setdefault("TPU_CHIPS_PER_PROCESS_BOUNDS", "1,1,1")
            os.environ.setdefault("TPU_PROCESS_BOUNDS", "1,1,1")
        return chip
    raise RuntimeError(f"all {chips} {device} chips are held by other workers: use at most {chips} xdist workers")


_held: list[IO[str]] = []


class HangGuard:
    """Inside a worker: arm faulthandler's watchdog for each test; past the deadline it writes the
    test's id and every thread's stack to this worker's side file, then exits the worker."""

    def __init__(self, folder: Path, timeout_s: float) -> None:  # noqa: D107
        folder.mkdir(parents=True, exist_ok=True)
        self.timeout_s = timeout_s
        self.path = folder / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}.txt"
        self._fh = open(self.path, "w+", encoding="utf-8")  # noqa: SIM115 - the watchdog writes here

    def arm(self, nodeid: str) -> None:
        """Start the deadline for `nodeid` (the file names the test first, so the stack is attributed)."""
        self._fh.seek(0)
        self._fh.truncate()
        # faulthandler names threads by ident; the test runs on the main thread, whose stack matters.
        self._fh.write(f"{nodeid}\n{_thread_name(threading.main_thread().ident or 0)}\n")
        self._fh.flush()
        faulthandler.dump_traceback_later(self.timeout_s, exit=True, file=self._fh)

    def disarm(self) -> None:
        """The test ended in time."""
        faulthandler.cancel_dump_traceback_later()
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.flush()


def hung_stack(folder: Path, nodeid: str) -> str | None:
    """On the controller, after xdist said a worker died running `nodeid`: the stack its HangGuard
    wrote if the deadline killed it (a timeout), None if it died any other way (a crash)."""
    try:
        files = sorted(folder.glob("*.txt"))
    except OSError:
        return None
    for path in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        first, main, rest = (text.split("\n", 2) + ["", ""])[:3]
        if first == nodeid and rest.startswith("Timeout ("):
            path.unlink(missing_ok=True)  # consumed: a rerun of the same test starts clean
            return _main_thread_first(rest, main)[:4000]
    return None


def _thread_name(ident: int) -> str:
    return f"0x{ident:016x}"


def _main_thread_first(dump: str, main: str) -> str:
    """faulthandler's dump with the main thread's block first (it lists threads newest first)."""
    head, *blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", dump)
    ours = [b for b in blocks if main and main in b.split("\n", 1)[0]]
    rest = [b for b in blocks if b not in ours]
    return "\n".join([head, *ours, *rest])
