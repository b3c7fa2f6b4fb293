"""No orphans: whatever ends the harness, the processes it started end with it.

Three layers, because each covers a way the others can miss:
- the harness kills the process group of every child it started on every exit path it sees
  (return, exception, SIGINT/SIGTERM/SIGHUP, atexit): `track()`, `kill_all()`, `install_signal_handlers()`;
- every child is started through `wrap(argv)`, a tiny stdlib-only launcher that arms the kernel's
  parent-death signal (Linux prctl PR_SET_PDEATHSIG) before it execs argv, so even a SIGKILLed
  harness takes the child along;
- a child handed a pipe (its read end's fd in SEAMS_LIFELINE_FD: the pytest child) also gets a guard:
  the launcher forks a small process into the child's process group that blocks on the pipe and,
  at EOF - the harness is gone, however it died - SIGKILLs the whole group, grandchildren included
  (and the child's whole cgroup, when it has one).
  A separate process, not a thread: a hang in C code holding the GIL cannot stop it.

Containment at the end of a cell does not depend on the child's cooperation: where cgroup v2 is
mounted and this process's cgroup is writable (delegated to it), the child is started in a cgroup of
its own (`Cgroup`: the launcher moves itself in before it execs), and everything in it is killed at the
end (`cgroup.kill`), whatever sessions, groups or environments its processes took; elsewhere, and as a
second net, the harness is a child subreaper and kills what carries its mark or was adopted (`sweep`).
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Sequence

from harness import faults

LIFELINE_ENV = "SEAMS_LIFELINE_FD"
_PR_SET_PDEATHSIG = 1

_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


class Terminated(KeyboardInterrupt):
    """The harness got SIGTERM or SIGHUP: unwind like Ctrl-C (children are already being killed)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send `sig` to this process when its parent dies (Linux only; False elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


# The launcher: fork the pipe guard if a lifeline fd came with us, arm the parent-death signal,
# check the parent did not die before that, exec argv. Run with -I -S and only the standard
# library, so it works from any directory and costs ~15 ms.
_LAUNCHER = r"""
import ctypes, os, sys
ppid, argv = int(sys.argv[1]), sys.argv[3:]
cg = os.environ.pop("SEAMS_CGROUP", "")
if not (os.path.isabs(cg) and os.path.basename(cg).startswith("seams-")):
    cg = ""  # only a cgroup the harness made (seams-TOKEN), and only its existing files: never a created one
if cg:
    try:
        fd = os.open(cg + "/cgroup.procs", os.O_WRONLY)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
    except OSError:
        cg = ""
fd = os.environ.pop("SEAMS_LIFELINE_FD", "")
if fd.isdigit():
    if os.fork() == 0:
        try:
            while os.read(int(fd), 1):
                pass
        except OSError:
            pass
        if cg:
            try:
                kfd = os.open(cg + "/cgroup.kill", os.O_WRONLY)
                os.write(kfd, b"1")
            except OSError:
                pass
        os.killpg(0, 9)
        os._exit(137)
    os.close(int(fd))
if sys.platform.startswith("linux"):
    ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)
if os.getppid() != ppid:
    sys.exit(137)
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    sys.stderr.write("cannot run %s: %s\n" % (argv[0], exc.strerror or exc))
    sys.exit(127)
"""


def wrap(argv: Sequence[str]) -> list[str]:
    """argv run through the launcher, so it dies with this process even if this one is SIGKILLed."""
    return [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(os.getpid()), "--", *argv]


# Every process a cell's pytest starts inherits this variable (a comma-separated chain, so nested
# runs such as news -> bisect -> probe each add theirs): a process that left pytest's group
# (setsid, a double fork, a daemon) still carries it, and the runner finds it by it at cell end.
OWNER_ENV = "SEAMS_OWNER"
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux PR_SET_CHILD_SUBREAPER; False elsewhere):
    a daemon a test double-forks becomes this process's child, not init's, so it can be found and reaped."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def owner_env(token: str) -> dict[str, str]:
    """The variable that marks every process started under `token` (kept with any outer run's tokens)."""
    outer = os.environ.get(OWNER_ENV, "")
    return {OWNER_ENV: f"{outer},{token}" if outer else token}


def _proc_table() -> dict[int, tuple[int, str, int]]:
    """pid -> (ppid, state, pgrp) for every process (Linux /proc; empty elsewhere)."""
    table = {}
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                table[int(entry.name)] = (int(fields[1]), fields[0], int(fields[2]))
            except (OSError, IndexError, ValueError):
                continue
    return table


def wait_group_gone(pgid: int, seconds: float = 2.0) -> None:
    """After a group kill: wait until no process of the group is alive, reaping those this process
    adopted (the pipe guard, once pytest is gone), so a sweep right after never counts the dying."""
    me, deadline = os.getpid(), time.monotonic() + seconds
    while True:
        members = {pid: (ppid, state) for pid, (ppid, state, pgrp) in _proc_table().items() if pgrp == pgid}
        for pid, (ppid, state) in members.items():
            if ppid == me and state == "Z":
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        if all(state in ("Z", "X") for _ppid, state in members.values()) or time.monotonic() > deadline:
            return
        time.sleep(0.01)


