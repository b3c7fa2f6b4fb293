"""Bad circumstances are one line and exit 2, never an internal error (issue 31): a closed output pipe on
every command, a folder variable naming a device or a path through one, a symlink loop for every input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.paths import REPO
from tests.results_fixtures import SHARD, case, cell_file

COMMANDS = {  # one cheap invocation of each command that prints to stdout
    "matrix": ["matrix"],
    "validate": ["validate", "matrices/default.yaml"],
    "report": ["report", "{results}", "--out", "{tmp}/r"],
    "diff": ["diff", "{report}", "{report}"],
    "history": ["history", "{report}", "--out", "{tmp}/h"],
    "news": ["news", "{report}", "{report}", "--dry-run", "--out", "{tmp}/n"],
    "help": ["--help"],
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("inputs")
    results = cell_file(tmp, "jax060-cpu", "0.6.0", [case(SHARD, "fail", "boom")])
    assert main(["report", str(results), "--out", str(tmp / "rep")]) == 1
    return {"results": str(results), "report": str(tmp / "rep" / "report.json"), "tmp": str(tmp)}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_closed_output_pipe_is_one_line_never_an_internal_error(command, inputs, tmp_path):
    argv = [a.format(**{**inputs, "tmp": str(tmp_path)}) for a in COMMANDS[command]]
    # stdout is a pipe whose reader has gone before the command writes: EPIPE on its first write
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=REPO, stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(write)
    assert proc.returncode in (0, 1, 2), proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    if proc.returncode == 2:
        assert proc.stderr.strip().splitlines() == ["error: the output pipe was closed before the command finished"]


@pytest.mark.parametrize("var", ["SEAMS_ENVS_DIR", "SEAMS_REPOS_DIR"])
@pytest.mark.parametrize("value", ["/dev/null", "/dev/null/x", "{loop}/x", "{file}"])
def test_a_folder_variable_naming_a_device_a_file_or_a_loop_is_one_line_before_any_cell(var, value, tmp_path,
                                                                                        monkeypatch, capsys):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv(var, value.format(loop=tmp_path / "loop", file=tmp_path / "file"))
    rc = main(["run", "--cell", "jax060-cpu", "--build-only", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"error: {var}="), err
    assert not (tmp_path / "out" / "results" / "jax060-cpu.jsonl").exists(), "no cell started"


def test_the_bisect_cache_variable_is_checked_the_same_way(tmp_path, monkeypatch):
    from harness.bisect.probe import _cache_dir
    from harness.errors import UserError

    monkeypatch.setenv("SEAMS_BISECT_CACHE", "/dev/null")
    with pytest.raises(UserError, match="SEAMS_BISECT_CACHE=/dev/null: /dev/null is not a folder"):
        _cache_dir()


@pytest.mark.parametrize("argv", [
    ["report", "{loop}", "--out", "{tmp}/o"], ["validate", "{loop}"], ["diff", "{loop}", "{loop}"],
    ["history", "{loop}", "--out", "{tmp}/h"], ["news", "{loop}", "{loop}", "--dry-run", "--out", "{tmp}/n"],
    ["matrix", "--matrix", "{loop}"], ["report", "{results}", "--out", "{loop}"],
    ["bisect", "--from-report", "{loop}", "--cell", "a", "--case", SHARD],
], ids=lambda a: " ".join(a[:2]))
def test_a_symlink_loop_for_any_path_is_one_line(argv, inputs, tmp_path, capsys):
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    rc = main([a.format(loop=tmp_path / "loop", tmp=tmp_path, results=inputs["results"]) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error:"), err
    json.dumps(err)  # printable
