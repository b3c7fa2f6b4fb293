"""Tests that leave processes outside pytest's process group: a setsid child and a double-forked
daemon that closes its fds. Run only by tests/test_hostile.py, which reads their pids from
$SEAMS_DRILL_PIDS and checks that the cell's end killed them."""

import os
import subprocess
import sys
import time

from .escaping import ESCAPING_DAEMON


def _note(pid: int) -> None:
    with open(os.environ["SEAMS_DRILL_PIDS"], "a") as fh:
        fh.write(f"{pid}\n")


def test_setsid_child():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    _note(child.pid)


def test_double_forked_daemon():
    r, w = os.pipe()
    if os.fork() == 0:  # the classic daemon: fork, setsid, fork again, the middle one exits
        os.setsid()
        if os.fork() == 0:
            os.write(w, f"{os.getpid()}\n".encode())
            os.closerange(0, 1024)  # unlike the first, it keeps no fd that ties it to pytest
            time.sleep(600)
        os._exit(0)
    os.close(w)
    pid = int(os.read(r, 64).decode().strip())
    _note(pid)


def test_clean_environment_daemon():
    """The same daemon started with an empty environment (no SEAMS_OWNER mark): found as the subreaper's."""
    out = subprocess.run([sys.executable, "-I", "-c", ESCAPING_DAEMON], env={}, capture_output=True, text=True, timeout=60)
    _note(int(out.stdout.strip()))


def test_ok_after():
    assert True
