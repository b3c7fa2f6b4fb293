"""`harness history REPORT.json ...`: each case's timeline across past reports, per cell.

Reports are ordered by when they were generated. Along a (case, cell) timeline a night is good
(raw pass), bad (fail, error, crash, timeout) or unknown (skipped, env-error, incomplete, absent).
For each timeline: first seen failing, last seen passing, when the current failing streak began,
and flips (good <-> bad changes; two or more means flaky). The Markdown lists what changed over
the last K nights; the newest report's HTML is re-rendered with a small timeline per grid cell.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from harness.errors import UserError

_SHOWN = ("jax", "jaxlib", "torch", "torch-xla", "torchax", "flax", "libtpu")


def versions_text(cell: dict[str, Any]) -> str:
    """A cell's versions in one short phrase: 'jax 0.6.0, jaxlib 0.6.0' (what a night's date alone hides)."""
    from harness.report.model import cell_versions

    v = cell_versions(cell)
    return ", ".join(f"{p} {v[p]}" for p in _SHOWN if p in v)

_BAD_RAW = {"fail", "error", "crash", "timeout"}
FLAKY_FLIPS = 2


def _state(raw: str | None) -> str:
    return "good" if raw == "pass" else ("bad" if raw in _BAD_RAW else "unknown")


def build_history(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Timelines keyed 'case<TAB>cell', oldest night first, with first/last/flip facts."""
    from harness.report.model import iter_results

    reports = sorted(reports, key=lambda r: r["generated_at"])
    nights = [r["generated_at"] for r in reports]
    # Per night, each cell's versions: a floating (latest/nightly) cell moves under the same name.
    versions = [{c["cell"]: versions_text(c) for c in r["cells"]} for r in reports]
    lines: dict[str, dict[str, Any]] = {}
    for i, report in enumerate(reports):
        for case, cell, r in iter_results(report):
            key = f"{case or '(whole cell)'}\t{cell}"
            entry = lines.setdefault(key, {"case": case or "(whole cell)", "cell": cell, "nights": [None] * len(reports)})
            entry["nights"][i] = {"verdict": r["verdict"], "raw": r.get("raw")}
    for entry in lines.values():
        entry.update(_facts(nights, entry["nights"]))
    return {"nights": nights, "versions": versions, "timelines": dict(sorted(lines.items()))}


def _at(history: dict[str, Any], night: str | None, cell: str) -> str:
    """'NIGHT (versions of the cell that night)', or the night alone where versions are unknown."""
    if not night:
        return ""
    i = history["nights"].index(night)
    v = (history.get("versions") or [{}] * len(history["nights"]))[i].get(cell)
    return f"{night} ({v})" if v else night


def _facts(nights: list[str], seen: list[dict[str, Any] | None]) -> dict[str, Any]:
    states = [_state(s["raw"]) if s else "unknown" for s in seen]
    known = [(nights[i], s) for i, s in enumerate(states) if s != "unknown"]
    flips = sum(1 for a, b in zip(known, known[1:]) if a[1] != b[1])
    bad_nights = [n for n, s in known if s == "bad"]
    good_nights = [n for n, s in known if s == "good"]
    streak = None
    if known and known[-1][1] == "bad":
        streak = known[-1][0]
        for n, s in reversed(known):
            if s != "bad":
                break
            streak = n
    return {"first_seen_failing": bad_nights[0] if bad_nights else None,
            "last_seen_passing": good_nights[-1] if good_nights else None,
            "failing_since": streak, "flips": flips, "flaky": flips >= FLAKY_FLIPS}


def changes(history: dict[str, Any], last: int) -> list[dict[str, Any]]:
    """Verdict changes between consecutive nights among the last `last` nights."""
    nights = history["nights"]
    start = max(1, len(nights) - last + 1)
    out = []
    for i in range(start, len(nights)):
        for t in history["timelines"].values():
            a, b = t["nights"][i - 1], t["nights"][i]
            va, vb = a and a["verdict"], b and b["verdict"]
            if va != vb:
                vers = history.get("versions") or [{}] * len(nights)
                was, now = vers[i - 1].get(t["cell"], ""), vers[i].get(t["cell"], "")
                out.append({"night": nights[i], "case": t["case"], "cell": t["cell"],
                            "old": va or "(absent)", "new": vb or "(absent)",
                            "versions": now if was in ("", now) else f"{was} -> {now}"})
    return out


