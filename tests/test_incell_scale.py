"""A cell at an OpInfo family's scale: pytest's end-of-run summary kept linear
(harness/incell/summary.py), and a dead xdist worker's queue run next, not last (the harness's
`--dist worksteal`, harness/run/workers.py). Both are checked against plain pytest / xdist on the
same tests: the summary must read byte for byte as pytest's own, and the dead worker's siblings
must run where `--dist load` runs them last."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.incell import summary
from harness.run import workers

REPO = Path(__file__).resolve().parent.parent


def _pytest(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), *args],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
                          capture_output=True, text=True, timeout=180)


def test_only_a_teardown_with_teardown_output_is_kept_for_the_summary():
    def report(when: str, sections: list) -> SimpleNamespace:
        return SimpleNamespace(when=when, sections=sections)

    assert summary.prints_in_summary(report("teardown", [("Captured stdout teardown", "bye\n")]))
    assert not summary.prints_in_summary(report("teardown", [("Captured stdout call", "hi\n")]))
    assert not summary.prints_in_summary(report("setup", [("Captured stdout setup", "hi\n")]))
    assert not summary.prints_in_summary(report("teardown", []))


def test_the_view_lasts_for_the_summary_only():
    keep = SimpleNamespace(when="teardown", sections=[("Captured stderr teardown", "x")])
    drop = SimpleNamespace(when="setup", sections=[])
    reporter = SimpleNamespace(stats={"": [drop, keep], "failed": ["f"]})
    wrapper = summary.LinearSummary().pytest_terminal_summary(reporter)
    next(wrapper)
    assert reporter.stats == {"": [keep], "failed": ["f"]}
    with pytest.raises(StopIteration):
        next(wrapper)
    assert reporter.stats[""] == [drop, keep]


def test_the_summary_reads_as_pytests_own(tmp_path):
    """Failures with and without teardown output, passes, an error in setup: the log with the plugin's
    summary equals plain pytest's, but for the line that times the run."""
    (tmp_path / "conftest.py").write_text(
        "import os\nimport pytest\n\n"
        "def pytest_configure(config):\n"
        "    if os.environ.get('LINEAR') == '1':\n"
        "        from harness.incell.summary import LinearSummary\n"
        "        config.pluginmanager.register(LinearSummary(), 'linear')\n\n"
        "@pytest.fixture\n"
        "def noisy():\n"
        "    yield\n"
        "    print('teardown says hello')\n\n"
        "@pytest.fixture\n"
        "def broken():\n"
        "    raise RuntimeError('setup fails')\n")
    (tmp_path / "test_many.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('i', range(30))\n"
        "def test_fails(i, noisy):\n"
        "    assert i % 3 == 0, f'number {i}'\n\n"
        "@pytest.mark.parametrize('i', range(10))\n"
        "def test_fails_quietly(i):\n"
        "    assert i < 5\n\n"
        "def test_setup_error(broken):\n"
        "    pass\n")

    def log(linear: str) -> str:
        proc = _pytest(tmp_path, "-p", "no:xdist", "-rfEsx", "--tb=native", "test_many.py", env={"LINEAR": linear})
        assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
        return re.sub(r" in [0-9.]+s.*", "", proc.stdout)

    plain, linear = log("0"), log("1")
    assert plain.count("teardown says hello") == 20  # the summary printed each failure's teardown output
    assert linear == plain


CRASHES = "\n".join([
    "import os, signal, time",
    "import pytest",
    "",
    "@pytest.mark.parametrize('i', range(48))",
    "def test_item(i):",
    "    with open(os.environ['ORDER_FILE'], 'a') as f:",
    "        f.write(f'{i}\\n')",
    "    if i in (0, 2, 4):  # all three queued on the first worker, under load and worksteal alike",
    "        os.kill(os.getpid(), signal.SIGKILL)",
    "    time.sleep(0.1)",
    ""])


def _order(tmp_path: Path, name: str, *xdist: str) -> list[int]:
    order = tmp_path / f"order-{name}.txt"
    (tmp_path / "test_crash.py").write_text(CRASHES)
    proc = _pytest(tmp_path, *xdist, "-q", "test_crash.py", env={"ORDER_FILE": str(order)})
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.count("crashed") >= 3, proc.stdout[-2000:]
    return [int(line) for line in order.read_text().split()]


def test_a_dead_workers_queue_runs_next_not_last(tmp_path):
    """`--dist load` puts the tests queued behind a crash at the end of the run: each sibling crash
    then costs a worker restart in the run's tail. The harness's xdist arguments run them next."""
    load = _order(tmp_path, "load", "-n", "2", "--dist", "load")
    ours = _order(tmp_path, "harness", *workers.xdist_args(2, []))
    assert sorted(load) == sorted(ours) == list(range(48))  # the same tests, each once
    late = lambda order: min(order.index(2), order.index(4)) / len(order)  # noqa: E731
    assert late(load) > 0.75, load  # what the harness's choice changes
    assert late(ours) < 0.5, ours
