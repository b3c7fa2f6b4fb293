"""`harness news OLD/report.json NEW/report.json`: each new item bisected and filed as one GitHub issue.

News is what `harness diff` calls regressed or fixed, plus results new tonight with a failing
verdict (regression, crash, timeout, env-error, incomplete). For at most --max items, each one is
bisected (harness bisect, in a subprocess bounded by --budget seconds) over the package that moved
between last night's cell and tonight's, then filed with the gh CLI: one issue per item, found
again by a stable marker in its body (`<!-- xla-seams-news:KEY -->`, KEY from kind, case and cell),
so a second run edits that issue (reopening it if closed) and never opens a duplicate.
--dry-run prints what would be filed and calls no gh at all.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Callable

from packaging.version import InvalidVersion, Version

from harness.errors import UserError

LABEL = "xla-seams-news"
BAD_NEW = {"regression", "crash", "timeout", "env-error", "incomplete"}
# The package a bisection moves, in order of preference, and what moves with it.
_MOVABLE = ("torch-xla", "torchax", "jax", "torch")
from harness.paths import REPO


def news_items(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The items worth an issue: regressed, fixed, and failing results that were absent last night."""
    from harness.report.diff import compare

    ch = compare(old, new)
    items = [{**r, "kind": r["new"]} for r in ch["regressed"]]
    items += [{**r, "kind": "fixed"} for r in ch["fixed"]]
    items += [{**r, "kind": r["new"]} for r in ch["new"] if r["new"] in BAD_NEW]
    return items


def marker(item: dict[str, Any]) -> str:
    """The stable marker an item's issue carries: the same news finds the same issue."""
    key = hashlib.sha256(json.dumps([item["kind"] == "fixed", item["case"], item["cell"]]).encode()).hexdigest()[:16]
    return f"<!-- xla-seams-news:{key} -->"


def _pins(report: dict[str, Any], cell: str) -> dict[str, str]:
    from harness.report.grammar import is_package_name, is_version  # here: building the parser imports no stage

    for c in report["cells"]:
        if c["cell"] == cell:
            got = c.get("versions") or c.get("pins") or {}
            # names and versions checked (they reach bisect's argv): anything else is not a pin to move
            return {k.replace("_", "-"): v for k, v in got.items() if is_package_name(k) and is_version(v)}
    return {}


def _commit_sources(report: dict[str, Any], cell: str) -> dict[str, dict[str, Any]]:
    """Package -> its source record, for the cell's packages built from a commit (git, or a checkout)."""
    for c in report["cells"]:
        if c["cell"] == cell:
            return {k.replace("_", "-"): v for k, v in (c.get("sources") or {}).items()
                    if isinstance(v, dict) and isinstance(v.get("sha"), str) and v.get("sha")}
    return {}


def commit_bounds(old: dict[str, Any], new: dict[str, Any], cell: str) -> tuple[str, str, str, dict[str, Any]] | None:
    """(package, last night's commit, tonight's, tonight's source) where both nights built a package
    from a commit and the commit moved: a source-built night is bisected over commits, not releases."""
    a, b = _commit_sources(old, cell), _commit_sources(new, cell)
    for pkg in COMMIT_PACKAGES:
        if pkg in a and pkg in b and a[pkg]["sha"] != b[pkg]["sha"]:
            return pkg, a[pkg]["sha"], b[pkg]["sha"], b[pkg]
    return None


def bisect_bounds(old: dict[str, Any], new: dict[str, Any], cell: str) -> tuple[str, str, str] | None:
    """(package, last night's version, tonight's) for the first movable package that moved, else None."""
    a, b = _pins(old, cell), _pins(new, cell)
    for pkg in _MOVABLE:
        if pkg in a and pkg in b and a[pkg] != b[pkg]:
            try:
                if Version(a[pkg]) < Version(b[pkg]):
                    return pkg, a[pkg], b[pkg]
            except InvalidVersion:
                continue
    return None


# Commit bisection needs a source tree of the package itself: pure-Python packages only.
COMMIT_PACKAGES = ("jax", "torchax")


