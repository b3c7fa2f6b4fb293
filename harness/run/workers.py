"""pytest-xdist inside a cell, the harness side: how many workers, and the pytest arguments for them.

The worker side (which chip each worker takes, its deadline per test) runs inside the cell:
harness.incell.xdist_worker.
"""

from __future__ import annotations

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


def worker_count(device: str, requested: int | str, cores: int, concurrent_cells: int = 1) -> int:
    """Workers for one cell: `requested` if a number; for 'auto', the cores this cell has to itself
    (cores // cells running beside it) on cpu, and none on gpu/tpu, where the scenarios need every
    chip in one process (shard_map over all devices) and a chip cannot be shared.
    1 is returned as 0: one worker only adds a process."""
    if requested == AUTO:
        n = 0 if device in ACCELERATORS else cores // max(1, concurrent_cells)
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
    return ["-n", str(workers), "--dist", "load", "--max-worker-restart", str(4 * workers)]


def user_chose(pytest_args: list[str] | tuple[str, ...]) -> bool:
    """True if the pytest arguments already say how many xdist workers (-n N, -nN, --numprocesses)."""
    return any(a in ("-n", "--numprocesses") or a.startswith("--numprocesses=")
               or (a.startswith("-n") and not a.startswith("--")) for a in pytest_args)
