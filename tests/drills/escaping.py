"""The daemon the containment drills start (no test of its own): a double fork under setsid with its
fds closed, printing its pid, then sleeping; run with `python -I -c` and an empty environment, it
carries none of the harness's marks."""

ESCAPING_DAEMON = ("import os, sys, time\n"
                   "if os.fork() == 0:\n"
                   "    os.setsid()\n"
                   "    if os.fork() == 0:\n"
                   "        os.write(1, f'{os.getpid()}\\n'.encode())\n"
                   "        os.closerange(0, 1024)\n"
                   "        time.sleep(600)\n"
                   "    os._exit(0)\n")
