"""Drill scenarios for xdist inside a cell: the controller dies while workers run. Run only by tests/test_drills.py."""

import os
import signal
import time


def test_ok_a():
    assert True


def test_kills_the_controller():
    time.sleep(1)  # let the other worker start its test, so two are running when the controller dies
    # Under xdist the parent is pytest's controller; without xdist, pytest itself (never the harness).
    os.kill(os.getppid() if os.environ.get("PYTEST_XDIST_WORKER") else os.getpid(), signal.SIGKILL)


def test_slow_b():
    time.sleep(3)


def test_ok_c():
    assert True
