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


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON record as a line and fsync it: a kill right after loses nothing."""
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
