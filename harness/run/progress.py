"""Progress on the terminal for long work (cell env builds, test runs, bisection probes)."""

from __future__ import annotations

import json
import sys
import threading
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.text import Text

_STYLE = {"ok": "green", "known-bug": "yellow", "skipped": "dim", "fixed": "bold cyan",
          "regression": "bold red", "crash": "bold magenta", "timeout": "bold magenta",
          "env-error": "bold red", "incomplete": "bold red", "api-drift": "bold red", "complete": "green"}


class CellProgress:
    """Prints one line per notable event; on a terminal, one live status line per running cell.

    Thread-safe: `harness run -j N` feeds it events of several cells at once (one reader thread
    per cell), so news lines name their cell when `name_cells` is set.
    """

    def __init__(self, console: Console | None = None, verbose: bool = False, name_cells: bool = False) -> None:
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.verbose = verbose
        self.name_cells = name_cells
        self._lines: dict[str, str] = {}  # running cell -> its status line
        self._live: Live | None = None
        self._lock = threading.RLock()

    def __call__(self, cell: str, ev: dict) -> None:
        with self._lock:
            self._handle(cell, ev)

    def print(self, text: str) -> None:
        """Print a line (rich markup) above the live status lines."""
        with self._lock:
            self.console.print(text)

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
        """Stop the live display (idempotent); lines printed so far stay."""
        with self._lock:
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
