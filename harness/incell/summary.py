"""pytest's end-of-run summary, kept linear in the number of results.

For every failure it prints, pytest's terminal summary looks for that test's teardown output by
scanning every setup and teardown report of the session (`TerminalReporter._get_teardown_reports`,
pytest-dev/pytest#13360): failures x reports. An OpInfo cell fails 1,600 times as known bugs among
8,500 such reports, and the scan took 12.6 s of the controller's CPU after the last case finished
(py-spy of torchax0013jax0102-cpu, 2026-11-25), on a 2-core runner where each second counts
against the family's budget.

The only reports that scan can print from are teardown reports that carry a teardown section, so
for the summary's duration the blank category holds just those (usually none), and afterwards all
of them again: the log reads byte for byte as before, in linear time.
"""

from __future__ import annotations

from typing import Any

import pytest


def prints_in_summary(report: Any) -> bool:
    """A setup/teardown report the summary can print from: a teardown carrying a teardown section."""
    return getattr(report, "when", None) == "teardown" and any(
        "teardown" in name for name, _ in getattr(report, "sections", ()))


class LinearSummary:
    """Registered on every pytest process of a cell: xdist workers build the summary too, unseen."""

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outside TerminalReporter's own wrapper
    def pytest_terminal_summary(self, terminalreporter: Any):
        stats = terminalreporter.stats
        blank = stats.get("")
        if blank:
            stats[""] = [r for r in blank if prints_in_summary(r)]
        try:
            yield
        finally:
            if blank:
                stats[""] = blank