def parse_commits(values: list[str]) -> dict[str, tuple[str, str]]:
    """`--commits PKG=REPO[#SUBDIR]` values -> {package: (repo, subdir)}; one UserError line per bad value."""
    out: dict[str, tuple[str, str]] = {}
    for value in values:
        pkg, eq, rest = value.partition("=")
        pkg = pkg.strip().lower().replace("_", "-")
        repo, _, subdir = rest.strip().partition("#")
        if not eq or not pkg or not repo.strip():
            raise UserError(f"--commits {value!r}: expected PKG=REPO[#SUBDIR], e.g. jax=https://github.com/jax-ml/jax")
        if pkg not in COMMIT_PACKAGES:
            raise UserError(f"--commits {value!r}: commits can be bisected for {', '.join(COMMIT_PACKAGES)} only "
                            "(the others are built binaries)")
        if subdir and (subdir.startswith("/") or ".." in Path(subdir).parts):
            raise UserError(f"--commits {value!r}: SUBDIR must be a folder inside the repository")
        if pkg in out:
            raise UserError(f"--commits names {pkg} twice")
        out[pkg] = (repo.strip(), subdir.strip())
    return out


def commit_args(package: str, environ: dict[str, str] | None = None,
                commits: dict[str, tuple[str, str]] | None = None) -> list[str]:
    """--to-commit --repo R [--subdir S] when a repository is configured for the package that moved
    (`news --commits PKG=REPO[#SUBDIR]`, else $SEAMS_REPO_JAX, $SEAMS_REPO_TORCHAX with
    $SEAMS_SUBDIR_TORCHAX, ...): the bisection goes on from the two releases into their commits,
    so the filed issue names the commit."""
    if package not in COMMIT_PACKAGES:
        return []
    if commits and package in commits:
        repo, subdir = commits[package]
    else:
        env = os.environ if environ is None else environ
        key = package.upper().replace("-", "_")
        repo = env.get(f"SEAMS_REPO_{key}", "").strip()
        subdir = env.get(f"SEAMS_SUBDIR_{key}", "").strip()
    if not repo:
        return []
    return ["--to-commit", f"--repo={repo}"] + ([f"--subdir={subdir}"] if subdir else [])  # values, never options


def reduced_script(new_path: Path, item: dict[str, Any]) -> Path | None:
    """repro/CELL__CASE.min.py beside tonight's report.json, if `harness report --reduce` wrote one."""
    from harness.report.repro import safe_name

    if item["case"] == "(whole cell)":
        return None
    path = Path(new_path).parent / "repro" / f"{safe_name(item['cell'])}__{safe_name(item['case'])}.min.py"
    return path if path.is_file() else None


def bisect_item(item: dict[str, Any], old: dict[str, Any], new: dict[str, Any], budget_s: int, out: Path,
                commits: dict[str, tuple[str, str]] | None = None, script: Path | None = None) -> str:
    """Run the bisection for one item (bounded) and return its Markdown, or why there is none.
    `script`: the reduced reproducer, bisected instead of the test (and embedded in the bisection)."""
    if item["case"] == "(whole cell)":
        return "Not bisected: the whole cell failed (no test ran), see the reason above."
    from harness.report.grammar import is_node_id

    if not is_node_id(item["case"]):
        return "Not bisected: the case id is not a pytest node id of this project (suites/FAMILY/test_X.py::test_Y[...])."
    regress = "pass" if item["kind"] == "fixed" else ("crash" if item["kind"] == "crash" else "fail")
    by_commit = commit_bounds(old, new, item["cell"])
    if by_commit is not None:
        return _bisect_commits(item, new, by_commit, regress, budget_s, out, commits)
    bounds = bisect_bounds(old, new, item["cell"])
    if bounds is None:
        return ("Not bisected: no package version moved in this cell between the two nights, so the change "
                "is not a release's (a flaky case, the runner, or the index): rerun the cell to tell.")
    pkg, good, bad = bounds
    moved = {pkg, "jaxlib"} if pkg == "jax" else ({pkg, "torch"} if pkg == "torch-xla" else {pkg})
    held = [f"--with={k}=={v}" for k, v in _pins(new, item["cell"]).items() if k not in moved
            and k in ("jax", "jaxlib", "torch", "torch-xla", "torchax", "flax", "optax")]
    md = out / "bisection.md"  # --markdown: the release and commit reports together (bisect.md is its set's)
    argv = [sys.executable, "-m", "harness", "bisect", f"--package={pkg}", f"--good={good}", f"--bad={bad}",
            f"--regress={regress}", f"--out={out}", f"--markdown={md}", *held]
    if any(Version(v).is_prerelease or Version(v).is_devrelease for v in (good, bad)):
        argv.append("--pre")
    argv += commit_args(pkg, commits=commits)
    if script is not None:  # the reduced script is what is bisected (and embedded); --script takes the rest of the line
        argv += ["--script", str(script)]
    else:
        argv += ["--", item["case"]]  # the test id is a positional value, never an option (`--script=PROGRAM`)
    return _run_bisect(argv, pkg, good, bad, md, budget_s)


