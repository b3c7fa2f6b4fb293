"""Apply an expectation to a raw outcome: the one place a verdict is decided."""

from __future__ import annotations

from harness.expectations import Expectation


def verdict(raw: str, expectation: Expectation | None, message: str | None = None) -> str:
    """Verdict for a raw outcome given the known issue that applies (None if none does)."""
    if raw == "skip":
        return "skipped"
    if raw == "incomplete":
        return "incomplete"
    if expectation is None:
        return {"pass": "ok", "fail": "regression", "error": "regression"}.get(raw, raw)
    if raw == "pass":
        return "fixed"
    if raw == expectation.expect and expectation.message_matches(message):
        return "known-bug"
    # It still fails, but not the way the known issue says: that is news too.
    return {"fail": "regression", "error": "regression"}.get(raw, raw)
