"""pytest-xdist inside a cell, the harness side: how many workers, and the pytest arguments for them.

The worker side (which chip each worker takes, its deadline per test) runs inside the cell:
harness.incell.xdist_worker.
"""

from __future__ import annotations

import os

from harness.incell.xdist_worker import ACCELERATORS

AUTO = "auto"
# The harness's own deadline for a test under xdist is the worker's plus this much: the worker
# records the timeout with its stack first; the harness kills the whole group only if that failed.
BACKSTOP_S = 30


def parse_workers(text: str) -> int | str:
    """--xdist's value: a whole number of workers (0 = no xdist) or 'auto'; ValueError otherwise."""
    text = text.strip().lower()
    if text == AUTO:
        return AUTO
    if not text.isdigit():
        raise ValueError(f"{text!r}: expected a number of workers (0 = off) or 'auto'")
    return int(text)


def idle_cores(cores: int, load: float | None = None) -> int:
    """Cores nobody else is using: `cores` less the 1-minute load average (os.getloadavg), at least 0.
    A core counts as busy from a load of 0.5 on it, so a half-busy machine does not look free."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (OSError, AttributeError):  # not on this platform: assume the cores are free
            load = 0.0
    return max(0, cores - int(load + 0.5))


def worker_count(device: str, requested: int | str, cores: int, concurrent_cells: int = 1,
                 load: float | None = None) -> int:
    """Workers for one cell: `requested` if a number; for 'auto', the idle cores this cell has to
    itself ((cores - load) // cells running beside it) on cpu, and none on gpu/tpu, where the
    scenarios need every chip in one process (shard_map over all devices) and a chip cannot be shared.
    On a busy machine 'auto' gives none: each worker imports jax itself, which only pays off on
    cores that are free (bench xdist-load). 1 is returned as 0: one worker only adds a process."""
    if requested == AUTO:
        n = 0 if device in ACCELERATORS else idle_cores(cores, load) // max(1, concurrent_cells)
    else:
        n = int(requested)
    return n if n >= 2 else 0


def xdist_args(workers: int, pytest_args: list[str] | tuple[str, ...]) -> list[str]:
    """pytest arguments for `workers` workers; none when the user already chose (-n/--numprocesses)
    or workers is 0 (then `-p no:xdist`, so a stray -n in addopts cannot start workers)."""
    if user_chose(pytest_args):
        return []
    if workers == 0:
        return ["-p", "no:xdist"]
    # Replaced workers re-collect (~seconds each); past 4 per worker the cause is not one test,
    # and the harness resumes the cell in a fresh pytest anyway.
    # worksteal, not load: load hands a dead worker's queue out after everything else, so the tests
    # queued behind a crash (its siblings, often crashing alike: torch 2.9's SIGFPE in int64
    # `mvlgamma_` killed a worker in each of _p_1, _p_3 and _p_5) crash again in the run's last
    # seconds, each replacement's start-up (5 s of imports and collection) with nothing left to
    # overlap; and load's last chunks left one worker idle for 9 s at the end of an OpInfo cell.
    # worksteal gives the dead worker's queue to its replacement and rebalances the end by stealing:
    # torchax0013jax0102-cpu on an idle box, its two workers' last cases 9 s apart under load, 1 s
    # under worksteal (tests/test_incell_scale.py checks where the dead worker's siblings run).
    return ["-n", str(workers), "--dist", "worksteal", "--max-worker-restart", str(4 * workers)]


def user_chose(pytest_args: list[str] | tuple[str, ...]) -> bool:
    """True if the pytest arguments already say how many xdist workers (-n N, -nN, --numprocesses)."""
    return any(a in ("-n", "--numprocesses") or a.startswith("--numprocesses=")
               or (a.startswith("-n") and not a.startswith("--")) for a in pytest_args)
