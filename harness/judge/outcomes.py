"""The status vocabulary: raw outcomes (facts) and verdicts (facts judged against expectations)."""

from __future__ import annotations

# What happened, independent of any expectation.
RAW_OUTCOMES = ("pass", "fail", "error", "crash", "timeout", "skip", "env-error")

# What it means once known upstream issues are applied.
VERDICTS = (
    "regression",  # unexpected failure (or a known failure that now fails differently)
    "fixed",  # unexpected pass: an upstream fix landed, update known_issues
    "crash",  # unexpected process death (signal recorded)
    "timeout",  # unexpected hang, killed by the watchdog
    "env-error",  # the cell could not be built or its versions did not match the pins
    "incomplete",  # the cell's results end without a closing record (killed run)
    "api-drift",  # an API absent inside the releases that ship it, or present outside them
    "known-bug",  # failed exactly as a known upstream issue says it does
    "skipped",  # did not run here, with the reason (api absent, needs tpu, ...)
    "ok",
)

# Verdicts that make a cell run exit non-zero: news a maintainer must act on.
FAILING_VERDICTS = frozenset({"regression", "fixed", "crash", "timeout", "env-error", "incomplete",
                              "api-drift"})
