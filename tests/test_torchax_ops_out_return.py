"""Whether an eager out= call returned its out= tensors (suites/torchax_ops/cores.py returns_the_out):
recorded, never a failure of its own. A void out overload (split_with_sizes_copy.out, `-> ()`)
returns None in torch as in torchax; the check once iterated that None, and the TypeError stood in
the known issues as torchax's bug until the reducer's standalone script (which has no such check)
exited 0. Plain objects stand for tensors: only identity is read."""

from __future__ import annotations

from suites.torchax_ops.cores import returns_the_out


def test_a_void_out_overload_returning_none_is_not_returned_and_does_not_raise() -> None:
    outs = (object(), object(), object())
    assert returns_the_out(None, outs) is False
    assert returns_the_out(None, object()) is False


def test_the_very_out_tensors_are_returned() -> None:
    t = object()
    outs = (object(), object())
    assert returns_the_out(t, t)
    assert returns_the_out(outs, outs)
    assert returns_the_out(list(outs), outs)  # a list of the same tensors


def test_other_tensors_or_another_count_are_not_the_out() -> None:
    outs = (object(), object())
    assert not returns_the_out(object(), object())
    assert not returns_the_out((outs[0], object()), outs)
    assert not returns_the_out(outs[:1], outs)  # zip would stop short: the count is checked
    assert not returns_the_out(outs[0], outs)
