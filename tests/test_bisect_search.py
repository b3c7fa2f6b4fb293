"""The generic bisection on synthetic orderings: exact answers, skips routed around, probe counts."""

from __future__ import annotations

import math

import pytest

from harness.bisect.search import BAD, GOOD, SKIP, bisect


def _oracle(first_bad: int, skips: set[int] = frozenset()):
    calls = []

    def probe(i: int) -> str:
        calls.append(i)
        if i in skips:
            return SKIP
        return BAD if i >= first_bad else GOOD
    return probe, calls


@pytest.mark.parametrize("n", [2, 3, 5, 17, 18, 100])
def test_finds_every_boundary_within_log2_probes(n):
    for first_bad in range(1, n):
        probe, calls = _oracle(first_bad)
        out = bisect(list(range(n)), probe)
        assert (out.last_good, out.first_bad) == (first_bad - 1, first_bad) and out.exact
        assert len(calls) <= math.ceil(math.log2(max(n - 1, 1))) + 1


def test_adjacent_bounds_need_no_probe():
    probe, calls = _oracle(1)
    out = bisect([0, 1], probe)
    assert (out.last_good, out.first_bad, calls) == (0, 1, [])


def test_skips_are_routed_around():
    probe, calls = _oracle(6, skips={5})
    out = bisect(list(range(10)), probe)
    assert out.first_bad == 6 and out.last_good == 4 and out.skipped_between == [5]
    assert not out.exact


def test_skip_at_the_boundary_leaves_an_honest_range():
    probe, _ = _oracle(6, skips={6})
    out = bisect(list(range(10)), probe)
    assert out.last_good == 5 and out.first_bad == 7 and out.skipped_between == [6]


def test_everything_skipped_is_inconclusive():
    probe, calls = _oracle(5, skips=set(range(1, 9)))
    out = bisect(list(range(10)), probe)
    assert (out.last_good, out.first_bad) == (0, 9) and out.skipped_between == list(range(1, 9))
    assert sorted(calls) == list(range(1, 9))


def test_a_bad_answer_is_never_taken_for_granted():
    with pytest.raises(ValueError):
        bisect([0, 1, 2], lambda _i: "maybe")