def owned_by(token: str) -> list[int]:
    """Live processes (not zombies) whose environment carries `token` in SEAMS_OWNER."""
    found = []
    for pid, (_ppid, state, _pgrp) in _proc_table().items():
        if pid == os.getpid() or state in ("Z", "X"):
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            continue
        for item in env.split(b"\0"):
            if item.startswith(OWNER_ENV.encode() + b"=") and token.encode() in item.split(b"=", 1)[1].split(b","):
                found.append(pid)
                break
    return found


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:200] or f"pid {pid}"
    except OSError:
        return f"pid {pid}"


def _reap(pids: set[int]) -> None:
    """Collect the exit status of those of `pids` that were adopted by this process and have ended
    (they would stay zombies otherwise). Only these: reaping a Popen's child here would steal its status."""
    me = os.getpid()
    for pid, (ppid, state, _pgrp) in _proc_table().items():
        if pid in pids and ppid == me and state == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def descendants(root: int | None = None) -> set[int]:
    """Live processes whose parent chain leads to root (default: this process). With this process a child
    subreaper, that includes what a test double-forked or setsid'ed away with a clean environment: the
    orphans come back to us, marked or not."""
    root = os.getpid() if root is None else root
    table = _proc_table()
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _state, _pgrp) in table.items():
        kids.setdefault(ppid, []).append(pid)
    found, todo = set(), list(kids.get(root, ()))
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        if table.get(pid, (0, "X", 0))[1] not in ("Z", "X"):
            found.add(pid)
        todo += kids.get(pid, ())
    return found


CGROUP_ENV = "SEAMS_CGROUP"  # the launcher joins this cgroup folder before it execs (read by _LAUNCHER)
_CGROUP_PREFIX = "seams-"


def _cgroup2_dir_of_self() -> Path | None:
    """This process's cgroup v2 folder (the unified hierarchy's mount point + the path in
    /proc/self/cgroup's `0::` line), or None where there is none (cgroup v1 only, not Linux)."""
    try:
        with open("/proc/self/cgroup") as fh:
            rel = next((ln.strip()[3:] for ln in fh if ln.startswith("0::")), None)
        with open("/proc/self/mountinfo") as fh:
            mounts = [ln.split() for ln in fh]
    except OSError:
        return None
    if rel is None:
        return None
    for fields in mounts:
        sep = fields.index("-") if "-" in fields else -1
        if sep < 0 or len(fields) <= sep + 1 or fields[sep + 1] != "cgroup2":
            continue
        root, point = fields[3], fields[4]  # the mount's root within the hierarchy, where it is mounted
        if root != "/" and not (rel == root or rel.startswith(root.rstrip("/") + "/")):
            continue
        inside = rel[len(root):] if root != "/" else rel
        path = Path(point) / inside.lstrip("/")
        if path.is_dir():
            return path
    return None


