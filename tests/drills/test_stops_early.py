"""Three cases, the second fails; run with `-x` pytest stops there and the third never runs. Run only by tests/test_phases.py."""


def test_first():
    assert True


def test_second_fails():
    assert False, "seeded failure"


def test_third_never_runs():
    assert True