def _declared_location(cell: str, pkg: str) -> str | None:
    """Where matrices/*.yaml (trusted configuration) says the cell builds pkg from, if it does."""
    from harness.cells.matrix import catalogue

    found = [c for c in catalogue().cells if c.name == cell]
    src = (found[0].sources.get(pkg) or found[0].sources.get(pkg.replace("-", "_")) or {}) if found else {}
    return src.get("location") if isinstance(src, dict) else None


def _bisect_commits(item: dict[str, Any], new: dict[str, Any], bounds: tuple[str, str, str, dict[str, Any]],
                    regress: str, budget_s: int, out: Path, commits: dict[str, tuple[str, str]] | None) -> str:
    """A night built from source: bisect the commits between last night's SHA and tonight's, in the
    repository configured for the package (--commits / SEAMS_REPO_*), else the one the cell built from."""
    pkg, good, bad, src = bounds
    configured = commit_args(pkg, commits=commits)
    if configured:
        repo_args = configured[1:]  # --repo R [--subdir S], without --to-commit
    elif src.get("kind") in ("git", "path") and src.get("location") and src.get("location") == _declared_location(item["cell"], pkg):
        repo_args = [f"--repo={src['location']}"] + ([f"--subdir={src['subdir']}"] if src.get("subdir") else [])
    elif src.get("kind") in ("git", "path"):
        # A commit bisection builds and runs the repository's code: where it comes from is configuration
        # (--commits, SEAMS_REPO_*, matrices/), never a location recorded in a report, which is data.
        return (f"Not bisected: the report says which repository {pkg} was built from, but a report is data: "
                f"configure it (news --commits {pkg}=REPO, or the cell's source in matrices/).")
    else:
        return f"Not bisected: {pkg} was built from a source with no repository to search (configure --commits {pkg}=REPO)."
    held = [f"--with={k}=={v}" for k, v in _pins(new, item["cell"]).items()
            if k not in (pkg, "jaxlib") and k in ("torch", "torch-xla", "torchax", "flax", "optax")]
    pair = _pins(new, item["cell"]).get("jaxlib") if pkg == "jax" else None
    md = out / "bisection.md"  # --markdown: the release and commit reports together (bisect.md is its set's)
    argv = [sys.executable, "-m", "harness", "bisect", f"--package={pkg}", "--commits", *repo_args,
            f"--good={good}", f"--bad={bad}", f"--regress={regress}", f"--out={out}", f"--markdown={md}", *held]
    if pair:
        argv.append(f"--pair=jaxlib=={pair}")  # the binary partner tonight's build was paired with
    argv += ["--", item["case"]]  # values as --opt=VALUE, the test id after --: data never becomes an option
    return _run_bisect(argv, pkg, good[:12], bad[:12], md, budget_s)


