"""Defaults as API facts: recorded from the signature, judged by the ranges like presence."""

from __future__ import annotations

from pathlib import Path

from harness.incell import compat
from harness.incell.defaults import check_defaults, default_fact, signature_defaults
from harness.judge.apis import api_drift, load_api_ranges


def api(f, *, check=True, mode="fast", n=None):  # noqa: ARG001 - only the signature matters
    return f


def test_signature_defaults_are_reprs_of_every_default():
    assert signature_defaults(api) == {"check": "True", "mode": "'fast'", "n": "None"}


def test_each_relied_on_default_is_a_fact_and_all_defaults_are_observed():
    compat.reset_seen()
    obs: dict = {}
    check_defaults(obs, "pkg.api", api, {"check": True, "mode": "slow", "gone": 1})
    assert obs["defaults"] == {"pkg.api": {"check": "True", "mode": "'fast'", "n": "None"}}
    assert compat.seen_apis() == {"pkg.api(check=True)": True, "pkg.api(mode='slow')": False,
                                  "pkg.api(gone=1)": False}  # a removed parameter does not hold either
    compat.reset_seen()


def test_a_default_that_does_not_hold_inside_its_range_is_drift_with_its_own_words(tmp_path: Path):
    ranges = tmp_path / "apis.yaml"
    ranges.write_text(f"""apis:
  - api: "{default_fact('pkg.api', 'check', True)}"
    package: pkg
    shipped: ">=1.0"
    evidence: test
    link: none filed
""")
    rng = load_api_ranges(ranges)
    flipped = api_drift({"pkg.api(check=True)": False}, {"pkg": "1.2"}, rng)
    assert [d.api for d in flipped] == ["pkg.api(check=True)"]
    assert "does not hold in pkg 1.2, inside the range that has this default" in flipped[0].reason
    assert api_drift({"pkg.api(check=True)": True}, {"pkg": "1.2"}, rng) == []
    older = api_drift({"pkg.api(check=True)": True}, {"pkg": "0.9"}, rng)
    assert "outside the range recorded for this default" in older[0].reason
