"""Slow drill cases: a run can be killed half-way through them. Run only by tests/test_drills.py."""

import time

import pytest


@pytest.mark.parametrize("i", range(8))
def test_slow(i):
    time.sleep(1.0)
