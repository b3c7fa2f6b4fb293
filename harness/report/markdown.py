"""report.md: what a CI job summary or an upstream issue takes - news first, with links."""

from __future__ import annotations

from typing import Any

from harness.outcomes import FAILING_VERDICTS, VERDICTS
from harness.report.model import iter_results

_NEWS_ORDER = ("regression", "fixed", "crash", "timeout", "env-error", "incomplete", "api-drift")
_TITLES = {"regression": "Regressions (unexpected failures)", "fixed": "Fixed upstream? (unexpected passes: update matrices/known_issues)",
           "crash": "Crashes", "timeout": "Timeouts", "env-error": "Cells that could not be built",
           "incomplete": "Incomplete cells or tests",
           "api-drift": "API drift (an API absent inside its recorded release range, or present outside it: matrices/apis/)"}


def _link(exp: dict[str, Any] | None) -> str:
    if not exp:
        return ""
    return f"[{exp['id']}]({exp['link']})" if exp["link"].startswith("https://") else f"{exp['id']} (no upstream issue filed)"


def _one_line(text: str | None, n: int = 160) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return (line[:n] + "...") if len(line) > n else line


def render_markdown(report: dict[str, Any]) -> str:
    """The Markdown summary of a report."""
    counts = report["counts"]
    out = ["# xla-seams compatibility report", "",
           f"Generated {report['generated_at']} from {len(report['cells'])} cells, "
           f"{sum(len(c['results']) for c in report['cases'])} results.", "",
           "| " + " | ".join(v for v in VERDICTS if counts.get(v)) + " |",
           "|" + "---|" * len([v for v in VERDICTS if counts.get(v)]),
           "| " + " | ".join(str(counts[v]) for v in VERDICTS if counts.get(v)) + " |", ""]
    if report["errors"]:
        out += ["## Results files that could not be read", ""] + [f"- `{e}`" for e in report["errors"]] + [""]
    by_verdict: dict[str, list] = {}
    for case_id, cell, r in iter_results(report):
        by_verdict.setdefault(r["verdict"], []).append((case_id, cell, r))
    news = [v for v in _NEWS_ORDER if by_verdict.get(v)]
    if not news:
        out += ["**Nothing new**: every result is ok, a known upstream bug, or skipped with a reason.", ""]
    for v in news:
        out += [f"## {_TITLES[v]}", "", "| case | cell | outcome | detail |", "|---|---|---|---|"]
        for case_id, cell, r in sorted(by_verdict[v], key=lambda t: (t[0] or "", t[1])):
            detail = _one_line(r.get("message")).replace("|", "\\|")
            if v == "api-drift" and r.get("expectation"):
                detail = _one_line(r["expectation"]["reason"], 400).replace("|", "\\|")
            elif r.get("expectation"):
                detail += f" (known issue {_link(r['expectation'])})"
            out.append(f"| `{case_id or '(whole cell)'}` | {cell} | {r['raw']}{' ' + r['signal'] if r.get('signal') else ''} | {detail} |")
        out.append("")
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
            out.append(f"| {_link(e)}: {e['reason']} | {', '.join(sorted(cells))} | {len(cases)} |")
        out.append("")
    out += ["## Cells", "", "| cell | device | versions | status | verdicts |", "|---|---|---|---|---|"]
    for c in report["cells"]:
        versions = c["versions"] or c["pins"]
        shown = ", ".join(f"{k} {v}" for k, v in versions.items() if k in ("jax", "torch", "torch-xla", "torchax", "flax", "libtpu"))
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(c["counts"].items())) or (c["reason"] or "")
        out.append(f"| {c['cell']} | {c['device']} | {shown} | {c['status']} | {verdicts.replace('|', '/')} |")
    failing = sum(n for v, n in counts.items() if v in FAILING_VERDICTS)
    out += ["", f"Exit status: {'1 (news above)' if failing else '0'}."]
    return "\n".join(out) + "\n"
