"""`harness report`: merge cell results, judge them again, write report.json/html/md, junit.xml and repro/."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from rich.console import Console

from harness.errors import UserError
from harness.judge.apply import apply_expectations
from harness.judge.coverage import gap_headline
from harness.judge.expectations import DEFAULT_PATH, load_expectations
from harness.judge.outcomes import FAILING_VERDICTS
from harness.judge.results import read_many
from harness.judge.since import since_summary
from harness.redact import redact_all
from harness.report.html import render_html
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown
from harness.report.model import build_report
from harness.report.repro import MAX_REPROS, repro_wanted, write_repros
from harness.safeio import atomic_write, dumps_lines, replacing_set


def _latest_per_cell(cells):
    """One results file per cell name: the latest run wins, the others are reported."""
    by_name: dict[str, list] = {}
    for c in cells:
        by_name.setdefault(c.cell, []).append(c)
    kept, notes = [], []
    for name, group in by_name.items():
        group.sort(key=lambda c: c.started_at)
        kept.append(group[-1])
        for old in group[:-1]:
            notes.append(f"{old.path}: another results file for cell {name} is newer ({group[-1].path}); ignored")
    order = {id(c): i for i, c in enumerate(cells)}
    return sorted(kept, key=lambda c: order[id(c)]), notes


def this_run(cells: list) -> tuple[list, list[dict[str, str]]]:
    """(kept, left_out): the cells of this run, by run id (harness.run.invocation), never by time.

    Under tox (the `report` env of `tox -e a,b,report`) this run is the tox command's: the cells
    whose CellStart carries its run id. Elsewhere it is the newest invocation among the files (the
    run id of the cell started last). Every results file left out is named with its run id.
    """
    from harness.run.invocation import ENV, run_id, under_tox

    wanted = run_id() if under_tox() or os.environ.get(ENV) else None
    if wanted is None:
        newest = max(cells, key=lambda c: c.started_at or "")
        wanted = newest.run_id
        how = f"the newest run (run id {wanted or 'unrecorded'}: {newest.cell}, started {newest.started_at[:19]})"
    else:
        how = f"this tox command (run id {wanted})" if under_tox() else f"run id {wanted} ({ENV})"
        if not any(c.run_id == wanted for c in cells):
            raise UserError(f"no results file here comes from {how}: {len(cells)} files from other runs. "
                            "Name the cells in the same tox command (tox -e CELL,...,report), "
                            "or merge every file: python -m harness report reports/results")
    kept = [c for c in cells if c.run_id == wanted]
    left_out = [{"cell": c.cell, "results_file": str(c.path), "started_at": c.started_at, "run_id": c.run_id,
                 "why": f"not in {how}: ran in run {c.run_id or '(unrecorded: written before run ids)'}"}
                for c in cells if c.run_id != wanted]
    return kept, left_out


def baseline_changes(baseline_path: Path, report: dict) -> dict:
    """What changed since a previous report.json, as report["baseline"] (marks in the HTML grid)."""
    from harness.report.diff import compare, load_report

    old = load_report(baseline_path)
    changes = compare(old, report)
    return {"source": str(baseline_path), "generated_at": old.get("generated_at"),
            "changes": {k: v for k, v in changes.items() if k != "drift"}}


# The report set: these names in --out, each a symlink into SET_DIR (harness.safeio.publish_set), which is
# replaced as a whole. name -> is a folder.
REPORT_FILES = ("junit.xml", "report.md", "report.html", "report.json")
SET_DIR = "report-set"
SET_ENTRIES = {**{name: False for name in REPORT_FILES}, "repro": True}


def write_report_files(report: dict, out_dir: Path, report_json: str | None = None,
                       repro_limit: int | None = MAX_REPROS, say: Callable[[str], None] | None = None) -> int:
    """Write report.json/html/md, junit.xml and repro/ as one set; a disk problem is one UserError line.
    `report_json`: the report already as dumps_lines text; `repro_limit`: repro files at most (None: all);
    `say`: progress lines while the repros are written.

    Everything is rendered into a fresh folder inside out_dir first, so a kill or a full disk while
    rendering leaves the previous set as it was; then the set folder (out_dir/report-set) is swapped
    with it in one step (renameat2 RENAME_EXCHANGE), so every name a reader opens (out_dir/report.json,
    out_dir/repro/..., symlinks into the set) shows the old set or the new one, never a mix, and repros
    of an earlier report are gone with it. A symlink or special file in the set's place is refused before
    anything is written, never followed."""
    with replacing_set(out_dir, SET_ENTRIES, SET_DIR) as stage:
        atomic_write(stage / "report.json", dumps_lines(report) if report_json is None else report_json)
        atomic_write(stage / "report.html", render_html(report))
        atomic_write(stage / "report.md", render_markdown(report))  # news, since which release, known bugs, cells
        atomic_write(stage / "junit.xml", render_junit(report))
        n = write_repros(report, stage / "repro", limit=repro_limit, say=say)
    return n


def report_command(paths: list[Path], out_dir: Path, expectations_path: Path | None = None,
                   baseline: Path | None = None, latest_run: bool = False,
                   repro_limit: int | None = MAX_REPROS) -> int:
    """Merge results files into out_dir/report.{json,html,md}, junit.xml and repro/; exit 1 on news.

    The verdict counts and the report paths go to stdout (what `| tee` and CI logs keep); problems
    with the inputs go to stderr. With `baseline`, each result that changed since that report.json
    is marked in the HTML grid and report.json's `baseline` lists the changes. With `latest_run`,
    only this run's cells are merged (this_run: by run id); the files left out are named.
    `repro_limit`: repro files at most, news first (None: one for every result not ok or skipped).
    """
    console = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)  # file names may hold [...]
    out = Console(highlight=False, soft_wrap=True, markup=False)
    expectations_path = expectations_path or DEFAULT_PATH
    expectations = load_expectations(expectations_path)
    missing = [p for p in paths if not Path(p).exists()]
    cells, errors = read_many([p for p in paths if Path(p).exists()])
    errors = [f"{p}: no such results file" for p in missing] + errors
    if not cells:  # nothing to merge: the reason is the whole answer, on one line
        more = f" (and {len(errors) - 1} more unreadable)" if len(errors) > 1 else ""
        raise UserError((errors[0] if errors else "no results files given") + more)
    for e in errors:  # the other files still merge; each bad one is named
        console.print(f"error: {e}")
    cells, dupes = _latest_per_cell(cells)
    errors += dupes
    left_out: list[dict[str, str]] = []
    if latest_run:
        cells, left_out = this_run(cells)
        if left_out:
            shown = ", ".join(f"{c['cell']} ({c['started_at'][:16]})" for c in left_out[:8]) + (
                f" and {len(left_out) - 8} more" if len(left_out) > 8 else "")
            console.print(f"note: merged the {len(cells)} cells of this run; left out {len(left_out)} results "
                          f"files of other runs: {shown}; merge them by naming the files without --latest-run")
    apply_expectations(cells, expectations)
    report = build_report(cells, errors, str(expectations_path))
    if left_out:
        report["left_out"] = left_out  # results files of other runs, not merged (--latest-run)
    report["since"] = since_summary(report)  # per case: first bad / last good along each version line
    if baseline is not None:
        report["baseline"] = baseline_changes(baseline, report)
    # A token in an index URL or a test's message never reaches a report or repro. The check reads
    # report.json's own text, so the report is serialised once (twice only if it held a token).
    report_json = dumps_lines(report)
    redacted = redact_all(report, as_json=report_json)
    if redacted is not report:
        report, report_json = redacted, dumps_lines(redacted)
    n_repro = write_report_files(report, out_dir, report_json, repro_limit, say=console.print)

    counts = report["counts"]
    out.print("verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    for c in report["cells"]:
        if c["stale_expectations"]:
            console.print(f"warning: {c['cell']}: stale expectations (matched no collected test): {', '.join(c['stale_expectations'])}")
    headline = gap_headline(report["coverage"]) if report.get("coverage") else ""
    if headline:  # not news (the exit status stays), but an area nobody checked: say so
        out.print(f"coverage: {headline} (see report.md)")
    if baseline is not None:
        ch = report["baseline"]["changes"]
        out.print(f"since {baseline}: " + ", ".join(f"{len(ch[k])} {k}" for k in ("regressed", "fixed", "changed", "new", "gone")))
    wanted = repro_wanted(report)
    capped = (f"; {wanted - n_repro} more results left without one: at most {repro_limit}, news first, then known bugs"
              if wanted > n_repro else "")
    out.print(f"report: {out_dir / 'report.html'}  (also report.md, report.json, junit.xml; {n_repro} repros in {out_dir / 'repro'}{capped})")
    news = sum(n for v, n in counts.items() if v in FAILING_VERDICTS)
    return 1 if news or errors else 0
