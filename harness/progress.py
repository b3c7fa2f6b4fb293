"""Progress on the terminal for long work (cell env builds, test runs, bisection probes)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

_STYLE = {"ok": "green", "known-bug": "yellow", "skipped": "dim", "fixed": "bold cyan",
          "regression": "bold red", "crash": "bold magenta", "timeout": "bold magenta",
          "env-error": "bold red", "incomplete": "bold red", "api-drift": "bold red", "complete": "green"}


class CellProgress:
    """Prints one line per notable event; a live status line on a terminal for the rest."""

    def __init__(self, console: Console | None = None, verbose: bool = False) -> None:
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.verbose = verbose
        self._status = None

    def __call__(self, cell: str, ev: dict) -> None:
        kind = ev.get("event")
        c = self.console
        if kind == "env" and "message" not in ev:
            self._set_status(f"{cell}: preparing env")
        elif kind == "env":
            c.print(f"[bold]{cell}[/]: {escape(ev['message'])}")
        elif kind == "env-ready":
            how = "reused" if ev["reused"] else "built"
            c.print(f"[bold]{cell}[/]: env {how} in {ev['seconds']:.1f}s")
        elif kind == "collected":
            c.print(f"[bold]{cell}[/]: {ev['count']} test cases")
        elif kind == "test":
            verdict = ev.get("verdict", "")
            done, total = ev.get("done", 0), ev.get("total", 0)
            self._set_status(f"{cell}: {done}/{total} {ev['nodeid']}")
            if verdict not in ("ok", "skipped", "known-bug") or self.verbose:
                extra = f" ({ev['signal']})" if ev.get("signal") else ""
                c.print(f"  [{_STYLE.get(verdict, '')}]{verdict:>10}[/] {escape(ev['nodeid'])}{extra}")
        elif kind == "resume":
            c.print(f"[bold]{cell}[/]: restarting pytest for the {ev['remaining']} remaining tests")
        elif kind == "end":
            self._stop_status()
            status = ev["status"]
            counts = ", ".join(f"{v} {k}" for k, v in sorted(ev.get("verdicts", {}).items()))
            extras = ", ".join(f"{v} {k}" for k, v in ev.get("outcomes", {}).items() if k in ("crash", "timeout"))
            detail = "; ".join(x for x in (counts, extras, ev.get("reason", "")) if x)
            c.print(f"[bold]{cell}[/]: [{_STYLE.get(status, '')}]{status}[/] in {ev['duration_s']:.1f}s"
                    + (f" - {escape(detail)}" if detail else ""))

    def _set_status(self, text: str) -> None:
        if not self.console.is_terminal:
            return
        if self._status is None:
            self._status = self.console.status(text)
            self._status.start()
        else:
            self._status.update(text)

    def _stop_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None
