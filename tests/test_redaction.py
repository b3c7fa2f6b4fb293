"""Credentials in index URLs never leave the machine: terminal, results, logs, reports, repros."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from harness.cells.cell import Cell
from harness.cells.envs import EnvError
from harness.redact import redact, redact_all

REPO = Path(__file__).resolve().parent.parent
_USERINFO_CHARS = st.text(st.characters(blacklist_characters="/@ \t\n\r'\"<>", blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
                          min_size=1, max_size=30)


@given(user=_USERINFO_CHARS, token=_USERINFO_CHARS, scheme=st.sampled_from(["https", "http", "git+https", "file"]),
       before=st.text(max_size=20), after=st.sampled_from(["/simple", "/links", ":8080/x", ""]))
def test_no_userinfo_survives_in_any_text(user, token, scheme, before, after):
    url = f"{scheme}://{user}:{token}@pypi.example.org{after}"
    shown = redact(f"{before} {url} tail")
    assert f"{scheme}://***@pypi.example.org{after}" in shown
    assert f"{user}:{token}@" not in shown


def test_everything_a_cell_shows_or_records_is_redacted():
    cell = Cell(name="s-cpu", device="cpu", pins={"jax": "0.6.0"}, index_url="https://u:tok3n@h/simple",
                find_links=("https://__token__:pypi-xyz@h/links",), env={"UV_INDEX_URL": "https://u:tok3n@h/simple"})
    shown = cell.install_line() + repr(cell.describe())
    assert "tok3n" not in shown and "pypi-xyz" not in shown
    assert cell.index_url == "https://u:tok3n@h/simple", "uv still gets the real URL"
    err = EnvError("uv: failed to fetch https://u:tok3n@h/simple/jax/", "GET https://u:tok3n@h/simple")
    assert "tok3n" not in err.reason + err.log_tail + str(err)
    assert "tok3n" not in repr(redact_all({"https://u:tok3n@h": ["https://u:tok3n@h"]}))


@pytest.mark.e2e
def test_a_run_against_an_index_with_a_token_writes_it_nowhere(tmp_path):
    m = tmp_path / "m.yaml"
    m.write_text("include:\n  - name: secret-cpu\n    pins: {jax: 0.0.999}\n"
                 "    index_url: https://alice:s3cr3tT0ken@example.invalid/simple\n"
                 "    find_links: [https://__token__:pypi-AgEIcHlwaS5vcmc@example.invalid/links]\n")
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--matrix", str(m), "--out", str(tmp_path / "out")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr[-800:]
    assert "***@example.invalid" in proc.stderr + proc.stdout
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.name == "report.json" for p in written) and any(p.parent.name == "repro" for p in written)
    for text in [proc.stdout, proc.stderr, *(p.read_text(errors="replace") for p in written)]:
        assert "s3cr3t" not in text and "pypi-AgE" not in text


_JSONISH = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(max_size=40),
              st.builds(lambda s, u, t, b: f"{b} {s}://{u}:{t}@host/x", st.sampled_from(["https", "git+file", "x"]),
                        _USERINFO_CHARS, _USERINFO_CHARS, st.text(max_size=5))),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=12)


@given(value=_JSONISH)
def test_redact_all_is_the_walk_whatever_its_shortcut_decides(value):
    """redact_all skips the walk when a quick look at the JSON finds no userinfo: the result must be
    exactly what the walk gives, for any value (the shortcut may only ever save time)."""
    from harness.redact import _redact_walk

    assert redact_all(value) == _redact_walk(value)


def test_a_token_in_a_source_url_reaches_no_results_report_or_terminal(tmp_path, capsys):
    """A `--with jax=https://user:TOKEN@host/jax.git@SHA` source (issue 31): the cell's CellStart, every record,
    the report set and the lines printed show `https://***@host`, never the token."""
    import dataclasses

    from harness.cells.sources import describe
    from harness.report.command import report_command
    from harness.run.cellrun import run_cell
    from tests.host_cell import CELL, host_env

    token = "ghp_s3cretT0ken"
    src = {"kind": "git", "location": f"https://user:{token}@github.example/jax-ml/jax.git", "ref": "main",
           "sha": "0123456789abcdef0123456789abcdef01234567", "pin": "0.6.0+g0123456789ab", "version": "0.6.0"}
    cell = dataclasses.replace(CELL, sources={"jax": src})
    print(describe(src))
    results = tmp_path / "results" / "host-cpu.jsonl"
    run_cell(cell, results, ["tests/drills/test_tiny.py"], env_provider=host_env)
    report_command([results], tmp_path / "rep", None)
    out = capsys.readouterr()
    assert token not in out.out + out.err
    leaked = [str(p) for p in tmp_path.rglob("*") if p.is_file() and token.encode() in p.read_bytes()]
    assert not leaked, leaked
    assert b"https://***@github.example/jax-ml/jax.git" in results.read_bytes()
