"""A test that passes but leaves a background process behind. Run only by tests/test_no_orphans.py,
which reads the leaked pid from $SEAMS_DRILL_PIDS."""

import os
import subprocess
import sys


def test_passes_and_leaks_a_background_process():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["SEAMS_DRILL_PIDS"], "w") as fh:
        fh.write(f"{os.getpid()} {child.pid}\n")
