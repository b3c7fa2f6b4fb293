"""report.md: what a CI job summary or an upstream issue takes - news first, with links."""

from __future__ import annotations

import html
from typing import Any

from harness.judge.coverage import coverage_gaps, gap_headline
from harness.judge.outcomes import FAILING_VERDICTS, VERDICTS
from harness.report.issue_body import url_text
from harness.report.model import cell_rank, differing_versions, iter_results
from harness.report.opcoverage import render_op_coverage_markdown
from harness.report.standalone import shown_sources

_NEWS_ORDER = ("regression", "fixed", "crash", "timeout", "env-error", "incomplete", "api-drift")
_TITLES = {"regression": "Regressions (unexpected failures)", "fixed": "Fixed upstream? (unexpected passes: update matrices/known_issues)",
           "crash": "Crashes", "timeout": "Timeouts", "env-error": "Cells that could not be built",
           "incomplete": "Incomplete cells or tests",
           "api-drift": "API drift (an API absent inside its recorded release range, or present outside it: matrices/apis/)"}


def md_text(text: Any) -> str:
    """Text safe in a Markdown table cell: one line, HTML and Markdown punctuation escaped."""
    out = html.escape(" ".join(str(text).split()), quote=False)
    for ch in "\\`*[]|":
        out = out.replace(ch, f"&#{ord(ch)};")
    # Control characters (ANSI colours, NUL) shown as \xNN text, never passed through raw.
    return "".join(ch if ch.isprintable() else f"&#92;x{ord(ch):02x}" for ch in out)


def md_code(text: Any) -> str:
    """Text shown as code in a table cell (a backtick code span would let the text end it)."""
    return f"<code>{md_text(text)}</code>"


def _link(exp: dict[str, Any] | None) -> str:
    if not exp:
        return ""
    link = str(exp.get("link", ""))
    if link.startswith("https://"):
        return f"[{md_text(exp['id'])}]({url_text(link)})"
    return f"{md_text(exp['id'])} (no upstream issue filed)"


def _one_line(text: str | None, n: int = 160) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return md_text((line[:n] + "...") if len(line) > n else line)


