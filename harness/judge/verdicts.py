"""Apply expectations and API ranges to a raw outcome: the one place a verdict is decided."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.judge.apis import ApiDrift, ApiRange, api_drift, census_apis, observed_apis
from harness.judge.expectations import Expectation
from harness.judge.outcomes import FAILING_VERDICTS

_UNEXPECTED = {"pass": "ok", "fail": "regression", "error": "regression"}


def judge(raw: str, candidates: Sequence[Expectation], message: str | None = None,
          drift: Sequence[ApiDrift] = ()) -> tuple[str, Expectation | ApiDrift | None]:
    """(verdict, the expectation or API range it rests on) for a raw outcome.

    Several issues may cover one case (e.g. a family-wide one for a missing dependency and a
    case-specific one); the case is a known bug if any of them predicts exactly what happened.
    An API seen against its recorded range (`drift`) is news (`api-drift`) unless the case is
    already news for another reason, which then stays its verdict.
    """
    verdict, basis = _judge_outcome(raw, candidates, message)
    if drift and verdict not in FAILING_VERDICTS:
        return "api-drift", drift[0]
    return verdict, basis


def _judge_outcome(raw: str, candidates: Sequence[Expectation],
                   message: str | None) -> tuple[str, Expectation | None]:
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


def judge_case(raw: str, candidates: Sequence[Expectation], message: str | None,
               observations: Mapping[str, Any] | None, versions: Mapping[str, str | None],
               ranges: Mapping[str, ApiRange]) -> tuple[str, Expectation | ApiDrift | None]:
    """judge() with the API ranges applied to what the case observed: what the plugin and reports call."""
    seen = {**census_apis(observations, ranges), **observed_apis(observations, message if raw == "skip" else None)}
    drift = api_drift(seen, versions, ranges)
    return judge(raw, candidates, message, drift)


def verdict(raw: str, expectation: Expectation | Sequence[Expectation] | None, message: str | None = None) -> str:
    """Verdict for a raw outcome given the known issue(s) that apply (None if none does)."""
    if expectation is None:
        candidates: Sequence[Expectation] = ()
    elif isinstance(expectation, Expectation):
        candidates = (expectation,)
    else:
        candidates = expectation
    return judge(raw, candidates, message)[0]
