"""The host side of the fork server (harness.incell.forkserver): one long-lived process in the
cell's interpreter that imported the heavy packages once; each candidate is a fresh fork of it.

The script is untrusted data: it runs only in the cell's interpreter (`python -I`, the project off
sys.path), in a scratch folder, under an alarm, in its own session, and this side reads back only
an exit status and a small JSON record that is checked, never evaluated.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from harness import lifeline
from harness.paths import REPO

SERVER_SOURCE = REPO / "harness/incell/forkserver.py"
MAX_RECORD = 16_000  # bytes of a .sig record read back; more is a tampering script, not a signature
MAX_LINES_RECORD = 2_000_000  # bytes of a .lines record (a line number and a few steps a line; a script is a few hundred lines)
MAX_OUTPUT = 200_000  # bytes of a candidate's output read back (its tail)
# Modules imported before the first fork, in this order, when the script imports them.
HEAVY = ("numpy", "jax", "torch", "torch_xla", "torchax", "flax", "optax")


def compile_cache_env(folder: Path) -> dict[str, str]:
    """The variables that give a server's candidates jax's persistent compilation cache in `folder`, every
    program cached however fast it compiled: a candidate compiles what the one before it compiled (a
    generated module's eager ops and its jitted step: 0.56 s of a 0.8 s run, 0.21 s from the cache). jax
    reads them at import, in the server, before any fork. A hit is the executable the miss compiled (its
    numerics and `as_text()` the same); what a compile prints (a warning) is printed once only. The written
    script runs without the cache in the fresh interpreters that try the cell's variables (harness.reduce.reducer
    drop_env, where the script has variables and the budget leaves time) and in the fidelity tests."""
    return {"JAX_COMPILATION_CACHE_DIR": str(folder), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}


@dataclass(frozen=True)
class Run:
    """One candidate's run: exit status (negative: the signal), the child's record, its output tail."""

    status: int
    record: dict[str, Any] | None
    output: str
    seconds: float
    lines: frozenset[int] | None = None  # the script's lines that ran, where asked for (run(..., lines=True))
    steps: frozenset[tuple[int, int]] | None = None  # (line, the next line its frame ran; 0: it returned), likewise


def heavy_imports(source: str) -> list[str]:
    """The heavy packages the script imports (a word match on its import lines: names only, never run)."""
    found = []
    for line in source.splitlines():
        words = line.replace(",", " ").replace(".", " ").split()
        if words[:1] in (["import"], ["from"]):
            found += [w for w in words[1:] if w in HEAVY]
    return [m for m in HEAVY if m in found]


def _checked_record(text: str) -> dict[str, Any] | None:
    """The child's record if it has the expected shape (a tampered one counts as no record)."""
    try:
        rec = json.loads(text)
    except ValueError:
        return None
    if not isinstance(rec, dict) or not isinstance(rec.get("type"), str) or not isinstance(rec.get("message"), str):
        return None
    line = rec.get("line")
    return {"type": rec["type"][:300], "message": rec["message"][:4000],
            "line": line if isinstance(line, int) and not isinstance(line, bool) else None,
            "in_script": rec.get("in_script") is True}


