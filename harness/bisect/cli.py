"""`python -m harness bisect`: wire listing, probing, searching and reporting together."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from typing import TYPE_CHECKING

from harness.errors import UserError

if TYPE_CHECKING:  # the stages themselves are imported when the command runs: `--help` stays cheap
    from harness.bisect.probe import Prober
    from harness.cells.cell import Cell

DESCRIPTION = """\
Binary-search the released versions of a package between a good and a bad bound, building a probe
cell per version (the same env path as `harness run`) and running one test (or --script) in it.
Untestable versions (install or import fails, API absent) are routed around like git bisect's skip;
"api absent" is reported as such, never as the regression. Answers are cached per test and pins.
"""


def add_bisect_parser(sub: argparse._SubParsersAction) -> None:
    """Register `bisect`."""
    p = sub.add_parser("bisect", help="find the first release where a scenario changes",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("test_id", nargs="?", help="pytest node id of the scenario case (omit with --script/--from-report)")
    p.add_argument("--package", help="package whose releases are searched (jax moves jaxlib; torch_xla moves torch)")
    p.add_argument("--good", help="a version where it behaves (older bound unless bisecting a fix)")
    p.add_argument("--bad", help="a version where it does not")
    p.add_argument("--device", default="cpu", choices=("cpu", "gpu", "tpu"))
    p.add_argument("--cell", help="base cell whose other pins, extras and env the probes keep (default: a bare cell)")
    p.add_argument("--with", dest="held", action="append", default=[], metavar="PKG==VER",
                   help="hold another package at a version (repeatable)")
    p.add_argument("--regress", default="fail",
                   help="what 'bad' means: fail (default: fail/error/crash/timeout), crash, pass (bisect a fix), "
                        "or error-matches:REGEX")
    p.add_argument("--script", nargs=argparse.REMAINDER,
                   help="bisect a command instead of a test (exit 0 good, 125 skip, 1-127 bad); $SEAMS_PYTHON is the probe's python. "
                        "A single FILE.py (a standalone reproducer from `harness report`'s repro/) runs isolated with the "
                        "probe's python; an import error of the bisected package counts as api absent (skip)")
    p.add_argument("--index-url", help="package index for listing and installing (e.g. a nightly index)")
    p.add_argument("--find-links", action="append", default=[], help="extra wheel folder/page (repeatable)")
    p.add_argument("--pre", action="store_true", help="include pre-releases and .dev nightlies")
    p.add_argument("--from-report", type=Path, metavar="REPORT.json", help="take the bad bound from a report's cell")
    p.add_argument("--case", help="with --from-report: the case id (instead of TEST_ID)")
    p.add_argument("--out", type=Path, default=Path("reports/bisect"), help="probe results and the final report")
    p.add_argument("--markdown", type=Path, help="also write the final report as Markdown here")
    g = p.add_argument_group("commits (docs/own-build.md: Bisect to a commit)",
                             "With --commits, --good and --bad are refs in --repo (a release number such as 0.5.3 "
                             "is looked up as the tag PKG-v0.5.3, then v0.5.3), and the first-parent commits "
                             "between them are searched; each probe builds the package from its commit (git "
                             "archive + uv). A commit that does not build, install or import is skipped.")
    g.add_argument("--commits", action="store_true", help="search commits instead of releases (needs --repo)")
    g.add_argument("--repo", metavar="PATH_OR_URL", help="the package's git repository (a URL is cloned once into "
                                                          "$SEAMS_REPOS_DIR, default ~/.cache/xla-seams/repos)")
    g.add_argument("--subdir", metavar="DIR", help="the package's folder inside --repo (torchax in pytorch/xla)")
    g.add_argument("--pair", action="append", default=[], metavar="PKG==VER",
                   help="binary partner for every commit instead of the rule's choice (jax: the newest jaxlib "
                        "release in the commit's [_minimum_jaxlib_version, _version]), e.g. jaxlib==0.5.3")
    g.add_argument("--to-commit", action="store_true",
                   help="after a release bisection, go on into the commits between the two releases it found (needs --repo)")
    p.set_defaults(handler=cmd_bisect)


def _base_cell(args: argparse.Namespace) -> Cell:
    from harness.cells.cell import Cell
    from harness.cells.matrix import DEFAULT_MATRIX, catalogue, load_matrix

    if args.cell:
        return catalogue().cell(args.cell)
    env = {}
    defaults = load_matrix(DEFAULT_MATRIX).cells
    if defaults and args.device == "cpu":
        env = dict(defaults[0].env)
    return Cell(name=f"bisect-{args.device}", device=args.device, pins={}, env=env,
                index_url=args.index_url, find_links=tuple(args.find_links))


def _from_report(args: argparse.Namespace) -> None:
    from harness.report.diff import load_report  # checks the shape: a malformed report is one line, exit 2

    doc = load_report(args.from_report)
    case_id = args.case or args.test_id
    if not case_id or not args.cell:
        raise UserError("--from-report needs --cell CELL and --case TEST_ID")
    cells = {c["cell"]: c for c in doc["cells"]}
    if args.cell not in cells:
        raise UserError(f"{args.from_report}: no cell {args.cell!r}; it has {', '.join(cells)}")
    case = next((c for c in doc["cases"] if c["id"] == case_id), None)
    if case is None or args.cell not in case["results"]:
        raise UserError(f"{args.from_report}: no result for {case_id!r} in cell {args.cell}")
    bad_cell = cells[args.cell]
    pins = {canonicalize_name(k): v for k, v in bad_cell["pins"].items()}
    pkg = canonicalize_name(args.package) if args.package else ("torch-xla" if "torch-xla" in pins else "jax")
    if pkg not in pins:
        raise UserError(f"cell {args.cell} pins no {pkg}; pass --package")
    args.package, args.bad, args.test_id = pkg, pins[pkg], case_id
    if not args.good:
        try:
            good = [Version(cells[name]["pins"].get(pkg) or cells[name]["pins"].get(pkg.replace("-", "_")))
                    for name, r in case["results"].items()
                    if r["verdict"] in ("ok",) and name in cells and (cells[name]["pins"].get(pkg) or cells[name]["pins"].get(pkg.replace("-", "_")))]
            older = [v for v in good if v < Version(args.bad)]
        except InvalidVersion as exc:
            raise UserError(f"{args.from_report}: a cell's pins are not PEP 440 versions: {exc}") from None
        if not older:
            raise UserError(f"no cell in {args.from_report} passes {case_id} with an older {pkg}; pass --good")
        args.good = str(max(older))
        print(f"bad bound {pkg} {args.bad} from cell {args.cell}; good bound {args.good} proposed from the report's other cells",
              file=sys.stderr)


def cmd_bisect(args: argparse.Namespace) -> int:
    """Run the bisection and print the final report; 0 found, 1 inconclusive, 2 bad input."""
    from harness.bisect.probe import Prober
    from harness.bisect.report import render, shown_command
    from harness.bisect.search import bisect
    from harness.cells.releases import between, held_pins, list_versions, nearest
    if args.from_report:
        _from_report(args)
    if args.subdir and (Path(args.subdir).is_absolute() or ".." in Path(args.subdir).parts):
        raise UserError(f"--subdir {args.subdir!r}: name a folder inside --repo (no absolute path, no '..')")
    if args.commits and not args.package:
        args.package = "jax"
    if not args.package or not args.good or not args.bad:
        raise UserError("bisect needs --package, --good and --bad (or --from-report)")
    if not args.script and not args.test_id:
        raise UserError("bisect needs a TEST_ID or --script CMD ...")
    if args.script and len(args.script) == 1 and args.script[0].endswith(".py") and not Path(args.script[0]).is_file():
        raise UserError(f"--script {args.script[0]}: no such file")
    if args.test_id:
        from harness.report.grammar import is_node_id
        from harness.report.repro import test_source

        if not is_node_id(args.test_id):  # e.g. an option-looking id from a report: never a pytest argument
            raise UserError(f"unknown test id {args.test_id!r}: it is not a pytest node id (suites/FAMILY/test_X.py::test_Y[PARAM])")

        if test_source(args.test_id) is None:
            raise UserError(f"unknown test id {args.test_id!r}: no such test function in this checkout "
                            "(copy an id from `pytest suites --collect-only -q`)")
        _check_params(args.test_id)
    if args.commits:
        return _cmd_commits(args, args.good, args.bad)
    if args.to_commit and not args.repo:
        raise UserError("--to-commit needs --repo PATH_OR_URL (the package's git repository)")
    try:
        good, bad = Version(args.good), Version(args.bad)
    except InvalidVersion as exc:
        raise UserError(f"bound is not a PEP 440 version: {exc}") from None
    if good == bad:
        raise UserError(f"--good and --bad are the same version ({good})")
    if bad < good:
        raise UserError(f"--good {good} is newer than --bad {bad}: keep --good the older bound "
                        "(to find where something got fixed, add --regress pass)")
    package = canonicalize_name(args.package)
    held = held_pins(args.held)
    versions = list_versions(package, args.index_url, tuple(args.find_links), pre=args.pre)
    if package == "jax":  # jax moves with jaxlib: only versions both have are testable pairs
        jaxlibs = set(list_versions("jaxlib", args.index_url, tuple(args.find_links), args.pre))
        versions = [v for v in versions if v in jaxlibs]
    for bound, name in ((good, "--good"), (bad, "--bad")):
        if bound not in versions:
            raise UserError(f"{name} {bound}: {package} {bound} is not a release on the index; nearest: {nearest(versions, bound) or 'none'}")
    span = between(versions, good, bad)
    n_between = len(span) - 2
    base = _base_cell(args)
    from harness.safeio import check_writable

    check_writable(args.out)  # a read-only or file --out: one line, before the first probe
    _check_outputs(args)  # a symlink or FIFO where a report goes: one line now, not after hours of probes
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    prober = Prober(base, package, args.test_id, _regress(args.regress), held, args.out / "probes",
                    script=args.script, log=log)
    log(f"bisecting {package} {good}..{bad}: {n_between} releases between (about {max(1, (n_between + 1)).bit_length()} steps)")
    t0 = time.monotonic()
    outcome = bisect([str(v) for v in span], prober,
                     progress=lambda left, steps: log(f"{left} versions left (about {steps} steps)"))
    summary = _conclude(outcome, prober, package, span, good, bad)
    if summary.get("first_bad") and prober.regress == "pass":
        summary["conclusion"] = (f"fixed in {package} {summary['first_bad']}: the first release where it passes "
                                 f"(last failing: {summary['last_good']})")
    summary.update({"regress": prober.regress, "target": _target(args), "test_id": args.test_id,
                    "script": args.script, "script_text": _script_text(args.script), "order": [str(v) for v in span], "n_between": n_between,
                    "probes_run": prober.runs, "cached": sum(a.cached for a in prober.answers.values()),
                    "wall_s": time.monotonic() - t0, "command": shown_command(sys.argv[1:])})
    first_bad_cell = prober.cell_for(summary["first_bad"]) if summary.get("first_bad") else None
    answers = list(prober.answers.values())
    print(render(summary, answers, first_bad_cell, markdown=False))
    md = render(summary, answers, first_bad_cell, markdown=True)
    since = f"{package} {summary['first_bad']} (last good {summary['last_good']})" if summary.get("first_bad") else None
    issue = _issue_markdown(summary, first_bad_cell, md, since)
    _write_outputs(args, {"bisect.md": md, "issue.md": issue}, md)
    if args.to_commit and summary.get("first_bad"):
        log(f"going on into the commits between {package} {summary['last_good']} and {summary['first_bad']}")
        return _cmd_commits(args, summary["last_good"], summary["first_bad"], append=True)
    return 0 if summary.get("first_bad") else 1


def _cmd_commits(args: argparse.Namespace, good_ref: str, bad_ref: str, append: bool = False) -> int:
    """`bisect --commits`: the first bad commit between two refs of --repo (append: after the release
    bisection's report in --markdown, for --to-commit)."""
    from harness.bisect.commits import bisect_commits, render_commits
    from harness.bisect.report import shown_command
    from harness.cells.releases import held_pins
    from harness.cells.sources import parse_pair
    from harness.safeio import check_writable

    if not args.repo:
        raise UserError("--commits needs --repo PATH_OR_URL (the package's git repository)")
    check_writable(args.out)
    _check_outputs(args)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    kw = dict(package=canonicalize_name(args.package or "jax"), base=_base_cell(args), pair=parse_pair(args.pair),
              test_id=args.test_id, regress=_regress(args.regress), held=held_pins(args.held),
              out_dir=args.out / "probes", script=args.script, log=log)
    summary, answers, commits = bisect_commits(args, kw, _conclude, log, good_ref, bad_ref)
    first_bad_cell = summary.pop("first_bad_cell", None)
    summary.update({"target": _target(args), "test_id": args.test_id,
                    "script": args.script, "script_text": _script_text(args.script),
                    "command": shown_command(sys.argv[1:])})
    print(render_commits(summary, answers, commits, markdown=False))
    md = render_commits(summary, answers, commits, markdown=True)
    fb = commits.get(summary.get("first_bad") or "")
    since = f"{canonicalize_name(args.package or 'jax')} commit {fb.short} ({fb.date[:10]}; last good {summary['last_good'][:12]})" if fb else None
    issue = _issue_markdown(summary, first_bad_cell, md, since)  # the one issue form, as after a release bisection
    _write_outputs(args, {"bisect-commits.md": md, **({"issue.md": issue} if issue or not append else {})}, md, append)
    return 0 if summary.get("first_bad") else 1


# bisect's reports in --out: these names, each a link into BISECT_SET, switched in as one set like the
# report set (harness.safeio.replacing_set): a report of an earlier bisection that this one does not write
# (its issue.md, a bisect-commits.md) is gone with it. name -> is a folder.
BISECT_SET = "bisect-set"
BISECT_ENTRIES = {"bisect.md": False, "bisect-commits.md": False, "issue.md": False}


def _check_outputs(args: argparse.Namespace) -> None:
    """UserError (one line) for a symlink or special file where a report goes, before any probe runs."""
    from harness.safeio import check_set_place, refuse_special

    check_set_place(args.out, BISECT_ENTRIES, BISECT_SET)
    if args.markdown:
        if any(os.path.abspath(args.markdown) == os.path.abspath(args.out / name) for name in (*BISECT_ENTRIES, BISECT_SET)):
            raise UserError(f"--markdown {args.markdown}: is one of the reports bisect writes in --out; name another file")
        refuse_special(args.markdown)


def _write_outputs(args: argparse.Namespace, texts: dict[str, str | None], md: str, append: bool = False) -> None:
    """The reports as a new set in --out (append: added to the current one, after --to-commit's release
    bisection), and --markdown (append: after what the release bisection wrote there), each replaced whole."""
    from harness.safeio import atomic_write, refuse_special, replacing_set

    with replacing_set(args.out, BISECT_ENTRIES, BISECT_SET, from_current=append) as stage:
        for name, text in texts.items():
            if text:
                atomic_write(stage / name, text)
            elif (stage / name).is_file():
                (stage / name).unlink()
    if args.markdown:
        refuse_special(args.markdown)
        before = args.markdown.read_text() + "\n" if append and args.markdown.is_file() else ""
        atomic_write(args.markdown, before + md)


def _target(args: argparse.Namespace) -> str:
    """What was bisected, as the reports name it: the test id, a script file by its name, or the command."""
    from harness.bisect.probe import script_file

    path = script_file(args.script)
    return args.test_id or (path.name if path else shlex.join(args.script or []))


def _issue_markdown(summary: dict, first_bad_cell: Cell | None, bisection_md: str, since: str | None) -> str | None:
    """issue.md: the first bad version's result in the one issue form (harness.report.issue_body),
    titled with what broke and since when, with this bisection and the standalone script (the one
    bisected, or the case's exported one)."""
    from harness.report.issue_body import md_line, title
    from harness.report.repro import repro_markdown, script_for

    fb = summary.get("first_bad_answer")
    if first_bad_cell is None or fb is None:
        return None
    desc = first_bad_cell.describe()
    cell = {**desc, "versions": dict(first_bad_cell.pins), "env": desc["env"]}
    result = {"raw": fb.raw if fb.raw in ("fail", "error", "crash", "pass") else "fail", "verdict": "bad",
              "message": fb.message}
    case = summary.get("test_id")
    script = summary.get("script_text") or script_for(case, cell, result)
    name = str((summary.get("script") or ["repro.py"])[0]).rsplit("/", 1)[-1] if summary.get("script_text") else "repro.py"
    body = repro_markdown(case, cell, result, script, name, bisection=bisection_md, appendix=False)
    return f"# {md_line(title(case or name, cell, result, since))}\n\n{body}"


def _script_text(script: list[str] | None) -> str | None:
    """The exported reproducer's text, embedded in the bisection's report (None for a command)."""
    from harness.bisect.probe import script_file

    path = script_file(script)
    return path.read_text(encoding="utf-8", errors="replace") if path else None


def _check_params(test_id: str) -> None:
    """Reject a `[param]` the test does not declare, before any probe is built."""
    from harness.judge.testids import declared_ids

    if "[" not in test_id:
        return
    ids = declared_ids(test_id)
    param = test_id.partition("[")[2]
    if ids is None:  # computed parameters: cannot be read without importing the suite
        return
    if not param.endswith("]") or param[:-1] not in ids:
        known = ", ".join(f"[{i}]" for i in sorted(ids) if i) or "none (the test is not parametrized)"
        raise UserError(f"unknown test id {test_id!r}: the test declares no such parameter; its parameters: {known}")


def _regress(value: str) -> str:
    if value.startswith("error-matches"):
        pattern = value.split(":", 1)[1] if ":" in value else ""
        if not pattern:
            raise UserError("--regress error-matches:REGEX needs a pattern after the colon")
        import re

        try:
            re.compile(pattern)
        except re.error as exc:
            raise UserError(f"--regress error-matches: bad regex: {exc}") from None
        return f"error-matches:{pattern}"
    if value not in ("fail", "crash", "pass"):
        raise UserError(f"--regress {value!r}: use fail, crash, pass or error-matches:REGEX")
    return value


def _conclude(outcome, prober: Prober, package: str, span, good, bad) -> dict:
    """Turn the search outcome into a conclusion, probing the bad bound only if the window is ambiguous."""
    from harness.bisect.report import ir_diff
    from harness.bisect.search import BAD, GOOD
    skipped = outcome.skipped_between
    summary: dict = {"last_good": outcome.last_good}
    absent_from = None
    if skipped:
        # Everything between is untestable: is the bad bound itself just as untestable?
        bad_ans = prober.probe(outcome.first_bad)
        absent = [s for s in skipped if prober.answers[s].api_absent]
        if bad_ans.api_absent and len(absent) == len(skipped):
            absent_from = skipped[0]
        elif bad_ans.answer == GOOD:
            summary["conclusion"] = (f"inconclusive: {outcome.first_bad} is good, so the given bad bound was wrong")
            summary["first_bad"] = None
            return summary
    fb_ans = prober.answers.get(outcome.first_bad)
    if absent_from is not None:
        reason = prober.answers[absent_from].reason
        summary["conclusion"] = (f"API absent from {package} {absent_from} (through {outcome.first_bad}): {reason}. "
                                 f"This is not a regression: the scenario cannot run there. Last good: {outcome.last_good}.")
        summary["first_bad"] = None
        summary["api_absent_from"] = absent_from
        return summary
    if skipped:
        summary["conclusion"] = (f"the first bad version is one of {', '.join(skipped + [outcome.first_bad])}: "
                                 f"{', '.join(skipped)} could not be tested ({'; '.join(prober.answers[s].reason for s in skipped)}). "
                                 f"Last good: {outcome.last_good}.")
        summary["first_bad"] = None
        return summary
    good_ans = prober.probe(outcome.last_good)  # confirms the good bound and gives the IR to diff against
    if good_ans.answer != GOOD:
        summary["conclusion"] = (f"inconclusive: the last good candidate {outcome.last_good} answered {good_ans.answer} "
                                 f"({good_ans.raw}); check --good")
        summary["first_bad"] = None
        return summary
    if fb_ans is None:  # the search never needed the bad bound: confirm it rather than assume it
        fb_ans = prober.probe(outcome.first_bad)
        if fb_ans.answer != BAD:
            summary["conclusion"] = (f"inconclusive: the --bad bound {outcome.first_bad} answered {fb_ans.answer} "
                                     f"({fb_ans.raw}); nothing between the bounds is bad")
            summary["first_bad"] = None
            return summary
    summary["first_bad"] = outcome.first_bad
    summary["first_bad_answer"] = fb_ans
    summary["ir_diff"] = ir_diff(prober.answers.get(outcome.last_good), fb_ans)
    summary["conclusion"] = f"first bad: {package} {outcome.first_bad}; last good: {package} {outcome.last_good}"
    return summary
