"""`harness report`: merge cell results, judge them again, write report.json/html/md, junit.xml and repro/."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from harness.errors import UserError
from harness.redact import redact_all
from harness.judge.expectations import DEFAULT_PATH, load_expectations
from harness.judge.outcomes import FAILING_VERDICTS
from harness.report.html import render_html
from harness.judge.apply import apply_expectations
from harness.report.junit import render_junit
from harness.report.markdown import render_markdown, render_since_markdown
from harness.report.model import build_report
from harness.report.repro import write_repros
from harness.judge.results import read_many
from harness.safeio import atomic_write, disk_error, dumps_lines, ensure_dir
from harness.judge.since import since_summary

MAX_REPROS = 500


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


def write_report_files(report: dict, out_dir: Path) -> int:
    """Write report.json/html/md, junit.xml and repro/ atomically; a disk problem is one UserError line."""
    ensure_dir(out_dir)
    try:
        atomic_write(out_dir / "report.json", dumps_lines(report))
        atomic_write(out_dir / "report.html", render_html(report))
        atomic_write(out_dir / "report.md", render_markdown(report) + render_since_markdown(report.get("since") or []))
        atomic_write(out_dir / "junit.xml", render_junit(report))
        return write_repros(report, out_dir / "repro", limit=MAX_REPROS)
    except OSError as exc:
        raise disk_error(exc, any_errno=True) from None


def report_command(paths: list[Path], out_dir: Path, expectations_path: Path | None = None) -> int:
    """Merge results files into out_dir/report.{json,html,md}, junit.xml and repro/; exit 1 on news."""
    console = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)  # file names may hold [...]
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
    apply_expectations(cells, expectations)
    report = build_report(cells, errors, str(expectations_path))
    report["since"] = since_summary(report)  # per case: first bad / last good along each version line
    report = redact_all(report)  # a token in an index URL or a test's message never reaches a report or repro
    n_repro = write_report_files(report, out_dir)

    counts = report["counts"]
    console.print("verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    for c in report["cells"]:
        if c["stale_expectations"]:
            console.print(f"warning: {c['cell']}: stale expectations (matched no collected test): {', '.join(c['stale_expectations'])}")
    console.print(f"report: {out_dir / 'report.html'}  (also report.md, report.json, junit.xml; {n_repro} repros in {out_dir / 'repro'})")
    news = sum(n for v, n in counts.items() if v in FAILING_VERDICTS)
    return 1 if news or errors else 0