def render_markdown(report: dict[str, Any]) -> str:
    """The Markdown summary of a report."""
    counts = report["counts"]
    out = ["# xla-seams compatibility report", "",
           f"Generated {report['generated_at']} from {len(report['cells'])} cells, "
           f"{sum(len(c['results']) for c in report['cases'])} results.", "",
           "| " + " | ".join(v for v in VERDICTS if counts.get(v)) + " |",
           "|" + "---|" * len([v for v in VERDICTS if counts.get(v)]),
           "| " + " | ".join(str(counts[v]) for v in VERDICTS if counts.get(v)) + " |", ""]
    if report.get("left_out"):  # --latest-run: the results files of other runs that are not in this report
        out += [f"Left out ({len(report['left_out'])} results files of other runs; merge them by naming the files): "
                + md_text(", ".join(f"{c['cell']} (started {c['started_at'][:16]}, run {c['run_id'] or 'unrecorded'})"
                                    for c in report["left_out"])), ""]
    if report["errors"]:
        out += ["## Results files that could not be read", ""] + [f"- {md_code(e)}" for e in report["errors"]] + [""]
    by_verdict: dict[str, list] = {}
    for case_id, cell, r in iter_results(report):
        by_verdict.setdefault(r["verdict"], []).append((case_id, cell, r))
    news = [v for v in _NEWS_ORDER if by_verdict.get(v)]
    rank = cell_rank(report)  # cells in version order, as the report lists them
    heads = differing_versions(report["cells"])  # "jax060-cpu (jax 0.6.0)": the versions that differ between cells
    if not news:
        out += ["**Nothing new**: every result is ok, a known upstream bug, or skipped with a reason.", ""]
    for v in news:
        out += [f"## {_TITLES[v]}", "", "| case | cell | outcome | detail |", "|---|---|---|---|"]
        for case_id, cell, r in sorted(by_verdict[v], key=lambda t: (t[0] or "", rank.get(t[1], len(rank)))):
            detail = _one_line(r.get("message"))
            if v == "api-drift" and r.get("expectation"):
                detail = _one_line(r["expectation"]["reason"], 400)
            elif r.get("expectation"):
                detail += f" (known issue {_link(r['expectation'])})"
            raw = f"{r['raw']} {r['signal']}" if r.get("signal") else r["raw"]
            shown = f"{cell} ({', '.join(heads[cell])})" if heads.get(cell) else cell
            out.append(f"| {md_code(case_id or '(whole cell)')} | {md_text(shown)} | {md_text(raw)} | {detail} |")
        out.append("")
    # Right after the news: since which release each case fails along each version line.
    since = render_since_markdown(report.get("since") or [])
    if since:
        out += since.strip("\n").splitlines() + [""]
    out += render_coverage_markdown(report.get("coverage") or coverage_gaps(report))
    out += render_op_coverage_markdown(report)  # torchax_ops: OpInfo entries that are not cases, and why
    from harness.report.census import render_census_markdown  # late: the census section uses this module's escaping

    out += render_census_markdown(report)
    known = by_verdict.get("known-bug", [])
    if known:
        out += ["## Known upstream bugs seen", "", "| issue | cells | cases |", "|---|---|---|"]
        grouped: dict[str, tuple[dict, set, set]] = {}
        for case_id, cell, r in known:
            e = r["expectation"]
            g = grouped.setdefault(e["id"], (e, set(), set()))
            g[1].add(cell)
            g[2].add(case_id or "(whole cell)")
        for e, cells, cases in grouped.values():
            out.append(f"| {_link(e)}: {md_text(e['reason'])} | {md_text(', '.join(sorted(cells, key=lambda n: rank.get(n, len(rank)))))} | {len(cases)} |")
        out.append("")
    out += ["## Cells", "", "| cell | device | versions | status | verdicts |", "|---|---|---|---|---|"]
    for c in report["cells"]:
        versions = c["versions"] or c["pins"]
        floating = c.get("floating") or {}  # resolved from latest / nightly: say so beside the version
        built = shown_sources(c)  # built from a wheel, tree or commit: name it beside the version
        versions = {**versions, **{k: c["pins"].get(k, "?") for k in built if k not in versions}}
        shown = md_text(", ".join(f"{k} {v}" + (f" ({floating[k]})" if k in floating else "")
                                  + (f" (from {built[k]})" if k in built else "") for k, v in versions.items()
                                  if k in ("jax", "torch", "torch-xla", "torchax", "flax", "libtpu") or k in built))
        verdicts = "; ".join(filter(None, [", ".join(f"{n} {v}" for v, n in sorted(c["counts"].items())),
                                            c["reason"] or ""]))  # the reason too: "a test left 2 processes running"
        out.append(f"| {md_text(c['cell'])} | {md_text(c['device'])} | {shown} | {md_text(c['status'])} | {md_text(verdicts)} |")
    failing = sum(n for v, n in counts.items() if v in FAILING_VERDICTS)
    out += ["", f"Exit status: {'1 (news above)' if failing else '0'}."]
    return "\n".join(out) + "\n"


def _first(ids: list[str], n: int = 3) -> str:
    return ", ".join(i.rsplit("/", 1)[-1] for i in ids[:n]) + (", ..." if len(ids) > n else "")


