"""A suite module that cannot be imported (like a suite whose jax import fails). Run only by tests/test_drills.py."""

import jax_that_does_not_exist  # noqa: F401


def test_never_runs():
    assert True
