"""A pytest plugin that SIGKILLs its own pytest at a chosen point of the results stream, once.

SEAMS_DRILL_KILL_AT=I:PART:MARKER kills the process while it writes the I-th record (counted from
0 in this process): PART `0` before any of its bytes (a record boundary), `half` after half of them
(a torn record). MARKER is created first, so the resumed pytest is not killed again. Loaded with
`-p tests.drills.killer` by tests/test_anomaly.py only.
"""

import os
import signal

import pytest


class _KillingFile:
    def __init__(self, inner, at: int, part: str, marker: str) -> None:
        self.inner, self.at, self.part, self.marker, self.n = inner, at, part, marker, 0

    def write(self, text: str) -> int:
        if self.n == self.at:
            data = text.encode("utf-8")
            self.inner.flush()
            os.write(self.inner.fileno(), data[: len(data) // 2 if self.part == "half" else 0])
            open(self.marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        self.n += 1
        return self.inner.write(text)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    spec = os.environ.get("SEAMS_DRILL_KILL_AT", "")
    if not spec:
        return
    at, part, marker = spec.split(":", 2)
    log = config.pluginmanager.get_plugin("seams-results-log")
    if log is not None and not os.path.exists(marker):
        log._file = _KillingFile(log._file, int(at), part, marker)
