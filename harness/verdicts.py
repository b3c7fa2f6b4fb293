"""Apply expectations to a raw outcome: the one place a verdict is decided."""

from __future__ import annotations

from typing import Sequence

from harness.expectations import Expectation

_UNEXPECTED = {"pass": "ok", "fail": "regression", "error": "regression"}


def judge(raw: str, candidates: Sequence[Expectation], message: str | None = None) -> tuple[str, Expectation | None]:
    """(verdict, the expectation it rests on) for a raw outcome and the known issues that apply.

    Several issues may cover one case (e.g. a family-wide one for a missing dependency and a
    case-specific one); the case is a known bug if any of them predicts exactly what happened.
    """
    if raw == "skip":
        return "skipped", None
    if raw == "incomplete":
        return "incomplete", None
    if not candidates:
        return _UNEXPECTED.get(raw, raw), None
    if raw == "pass":
        return "fixed", candidates[0]
    for exp in candidates:
        if raw == exp.expect and exp.message_matches(message):
            return "known-bug", exp
    # It still fails, but not the way any known issue says: that is news too.
    return _UNEXPECTED.get(raw, raw), candidates[0]


def verdict(raw: str, expectation: Expectation | Sequence[Expectation] | None, message: str | None = None) -> str:
    """Verdict for a raw outcome given the known issue(s) that apply (None if none does)."""
    if expectation is None:
        candidates: Sequence[Expectation] = ()
    elif isinstance(expectation, Expectation):
        candidates = (expectation,)
    else:
        candidates = expectation
    return judge(raw, candidates, message)[0]
