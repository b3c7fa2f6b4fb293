"""A test that starts a daemon that escapes everything but a cgroup (a clean environment, setsid, a double
fork, its fds closed) and then runs long, so a test can SIGKILL the harness under it. Run only by
tests/test_no_orphans.py, which reads the daemon's pid from $SEAMS_DRILL_PIDS."""

import os
import subprocess
import sys
import time

from .escaping import ESCAPING_DAEMON


def test_escapes_then_waits():
    out = subprocess.run([sys.executable, "-I", "-c", ESCAPING_DAEMON], env={}, capture_output=True, text=True, timeout=60)
    with open(os.environ["SEAMS_DRILL_PIDS"], "w") as fh:
        fh.write(f"{out.stdout.strip()}\n")
    time.sleep(600)
