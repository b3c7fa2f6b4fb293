"""`harness reduce repro/CASE.py ...` (the parser: building it imports nothing heavy; the work is
harness.reduce.batch)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.errors import UserError

DESCRIPTION = """\
Reduce each repro/CELL__CASE.py (from `harness report`) with pysource-minimize and write
repro/CELL__CASE.min.py beside it; CASE.md then shows the reduced script first.

A candidate is kept only if it has the full script's signature: the same exit status, exception
type and message up to numbers, the known issue's `match` in its output, raised at the same
statement; and it exits 0 in a cell where the case passes (--passes-in, or from the report.json
beside repro/, the fixing release first). Candidates run in the cell's env (`python -I`, the
project off sys.path), each in a fresh fork of a server that imported jax/torch/torch_xla once,
under a timeout, in a scratch folder. Where the failure is the script's own check and no cell
passes the case, the checks that ran (and the helpers they name) are frozen instead: a candidate
that changes one is rejected unrun, and the reduced script says so (CHECKED_BY). Refused: a script
that does not fail, a flaky one (two runs disagree), one whose output lacks the known issue's match.
Figures: repro/reduce.json. Exit 0 if every script was reduced."""

JAX_BUDGET_S = 60  # issue 32: a jax-only repro reduces within a minute, a torch one within five
TORCH_BUDGET_S = 300
MAX_WORKERS = 64  # more processes than this, each with fork servers of a GB or more, is a typo


def workers_arg(text: str) -> int:
    """argparse type for -j: scripts reduced at once, 1 to MAX_WORKERS."""
    if not text.isascii() or not text.isdigit() or len(text) > 3 or not 1 <= int(text) <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{text[:20]!r}: expected a whole number from 1 to {MAX_WORKERS}")
    return int(text)


def add_reduce_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reduce", help="reduce standalone reproducers to what still fails the same way (CASE.min.py)",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scripts", nargs="+", type=Path, metavar="repro/CELL__CASE.py")
    p.add_argument("--cell", help="the cell whose env runs the scripts (default: the CELL of the file name)")
    p.add_argument("--passes-in", action="append", default=[], metavar="CELL",
                   help="a cell where the case passes: every kept candidate must exit 0 there too "
                        "(default: taken from the report.json beside repro/, the fixing release first)")
    p.add_argument("--budget", type=float, metavar="S",
                   help=f"seconds per script (default {JAX_BUDGET_S} jax-only, {TORCH_BUDGET_S} with torch); "
                        "at the budget the smallest script found so far is written")
    p.add_argument("-j", "--jobs", type=workers_arg, default=1, metavar="N",
                   help="reduce in N processes at once (default 1), each taking whole cells' scripts (a cell "
                        "with many is shared out) with fork servers of its own: about a GB of memory each "
                        "for a torch_xla cell")
    p.add_argument("--rest", action="store_true",
                   help="finish a batch that was stopped (a kill, the end of a session): skip each script that "
                        "repro/reduce.json beside it already records (reduced, minimal by construction or "
                        "refused; name a refused one without --rest to try it again), and the CASE.min.py "
                        "files a glob such as repro/*.py brings along")
    p.add_argument("--no-reuse", action="store_true", help=REUSE_HELP)
    p.set_defaults(handler=cmd_reduce)


REUSE_HELP = ("search every script again. By default a script reduced by an earlier batch with the same reducer, "
              "in the same cell and contrast cell envs, at the same budget, takes that reduction again once one run "
              "in its cell (the same signature) and one in each contrast cell (exit 0) show it still holds "
              "(kept in $SEAMS_REDUCE_CACHE, default ~/.cache/xla-seams/reductions; reduce.json says `reused`); one "
              "whose search stopped at the budget is where this batch's search starts instead (`resumed`), until a "
              "resumed search finds nothing shorter")


def memo_folder(no_reuse: bool) -> Path | None:
    """The folder of earlier batches' reductions, or None (--no-reuse: search every script)."""
    from harness.reduce.memo import cache_dir

    return None if no_reuse else cache_dir()


def cmd_reduce(args: argparse.Namespace) -> int:
    """0 when every script was reduced, 1 when one was refused (it does not fail, or flakily)."""
    from harness.reduce.batch import (
        Job,
        ReductionWriter,
        cell_named,
        check_outputs,
        recover_set,
        reduce_jobs,
        report_jobs,
        scripts_left,
        summary,
    )

    scripts = scripts_left(args.scripts) if args.rest else args.scripts
    if not scripts:
        print(f"reduce: nothing left: reduce.json records each of the {len(args.scripts)} scripts given")
        return 0
    jobs = []
    known: dict[Path, dict] = {}  # report.json -> its failing results' jobs by script name
    for script in scripts:
        recover_set(script)
        if not script.is_file() or script.suffix != ".py" or script.name.endswith(".min.py"):
            raise UserError(f"{script}: not a standalone script (repro/CELL__CASE.py)")
        cell = args.cell or script.name.split("__", 1)[0]
        for name in [cell, *args.passes_in]:
            cell_named(name)  # an unknown cell is a usage error (exit 2), before anything runs
        case_id, contrast, minimal = None, list(args.passes_in), None
        report = script.resolve().parent.parent / "report.json"
        if report.is_file():
            if report not in known:
                known[report] = {j.script.name: j for j in report_jobs(report.parent)}
            found = known[report].get(script.name)
            if found is not None:  # an op script its run made short is checked once, as report --reduce does
                case_id, contrast, minimal = found.case_id, contrast or found.contrast, found.minimal
        jobs.append(Job(script, cell, case_id, contrast, minimal))
    check_outputs([j.script for j in jobs])  # a symlink where an output goes: one line now, not after the work
    write = ReductionWriter(merge=True)  # what is done is written as it goes, too, each script once
    outcomes = reduce_jobs(jobs, args.budget, workers=args.jobs, checkpoint=write, memo_dir=memo_folder(args.no_reuse))
    print(summary(outcomes))
    write(jobs, outcomes)  # the rest: the report set's repro/, switched in whole
    return 0 if all(o.refused is None for o in outcomes) else 1
