"""The harness's own appends to a cell's results file: fault points, fsync, and no record glued to a torn one.

pytest (the code under test) also writes this file; when it dies mid-record its last line is
torn. Appending after that would glue the harness's record onto the fragment and lose both, so the
torn tail is cut first (the harness appends only once the child is dead) and the cut is recorded
in the next record (`torn_tail_bytes`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness import faults
from harness.redact import redact, redact_all
from harness.safeio import atomic_write

_TAIL_PROBE = 1 << 16  # how far back to look for the last newline (a longer torn line is cut whole)


def _cut_torn_tail(fd: int) -> int:
    """Truncate a final line with no newline; the number of bytes cut."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0
    start = max(0, size - _TAIL_PROBE)
    tail = os.pread(fd, size - start, start)
    if tail.endswith(b"\n"):
        return 0
    nl = tail.rfind(b"\n")
    keep = start + nl + 1 if nl >= 0 else (0 if start == 0 else start)
    os.ftruncate(fd, keep)
    return size - keep


def _redacted(line: bytes) -> bytes:
    """A record's line with every URL's credentials masked (redact on its JSON text: the user part of a
    URL never holds a quote, so the JSON stays valid)."""
    if b"@" not in line or b"://" not in line:
        return line
    text = line.decode("utf-8", "surrogateescape")
    return redact(text).encode("utf-8", "surrogateescape")


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON record as a line and fsync it: a kill right after loses nothing."""
    record = redact_all(record)
    faults.point("open", path)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        cut = _cut_torn_tail(fd)
        if cut:
            record = {**record, "torn_tail_bytes": cut}
        line = (json.dumps(record, default=str) + "\n").encode("utf-8", "backslashreplace")
        faults.point("write", path)
        os.write(fd, line)
        faults.point("fsync", path)
        os.fsync(fd)
    finally:
        os.close(fd)


MAX_RECORD_BYTES = 4 << 20  # a line longer than this is not a record the plugin wrote (it bounds its own)
_PIPE_BYTES = 1 << 20


class ResultsStream:
    """The one writer of a cell's results file: pytest sends its records over a pipe, the harness
    checks each line, writes it, and keeps a copy of everything written.

    So the tested process cannot lose or corrupt finished results: it never writes the file; a torn
    record (a kill mid-write) stays in the pipe and is dropped; a line that is not a record is
    dropped and counted; and if the file is truncated, deleted, replaced, edited or its folder
    removed, the next check rewrites it whole from the copy and says so in the cell's reason.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.copy = bytearray(self.path.read_bytes())  # the CellStart the runner wrote
        self._seen = self._stat()
        self._fd = -1  # the file, open for appending while the cell runs
        self._read_fd = -1
        self._partial = b""
        self.torn = 0  # bytes of records cut by a kill
        self.garbage = 0  # lines on the stream that were not records
        self.oversize = 0  # lines over MAX_RECORD_BYTES
        self.damage: list[str] = []  # what the tested process did to the file (each restored)

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size)

    # -- the pipe --------------------------------------------------------------------------------
    def open_pipe(self) -> int:
        """A fresh pipe for one pytest process: its write end (pass it to the child, then close it here)."""
        self.close_pipe()
        r, w = os.pipe()
        os.set_blocking(r, False)
        try:
            import fcntl

            fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_BYTES)  # pytest rarely waits on us
        except (ImportError, OSError):
            pass
        self._read_fd, self._partial = r, b""
        return w

    def pump(self) -> list[dict[str, Any]]:
        """Read what the pipe holds now, write each complete record, return them parsed."""
        if self._read_fd < 0:
            return []
        chunks = []
        while True:
            try:
                data = os.read(self._read_fd, _PIPE_BYTES)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                break
            chunks.append(data)
        if not chunks:
            return []
        data = self._partial + b"".join(chunks)
        *lines, self._partial = data.split(b"\n")
        if len(self._partial) > MAX_RECORD_BYTES:  # a line that never ends: not a record
            self.oversize += 1
            self._partial = b""
        out = []
        for raw in lines:
            rec = self._check_line(raw)
            if rec is not None:
                self._write(raw + b"\n")
                out.append(rec)
        return out

    def close_pipe(self) -> list[dict[str, Any]]:
        """The child is gone: take what is left; a partial last line is a torn record, dropped."""
        if self._read_fd < 0:
            return []
        out = self.pump()
        if self._partial:
            self.torn += len(self._partial)
            self._partial = b""
        os.close(self._read_fd)
        self._read_fd = -1
        return out

    def _check_line(self, raw: bytes) -> dict[str, Any] | None:
        if len(raw) > MAX_RECORD_BYTES:
            self.oversize += 1
            return None
        try:
            rec = json.loads(raw)
        except (ValueError, RecursionError):
            rec = None
        if not isinstance(rec, dict) or not isinstance(rec.get("$report_type"), str):
            self.garbage += bool(raw.strip())
            return None
        return rec

    # -- the file --------------------------------------------------------------------------------
    def append(self, record: dict[str, Any]) -> None:
        """A record of the harness's own (crash, timeout, CellEnd), fsynced."""
        self._write((json.dumps(record, default=str) + "\n").encode("utf-8", "backslashreplace"), sync=True)

    def _write(self, line: bytes, sync: bool = False) -> None:
        line = _redacted(line)  # a token in a --with/--repo URL, a uv or git message: never in the results
        self.check()
        if self._fd < 0:
            faults.point("open", self.path)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        faults.point("write", self.path)
        os.write(self._fd, line)
        self.copy += line
        self._seen = self._stat()
        if sync:
            faults.point("fsync", self.path)
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the file (the cell is over); the pipe too, if one is still open."""
        self.close_pipe()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def check(self, deep: bool = False) -> None:
        """Rewrite the file from the copy if the tested process changed it (deep: compare the bytes)."""
        now = self._stat()
        if now is None:
            what = "deleted it" if self.path.parent.is_dir() else "removed its folder"
        elif self._seen is None or now[0] != self._seen[0]:
            what = "replaced it"
        elif now[1] < len(self.copy):
            what = "truncated it"
        elif now[1] > len(self.copy):
            what = "wrote into it"
        elif deep and self._differs():
            what = "changed its contents"
        else:
            return
        if what not in self.damage:
            self.damage.append(what)
        if self._fd >= 0:  # it may hold the old file (replaced, deleted): reopened on the next write
            os.close(self._fd)
            self._fd = -1
        faults.point("mkdir", self.path.parent)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, bytes(self.copy))
        self._seen = self._stat()

    def _differs(self) -> bool:
        try:
            with open(self.path, "rb") as fh:
                return fh.read(len(self.copy) + 1) != bytes(self.copy)
        except OSError:
            return True

    def notes(self) -> list[str]:
        """What went wrong on the stream, for the cell's reason (empty when nothing did)."""
        out = []
        if self.damage:
            out.append(f"the tested process {' and '.join(self.damage)} (the results file); "
                       "it was restored from the harness's copy")
        if self.garbage:
            out.append(f"{self.garbage} line{'s' if self.garbage != 1 else ''} on the results stream "
                       "were not records (dropped)")
        if self.oversize:
            out.append(f"{self.oversize} record{'s' if self.oversize != 1 else ''} over "
                       f"{MAX_RECORD_BYTES >> 20} MiB dropped")
        if self.torn:
            out.append(f"a record cut by a kill ({self.torn} bytes) was dropped")
        return out
