"""Append-only, crash-safe writing of records to a cell's results file (JSON lines, fsynced)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator


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
