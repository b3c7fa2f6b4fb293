"""Fault injection for the anomaly loop: fail the harness's Nth file or process call with its OSError.

`SEAMS_FAULT=OP:N` (or `arm("OP:N")` in a test) makes the Nth call of kind OP fail; OP is one of
open, write, rename, fsync, mkdir, spawn, kill, or `any` (the Nth call of any kind). An optional
third field names the errno (`write:3:ENOSPC`); the default is an error the machine really gives
for that call. `SEAMS_FAULT=count` fails nothing and only counts, so a test learns how many fault
points a run has and then fails each one in turn (SQLite's anomaly testing). Unset, point() is a
dictionary lookup: the hook costs nothing in real runs.

Only the harness's own calls go through point(); the code under test (inside a cell) never does.
"""

from __future__ import annotations

import errno
import os
import threading

FAULT_ENV = "SEAMS_FAULT"
OPS = ("open", "write", "rename", "fsync", "mkdir", "spawn", "kill")
# What the machine says when each call fails for reasons of its own (none is a harness bug).
DEFAULT_ERRNO = {"open": errno.EMFILE, "write": errno.EIO, "rename": errno.EXDEV, "fsync": errno.EIO,
                 "mkdir": errno.EACCES, "spawn": errno.EAGAIN, "kill": errno.EPERM}

_lock = threading.Lock()
_spec: tuple[str, int, int | None] | None = None  # (op or 'any' or 'count', N, errno)
_counts: dict[str, int] = {}
_fired: list[tuple[str, int, str]] = []  # (op, call number, path) of each fault raised


def parse(spec: str) -> tuple[str, int, int | None]:
    """('write', 3, errno.EIO) from 'write:3' or 'write:3:EIO'; ValueError names what is wrong."""
    if spec.strip() == "count":
        return ("count", 0, None)
    parts = spec.strip().split(":")
    if len(parts) not in (2, 3) or parts[0] not in (*OPS, "any") or not parts[1].isdigit() or int(parts[1]) < 1:
        raise ValueError(f"{FAULT_ENV}={spec!r}: expected OP:N[:ERRNO] with OP one of {', '.join(OPS)}, any "
                         "and N >= 1, or 'count'")
    code = None
    if len(parts) == 3:
        code = getattr(errno, parts[2], None)
        if not isinstance(code, int):
            raise ValueError(f"{FAULT_ENV}={spec!r}: {parts[2]!r} is not an errno name (e.g. EIO, ENOSPC)")
    return (parts[0], int(parts[1]), code)


def arm(spec: str | None) -> None:
    """Start counting afresh under `spec` (None: off). Tests call this; runs read SEAMS_FAULT."""
    global _spec
    with _lock:
        _spec = parse(spec) if spec else None
        _counts.clear()
        _fired.clear()


def counts() -> dict[str, int]:
    """Calls seen per op since arm()."""
    with _lock:
        return dict(_counts)


def fired() -> list[tuple[str, int, str]]:
    """The faults raised since arm(): (op, call number, path)."""
    with _lock:
        return list(_fired)


def point(op: str, path: object = None) -> None:
    """A fault point: raise op's OSError if this is the call the armed spec names, else count it."""
    if _spec is None:
        return
    with _lock:
        n = _counts[op] = _counts.get(op, 0) + 1
        total = _counts["any"] = _counts.get("any", 0) + 1
        want, at, code = _spec
        if want == "count" or not ((want == op and n == at) or (want == "any" and total == at)):
            return
        _fired.append((op, n, str(path or "")))
    code = code or DEFAULT_ERRNO[op]
    raise OSError(code, f"{os.strerror(code)} (injected by {FAULT_ENV})", *([str(path)] if path else []))


def _from_env() -> None:
    spec = os.environ.get(FAULT_ENV, "").strip()
    if spec:
        try:
            arm(spec)
        except ValueError:
            arm(None)  # the CLI reports the bad value as bad input (check_env)


def check_env() -> None:
    """ValueError if SEAMS_FAULT is set but malformed (the CLI turns it into one line, exit 2)."""
    spec = os.environ.get(FAULT_ENV, "").strip()
    if spec:
        parse(spec)


_from_env()
