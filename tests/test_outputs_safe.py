"""Outputs are safe for any message: junit.xml stays XML, report.md stays a table, report.html keeps its
script, repro command lines paste safely into a shell, JSON is strict."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import xml.dom.minidom
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.report.command import report_command
from tests.results_fixtures import case, cell_file, known_issues

PWNED = "seams-pwned-marker"
HOSTILE_ID = f"suites/x/test_h.py::test_h[it's $(touch {PWNED}) `id` | a;b & c]"
HOSTILE_MSG = ("\x1b[31mAssertionError\x1b[0m: a | b <script>alert(1)</script> <!-- x -->\n</script>\n"
               "```\n$(rm -rf ~) \x00 \x07 \ud800 end")


@pytest.fixture
def report_dir(tmp_path: Path) -> Path:
    c = case(HOSTILE_ID, "fail", HOSTILE_MSG, err=float("nan"))
    c[1]["user_properties"][0][1]["observations"]["numerics"]["max_rel_err"] = float("inf")
    path = cell_file(tmp_path, "h-cpu", "0.6.0", [c])
    # The fixture writer's json.dumps writes NaN/Infinity tokens, as the plugin may: the reader accepts them.
    assert "NaN" in path.read_text()
    out = tmp_path / "out"
    assert report_command([path], out, known_issues(tmp_path, "")) == 1
    return out


def test_junit_is_valid_xml_with_control_characters_escaped(report_dir):
    raw = (report_dir / "junit.xml").read_bytes()
    xml.dom.minidom.parseString(raw)  # a strict parser: raises on any character XML 1.0 forbids
    failure = ET.fromstring(raw).find(".//failure")
    assert "\\x1b[31mAssertionError" in failure.text and "\\x00" in failure.text
    assert ET.fromstring(raw).find(".//testcase").get("name") == HOSTILE_ID


def test_markdown_table_rows_stay_one_row_with_html_escaped(report_dir):
    md = (report_dir / "report.md").read_text()
    assert "<script>" not in md and "<!--" not in md
    row = next(ln for ln in md.splitlines() if "test_h" in ln)
    assert row.count("|") == 5, row  # | case | cell | outcome | detail |: no cell split by the message
    assert "&lt;script&gt;" in row and "&#124;" in row and "\x1b" not in row


def test_html_data_survives_any_text(report_dir):
    page = (report_dir / "report.html").read_text()
    start = page.index('<script id="data" type="application/json">') + len('<script id="data" type="application/json">')
    end = page.index("</script>", start)  # where a browser ends the element
    data = json.loads(page[start:end])
    assert HOSTILE_MSG.replace("\ud800", "") in [m.replace("\ud800", "") for m in data["msgs"]]
    assert [c[0] for c in data["cases"]] == [HOSTILE_ID]
    assert "<!--" not in page[start:end] and "<script" not in page[start:end]


def test_report_json_is_strict(report_dir):
    text = (report_dir / "report.json").read_text()

    def reject(token):
        raise AssertionError(f"bare {token} in report.json")

    doc = json.loads(text, parse_constant=reject)
    numerics = doc["cases"][0]["results"]["h-cpu"]["observations"]["numerics"]
    assert numerics["max_abs_err"] == "nan" and numerics["max_rel_err"] == "inf"


def test_repro_command_lines_paste_safely_into_a_shell(report_dir, tmp_path):
    text = next((report_dir / "repro").glob("*.md")).read_text()
    lines = [ln for ln in text.splitlines() if "-m pytest" in ln or "-m harness run" in ln]
    assert len(lines) == 2, text
    for ln in lines:
        cmd = ln.split("# or, building the same env: ")[-1]
        words = shlex.split(cmd)
        assert words[-1] == HOSTILE_ID
        # Run it for real with the program swapped for printf: the id must come back as one word,
        # and nothing inside it may execute.
        i = words.index("python")
        shell_line = cmd.replace(shlex.join(words[i:]), shlex.join(["printf", "%s\\n", words[-1]]))
        assert shell_line != cmd
        proc = subprocess.run(["bash", "-c", shell_line], cwd=tmp_path, capture_output=True, text=True)
        assert proc.stdout == HOSTILE_ID + "\n", (shell_line, proc.stdout, proc.stderr)
        assert not (tmp_path / PWNED).exists()


def test_repro_fences_cannot_be_closed_by_the_message(report_dir):
    lines = next((report_dir / "repro").glob("*.md")).read_text().splitlines()
    i = lines.index("### What happened") + 2
    fence = lines[i]
    assert set(fence) == {"`"} and len(fence) > 3  # longer than the ``` inside the message
    j = lines.index(fence, i + 1)  # the first line a Markdown renderer takes as the closing fence
    shown = re.sub(r"[\x00-\x08\x0b-\x1f]", lambda m: f"\\x{ord(m.group()):02x}", HOSTILE_MSG.strip())
    assert "\n".join(lines[i + 1:j]) == shown.replace("\ud800", "\\ud800")  # control characters shown, not obeyed


def test_diff_prints_hostile_ids_without_obeying_them(report_dir, tmp_path, capsys):
    from harness.cli import main

    rc = main(["diff", str(report_dir / "report.json"), str(report_dir / "report.json"),
               "--markdown", str(tmp_path / "d.md")])
    out = capsys.readouterr().out
    assert rc == 0 and "\x1b" not in out


def test_html_repro_line_is_shell_quoted_by_the_page_script(tmp_path):
    """The page builds its repro line in JavaScript: its quoting function must match shlex's safety."""
    import shutil

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the page's quoting function cannot be run here")
    template = (Path(__file__).resolve().parent.parent / "harness/report/templates/report.html.j2").read_text()
    sq = next(ln for ln in template.splitlines() if ln.startswith("const sq = "))
    quoted = subprocess.run([node, "-e", f"{sq}\nprocess.stdout.write(sq(process.argv[1]))", HOSTILE_ID],
                            capture_output=True, text=True, check=True).stdout
    proc = subprocess.run(["bash", "-c", f"printf '%s\\n' {quoted}"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout == HOSTILE_ID + "\n" and not (tmp_path / PWNED).exists()


from hypothesis import given, settings, strategies as st  # noqa: E402

from harness.nightly.filing import issue_text  # noqa: E402
from harness.report.repro import command_line, repro_markdown, shell_word  # noqa: E402

_IDS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(value=_IDS)
def test_any_value_is_one_shell_word_on_one_line_that_bash_reads_back_exactly(value):
    value = value.replace("\x00", "")  # argv cannot hold NUL
    word = shell_word(value)
    assert "\n" not in word and "\r" not in word and word.isprintable()
    got = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True).stdout.decode("utf-8", "surrogateescape")
    assert got == value


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(case_id=_IDS, message=_IDS)
def test_no_test_id_or_message_becomes_a_command_in_a_repro_or_an_issue(case_id, message):
    case_id = "suites/x/test_h.py::test_h[" + case_id.replace("\x00", "") + "]"
    cell = {"cell": "h-cpu", "device": "cpu", "pins": {"jax": "0.6.0"}, "install_line": "pip install jax==0.6.0",
            "run_env": {"XLA_FLAGS": "a\nrm -rf ~"}}
    r = {"verdict": "regression", "raw": "fail", "message": message}
    text = repro_markdown(case_id, cell, r)
    blocks = [b.split("\n```", 1)[0].split("\n") for b in text.split("```sh\n")[1:]]
    run_block = next(b for b in blocks if any("-m pytest" in ln for ln in b))
    prefixes = ("python3.11 -m venv", "pip install", "XLA_FLAGS=", "# or, building the same env: ")
    assert len(run_block) == 4 and all(ln.startswith(p) for ln, p in zip(run_block, prefixes)), run_block
    for line in run_block:
        assert line.isprintable(), line
    item = {"kind": "regression", "case": case_id, "cell": "h-cpu", "old": "ok", "new": "regression"}
    report = {"generated_at": "t", "cells": [{**cell, "versions": {}, "verdict": "ok", "status": "complete"}],
              "cases": [{"id": case_id, "results": {"h-cpu": r}}]}
    title, body = issue_text(item, report, report, "")
    def no_controls(text: str) -> bool:  # C0, DEL, C1 and line separators: what a terminal or Markdown acts on
        return not re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", text)

    assert no_controls(title)
    assert all(no_controls(ln) for ln in body.split("\n")[:6]), body[:400]
    assert command_line({}, ["x", case_id]).isprintable()


@pytest.mark.parametrize("seed", range(3))
def test_junit_round_trips_any_text_and_counts(seed):
    """junit.xml is written as text (for speed): any id, cell, message or link parses back to what
    xml_text makes of it, and each suite's counts are its cases'."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    from harness.judge.outcomes import FAILING_VERDICTS
    from harness.report.junit import render_junit, xml_text

    verdicts = st.sampled_from(sorted(FAILING_VERDICTS | {"ok", "known-bug", "skipped"}))
    results = st.dictionaries(st.text(min_size=1, max_size=8), st.tuples(verdicts, st.text(max_size=40),
                                                                          st.text(max_size=20)), min_size=1, max_size=4)

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.tuples(st.text(max_size=30), results), max_size=5, unique_by=lambda c: xml_text(c[0])))
    def check(cases):
        cells = sorted({cell for _, res in cases for cell in res} | {f"empty{seed}"})
        report = {"cells": [{"cell": c, "verdict": "complete", "status": "complete", "reason": None,
                             "expectation": None} for c in cells],
                  "cases": [{"id": cid, "results": {cell: {"verdict": v, "raw": "fail", "message": msg,
                                                           "expectation": {"link": link}, "duration": 0.5}
                                                    for cell, (v, msg, link) in res.items()}}
                            for cid, res in cases]}
        raw = render_junit(report)
        xml.dom.minidom.parseString(raw)
        root = ET.fromstring(raw)
        for suite in root:
            tcs = suite.findall("testcase")
            assert suite.get("tests") == str(len(tcs))
            assert suite.get("failures") == str(len(suite.findall("testcase/failure")))
            assert suite.get("skipped") == str(len(suite.findall("testcase/skipped")))
        by_cell = {s.get("name"): s for s in root}
        assert set(by_cell) == {xml_text(c) for c in cells}
        for cid, res in cases:
            for cell, (v, msg, link) in res.items():
                tc = [t for t in by_cell[xml_text(cell)].findall("testcase") if t.get("name") == xml_text(cid)][0]
                assert tc.get("classname") == xml_text(cell)
                fail = tc.find("failure")
                if v in FAILING_VERDICTS:
                    assert (fail.text or "") == xml_text(msg.strip()) and fail.get("type") == v
                elif v in ("known-bug", "skipped"):
                    assert tc.find("skipped").get("message") == f"{v}: {xml_text(link) or xml_text(msg.strip())}"[:500]
                else:
                    assert fail is None and tc.find("skipped") is None
        assert by_cell[f"empty{seed}"].find("testcase").get("name") == "(whole cell)"

    check()
