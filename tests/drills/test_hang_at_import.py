"""A suite module whose import hangs (like an accelerator runtime that never initialises). Run only by tests/test_phases.py."""

import time

time.sleep(600)


def test_never_runs():
    assert True
