"""Three quick passing cases: the cell the anomaly loop runs (tests/test_anomaly.py) in the host's interpreter."""


def test_one():
    assert 1 + 1 == 2


def test_two():
    assert "seam"[::-1] == "maes"


def test_three():
    assert sorted([3, 1, 2]) == [1, 2, 3]
