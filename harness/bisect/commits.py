"""Bisection over commits: the first bad commit of a pure-Python package between two refs.

The candidates are the first-parent history from the good ref to the bad one (a merged branch is
one step, as it landed). Each probe is a cell with the package taken from that commit
(harness.cells.sources: `git archive` of the paths a build needs, installed by uv), paired with a
released binary by rule (jax -> jaxlib from the commit's jax/version.py) unless --pair says which.
A commit that does not resolve, build, install or import is a skip (git bisect's 125), routed
around by the same search as releases (harness.bisect.search). Answers are cached per commit, so a
rerun after Ctrl-C resumes where it stopped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from packaging.version import Version

from harness.bisect.probe import Answer, Prober
from harness.bisect.report import first_bad_details
from harness.cells.cell import Cell
from harness.cells.sources import SourceError, _git, local_repo, resolve_cell, resolve_ref
from harness.errors import UserError

_COPYBARA = re.compile(r"^COPYBARA_INTEGRATE_REVIEW=(https?://\S+?/pull/\d+)", re.M)
_MERGE_PR = re.compile(r"^Merge pull request #(\d+) from")
_SUBJECT_PR = re.compile(r"\(#(\d+)\)\s*$")
_GITHUB = re.compile(r"github\.com[/:]([\w.-]+/[\w.-]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class Commit:
    """One first-parent commit: what a maintainer reads in the result."""

    sha: str
    subject: str
    date: str
    pr: str | None = None
    url: str | None = None  # the commit on GitHub, where the repository is there

    @property
    def short(self) -> str:
        return self.sha[:12]


def resolve_bound(repo: Path, package: str, text: str, location: str = "") -> str:
    """A bound as a full SHA: the ref as written, else the release tag PKG-vX (jax-v0.5.3), else vX."""
    for ref in (text, f"{package}-v{text}", f"v{text}"):
        try:
            return resolve_ref(repo, ref, location)
        except SourceError:
            continue
    raise UserError(f"{location or repo}: no commit, tag {package}-v{text} or v{text} for {text!r}")


def github_of(location: str, repo: Path) -> str | None:
    """https://github.com/OWNER/NAME for a repository location or its origin remote, if on GitHub."""
    for url in (location, _git(repo, "config", "--get", "remote.origin.url", check=False).stdout.strip()):
        m = _GITHUB.search(url or "")
        if m:
            return f"https://github.com/{m.group(1)}"
    return None


def pr_link(message: str, github: str | None) -> str | None:
    """The pull request a commit came from, read from its message: Copybara's
    COPYBARA_INTEGRATE_REVIEW= line, a `Merge pull request #N`, or a subject ending `(#N)`."""
    m = _COPYBARA.search(message)
    if m:
        return m.group(1)
    lines = message.strip().splitlines()
    subject = lines[0] if lines else ""
    m = _MERGE_PR.match(subject) or _SUBJECT_PR.search(subject)
    if m:
        return f"{github}/pull/{m.group(1)}" if github else f"#{m.group(1)}"
    return None


def first_parent(repo: Path, good: str, bad: str, github: str | None = None) -> list[Commit]:
    """The good commit, then every first-parent commit after it up to bad (oldest first)."""
    if good == bad:
        raise UserError(f"--good and --bad are the same commit ({good[:12]})")
    if _git(repo, "merge-base", "--is-ancestor", good, bad, check=False).returncode != 0:
        raise UserError(f"--good {good[:12]} is not an ancestor of --bad {bad[:12]}: keep --good the older bound "
                        "(to find where something got fixed, add --regress pass)")
    fmt = "%H%x1f%s%x1f%cI%x1f%B%x1e"
    log = _git(repo, "log", "--first-parent", f"--format={fmt}", f"{good}..{bad}").stdout
    if github is None:  # a mirror without an origin: Copybara's review links name the repository
        recent = log + _git(repo, "log", "--first-parent", "-n", "500", "--format=%B", bad).stdout
        m = re.search(r"^COPYBARA_INTEGRATE_REVIEW=https://github\.com/([\w.-]+/[\w.-]+)/pull/", recent, re.M)
        github = f"https://github.com/{m.group(1)}" if m else None
    commits = [_commit(rec, github) for rec in log.split("\x1e") if rec.strip()]
    commits.reverse()
    head = _git(repo, "log", "-1", f"--format={fmt}", good).stdout.split("\x1e")[0]
    if not commits or commits[-1].sha != bad:
        raise UserError(f"--bad {bad[:12]} is not on the first-parent line from --good {good[:12]}")
    return [_commit(head, github)] + commits


