"""Self-destructive tests: the middle one attacks the harness running it, chosen by $SEAMS_DRILL_ATTACK.
Run only by tests/test_hostile.py (through the real runner), which checks that test_before's result
is kept, the damage is named, and the cell still ends with a report."""

import os
import shutil
import sys
from pathlib import Path


def test_before():
    assert True


def test_attack(request):
    attack = os.environ["SEAMS_DRILL_ATTACK"]
    results = Path(request.config.getoption("seams_results"))
    stream = request.config.getoption("seams_stream")
    if attack == "truncate":
        open(results, "w").close()
    elif attack == "delete":
        results.unlink()
    elif attack == "replace":
        tmp = results.with_name("evil")
        tmp.write_text('{"$report_type": "CellStart", "cell": "evil"}\n')
        os.replace(tmp, results)
    elif attack == "edit":  # same size, other bytes
        data = bytearray(results.read_bytes())
        data[2:7] = b"XXXXX"
        results.write_bytes(bytes(data))
    elif attack == "half-record":
        with open(results, "a") as fh:
            fh.write('{"$report_type": "TestReport", "nodeid": "x", "wh')
    elif attack == "remove-folder":
        shutil.rmtree(results.parent)
    elif attack == "stream-garbage":
        os.write(stream, b"this is not a record\n{\"half\": \n")
    elif attack == "stream-close":
        os.close(stream)
    elif attack == "exit-0":
        os._exit(0)
    elif attack == "close-fds":
        os.closerange(0, 1024)
    elif attack == "cwd-environ":
        os.chdir("/")
        os.environ.clear()
    elif attack == "flood":
        for _ in range(200):  # 200 MB through pytest's capture
            sys.stdout.write("x" * (1 << 20))
        assert False, "flooded"
    else:
        raise ValueError(attack)


def test_after():
    assert True
