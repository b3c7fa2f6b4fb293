"""What a maintainer reads (issue 21): cells in version order everywhere, versions in the headers,
news and "Since which release" in the page, changes since a baseline, stdout vs stderr, the
off-terminal heartbeat, diff and history lines. The page's behaviour in a browser: test_report_browser.py.
"""

from __future__ import annotations

import io
import os
import json
import random
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from harness.cli import build_parser
from harness.judge.results import read_many
from harness.report.command import report_command, this_run
from harness.report.diff import compare, render_text, whole_cells
from harness.report.history import build_history, render_history_markdown
from harness.report.model import cell_sort_key
from harness.report.synthetic import JAX_SWEEP, LINEARIZE, sweep_cell_name, write_jax_sweep_results
from harness.run.progress import CellProgress

ROOT = Path(__file__).resolve().parent.parent
VERSION_ORDER = [sweep_cell_name(v) for v in JAX_SWEEP]


def _page_data(html: str) -> dict:
    tag = '<script id="data" type="application/json">'
    start = html.index(tag) + len(tag)
    return json.loads(html[start:html.index("</script>", start)])


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A jax sweep report merged from results files given in name order (jax0100 before jax0438)."""
    tmp = tmp_path_factory.mktemp("sweep")
    files = write_jax_sweep_results(tmp / "results")
    assert [f.stem for f in files] != VERSION_ORDER  # string order is not version order: the test means something
    report_command(files, tmp / "out")
    return tmp / "out"


def test_cells_are_in_version_order_in_every_output(sweep):
    report = json.loads((sweep / "report.json").read_text())
    assert [c["cell"] for c in report["cells"]] == VERSION_ORDER
    for case in report["cases"]:  # each case's results run left to right too
        assert list(case["results"]) == [c for c in VERSION_ORDER if c in case["results"]]
    junit = ET.fromstring((sweep / "junit.xml").read_bytes())
    assert [s.get("name") for s in junit.iter("testsuite")] == VERSION_ORDER
    md = (sweep / "report.md").read_text()
    assert md.index("**Nothing new**") < md.index("## Since which release") < md.index("## Known upstream bugs seen") < md.index("## Cells")
    cells_table = md[md.index("## Cells"):]
    assert [ln.split("|")[1].strip() for ln in cells_table.splitlines() if ln.startswith("| jax")] == VERSION_ORDER
    news = tmp_news_md(sweep)
    assert "| jax060-cpu (jax 0.6.0) | fail |" in news  # the news names the versions that differ, not only the cell
    known = next(ln for ln in md.splitlines() if "jax-28260" in ln and ln.startswith("| ["))
    assert known.index("jax060-cpu") < known.index("jax090-cpu") < known.index("jax0100-cpu")
    data = _page_data((sweep / "report.html").read_text())
    assert [c["cell"] for c in data["cells"]] == VERSION_ORDER


def tmp_news_md(sweep: Path) -> str:
    """report.md of the sweep judged with no known issues: its news tables."""
    out = sweep.parent / "no-known"
    (sweep.parent / "none.yaml").write_text("issues: []\n")
    report_command(sorted((sweep.parent / "results").glob("*.jsonl")), out, sweep.parent / "none.yaml")
    return (out / "report.md").read_text()


def test_order_does_not_depend_on_the_order_files_are_given(sweep, tmp_path):
    files = sorted((sweep.parent / "results").glob("*.jsonl"))
    random.Random(1).shuffle(files)
    report_command(files, tmp_path / "out")
    assert [c["cell"] for c in json.loads((tmp_path / "out" / "report.json").read_text())["cells"]] == VERSION_ORDER


def test_order_is_main_package_then_its_release_then_the_others_then_device():
    def cell(name, device, **versions):
        return {"cell": name, "device": device, "versions": versions}

    cells = [cell("xla29-cpu", "cpu", torch_xla="2.9.0", torch="2.9.0", jax="0.7.2"),
             cell("torchax0013torch213-cpu", "cpu", torchax="0.0.13", torch="2.13.0", jax="0.7.2"),
             cell("jax0102-tpu", "tpu", jax="0.10.2"), cell("jax0102-cpu", "cpu", jax="0.10.2"),
             cell("xla26-cpu", "cpu", torch_xla="2.6.0", torch="2.6.0", jax="0.5.3"),
             cell("torchax0013-cpu", "cpu", torchax="0.0.13", torch="2.9.0", jax="0.7.2"),
             cell("jax0438-gpu", "gpu", jax="0.4.38"), cell("jax053-cpu", "cpu", jax="0.5.3"),
             cell("odd-cpu", "cpu", jax="not-a-version"),
             cell("xla29noflax-cpu", "cpu", torch_xla="2.9.0", torch="2.9.0", jax="0.7.2", flax="absent")]
    assert [c["cell"] for c in sorted(cells, key=cell_sort_key)] == [
        "jax0438-gpu", "jax053-cpu", "jax0102-cpu", "jax0102-tpu", "odd-cpu",
        "xla26-cpu", "xla29-cpu", "xla29noflax-cpu", "torchax0013-cpu", "torchax0013torch213-cpu"]


def test_column_headers_show_the_versions_that_differ(sweep):
    data = _page_data((sweep / "report.html").read_text())
    heads = {c["cell"]: c["head"] for c in data["cells"]}
    assert heads["jax060-cpu"] == ["jax 0.6.0"]  # jaxlib moves with jax: not repeated
    assert heads["jax0100-cpu"] == ["jax 0.10.0"]


def test_page_carries_the_since_table_and_repro_links(sweep):
    data = _page_data((sweep / "report.html").read_text())
    line = data["since"]["lines"][0]
    assert line["package"] == "jax" and line["versions"] == list(JAX_SWEEP)
    case_ids = [c[0] for c in data["cases"]]
    base = next(r for r in data["since"]["rows"] if case_ids[r[0]] == f"{LINEARIZE}[base]")
    assert base[3] == "fails since 0.6.0 (last good 0.5.3)" and base[4] == "0.6.0" and base[6] == 1
    assert base[2] == "g" * 5 + "b" * 15
    for key, name in data["repros"].items():  # every link names a file the report wrote
        assert (sweep / "repro" / name).is_file(), key
    assert len(data["repros"]) == len(list((sweep / "repro").glob("*.md")))


def test_baseline_marks_each_changed_result(sweep, tmp_path):
    old = write_jax_sweep_results(tmp_path / "old", JAX_SWEEP[:-1], drop={"0.6.0": f"{LINEARIZE}[pcast]"})
    report_command(old, tmp_path / "old-out")
    # Tonight: a fixed known bug (0.5.3 passes), a gone case (0.7.0 lost one), a new cell (0.10.2).
    new = write_jax_sweep_results(tmp_path / "new", drop={"0.7.0": f"{LINEARIZE}[pcast]"})
    text = new[[p.stem for p in new].index("jax053-cpu")].read_text()
    new[[p.stem for p in new].index("jax053-cpu")].write_text(text.replace('"raw": "fail"', '"raw": "pass"').replace(
        '"outcome": "failed"', '"outcome": "passed"'))
    out = tmp_path / "new-out"
    code = report_command(new, out, baseline=tmp_path / "old-out" / "report.json")
    assert code == 1  # the unexpected pass is news
    changes = json.loads((out / "report.json").read_text())["baseline"]["changes"]
    assert {(c["case"], c["cell"]) for c in changes["fixed"]} == {(f"{EAGER}", "jax053-cpu")}
    assert {(c["case"], c["cell"]) for c in changes["gone"]} == {(f"{LINEARIZE}[pcast]", "jax070-cpu")}
    assert {c["cell"] for c in changes["new"]} == {"jax0102-cpu", "jax060-cpu"}
    data = _page_data((out / "report.html").read_text())
    marks = {(data["cases"][data["rows"][int(k)][0]][0], data["cells"][data["rows"][int(k)][1]]["cell"]): v
             for k, v in data["baseline"]["marks"].items()}
    assert marks[(EAGER, "jax053-cpu")] == "fixed"
    assert marks[(f"{LINEARIZE}[pcast]", "jax060-cpu")] == "new"
    assert sum(v == "new" for v in marks.values()) == len(changes["new"])
    assert data["baseline"]["gone"] == [[f"{LINEARIZE}[pcast]", "jax070-cpu", "ok"]]


EAGER = "suites/compute_on/test_eager_vs_aot.py::test_eager_vs_aot[compute_on_outside_jit]"


def test_a_bad_baseline_is_one_line_and_exit_2(sweep, tmp_path):
    bad = tmp_path / "report.json"
    bad.write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "harness", "report", str(sweep.parent / "results"), "--out",
                           str(tmp_path / "o"), "--baseline", str(bad)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "not a schema-1 report.json" in proc.stderr


def test_summary_and_paths_go_to_stdout_problems_to_stderr(sweep, tmp_path):
    results = sweep.parent / "results"
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json\n{}\n")
    proc = subprocess.run([sys.executable, "-m", "harness", "report", str(results), str(broken), "--out", str(tmp_path / "o")],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1  # an unreadable file is never green
    assert proc.stdout.startswith("verdicts: ") and f"report: {tmp_path / 'o' / 'report.html'}" in proc.stdout
    assert "broken.jsonl" in proc.stderr and "verdicts:" not in proc.stderr


def _with_run_ids(files, ids: dict[str, str], starts: dict[str, str]) -> None:
    for f in files:
        text = f.read_text().replace('"schema_version": 1, "cell"', f'"schema_version": 1, "run_id": "{ids[f.stem]}", "cell"', 1)
        f.write_text(text.replace("2026-11-23T12:00:00+00:00", starts[f.stem]))


def test_latest_run_is_this_runs_cells_by_run_id_not_by_time(tmp_path, monkeypatch):
    files = write_jax_sweep_results(tmp_path / "r", ("0.5.3", "0.6.0", "0.7.2"))
    # jax060 started three days before jax072 but in the same tox command; jax053 an hour ago in another
    _with_run_ids(files, {"jax053-cpu": "tox-1@5.ab", "jax060-cpu": "tox-2@9.ab", "jax072-cpu": "tox-2@9.ab"},
                  {"jax053-cpu": "2026-11-23T11:00:00+00:00", "jax060-cpu": "2026-11-20T12:00:00+00:00",
                   "jax072-cpu": "2026-11-23T12:00:00+00:00"})
    cells, _ = read_many(files)
    monkeypatch.delenv("SEAMS_RUN_ID", raising=False)
    monkeypatch.delenv("TOX_ENV_NAME", raising=False)
    kept, left_out = this_run(cells)  # not under tox: the run of the newest cell
    assert sorted(c.cell for c in kept) == ["jax060-cpu", "jax072-cpu"] and [c["cell"] for c in left_out] == ["jax053-cpu"]
    monkeypatch.setenv("SEAMS_RUN_ID", "tox-1@5.ab")  # what tox's report env finds as its parent's id
    monkeypatch.setenv("TOX_ENV_NAME", "report")
    kept, left_out = this_run(cells)
    assert [c.cell for c in kept] == ["jax053-cpu"] and "ran in run tox-2@9.ab" in left_out[0]["why"]
    env = {k: v for k, v in os.environ.items() if k not in ("SEAMS_RUN_ID", "TOX_ENV_NAME")}
    proc = subprocess.run([sys.executable, "-m", "harness", "report", str(tmp_path / "r"), "--latest-run", "--out",
                           str(tmp_path / "o")], cwd=ROOT, capture_output=True, text=True, env=env)
    assert "left out 1 results files of other runs: jax053-cpu (2026-11-23T11:00)" in proc.stderr
    doc = json.loads((tmp_path / "o" / "report.json").read_text())
    assert [c["cell"] for c in doc["cells"]] == ["jax060-cpu", "jax072-cpu"] and doc["left_out"][0]["cell"] == "jax053-cpu"
    assert "Left out (1 results files of other runs" in (tmp_path / "o" / "report.md").read_text()
    # `tox -e report` alone: no cell of this tox command; one line, not a report of other runs' cells
    proc = subprocess.run([sys.executable, "-m", "harness", "report", str(tmp_path / "r"), "--latest-run", "--out",
                           str(tmp_path / "o2")], cwd=ROOT, capture_output=True, text=True,
                          env={**env, "SEAMS_RUN_ID": "tox-3@1.ab", "TOX_ENV_NAME": "report"})
    assert proc.returncode == 2 and "no results file here comes from this tox command" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_the_envs_of_one_tox_command_share_a_run_id_and_the_next_command_gets_another(tmp_path):
    """The mechanism `tox -e a,b,report` relies on, with real tox: its envs' commands see one run id,
    in sequence and under -p; a second tox command sees another."""
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from harness.run.invocation import run_id; print('RID', run_id())"
    (tmp_path / "tox.ini").write_text(f"[tox]\nenv_list = a, b\n[testenv]\nskip_install = true\n"
                                      f"commands = python -c \"{code}\"\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SEAMS_RUN_ID", "TOX_ENV_NAME")}

    def ids(*args: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-m", "tox", "-q", *args], cwd=tmp_path, capture_output=True,
                              text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return re.findall(r"^RID (\S+)", proc.stdout, re.M)

    first, second = ids("-e", "a,b"), ids("-e", "a,b")
    assert len(first) == 2 and len(set(first)) == 1 and first[0].startswith("tox-")
    assert len(second) == 2 and len(set(second)) == 1 and second[0] != first[0]
    parallel = ids("-p", "-e", "a,b", "--parallel-live")
    assert len(parallel) == 2 and len(set(parallel)) == 1 and parallel[0] not in (first[0], second[0])


def test_tox_report_env_merges_only_the_latest_run():
    assert "--latest-run" in (ROOT / "tox.ini").read_text().split("[testenv:report]")[1]


def test_run_takes_several_matrix_files_after_one_flag():
    args = build_parser().parse_args(["run", "--matrix", "a.yaml", "b.yaml", "--matrix", "c.yaml", "--", "-k", "x"])
    assert [str(p) for p in args.matrix] == ["a.yaml", "b.yaml", "c.yaml"] and args.pytest_args == ["-k", "x"]
    args = build_parser().parse_args(["matrix", "--matrix", "a.yaml", "b.yaml"])
    assert [str(p) for p in args.matrix] == ["a.yaml", "b.yaml"]


def _wait_for(buf: io.StringIO, text: str, deadline_s: float = 10.0) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if text in buf.getvalue():
            return True
        time.sleep(0.05)
    return False


def test_off_a_terminal_each_running_cell_prints_at_least_every_heartbeat():
    buf = io.StringIO()
    progress = CellProgress(console=Console(file=buf, force_terminal=False, width=200), heartbeat_s=0.2)
    progress("jax060-cpu", {"event": "env"})
    assert _wait_for(buf, "jax060-cpu: preparing env, 0s elapsed")
    progress("jax060-cpu", {"event": "collected", "count": 101})
    progress("jax060-cpu", {"event": "test", "nodeid": "suites/a.py::t[1]", "verdict": "ok", "done": 1, "total": 101})
    assert _wait_for(buf, "jax060-cpu: 1/101 cases done; last finished suites/a.py::t[1], ")
    progress("jax060-cpu", {"event": "end", "status": "complete", "duration_s": 1.0, "verdicts": {"ok": 1}})
    time.sleep(0.5)  # no line for a cell that ended
    progress.close()
    lines = buf.getvalue().splitlines()
    assert [ln for ln in lines if "cases done" in ln][0].endswith("s elapsed")
    assert lines[-1].startswith("jax060-cpu: complete")


def test_on_a_terminal_there_is_no_heartbeat_line():
    buf = io.StringIO()
    progress = CellProgress(console=Console(file=buf, force_terminal=True, width=200), heartbeat_s=0.2)
    progress("jax060-cpu", {"event": "env"})
    progress("jax060-cpu", {"event": "test", "nodeid": "suites/a.py::t[1]", "verdict": "ok", "done": 1, "total": 3})
    time.sleep(0.6)
    progress.close()
    assert "elapsed" not in buf.getvalue()


def test_an_env_prefetched_for_a_later_cell_gets_no_heartbeat_until_the_cell_runs():
    buf = io.StringIO()
    progress = CellProgress(console=Console(file=buf, force_terminal=False, width=200), heartbeat_s=0.2)
    progress("xla29-cpu", {"event": "env", "message": "building env xla29-cpu"})  # the serial run's prefetch
    time.sleep(0.5)
    progress.close()
    assert "elapsed" not in buf.getvalue()


def test_diff_gives_a_new_cell_one_line(sweep, tmp_path):
    old_files = write_jax_sweep_results(tmp_path / "old", JAX_SWEEP[:-1])
    report_command(old_files, tmp_path / "o")
    old = json.loads((tmp_path / "o" / "report.json").read_text())
    new = json.loads((sweep / "report.json").read_text())
    text = render_text(compare(old, new), cells=whole_cells(old, new))
    assert "  jax0102-cpu: new cell, 14 results (9 skipped, 4 ok, 1 known-bug)\n" in text
    assert "None" not in text and text.count("\n") == 7  # six categories + the one line
    gone = render_text(compare(new, old), cells=whole_cells(new, old))
    assert "  jax0102-cpu: gone cell, 14 results (9 skipped, 4 ok, 1 known-bug)\n" in gone


def test_history_names_the_versions_of_each_night(tmp_path):
    nights = []
    for i, versions in enumerate((("0.5.3",), ("0.6.0",))):  # a floating cell moved from 0.5.3 to 0.6.0
        files = write_jax_sweep_results(tmp_path / f"n{i}", versions)
        for f in files:
            f.write_text(f.read_text().replace(sweep_cell_name(versions[0]), "jaxlatest-cpu"))
            f.rename(f.with_name("jaxlatest-cpu.jsonl"))
        report_command(list((tmp_path / f"n{i}").glob("*.jsonl")), tmp_path / f"o{i}")
        doc = json.loads((tmp_path / f"o{i}" / "report.json").read_text())
        doc["generated_at"] = f"2026-11-2{i}T00:00:00+00:00"
        nights.append(doc)
    md = render_history_markdown(build_history(nights), 7)
    assert "jax 0.5.3, jaxlib 0.5.3 -&gt; jax 0.6.0, jaxlib 0.6.0" in md or "jax 0.5.3, jaxlib 0.5.3 -> jax 0.6.0, jaxlib 0.6.0" in md
    assert "2026-11-21T00:00:00+00:00 (jax 0.6.0, jaxlib 0.6.0)" in md  # failing since: the night and its versions


def test_diff_lists_cells_in_version_order(sweep):
    old = json.loads((sweep / "report.json").read_text())
    new = json.loads((sweep / "report.json").read_text())
    case = next(c for c in new["cases"] if c["id"].endswith("[compute_on_inside_jit]"))
    for cell in ("jax0100-cpu", "jax090-cpu"):
        case["results"][cell]["verdict"] = "regression"
    assert [r["cell"] for r in compare(old, new)["regressed"]] == ["jax090-cpu", "jax0100-cpu"]