def _commit(rec: str, github: str | None) -> Commit:
    sha, subject, date, body = rec.strip("\n").split("\x1f", 3)
    return Commit(sha, subject, date, pr_link(body, github), f"{github}/commit/{sha}" if github else None)


class CommitProber(Prober):
    """A Prober whose 'versions' are commit SHAs: each probe takes the package from that commit."""

    def __init__(self, base: Cell, package: str, location: str, subdir: str | None,
                 pair: dict[str, str], jaxlib_versions: Callable[[], list[Version]] | None = None, **kw: Any) -> None:
        super().__init__(base, package, **kw)
        self.location, self.subdir, self.pair = location, subdir, pair
        self._jaxlibs: list[Version] | None = None
        self._lister = jaxlib_versions

    def _jaxlib_versions(self) -> list[Version]:
        if self._jaxlibs is None:  # one listing for the whole bisection
            if self._lister is not None:
                self._jaxlibs = self._lister()
            else:
                from harness.cells.cell import PYTHON
                from harness.cells.releases import list_versions

                self._jaxlibs = list_versions("jaxlib", self.base.index_url, self.base.find_links, python=PYTHON)
        return self._jaxlibs

    def cell_for(self, version: str) -> Cell:
        spec = {"kind": "git", "location": self.location, "ref": version,
                **({"subdir": self.subdir} if self.subdir else {})}
        pins = {k: v for k, v in {**self.base.pins, **self.held}.items() if k != self.package}
        if self.package == "jax" and "jaxlib" not in self.held:
            pins.pop("jaxlib", None)  # paired by rule from the commit's own jax/version.py
        name = f"bisect.{self.package.replace('-', '_')}.{version[:12]}-{self.base.device}"
        cell = replace(self.base, name=name, pins=pins, sources={self.package: spec})
        try:
            return resolve_cell(cell, self.pair, self._jaxlib_versions)
        except (SourceError, UserError) as exc:  # a commit without the package, or no jaxlib for it: skip
            return replace(cell, unresolved=f"commit {version[:12]} cannot be probed: {exc}")


def render_commits(summary: dict[str, Any], answers: list[Answer], commits: dict[str, Commit],
                   markdown: bool) -> str:
    """The commit bisection's report: first bad / last good commit, probe table, IR diff, rerun line."""
    h = (lambda t: f"## {t}") if markdown else (lambda t: f"{t}:")
    out = [f"# Bisection over commits: {summary['target']}" if markdown else f"bisection over commits of {summary['target']}",
           "", summary["conclusion"], ""]
    fixed = summary.get("regress") == "pass"
    labels = (("fixed by", "first_bad"), ("last failing", "last_good")) if fixed else (("first bad", "first_bad"), ("last good", "last_good"))
    for label, key in labels:
        c = commits.get(summary.get(key) or "")
        if c is not None:
            links = ", ".join(x for x in (c.pr, c.url) if x)
            out.append(f"{'- ' if markdown else '  '}{label}: {c.sha} {c.date} {c.subject}" + (f" ({links})" if links else ""))
    pairing = summary.get("pairing")
    if pairing:
        out.append(f"{'- ' if markdown else '  '}binary pairing: {pairing}")
    out += ["", h("commits probed")]
    if fixed:
        note = "(--regress pass: 'bad' means the test passes, 'good' that it still fails)"
        out += ["", note] if markdown else [f"  {note}"]
    if markdown:
        out += ["", "| # | commit | date | subject | answer | outcome | detail |", "|---|---|---|---|---|---|---|"]
    order = summary["order"]
    for a in sorted(answers, key=lambda a: order.index(a.version)):
        c = commits[a.version]
        detail = (a.reason or (a.message or "").strip().splitlines()[0] if (a.reason or a.message) else "")[:120]
        tag = " (cached)" if a.cached else ""
        subject = c.subject[:60]
        if markdown:
            cells = [str(order.index(a.version)), f"`{c.short}`", c.date[:10], subject, a.answer, a.raw, detail + tag]
            out.append("| " + " | ".join(x.replace("|", "/") for x in cells) + " |")
        else:
            out.append(f"  {order.index(a.version):>4} {c.short} {c.date[:10]} {a.answer:<5} {a.raw:<10} {subject}"
                       + (f" -- {detail}" if detail else "") + tag)
    out += ["", f"probes run: {summary['probes_run']} ({summary['search_probes']} by the search, "
                f"{summary['bound_checks']} confirming the bounds; cached answers reused: {summary['cached']}; "
                f"skipped: {summary['skips']}); {summary['n_commits']} first-parent commits after the good bound; "
                f"wall time {summary['wall_s']:.1f} s"]
    out += first_bad_details(summary, h, markdown, "the first bad commit", limit=4000)
    out += ["", f"Reproduce with: {summary['command']}"]
    return "\n".join(out) + "\n"


