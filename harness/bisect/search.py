"""A generic binary search over an ordered list with good / bad / skip answers (git bisect's model)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Generic, Sequence, TypeVar

T = TypeVar("T")
GOOD, BAD, SKIP = "good", "bad", "skip"


@dataclass
class Outcome(Generic[T]):
    """Where the search ended: last good, first bad, and the untestable versions in between."""

    last_good: T
    first_bad: T
    skipped_between: list[T] = field(default_factory=list)
    probes: list[tuple[T, str]] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        """True if nothing untestable lies between last good and first bad."""
        return not self.skipped_between


def steps_left(n: int) -> int:
    """Probes a binary search still needs over n untested candidates."""
    return max(0, n.bit_length())


def bisect(items: Sequence[T], probe: Callable[[T], str],
           progress: Callable[[int, int], None] = lambda _left, _steps: None) -> Outcome[T]:
    """items[0] is good, items[-1] is bad; probe answers good/bad/skip for the ones in between.

    Skipped items are routed around: the next probe is the untested item nearest the middle.
    """
    if len(items) < 2:
        raise ValueError("need a good and a bad item")
    lo, hi = 0, len(items) - 1
    skipped: set[int] = set()
    probes: list[tuple[T, str]] = []
    while True:
        candidates = [i for i in range(lo + 1, hi) if i not in skipped]
        if not candidates:
            break
        progress(len(candidates), steps_left(len(candidates)))
        mid = (lo + hi) // 2
        i = min(candidates, key=lambda k: (abs(k - mid), k))
        answer = probe(items[i])
        probes.append((items[i], answer))
        if answer == GOOD:
            lo = i
        elif answer == BAD:
            hi = i
        elif answer == SKIP:
            skipped.add(i)
        else:
            raise ValueError(f"probe answered {answer!r}, not good/bad/skip")
    return Outcome(items[lo], items[hi], [items[k] for k in range(lo + 1, hi) if k in skipped], probes)
