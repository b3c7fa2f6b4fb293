"""From judged results to what people read: report.json/html/md, junit.xml, repros, diff, history.

The package itself imports nothing, so that a command needing one renderer (or only `--help`)
does not pay for all of them; `report_command` lives in harness.report.command.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """`from harness.report.command import report_command` (the CLI's, tox's and the tests' entry) stays valid."""
    if name in ("report_command", "write_report_files", "latest_session", "baseline_changes"):
        from harness.report import command

        return getattr(command, name)
    raise AttributeError(f"module 'harness.report' has no attribute {name!r}")
