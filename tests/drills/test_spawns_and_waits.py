"""A test that starts a grandchild process and then runs long, so a test can stop the harness under it.
Run only by tests/test_no_orphans.py, which reads the pids from $SEAMS_DRILL_PIDS."""

import os
import subprocess
import sys
import time


def test_spawns_a_grandchild_and_waits():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["SEAMS_DRILL_PIDS"], "w") as fh:
        fh.write(f"{os.getpid()} {child.pid}\n")
    time.sleep(600)