def render_history_markdown(history: dict[str, Any], last: int) -> str:
    """history.md: what changed over the last K nights, what fails now and since when, what flips."""
    from harness.report.markdown import md_code, md_text

    nights = history["nights"]
    out = ["# xla-seams history", "", f"{len(nights)} nightly reports, {nights[0]} .. {nights[-1]}; "
           f"{len(history['timelines'])} case x cell timelines.", ""]
    ch = changes(history, last)
    out += [f"## Changed over the last {min(last, len(nights))} nights", ""]
    if ch:
        out += ["| night | case | cell | versions | was | now |", "|---|---|---|---|---|---|"]
        out += [f"| {md_text(c['night'])} | {md_code(c['case'])} | {md_text(c['cell'])} | {md_text(c.get('versions') or '-')} | "
                f"{md_text(c['old'])} | {md_text(c['new'])} |" for c in ch]
    else:
        out.append("Nothing changed.")
    failing = [t for t in history["timelines"].values() if t["failing_since"]]
    out += ["", "## Failing in the newest report", ""]
    if failing:
        out += ["| case | cell | failing since | last seen passing | first seen failing |", "|---|---|---|---|---|"]
        out += [f"| {md_code(t['case'])} | {md_text(t['cell'])} | {md_text(_at(history, t['failing_since'], t['cell']))} | "
                f"{md_text(_at(history, t['last_seen_passing'], t['cell']) or 'never (in these reports)')} | "
                f"{md_text(_at(history, t['first_seen_failing'], t['cell']))} |" for t in failing]
    else:
        out.append("Nothing fails.")
    flaky = [t for t in history["timelines"].values() if t["flaky"]]
    out += ["", f"## Flaky (flipped between pass and fail {FLAKY_FLIPS}+ times)", ""]
    out += [f"- {md_code(t['case'])} @ {md_text(t['cell'])}: {t['flips']} flips" for t in flaky] or ["None."]
    return "\n".join(out) + "\n"


# The page set: these names in --out, each a symlink into HISTORY_SET, replaced as a whole like the report set
# (harness.safeio.replacing_set). name -> is a folder.
HISTORY_SET = "history-set"
HISTORY_ENTRIES = {"history.json": False, "history.md": False, "report.html": False}


def add_history_parser(sub: argparse._SubParsersAction) -> None:
    """Register `history`."""
    p = sub.add_parser("history", help="timelines of every case across past report.json files (first bad, last good, flips)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports", nargs="+", type=Path, metavar="REPORT.json", help="past reports, any order (ordered by generated_at)")
    p.add_argument("--out", type=Path, default=Path("reports/history"),
                   help="writes history.json, history.md and report.html (the newest report with timelines)")
    p.add_argument("--last", type=int, default=7, metavar="K", help="changes over the last K nights in history.md (default 7)")
    p.set_defaults(handler=cmd_history)


def cmd_history(args: argparse.Namespace) -> int:
    """Build the history and write it; exit 0 (history reports, it does not judge)."""
    from harness.report.diff import load_report
    from harness.report.html import render_html
    from harness.safeio import atomic_write, dumps_strict, replacing_set

    if args.last < 1:
        raise UserError(f"--last {args.last}: give a number of nights >= 1")
    reports = [load_report(p) for p in args.reports]
    if len({r["generated_at"] for r in reports}) != len(reports):
        raise UserError("two of the reports have the same generated_at: the same report given twice?")
    history = build_history(reports)
    newest_i = max(range(len(reports)), key=lambda i: reports[i]["generated_at"])
    newest = reports[newest_i]
    # The page's repro links point at the newest report's repro/ folder, wherever --out is.
    # Beside report.json as named (OUT/repro, the stable name into the current report set: the link keeps
    # working when a later report replaces the set), else beside the file it is a link to.
    named = Path(os.path.abspath(args.reports[newest_i])).parent
    beside = named if (named / "repro").is_dir() else Path(args.reports[newest_i]).resolve().parent
    repro_dir = os.path.relpath(beside / "repro", os.path.abspath(args.out))
    md = render_history_markdown(history, args.last)
    with replacing_set(args.out, HISTORY_ENTRIES, HISTORY_SET) as stage:  # the page folder, replaced whole
        atomic_write(stage / "history.json", dumps_strict(history, indent=1))
        atomic_write(stage / "history.md", md)
        atomic_write(stage / "report.html", render_html({**newest, "history": timeline_for_html(history),
                                                         "repro_dir": Path(repro_dir).as_posix()}))
    print(md, end="")
    print(f"history: {args.out / 'history.md'} (also history.json; report.html with a timeline per grid cell)")
    return 0


def timeline_for_html(history: dict[str, Any]) -> dict[str, Any]:
    """What the HTML embeds: the nights once, then one short verdict list per 'case<TAB>cell'."""
    return {"nights": history["nights"], "versions": history.get("versions"),
            "lines": {k: [n["verdict"] if n else None for n in t["nights"]] for k, t in history["timelines"].items()},
            "facts": {k: [t["failing_since"], t["last_seen_passing"], t["flips"]] for k, t in history["timelines"].items()}}

