"""Outputs never replace what is not a regular file; inputs that are not regular files, or too big, are
one line. The whole class: every output name a report writes, every kind of special file, every reader."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness.report.command import report_command
from harness.errors import UserError
from harness.safeio import atomic_write, read_input
from tests.results_fixtures import case, cell_file, known_issues

REPO = Path(__file__).resolve().parent.parent
OUTPUTS = ("report.json", "report.html", "report.md", "junit.xml")


def _special(kind: str, path: Path, tmp_path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
    elif kind == "symlink-out":
        (tmp_path / "precious").write_text("keep me")
        path.symlink_to(tmp_path / "precious")
    elif kind == "device":
        path.symlink_to("/dev/null")
    elif kind == "folder":
        path.mkdir()


KINDS = ("fifo", "socket", "symlink-out", "device", "folder")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", OUTPUTS)
def test_a_report_never_replaces_a_special_file(tmp_path, kind, name):
    results = cell_file(tmp_path, "h-cpu", "0.6.0", [case("suites/x/test_a.py::test_a", "pass")])
    out = tmp_path / "out"
    out.mkdir()
    _special(kind, out / name, tmp_path)
    before = os.lstat(out / name)
    with pytest.raises(UserError, match=f"{name}: is a"):
        report_command([results], out, known_issues(tmp_path, ""))
    after = os.lstat(out / name)
    assert (before.st_ino, before.st_mode) == (after.st_ino, after.st_mode), "left as it was"
    if kind == "symlink-out":
        assert (tmp_path / "precious").read_text() == "keep me"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("kind", ["fifo", "socket", "device", "folder"])
def test_an_input_that_is_not_a_regular_file_is_one_line_never_a_hang(tmp_path, kind):
    path = tmp_path / "input"
    _special(kind, path, tmp_path)
    for what in ("results", "report.json", "matrix or known-issues"):
        with pytest.raises(UserError, match=r"input: is (a|an) "):
            read_input(path, 1000, what)


def test_each_reader_of_outside_input_refuses_a_fifo_in_one_line_through_the_cli(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    for argv in (["report", str(fifo), "--out", str(tmp_path / "o")], ["diff", str(fifo), str(fifo)],
                 ["validate", str(fifo)], ["run", "--matrix", str(fifo), "--out", str(tmp_path / "o")]):
        proc = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=REPO, capture_output=True, text=True,
                              timeout=60)  # a reader that opened the FIFO for reading would block here
        assert proc.returncode == 2 and "is a FIFO" in proc.stderr and proc.stderr.count("\n") == 1, (argv, proc.stderr)


def test_an_input_over_its_bound_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as fh:
        fh.truncate(2_000_000)  # sparse: its size says enough
    with pytest.raises(UserError, match="larger than 1 MB"):
        read_input(big, 1_000_000, "results")


def test_atomic_write_replaces_a_regular_file_and_creates_a_new_one(tmp_path):
    atomic_write(tmp_path / "a", "one")
    atomic_write(tmp_path / "a", "two")
    assert (tmp_path / "a").read_text() == "two" and [p.name for p in tmp_path.iterdir()] == ["a"]


@pytest.mark.parametrize("count", [10**12, -1])
def test_a_record_count_out_of_bounds_is_one_line_not_a_huge_allocation(tmp_path, count):
    from harness.judge.results import read_results

    path = tmp_path / "a-cpu.jsonl"
    path.write_text('{"$report_type": "CellStart", "schema_version": 1, "cell": "a-cpu", "device": "cpu", "pins": {}}\n'
                    f'{{"$report_type": "Collected", "count": {count}}}\n')
    with pytest.raises(UserError, match="a-cpu.jsonl:2: bad Collected record: count"):
        read_results(path)


@pytest.mark.parametrize("what", ["logs-symlink", "log-symlink", "log-fifo", "results-symlink"])
def test_a_cells_log_and_results_folders_are_never_followed(tmp_path, what):
    """logs/ or results/ a symlink, or the cell's log a symlink or FIFO: refused in one line (before pytest
    starts), and nothing is written where the link points."""
    from harness.run.cellrun import run_cell
    from tests.host_cell import CELL, host_env

    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "results").mkdir()
    if what == "logs-symlink":
        (out / "logs").symlink_to(elsewhere)
    elif what == "results-symlink":
        (out / "results").rmdir()
        (out / "results").symlink_to(elsewhere)
    else:
        (out / "logs").mkdir()
        if what == "log-symlink":
            (out / "logs" / "host-cpu.log").symlink_to(elsewhere / "precious")
        else:
            os.mkfifo(out / "logs" / "host-cpu.log")
    with pytest.raises(UserError, match="is a (symlink|FIFO)"):
        run_cell(CELL, out / "results" / "host-cpu.jsonl", ["tests/drills/test_tiny.py"], env_provider=host_env)
    assert list(elsewhere.iterdir()) == []


def test_a_cells_log_is_replaced_whole_never_truncated_in_place(tmp_path):
    """A reader holding the previous log (or a hard link to it) keeps it: the new log is a fresh file."""
    from harness.run.cellrun import run_cell
    from tests.host_cell import CELL, host_env

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "host-cpu.log").write_text("the previous run's log\n")
    os.link(logs / "host-cpu.log", tmp_path / "kept")
    run_cell(CELL, tmp_path / "results" / "host-cpu.jsonl", ["tests/drills/test_tiny.py"], env_provider=host_env)
    assert (tmp_path / "kept").read_text() == "the previous run's log\n"
    assert "the previous run's log" not in (logs / "host-cpu.log").read_text()
    assert not [p for p in logs.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", ["history.json", "history.md", "report.html", "history-set"])
def test_history_never_replaces_a_special_file_among_its_pages(tmp_path, kind, name, capsys):
    """`harness history` switches its pages in as a set (issue 31): a special file or a foreign symlink at
    any of its names, or at the set folder, is one line before anything is written, never followed."""
    import json

    from harness.cli import main
    from tests.test_history import NIGHTS

    nights = []
    for i, night in enumerate(NIGHTS[:2]):
        nights.append(tmp_path / f"n{i}.json")
        nights[-1].write_text(json.dumps(night))
    out = tmp_path / "out"
    out.mkdir()
    if kind == "folder" and name == "history-set":
        kind = "fifo"  # a real folder is where the set goes
    _special(kind, out / name, tmp_path)
    before = sorted((p.name, os.lstat(p).st_ino) for p in out.iterdir())
    capsys.readouterr()
    assert main(["history", *map(str, nights), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{name}: is a" in err[0], err
    assert sorted((p.name, os.lstat(p).st_ino) for p in out.iterdir()) == before, "left as it was"
    if kind == "symlink-out":
        assert (tmp_path / "precious").read_text() == "keep me"


@pytest.mark.parametrize("kind", KINDS)
def test_bench_never_writes_its_json_through_a_special_file_and_says_so_before_any_section(tmp_path, kind, capsys):
    """`harness bench --json PATH`: a symlink, FIFO, socket, device or folder there is refused in one line
    before the first section runs (sections take minutes); it was written through (a FIFO: blocked) at the end."""
    from harness.cli import main

    path = tmp_path / "bench.json"
    _special(kind, path, tmp_path)
    before = os.lstat(path)
    assert main(["bench", "--json", str(path), "startup"]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # one line: no section started ("bench startup ...")
    assert len(err) == 1 and err[0].startswith("error: ") and "bench.json: is a" in err[0], err
    assert (before.st_ino, before.st_mode) == (os.lstat(path).st_ino, os.lstat(path).st_mode), "left as it was"
    if kind == "symlink-out":
        assert (tmp_path / "precious").read_text() == "keep me"
