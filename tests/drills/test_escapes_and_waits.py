"""A test that starts a daemon that escapes everything but a cgroup (a clean environment, setsid, a double
fork, its fds closed) and then runs long, so a test can SIGKILL the harness under it. Run only by
tests/test_no_orphans.py, which reads the daemon's pid from $SEAMS_DRILL_PIDS."""

import os
import subprocess
import sys
import time


def test_escapes_then_waits():
    code = ("import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            "        os.write(1, f'{os.getpid()}\\n'.encode())\n"
            "        os.closerange(0, 1024)\n"
            "        time.sleep(600)\n"
            "    os._exit(0)\n")
    out = subprocess.run([sys.executable, "-I", "-c", code], env={}, capture_output=True, text=True, timeout=60)
    with open(os.environ["SEAMS_DRILL_PIDS"], "w") as fh:
        fh.write(f"{out.stdout.strip()}\n")
    time.sleep(600)
