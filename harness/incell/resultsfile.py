"""Append-only, crash-safe writing of records to a cell's results file (JSON lines, fsynced)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any, Iterator


def selected_paths(selection: dict[str, Any]) -> list[str]:
    """The paths and node ids a run named other than the suites folder (from a Collected record's
    `selection`, which the plugin writes)."""
    return [str(a) for a in selection.get("args") or [] if str(a).rstrip("/") != "suites"]


def whole_suite(selection: dict[str, Any]) -> bool:
    """Whether a Collected record's `selection` is the whole suite: no -k, -m, --deselect, resume or
    path. The runner's status and the judge's stale-known-issue check read it the same way."""
    return not (selection.get("keyword") or selection.get("markexpr") or selection.get("deselected")
                or selection.get("resumed") or selected_paths(selection))


def signal_name(returncode: int | None) -> str | None:
    """'SIGSEGV' for a process killed by a signal (a negative return code), else None."""
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def file_tail(path: str | Path | None, n: int = 4000) -> str:
    """The last n bytes of a log as text ('' if there is none): what a crash record quotes."""
    if not path:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - n))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON record as a line and fsync it: a kill right after loses nothing."""
    line = json.dumps(record, default=str) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


class Tail:
    """Reads the complete lines appended to a file since the last call (a partial last line waits)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self._partial = b""

    def records(self) -> Iterator[dict[str, Any]]:
        """New complete records; lines that are not JSON are skipped (the reader reports them)."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except FileNotFoundError:
            return
        self.offset += len(chunk)
        data = self._partial + chunk
        *lines, self._partial = data.split(b"\n")
        for raw in lines:
            try:
                yield json.loads(raw)
            except ValueError:
                continue