def bisect_commits(args: Any, prober_kw: dict[str, Any], conclude: Callable[..., dict], log: Callable[[str], None],
                   good_ref: str, bad_ref: str) -> tuple[dict[str, Any], list[Answer], dict[str, Commit]]:
    """Search the first-parent commits between two refs; (summary, answers, commits by SHA)."""
    import time

    from harness.bisect.search import bisect

    package = prober_kw.pop("package")
    repo = local_repo(args.repo, None)
    good = resolve_bound(repo, package, good_ref, args.repo)
    bad = resolve_bound(repo, package, bad_ref, args.repo)
    history = first_parent(repo, good, bad, github_of(args.repo, repo))
    by_sha = {c.sha: c for c in history}
    order = [c.sha for c in history]
    prober = CommitProber(prober_kw.pop("base"), package, args.repo, args.subdir, prober_kw.pop("pair"), **prober_kw)
    log(f"bisecting {package} commits {good[:12]}..{bad[:12]} in {args.repo}: {len(order) - 1} first-parent commits "
        f"(about {max(1, len(order) - 1).bit_length()} steps)")
    t0 = time.monotonic()
    outcome = bisect(order, prober, progress=lambda left, steps: log(f"{left} commits left (about {steps} steps)"))
    search_runs = prober.runs
    summary = conclude(outcome, prober, package, order, good, bad)
    fb, lg = summary.get("first_bad"), summary.get("last_good")
    if fb:
        c = by_sha[fb]
        what = "fixed by" if prober.regress == "pass" else "first bad commit"
        summary["conclusion"] = (f"{what}: {c.sha} ({c.date[:10]}) {c.subject}" + (f" {c.pr}" if c.pr else "")
                                 + f"; {'last failing' if prober.regress == 'pass' else 'last good'}: {lg}")
    else:  # name the commits in the search's own words
        for sha, c in by_sha.items():
            summary["conclusion"] = summary["conclusion"].replace(sha, c.short)
    cell = prober.cell_for(fb or lg)
    summary["first_bad_cell"] = cell if fb else None  # for issue.md (popped before rendering)
    jax_src = cell.sources.get("jax") or {}
    summary.update({"regress": prober.regress, "order": order, "n_commits": len(order) - 1,
                    "probes_run": prober.runs, "search_probes": search_runs, "bound_checks": prober.runs - search_runs,
                    "skips": sum(a.answer == "skip" for a in prober.answers.values()),
                    "cached": sum(a.cached for a in prober.answers.values()), "wall_s": time.monotonic() - t0,
                    "pairing": jax_src.get("pairing"), "repo": args.repo, "good": good, "bad": bad})
    return summary, list(prober.answers.values()), by_sha
