"""A report set is replaced as a whole (issue 31): rendered into a fresh folder, then switched in; repros of
an earlier report are gone; a failure while rendering leaves the previous set untouched; a symlink or a
special file where the set goes is refused in one line and never followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import faults
from harness.cli import main
from tests.results_fixtures import PVARY, SHARD, case, cell_file, known_issues

SET = ("report.json", "report.html", "report.md", "junit.xml")


def _report(tmp_path: Path, name: str, raw: str, out: Path) -> int:
    """`harness report` of one cell whose two cases all end `raw` (fail: two repros)."""
    inputs = tmp_path / name
    inputs.mkdir()
    results = cell_file(inputs, "jax060-cpu", "0.6.0", [case(SHARD, raw, "boom"), case(PVARY, raw, "boom")])
    return main(["report", str(results), "--out", str(out), "--expectations", str(known_issues(inputs, ""))])


def _snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_repros_of_an_earlier_report_are_gone_and_nothing_is_left_staged(tmp_path):
    out = tmp_path / "out"
    assert _report(tmp_path, "a", "fail", out) == 1
    assert len(list((out / "repro").glob("*.md"))) == 2
    (out / "repro" / "mine.txt").write_text("an earlier run's file")
    assert _report(tmp_path, "b", "pass", out) == 0
    assert list((out / "repro").iterdir()) == []  # the old set went as a whole
    assert sorted(p.name for p in out.iterdir()) == sorted([*SET, "repro"])  # no staging folder left


@pytest.mark.parametrize("op", ["write", "rename", "fsync", "mkdir"])
def test_a_failure_while_rendering_leaves_the_previous_set_as_it_was(tmp_path, op, capsys):
    out = tmp_path / "out"
    assert _report(tmp_path, "a", "fail", out) == 1
    before = _snapshot(out)
    faults.arm(f"{op}:1")
    try:
        rc = _report(tmp_path, "b", "pass", out)
    finally:
        faults.arm(None)
    assert rc == 2 and capsys.readouterr().err.count("error:") >= 1
    assert _snapshot(out) == before, "a failed report changed the previous set"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("what", ["symlink-dir", "symlink-file", "file", "fifo"])
def test_a_symlink_or_special_file_in_the_set_is_refused_never_followed(tmp_path, what, capsys):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "keep.md").write_text("not the harness's")
    if what == "symlink-dir":
        (out / "repro").symlink_to(elsewhere)
    elif what == "symlink-file":
        (out / "report.md").symlink_to(elsewhere / "keep.md")
    elif what == "file":
        (out / "repro").write_text("a file where repro/ goes")
    else:
        os.mkfifo(out / "report.html")
    assert _report(tmp_path, "a", "fail", out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:"), err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.md"]
    assert (elsewhere / "keep.md").read_text() == "not the harness's"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