def render_coverage_markdown(gaps: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Coverage gaps: cases that ran in no cell (with each skip reason and its cells), then skips
    for a package a cell does not install (the matrix can fix those)."""
    out: list[str] = []
    headline = gap_headline(gaps)
    if headline:
        out += ["## Coverage gaps", "", f"**{md_text(headline)}**", "", "| case | skipped because | cells |", "|---|---|---|"]
        for g in gaps["never_ran"]:
            for r in g["reasons"]:
                out.append(f"| {md_code(g['id'])} | {_one_line(r['reason'], 240)} | {md_text(', '.join(r['cells']))} |")
        out.append("")
    if gaps.get("uncalled_apis"):
        out += ["## API entries no case called", "",
                "Each ships in the cells named (its range in matrices/apis/), yet no case there probed it.", "",
                "| API | shipped | cells |", "|---|---|---|"]
        out += [f"| {md_code(g['api'])} | {md_text(g['package'] + g['shipped'])} | {md_text(', '.join(g['cells']))} |"
                for g in gaps["uncalled_apis"]]
        out.append("")
    if gaps.get("fixable"):
        out += ["## Skips the matrix could fix (a package the cell does not install)", "",
                "| skipped because | cases | cells |", "|---|---|---|"]
        out += [f"| {_one_line(g['reason'], 240)} | {len(g['cases'])}: {md_text(_first(g['cases']))} | {md_text(', '.join(g['cells']))} |"
                for g in gaps["fixable"]]
        out.append("")
    return out


def render_since_markdown(rows: list[dict[str, Any]]) -> str:
    """The report.md section: cases that do not pass everywhere along a line, with first bad / last good."""
    shown = [r for r in rows if r["first_bad"] or r["transitions"] or "fails" in r["summary"]]
    if not rows:
        return ""
    passing = sum(r["summary"].startswith("passes") for r in rows)
    never = sum(r["summary"].startswith("no release") for r in rows)
    lines = ["", "## Since which release", "",
             f"{len(rows)} case x version-line pairs: {passing} pass in every release tested, "
             f"{never} ran in none (skipped or not built), {len(shown)} below.", ""]
    if shown:
        lines += ["Each row names its cells; where more than the named package changed between two cells, "
                  "the summary says what else moved.", "",
                  "| case | along | first bad | last good | summary |", "|---|---|---|---|---|"]
        for r in sorted((r for r in shown if r.get("kind") != "variant"), key=lambda r: (r["package"], r["case"], r["cells"])):
            lines.append(f"| {md_code(r['case'])} | {md_text(_along(r))} | {md_text(_at(r, r['first_bad']))} | "
                         f"{md_text(_at(r, r['last_good']))} | {md_text(r['summary'])} |")
        # Two cells of one release that disagree: one row per pair and sentence, naming its cases
        # (the flax-less variant of a release fails the same 90 call_jax cases; one line says so).
        variants: dict[tuple, list[str]] = {}
        for r in shown:
            if r.get("kind") == "variant":
                variants.setdefault((r["package"], tuple(r["versions"]), tuple(r["cells"]), r["summary"]), []).append(r["case"])
        for (package, versions, cells, summary), cases in sorted(variants.items()):
            row = {"package": package, "versions": list(versions), "cells": list(cells), "kind": "variant"}
            named = f"{len(cases)} cases: {_first(sorted(cases))}" if len(cases) > 1 else cases[0]
            lines.append(f"| {md_code(named)} | {md_text(_along(row))} | - | - | {md_text(summary)} |")
    return "\n".join(lines) + "\n"


def _along(row: dict[str, Any]) -> str:
    """What a since row compares: a release line's first and last cell, or a release's two variants."""
    if row.get("kind") == "variant":
        return f"{row['package']} {row['versions'][0]}: {row['cells'][0]} vs {row['cells'][1]}"
    return f"{row['package']} ({row['cells'][0]}..{row['cells'][-1]})"


def _at(row: dict[str, Any], version: str | None) -> str:
    """A release along a row with the cell that ran it ("2.9.0 (xla29-cpu)"), or '-'."""
    if not version:
        return "-"
    cells = [c for v, c in zip(row.get("versions") or [], row["cells"]) if v == version]
    return f"{version} ({cells[0]})" if cells else version