def _run_bisect(argv: list[str], pkg: str, good: str, bad: str, md: Path, budget_s: int) -> str:
    """Run one bisection command within budget_s (its own process group, swept after); its Markdown."""
    # Its own process group, so the budget ends the bisection and every probe it started.
    # SEAMS_OWNER marks the probes' pytest too (own groups) and whatever their tests leave: all swept after.
    from harness import lifeline  # here: building the CLI's parser must not import it

    token = uuid.uuid4().hex
    lifeline.become_subreaper()  # what the bisection double-forks or setsid's away comes back to us
    before = lifeline.descendants()
    env = {**os.environ, **lifeline.owner_env(token)}
    # Where one is delegated, the bisection joins a cgroup of its own first thing (lifeline.join_cgroup_from_env
    # in the harness's main): its probes and all they start are inside it.
    cgroup = lifeline.Cgroup.create(token)
    if cgroup is not None:
        env.update(cgroup.env())
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    lifeline.track(proc)  # Ctrl-C / SIGTERM: the signal handler kills its group before anything else

    def sweep() -> None:
        lifeline.sweep(token, adopted_besides=before, cgroup=cgroup)
        if cgroup is not None:
            cgroup.remove()

    try:
        stdout, stderr = proc.communicate(timeout=budget_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        sweep()
        return (f"Bisection of {pkg} {good}..{bad} did not finish within {budget_s} s; run it by hand:\n\n"
                f"    {shlex.join(['python', *argv[1:]])}")
    except BaseException:  # interrupted: the bisection and its probes end (no cache write after) before we say so
        lifeline.kill_group(proc)
        sweep()
        raise
    finally:
        lifeline.untrack(proc)
    sweep()
    if md.exists():
        return md.read_text()
    tail = (stderr or stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
    return f"Bisection of {pkg} {good}..{bad} could not run: {tail[0]}"


def _result(report: dict[str, Any], case: str, cell: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    from harness.report.model import iter_results

    for c, name, r in iter_results(report):
        if (c or "(whole cell)") == case and name == cell:
            return next(x for x in report["cells"] if x["cell"] == cell), r
    return None


def issue_text(item: dict[str, Any], old: dict[str, Any], new: dict[str, Any], bisect_md: str,
               reduced: Path | None = None) -> tuple[str, str]:
    """(title, body) of the item's issue, in the one form report and bisect use (harness.report.issue_body);
    with `reduced` (repro/CASE.min.py), that script first and the full one collapsed."""
    from harness.report.issue_body import title
    from harness.report.repro import printable, repro_markdown, safe_name, script_for

    found = _result(new, item["case"], item["cell"])
    a, b = _pins(old, item["cell"]), _pins(new, item["cell"])
    moved = [f"{k} {a.get(k, '-')} -> {b.get(k, '-')}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    case = None if item["case"] == "(whole cell)" else item["case"]
    verdict = (f"verdict {item['old'] or '(absent)'} (nightly of {old['generated_at']}) -> {item['new']} "
               f"(nightly of {new['generated_at']})")
    if found:
        cell, r = found
    else:  # gone from tonight's report: say what is known
        cell, r = {"cell": item["cell"], "pins": b, "device": "?"}, {"raw": item["new"], "verdict": item["new"]}
    name = f"{safe_name(item['cell'])}__{safe_name(case or 'cell')}.py"
    body = repro_markdown(case, cell, r, script_for(case, cell, r), name, moved=moved, bisection=bisect_md,
                          marker=marker(item), verdict_line=verdict, appendix=False,
                          reduced=reduced.read_text(encoding="utf-8", errors="replace") if reduced else None,
                          reduced_name=reduced.name if reduced else "repro.min.py")
    body += "\n_Filed by `python -m harness news`; edited in place when the same news is seen again._\n"
    return printable(f"[xla-seams] {item['kind']}: {title(case, cell, r)}")[:250], body  # C1 controls too


class Gh:
    """The few gh calls filing needs; every argument is a list element, never a shell string."""

    def __init__(self, repo: str | None, exe: str = "gh") -> None:
        self.repo, self.exe = repo, exe

    def _run(self, args: list[str]) -> str:
        argv = [self.exe, *args] + ([f"--repo={self.repo}"] if self.repo else [])  # a value never an option
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            raise UserError("gh (the GitHub CLI) is not on PATH; install it or use --dry-run") from None
        if proc.returncode != 0:
            raise UserError(f"gh {args[0]} {args[1]} failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:] or ['exit ' + str(proc.returncode)]}")
        return proc.stdout

    def existing(self) -> list[dict[str, Any]]:
        out = self._run(["issue", "list", "--label", LABEL, "--state", "all", "--limit", "1000",
                         "--json", "number,state,body"])
        return json.loads(out or "[]")

    def ensure_label(self) -> None:
        self._run(["label", "create", LABEL, "--force", "--color", "d93f0b",
                   "--description", "news from the xla-seams nightly"])

    def create(self, title: str, body_file: Path) -> str:
        return self._run(["issue", "create", "--title", title, "--body-file", str(body_file), "--label", LABEL]).strip()

    def update(self, number: int, title: str, body_file: Path, reopen: bool) -> None:
        if reopen:
            self._run(["issue", "reopen", str(number)])
        self._run(["issue", "edit", str(number), "--title", title, "--body-file", str(body_file)])


def file_news(old_path: Path, new_path: Path, max_items: int, budget_s: int, repo: str | None, dry_run: bool,
              bisect: bool, out: Path, say: Callable[[str], None] = print,
              commits: dict[str, tuple[str, str]] | None = None, use_reduced: bool = False) -> int:
    """Bisect and file (or print) each news item; returns how many items there were. use_reduced: bisect and
    embed the repro/CASE.min.py beside NEW (the operator's word that they made them: a program found in a
    report folder is never run on the folder's say)."""
    from harness.report.diff import load_report
    from harness.report.repro import printable  # ids from a report: escapes on the terminal, never acted on

    old, new = load_report(old_path), load_report(new_path)
    items = news_items(old, new)
    if not items:
        say("no news against the previous night: nothing to file")
        return 0
    if len(items) > max_items:
        say(f"{len(items)} news items; bisecting and filing the first {max_items} (--max)")
    gh = None if dry_run else Gh(repo, os.environ.get("SEAMS_GH", "gh"))
    known: dict[str, dict[str, Any]] = {}
    if gh is not None:
        gh.ensure_label()
        for issue in gh.existing():
            for line in (issue.get("body") or "").splitlines()[:1]:
                if line.startswith("<!-- xla-seams-news:"):
                    known[line.strip()] = issue
    for i, item in enumerate(items[:max_items], 1):
        say(printable(f"[{i}/{min(len(items), max_items)}] {item['kind']}: {item['case']} on {item['cell']}"))
        work = out / f"item{i}"
        work.mkdir(parents=True, exist_ok=True)
        reduced = reduced_script(new_path, item) if use_reduced else None
        bisect_md = (bisect_item(item, old, new, budget_s, work, commits, reduced) if bisect
                     else "Not bisected (--no-bisect).")
        title, body = issue_text(item, old, new, bisect_md, reduced)
        body_file = work / "issue.md"
        body_file.write_text(body)
        mark = marker(item)
        if gh is None:
            say(f"--- would open or update the issue marked {mark}\ntitle: {title}\n{body}\n---")
            continue
        if mark in known:
            issue = known[mark]
            gh.update(int(issue["number"]), title, body_file, reopen=str(issue.get("state", "")).upper() == "CLOSED")
            say(f"updated issue #{issue['number']}")
        else:
            say(f"opened {gh.create(title, body_file)}")
    for item in items[max_items:]:
        say(printable(f"not filed (over --max): {item['kind']}: {item['case']} on {item['cell']}"))
    return len(items)


# What gh takes as --repo: [HOST/]OWNER/NAME, GitHub's characters only (never an option, a path or a URL).
_GH_REPO = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9.-]*/)?[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9_.][A-Za-z0-9_.-]*")


def add_file_news_parser(sub: argparse._SubParsersAction) -> None:
    """Register `news`."""
    p = sub.add_parser("news", help="bisect each news item against the previous night and open/update one GitHub issue each",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old", type=Path, metavar="OLD/report.json", help="the previous night's report")
    p.add_argument("new", type=Path, metavar="NEW/report.json", help="tonight's report")
    p.add_argument("--max", type=int, default=5, metavar="K", help="bisect and file at most K items (default 5)")
    p.add_argument("--budget", type=int, default=900, metavar="S", help="seconds per bisection (default 900)")
    p.add_argument("--repo", help="OWNER/NAME to file in (default: gh's current repository)")
    p.add_argument("--dry-run", action="store_true", help="print what would be filed; call no gh")
    p.add_argument("--no-bisect", action="store_true", help="file without bisecting")
    p.add_argument("--out", type=Path, default=Path("reports/news"), help="bisection outputs and issue bodies")
    p.add_argument("--commits", action="append", default=[], metavar="PKG=REPO[#SUBDIR]",
                   help="go on from the releases into the commits of PKG (jax, torchax) in this git repository "
                        "(URL or path; #SUBDIR where the package lives, e.g. torchax); repeatable. "
                        "Default: $SEAMS_REPO_<PKG> / $SEAMS_SUBDIR_<PKG>")
    p.add_argument("--reduced", action="store_true",
                   help="bisect (and file) the reduced reproducer repro/CASE.min.py beside NEW/report.json where "
                        "there is one, instead of the test: it is a program, so only for a report you reduced "
                        "yourself (`harness report --reduce`); without this flag news runs no file it finds there")
    p.set_defaults(handler=cmd_file_news)


def cmd_file_news(args: argparse.Namespace) -> int:
    """Exit 0 when filing went through (news or not): the report and diff steps judge the night."""
    if args.max < 1 or args.budget < 1:
        raise UserError("--max and --budget must be >= 1")
    if not args.dry_run and not (shutil.which(os.environ.get("SEAMS_GH", "gh"))):
        raise UserError("gh (the GitHub CLI) is not on PATH; install it or use --dry-run")
    if args.repo is not None and not _GH_REPO.fullmatch(args.repo):
        raise UserError(f"--repo {args.repo!r}: give OWNER/NAME (or HOST/OWNER/NAME) of a GitHub repository")
    commits = parse_commits(args.commits)
    from harness.safeio import replacing_set

    # The night's items (itemN/: the bisection, issue.md) are one set, OUT/news-set/, replaced as a whole
    # when news ends (safeio.replacing_set, as the report, history and bisect sets are): an earlier night's
    # item4 is gone when tonight has three items; a news that fails or is killed leaves the previous set.
    with replacing_set(args.out, NEWS_ENTRIES, NEWS_SET) as stage:
        file_news(args.old, args.new, args.max, args.budget, args.repo, args.dry_run, not args.no_bisect,
                  stage, commits=commits, use_reduced=args.reduced)
    _remove_legacy_news(args.out)
    return 0


NEWS_SET = "news-set"
NEWS_ENTRIES: dict[str, bool] = {}  # readers open OUT/news-set/itemN/ (no names beside it)
# What earlier versions left in --out: one `news-XXXXXXXX` folder (tempfile.mkdtemp) per night, never removed.
_LEGACY_NEWS = re.compile(r"news-[a-z0-9_]{8}")


def _remove_legacy_news(out: Path) -> None:
    """Remove the per-night folders earlier versions made in --out (a real folder named news-XXXXXXXX holding
    only itemN folders); anything else there is not news's and stays. Symlinks are never followed."""
    for entry in os.scandir(out):
        if not (_LEGACY_NEWS.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)):
            continue
        try:
            inside = os.listdir(entry.path)
        except OSError:
            continue
        if all(re.fullmatch(r"item[0-9]+", n) for n in inside):
            shutil.rmtree(entry.path, ignore_errors=True)
