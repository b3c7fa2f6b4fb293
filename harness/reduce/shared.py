"""The folder the processes of one `reduce -j N` batch share (a private temporary folder, made by the
batch): what each worker tells the others and the harness while the batch runs.

- seeds (`seed-*.json`): each reduction a worker makes, taken by the others before each script (a part
  holds one cell, and the same case failing the same way in another cell is the seeds' main catch);
- claims (`claim-CASE-PID`): the case a worker is reducing now, so another worker's script of the same
  case waits for its seed instead of searching it at the same time;
- outcomes (`outcome-*.json`): each finished script, for the harness's checkpoints and for what a stop
  writes (a part is a whole cell: an hour of a default run's reduction);
- workers (`worker-PID`): each worker's pid, for stop_workers.

Every file is written whole (a rename) and read as data: a file that does not parse is skipped, and a
seed is only ever a first candidate, run and judged by the reducer's predicate like any other.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from harness.reduce.reducer import Reduction
from harness.safeio import atomic_write

STOP_GRACE_S = 10.0  # a worker's time to go after SIGTERM, before SIGKILL


def publish_seed(shared: Path, red: Reduction) -> str:
    """Write one reduction for the other processes; its file name."""
    name = f"seed-{os.getpid()}-{time.monotonic_ns()}.json"
    atomic_write(shared / name, json.dumps(red.record()), durable=False)
    return name


def take_seeds(shared: Path, seeds: list[Reduction], taken: set[str]) -> None:
    """The other processes' reductions published since the last look, put first among the seeds (the
    latest first); `taken`: the files read before."""
    new = sorted((p for p in shared.glob("seed-*.json") if p.name not in taken), key=lambda p: p.stat().st_mtime_ns)
    for path in new:
        taken.add(path.name)
        try:
            red = Reduction.from_record(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if all(x.body != red.body or x.signature != red.signature for x in seeds):
            seeds.insert(0, red)


def publish_outcome(shared: Path, script: Path, record: dict[str, Any]) -> None:
    """A worker's finished script (its outcome's record), for the harness."""
    atomic_write(shared / f"outcome-{os.getpid()}-{time.monotonic_ns()}.json",
                 json.dumps({"path": str(script), **record}), durable=False)


def take_outcomes(shared: Path, taken: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """(script path, outcome record) of each outcome published since the last look; `taken`: the files
    read before."""
    out = []
    for path in shared.glob("outcome-*.json"):
        if path.name in taken:
            continue
        taken.add(path.name)
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
            script = d.pop("path")
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
        if isinstance(script, str) and isinstance(d, dict):
            out.append((script, d))
    return out


def _key(case: str) -> str:
    return hashlib.sha256(case.encode("utf-8", "replace")).hexdigest()[:24]


def claim(shared: Path, case: str) -> Path:
    """Say that this process is reducing `case` now (a file: remove it when done)."""
    path = shared / f"claim-{_key(case)}-{os.getpid()}"
    path.touch()
    return path


def claimed_elsewhere(shared: Path, case: str) -> bool:
    """Whether another process of the batch is reducing `case` now."""
    mine = f"-{os.getpid()}"
    return any(not p.name.endswith(mine) for p in shared.glob(f"claim-{_key(case)}-*"))


def register_worker(shared: Path) -> None:
    """This process is one of the batch's workers (stop_workers signals it)."""
    (shared / f"worker-{os.getpid()}").touch()


def stop_workers(shared: Path) -> None:
    """SIGTERM to each worker of the batch, SIGKILL to one still there after STOP_GRACE_S."""
    pids = [int(n) for n in (p.name.removeprefix("worker-") for p in shared.glob("worker-*")) if n.isdigit()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass  # gone already
        deadline = time.monotonic() + STOP_GRACE_S
        while time.monotonic() < deadline and any(_running(p) for p in pids):
            time.sleep(0.05)


def _running(pid: int) -> bool:
    """Whether pid is a process that has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