class Cgroup:
    """A cgroup v2 folder of its own for one cell's processes (or one probe's): every process started in
    it stays in it whatever it does (setsid, double forks, a clean environment), and `kill()` ends them
    all. Available only where the harness may create a cgroup under its own and move a process into it
    (root, or a delegated subtree: systemd's `Delegate=yes`, a container given its cgroup namespace)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, token: str) -> Cgroup | None:
        """A fresh cgroup beside nothing of anyone else's, or None where this process cannot have one
        (then the subreaper sweep alone contains the child). SEAMS_NO_CGROUP=1 turns it off."""
        if os.environ.get("SEAMS_NO_CGROUP") or not sys.platform.startswith("linux"):
            return None
        base = _cgroup2_dir_of_self()
        if base is None or not os.access(base / "cgroup.procs", os.W_OK):
            return None
        _remove_stale_cgroups(base)
        path = base / f"{_CGROUP_PREFIX}{token}"
        try:
            path.mkdir()
        except OSError:
            return None
        if not (os.access(path / "cgroup.procs", os.W_OK)):  # made, but not ours to move processes into
            _rmdir_tree(path)
            return None
        return cls(path)

    def env(self) -> dict[str, str]:
        """The variable the launcher (`wrap`) reads to start the child in this cgroup."""
        return {CGROUP_ENV: str(self.path)}

    def members(self) -> list[int]:
        """Every process in the cgroup and in any cgroup a test made below it."""
        pids: list[int] = []
        for folder, _dirs, files in os.walk(self.path):
            if "cgroup.procs" in files:
                try:
                    with open(os.path.join(folder, "cgroup.procs")) as fh:
                        pids += [int(x) for x in fh.read().split()]
                except (OSError, ValueError):
                    continue
        return [p for p in pids if p != os.getpid()]

    def kill(self, rounds: int = 5) -> list[str]:
        """SIGKILL everything in the cgroup (cgroup.kill on Linux 5.14+, else freeze, kill each, thaw);
        the command lines of what was there. A process cannot fork its way out: cgroup.kill takes the
        whole cgroup at once, a frozen one cannot fork."""
        left: dict[int, str] = {}
        for _ in range(rounds):
            pids = self.members()
            if not pids:
                break
            for pid in pids:
                left.setdefault(pid, _command(pid))
            if not self._write("cgroup.kill", "1"):
                frozen = self._write("cgroup.freeze", "1")
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                if frozen:
                    self._write("cgroup.freeze", "0")
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline and self.members():
                _reap(set(left))
                time.sleep(0.02)
        _reap(set(left))
        return list(left.values())

    def remove(self) -> None:
        """Remove the (empty) cgroup folder, and any a test made below it."""
        _rmdir_tree(self.path)

    def _write(self, name: str, value: str) -> bool:
        try:
            with open(self.path / name, "w") as fh:
                fh.write(value)
            return True
        except OSError:
            return False


def join_cgroup_from_env() -> None:
    """A harness process started with SEAMS_CGROUP (news's bisection: `python -m harness bisect`) moves
    itself into that cgroup first thing, before it starts anything, so every process it starts is inside:
    the same as the launcher does for a program that is not the harness, without changing its argv."""
    path = os.environ.pop(CGROUP_ENV, "")
    # Only a cgroup the harness made (an absolute `seams-TOKEN` folder), and only a file the kernel already
    # has there: a stale or hostile SEAMS_CGROUP in the caller's shell never makes or overwrites a file.
    if not (os.path.isabs(path) and os.path.basename(path).startswith(_CGROUP_PREFIX)):
        return
    try:
        fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
    except OSError:
        pass  # the subreaper sweep of the parent still finds what this process leaves


def _rmdir_tree(path: Path) -> None:
    for folder, _dirs, _files in sorted(os.walk(path), key=lambda w: -len(w[0])):  # the deepest first
        try:
            os.rmdir(folder)
        except OSError:
            pass


def _remove_stale_cgroups(base: Path) -> None:
    """Remove the empty cgroups that harnesses killed with SIGKILL left (a populated one, a live run's,
    cannot be removed: rmdir says EBUSY)."""
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(_CGROUP_PREFIX) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for entry in entries:
        try:
            with open(os.path.join(entry.path, "cgroup.events")) as fh:
                if "populated 0" not in fh.read():
                    continue
        except OSError:
            continue
        _rmdir_tree(Path(entry.path))


def sweep(token: str, rounds: int = 5, adopted_besides: set[int] | None = None,
          cgroup: Cgroup | None = None) -> list[str]:
    """Kill every process still carrying `token` (what the tests left running); their command lines.

    With `adopted_besides` (the descendants this process had before the tests started), every other
    descendant goes too: a process that dropped the token (a clean environment, `env -i`) and left the
    group (setsid, a double fork) is still ours, because this process is a child subreaper. Processes
    this harness tracks (the Popen children it runs itself) are never among them.
    Several rounds, because a process may fork between the scan and the kill; each found process's
    own group goes too when it leads one (a daemon's children). With `cgroup` (Cgroup.create: the child
    was started in it), everything in the cgroup is killed first; the scan above is then the second net.
    """
    left: dict[int, str] = {}
    seen: set[int] = set()
    if cgroup is not None:  # first, and whole: what the child's processes did cannot take them out of it
        left.update((-i - 1, cmd) for i, cmd in enumerate(cgroup.kill()))
    for _ in range(rounds):
        pids = owned_by(token)
        if adopted_besides is not None:
            with _live_lock:
                ours = {p.pid for p in _live}
            pids = sorted(set(pids) | (descendants() - adopted_besides - ours))
        if not pids:
            break
        seen.update(pids)
        for pid in pids:
            left.setdefault(pid, _command(pid))
            try:
                if os.getpgid(pid) == pid and pid != os.getpgrp():
                    os.killpg(pid, signal.SIGKILL)
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            _reap(seen)
            time.sleep(0.02)
    _reap(seen)
    return list(left.values())


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def track(proc: subprocess.Popen) -> None:
    """Remember a child started in its own process group, to kill it on any exit path."""
    with _live_lock:
        _live.add(proc)


def untrack(proc: subprocess.Popen) -> None:
    """Forget a child that has ended (after its group was killed)."""
    with _live_lock:
        _live.discard(proc)


def _killpg(pgid: int) -> None:
    """SIGKILL a process group; a refused kill is tried once more (a group already gone is fine)."""
    for _ in range(2):
        try:
            faults.point("kill", pgid)
            os.killpg(pgid, signal.SIGKILL)
            return
        except ProcessLookupError:
            return
        except OSError:
            continue


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the child's process group (it leads one: start_new_session) and reap the child."""
    _killpg(proc.pid)
    if proc.poll() is None:  # the group kill was refused twice: the child itself at least
        try:
            proc.kill()
        except OSError:
            pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # unkillable (D state): nothing more a user process can do
        pass


def kill_all() -> None:
    """Kill every tracked child's group: the last thing the harness does however it ends."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        _killpg(proc.pid)


def _on_signal(signum: int, _frame: object) -> None:
    kill_all()  # first, so nothing keeps running even if the unwinding below is slow or interrupted
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def install_signal_handlers() -> None:
    """SIGINT, SIGTERM and SIGHUP kill the children, then unwind the harness (finally blocks run)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)


atexit.register(kill_all)
