"""Drill: writes the names and values of the environment the test process sees (to $SEAMS_DRILL_ENV_OUT)."""

import json
import os


def test_writes_its_environment():
    with open(os.environ["SEAMS_DRILL_ENV_OUT"], "w") as fh:
        json.dump(dict(os.environ), fh)