class ForkServer:
    """`with ForkServer(python, env, preload, scratch) as s: s.run(source, timeout)`."""

    def __init__(self, python: Path, env: Mapping[str, str], preload: list[str], scratch: Path, name: str = "") -> None:
        self.python, self.env, self.preload, self.scratch, self.name = python, dict(env), preload, scratch, name
        self.proc: subprocess.Popen | None = None
        self.token = uuid.uuid4().hex
        self.runs = 0

    def __enter__(self) -> "ForkServer":
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def start(self) -> None:
        self.scratch.mkdir(parents=True, exist_ok=True)
        server = self.scratch / "forkserver.py"
        server.write_text(SERVER_SOURCE.read_text(encoding="utf-8"), encoding="utf-8")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.scratch), **self.env,
               **lifeline.owner_env(self.token)}
        self.proc = subprocess.Popen(lifeline.wrap([str(self.python), "-I", str(server), ",".join(self.preload)]),
                                     cwd=self.scratch, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        lifeline.track(self.proc)

    def close(self) -> None:
        if self.proc is not None:
            lifeline.kill_group(self.proc)
            lifeline.untrack(self.proc)
            lifeline.sweep(self.token)  # candidates run in their own sessions
            self.proc = None

    def _killed_from_outside(self) -> None:
        """A server SIGKILLed by someone else (the harness stopping: lifeline.kill_all, which a Ctrl-C that
        pysource-minimize's bare `except:` swallowed still ran) is not restarted: the run stops."""
        assert self.proc is not None
        rc = self.proc.returncode
        self.close()
        if rc == -signal.SIGKILL:
            raise KeyboardInterrupt("the reducer's fork server was killed")

    def run(self, source: str, timeout_s: int, lines: bool = False) -> Run:
        """Run one candidate (a fresh fork); a server that stops answering is restarted. lines: record
        which of the script's lines ran (a trace function in the child: slower, asked for once)."""
        if self.proc is not None and self.proc.poll() is not None:
            self._killed_from_outside()
        if self.proc is None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        path = self.scratch / "repro.py"  # one name: the traceback and messages never differ by file name
        path.write_text(source, encoding="utf-8")
        # never read a previous candidate's record
        for stale in (Path(f"{path}.sig"), Path(f"{path}.out"), Path(f"{path}.lines")):
            stale.unlink(missing_ok=True)
        start = time.monotonic()
        self.runs += 1
        status: int | None = None
        try:
            request = {"script": str(path), "timeout": timeout_s, **({"lines": True} if lines else {})}
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            # the import of the heavy packages happens before the first answer: allow for it
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s + (600 if self.runs == 1 else 30))
            if ready:
                line = self.proc.stdout.readline()
                status = int(json.loads(line)["status"]) if line else None
        except (BrokenPipeError, ValueError, KeyError, TypeError):
            status = None
        if status is None:  # hung past its alarm or died: a fresh server for the next candidate
            time.sleep(0.1)
            if self.proc.poll() is not None:
                self._killed_from_outside()
            self.close()
            status = -9
        sig = Path(str(path) + ".sig")
        out = Path(str(path) + ".out")
        record = _checked_record(_tail(sig, MAX_RECORD, head=True)) if sig.is_file() else None
        ran = Path(str(path) + ".lines")
        seen, steps = _checked_trace(_tail(ran, MAX_LINES_RECORD, head=True)) if lines and ran.is_file() else (None, None)
        return Run(status, record, _tail(out, MAX_OUTPUT) if out.is_file() else "", time.monotonic() - start,
                   seen, steps)


def _line_number(n: object) -> bool:
    return type(n) is int and n >= 0  # 0: a module frame starting, or a frame's return


def _checked_trace(text: str) -> tuple[frozenset[int] | None, frozenset[tuple[int, int]] | None]:
    """The child's line numbers and steps if they have the shape it writes (anything else, cut short or
    forged, counts as none)."""
    try:
        got = json.loads(text)
    except ValueError:
        return None, None
    if not isinstance(got, dict) or not isinstance(got.get("lines"), list) or not isinstance(got.get("steps"), list):
        return None, None
    lines, steps = got["lines"], got["steps"]
    if not all(_line_number(n) for n in lines) or not all(
            isinstance(s, list) and len(s) == 2 and all(_line_number(n) for n in s) for s in steps):
        return None, None
    return frozenset(lines), frozenset((a, b) for a, b in steps)


def _tail(path: Path, limit: int, head: bool = False) -> str:
    with open(path, "rb") as f:
        if not head:
            f.seek(max(0, path.stat().st_size - limit))
        return f.read(limit).decode("utf-8", errors="replace")
