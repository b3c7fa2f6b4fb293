"""The reduced script in the issue form, `harness news` and its bisection (issue 32 item 4)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from harness.report.issue_body import issue_body
from harness.report.repro import safe_name
from tests.test_filing import record_bisect_argvs

REPO = Path(__file__).resolve().parent.parent
CELL = {"cell": "jax060-cpu", "device": "cpu", "pins": {"jax": "0.6.0"}}
RESULT = {"raw": "fail", "verdict": "known-bug", "message": "boom"}
FULL = "# full\nimport jax\n" + "\n".join(f"x{i} = {i}" for i in range(40)) + "\nraise ValueError('boom')\n"
MIN = "# reduced\nraise ValueError('boom')\n"


def test_the_issue_body_shows_the_reduced_script_first_and_the_full_one_collapsed():
    body = issue_body("suites/a.py::test_a", CELL, RESULT, script=FULL, script_name="C.py", reduced=MIN,
                      reduced_name="C.min.py", standalone_install="pip install jax==0.6.0")
    reduced_at, details_at, full_at = body.index("# reduced"), body.index("<details>"), body.index("# full")
    assert reduced_at < details_at < full_at < body.index("</details>")
    assert "python C.min.py" in body and "Reduced (2 lines" in body
    without = issue_body("suites/a.py::test_a", CELL, RESULT, script=FULL, script_name="C.py")
    assert "Reduced" not in without and "# full" in without  # no reduced script: the form as before


def test_news_files_the_reduced_script_and_bisects_it(tmp_path, monkeypatch):
    import harness.nightly.filing as filing
    from tests.test_filing import NEW, OLD, A

    (tmp_path / "repro").mkdir()
    reduced = tmp_path / "repro" / f"{safe_name('jaxlatest-cpu')}__{safe_name(A)}.min.py"
    reduced.write_text(MIN)
    (tmp_path / "old.json").write_text(json.dumps(OLD))
    (tmp_path / "new.json").write_text(json.dumps(NEW))
    proc = subprocess.run([sys.executable, "-m", "harness", "news", str(tmp_path / "old.json"), str(tmp_path / "new.json"),
                           "--no-bisect", "--dry-run", "--reduced", "--out", str(tmp_path / "news")], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    items = proc.stdout.split("--- would open")[1:]
    assert sum("raise ValueError('boom')" in i for i in items) == 1  # test_a's issue only: the one with a reduced script
    assert filing.reduced_script(tmp_path / "new.json", {"case": A, "cell": "jaxlatest-cpu"}) == reduced

    seen = record_bisect_argvs(monkeypatch)
    filing.bisect_item({"case": A, "cell": "jaxlatest-cpu", "kind": "regression"}, OLD, NEW, budget_s=30,
                       out=tmp_path, script=reduced)
    assert seen[-1][-2:] == ["--script", str(reduced)]


def test_news_runs_no_reduced_script_it_was_not_told_to(tmp_path, monkeypatch):
    """A CASE.min.py in a report folder is a program: without --reduced (the operator's word that they
    made it), news neither bisects nor embeds it; a hostile folder's script never runs."""
    import harness.nightly.filing as filing
    from tests.test_filing import NEW, OLD, A

    (tmp_path / "repro").mkdir()
    planted = tmp_path / "repro" / f"{safe_name('jaxlatest-cpu')}__{safe_name(A)}.min.py"
    planted.write_text("raise SystemExit('planted')\n")
    (tmp_path / "old.json").write_text(json.dumps(OLD))
    (tmp_path / "new.json").write_text(json.dumps(NEW))
    seen = record_bisect_argvs(monkeypatch)
    filing.file_news(tmp_path / "old.json", tmp_path / "new.json", 5, 30, None, True, True, tmp_path / "news",
                     say=lambda _line: None)
    assert seen, "the items were bisected"
    assert all("--script" not in argv and str(planted) not in argv for argv in seen), seen
    bodies = "".join(p.read_text() for p in (tmp_path / "news").rglob("issue.md"))
    assert "planted" not in bodies
