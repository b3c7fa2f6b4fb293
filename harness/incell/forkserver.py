"""The reducer's fork server: runs inside a cell's interpreter, imports the heavy packages once and
forks a fresh child per candidate script (harness.reduce.server drives it).

Stdlib only and no harness import: the host copies this file's text into a scratch folder and
runs it with `python -I`, so neither this project nor the host's site-packages are on sys.path.

Protocol: argv[1] is a comma-separated list of modules to import first (a failing import is left
for the script to hit and report). Then one JSON object a line on stdin, {"script": PATH,
"timeout": S} (and "lines": true to have the child write the script's lines that ran and the steps
between them, {"lines": [N, ...], "steps": [[FROM, TO], ...]}, to PATH.lines); for each, one JSON
line on stdout, {"status": EXIT}, where EXIT is the child's exit status (negative: killed by that
signal; SIGALRM is the timeout). The child writes its output to PATH.out and, when the script
raised, {"type", "message", "line", "in_script"} to PATH.sig: the exception's qualified type, its
message, the script's innermost line in the traceback and whether the exception was raised there.
The script is data:
it runs in its own session, under an alarm, and whatever it leaves running is killed with it; the
child dies with the server (the parent-death signal), so a server killed with its host leaves no
candidate running.
"""

import ctypes
import faulthandler
import json
import os
import runpy
import signal
import sys
import traceback


def _innermost(exc, path):
    """(the line of the script's own innermost frame in exc's traceback, whether the exception was
    raised there: the script's own check rather than the library's)."""
    line, last, tb = None, None, exc.__traceback__
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        if last == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line, last == path


def _line_tracer(path, seen, steps):
    """A sys.settrace function recording the lines of the script's own frames (others are not traced:
    a call into jax costs one check) and each step from one line to the next within a frame ((line, 0)
    where the frame returns or unwinds): which way a branch went, every time. Threads the script starts
    are traced too (threading.settrace); a thread the libraries start in C (an XLA callback's) is not:
    what runs there counts as not run."""
    def on_call(frame, _event, _arg):
        if frame.f_code.co_filename != path:
            return None
        last = [frame.f_lineno]
        seen.add(frame.f_lineno)

        def local(frame, event, _arg):
            if event == "line":
                seen.add(frame.f_lineno)
                steps.add((last[0], frame.f_lineno))
                last[0] = frame.f_lineno
            elif event == "return":
                steps.add((last[0], 0))
            return local
        return local
    return on_call


def _child(path, timeout, server, lines=False):
    os.setsid()  # its own group: the server kills whatever the script leaves behind
    if sys.platform.startswith("linux"):  # and if the server is killed, the kernel kills this child
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != server:  # it died before that took hold
            os._exit(137)
    fd = os.open(path + ".out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(0)
    faulthandler.enable()  # a crash still names the script's line (the host reads it from .out)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(timeout)
    sys.argv = [path]
    code, record = 0, None
    seen, steps = set(), set()
    if lines:
        import threading
        tracer = _line_tracer(path, seen, steps)
        threading.settrace(tracer)
        sys.settrace(tracer)
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:
        traceback.print_exc()
        code = 1
        line, in_script = _innermost(exc, path)
        record = {"type": f"{type(exc).__module__}.{type(exc).__qualname__}", "message": str(exc)[:4000],
                  "line": line, "in_script": in_script}
    sys.settrace(None)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        if lines:
            with open(path + ".lines", "w") as f:
                json.dump({"lines": sorted(seen), "steps": sorted(steps)}, f)
        if record is not None:
            with open(path + ".sig", "w") as f:
                json.dump(record, f)
    finally:
        os._exit(code & 0xFF if code >= 0 else 1)


def main():
    for name in filter(None, sys.argv[1].split(",")):
        try:
            __import__(name)
        except BaseException:
            pass  # the script's own import fails the same way and says why
    for line in sys.stdin:
        req = json.loads(line)
        path, timeout, lines = str(req["script"]), int(req["timeout"]), req.get("lines") is True
        for stale in (path + ".sig", path + ".out", path + ".lines"):
            if os.path.exists(stale):
                os.unlink(stale)
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            _child(path, timeout, server, lines)
        _, status = os.waitpid(pid, 0)
        try:
            os.killpg(pid, signal.SIGKILL)  # daemons the script forked
        except OSError:
            pass
        sys.stdout.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
