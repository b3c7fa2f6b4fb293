"""Progress on the terminal for long work (cell env builds, test runs, bisection probes)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.text import Text

_STYLE = {"ok": "green", "known-bug": "yellow", "skipped": "dim", "fixed": "bold cyan",
          "regression": "bold red", "crash": "bold magenta", "timeout": "bold magenta",
          "env-error": "bold red", "incomplete": "bold red", "api-drift": "bold red", "complete": "green"}


def heartbeat_seconds() -> float:
    """How often a log (not a terminal) hears from each running cell: $SEAMS_HEARTBEAT_S, default 30."""
    try:
        value = float(os.environ.get("SEAMS_HEARTBEAT_S", "") or 30)
    except ValueError:
        return 30.0
    return value if value > 0 else 30.0


class CellProgress:
    """Prints one line per notable event; on a terminal, one live status line per running cell.

    Off a terminal (a CI log, `| tee`), a running cell that printed nothing for `heartbeat_s`
    seconds gets a plain line: cell, cases done of total, elapsed, what it is doing; so a log
    never goes quiet for minutes while a cell builds its env or runs a slow test.

    Thread-safe: `harness run -j N` feeds it events of several cells at once (one reader thread
    per cell), so news lines name their cell when `name_cells` is set.
    """

    def __init__(self, console: Console | None = None, verbose: bool = False, name_cells: bool = False,
                 heartbeat_s: float | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.verbose = verbose
        self.name_cells = name_cells
        self.heartbeat_s = heartbeat_s or heartbeat_seconds()
        self._lines: dict[str, str] = {}  # running cell -> its status line
        self._live: Live | None = None
        self._lock = threading.RLock()
        # Off a terminal: running cell -> [started (monotonic), last line printed, done, total, doing]
        self._quiet: dict[str, list] = {}
        self._beat: threading.Thread | None = None
        self._stop = threading.Event()

    def __call__(self, cell: str, ev: dict) -> None:
        with self._lock:
            self._handle(cell, ev)
            if not self.console.is_terminal:
                self._track(cell, ev)

    def print(self, text: str) -> None:
        """Print a line (rich markup) above the live status lines."""
        with self._lock:
            self.console.print(text)

    def _track(self, cell: str, ev: dict) -> None:
        """Remember what a running cell is doing, for the heartbeat line (off a terminal only)."""
        kind = ev.get("event")
        if kind == "end":
            self._quiet.pop(cell, None)
            return
        now = time.monotonic()
        if cell not in self._quiet and kind == "env" and "message" in ev:
            return  # an env prefetched for a later cell: that cell is not running yet
        state = self._quiet.setdefault(cell, [now, now, 0, 0, "preparing env"])
        if kind == "test":
            state[2], state[3] = ev.get("done", state[2]), ev.get("total", state[3])
            state[4] = f"last finished {ev.get('nodeid', '')}"
            if ev.get("verdict", "") not in ("ok", "skipped", "known-bug") or self.verbose:
                state[1] = now  # a line about this cell was just printed
        elif kind == "collected":
            state[3], state[4], state[1] = ev.get("count", 0), "running tests", now
        elif kind in ("env", "env-ready", "resume"):
            state[4] = {"env": "preparing env", "env-ready": "starting pytest", "resume": "restarting pytest"}[kind]
            if kind != "env" or "message" in ev:
                state[1] = now
        if self._beat is None:
            self._beat = threading.Thread(target=self._heartbeat, name="progress-heartbeat", daemon=True)
            self._beat.start()

    def _heartbeat(self) -> None:
        tick = min(1.0, self.heartbeat_s / 4)
        while not self._stop.wait(tick):
            with self._lock:
                now = time.monotonic()
                for cell, state in self._quiet.items():
                    if now - state[1] >= self.heartbeat_s:
                        started, _, done, total, doing = state
                        what = f"{done}/{total} cases done; {doing}" if total else doing
                        self.console.print(f"{escape(cell)}: {escape(what)}, {now - started:.0f}s elapsed",
                                           markup=True, highlight=False)
                        state[1] = now

    def _handle(self, cell: str, ev: dict) -> None:
        kind = ev.get("event")
        c = self.console
        if kind == "env" and "message" not in ev:
            self._set_status(cell, "preparing env")
        elif kind == "env":
            c.print(f"[bold]{cell}[/]: {escape(ev['message'])}")
        elif kind == "env-ready":
            how = "reused" if ev["reused"] else "built"
            c.print(f"[bold]{cell}[/]: env {how} in {ev['seconds']:.1f}s")
            self._set_status(cell, "starting pytest")
        elif kind == "collected":
            c.print(f"[bold]{cell}[/]: {ev['count']} test cases")
        elif kind == "test":
            verdict = ev.get("verdict", "")
            done, total = ev.get("done", 0), ev.get("total", 0)
            self._set_status(cell, f"{done}/{total} {ev['nodeid']}")
            if verdict not in ("ok", "skipped", "known-bug") or self.verbose:
                extra = f" ({ev['signal']})" if ev.get("signal") else ""
                where = f"{escape(cell)}: " if self.name_cells else ""
                c.print(f"  [{_STYLE.get(verdict, '')}]{verdict:>10}[/] {where}{escape(ev['nodeid'])}{extra}")
        elif kind == "resume":
            c.print(f"[bold]{cell}[/]: restarting pytest for the {ev['remaining']} remaining tests")
        elif kind == "end":
            self._drop_status(cell)
            status = ev["status"]
            counts = ", ".join(f"{v} {k}" for k, v in sorted(ev.get("verdicts", {}).items()))
            extras = ", ".join(f"{v} {k}" for k, v in ev.get("outcomes", {}).items() if k in ("crash", "timeout"))
            detail = "; ".join(x for x in (counts, extras, ev.get("reason", "")) if x)
            c.print(f"[bold]{cell}[/]: [{_STYLE.get(status, '')}]{status}[/] in {ev['duration_s']:.1f}s"
                    + (f" - {escape(detail)}" if detail else ""))

    def _render(self) -> Group:
        return Group(*(Text(f"{cell}: {text}", overflow="ellipsis", no_wrap=True) for cell, text in self._lines.items()))

    def _set_status(self, cell: str, text: str) -> None:
        if not self.console.is_terminal:  # plain lines only: a log file gets no redraws
            return
        self._lines[cell] = text
        if self._live is None:
            self._live = Live(self._render(), console=self.console, refresh_per_second=8, transient=True)
            self._live.start()
        else:
            self._live.update(self._render())

    def _drop_status(self, cell: str) -> None:
        self._lines.pop(cell, None)
        if self._live is None:
            return
        if self._lines:
            self._live.update(self._render())
        else:
            self.close()

    def close(self) -> None:
        """Stop the live display and the heartbeat (idempotent); lines printed so far stay."""
        self._stop.set()
        with self._lock:
            self._quiet.clear()
            self._lines.clear()
            if self._live is not None:
                self._live.stop()
                self._live = None


class EventStream:
    """Writes progress events as JSON lines (a `harness run -j` worker talks to its parent this way)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self._lock = threading.Lock()

    def __call__(self, cell: str, ev: dict) -> None:
        line = json.dumps({"cell": cell, **ev}, default=str)
        with self._lock:
            self.stream.write(line + "\n")
            self.stream.flush()

    def print(self, text: str) -> None:
        """Headers are the parent's job: a worker prints nothing but events."""
