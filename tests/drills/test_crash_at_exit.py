"""Every test passes, then the interpreter dies at exit (a runtime's teardown that segfaults). Run only by tests/test_phases.py."""

import atexit
import os
import signal

atexit.register(os.kill, os.getpid(), signal.SIGSEGV)


def test_passes_then_exit_crashes():
    assert True
