"""A case against the toy package of tests/toyrepo.py, run in real cells built from its git history
(harness bisect --commits in tests/test_commits.py): it passes before the seeded regression."""

import seamtoy


def test_double():
    assert seamtoy.double(3) == 6
