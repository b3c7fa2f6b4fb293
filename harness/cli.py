"""Command line: `python -m harness {run,report,diff,bisect,matrix,validate,bench}`.

Every bad input ends as one line on stderr and exit status 2; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Sequence

from harness.errors import UserError
from harness.paths import MATRICES_DIR

# What `--help` needs must stay cheap to import: each command imports its stage when it runs.
DEFAULT_EXPECTATIONS = MATRICES_DIR / "known_issues"

DEFAULT_OUT = Path("reports")

EPILOG = """\
examples:
  python -m harness run                                   # default CPU matrix -> reports/report.html
  python -m harness run --cell jax053-cpu --cell jax060-cpu
  python -m harness run --cell jax060-cpu -- -k linearize  # extra args go to pytest
  python -m harness report reports/results/*.jsonl         # re-render with current known issues
  python -m harness diff old/report.json reports/report.json
  python -m harness bisect 'suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[base]' \\
      --package jax --good 0.5.3 --bad 0.10.2
  python -m harness matrix --format github                 # CI shard list

exit status: 0 nothing new, 1 regressions / unexpected passes / crashes / timeouts / env errors /
  incomplete cells (a killed run, cases that never finished, zero tests, a module that fails to
  import), 2 bad input, 3 a harness bug, 128+N stopped by signal N (its children are stopped too).

environment: SEAMS_COLLECT_TIMEOUT_S (default 300) and SEAMS_EXIT_TIMEOUT_S (default 60) bound
  importing+collecting and interpreter exit in each cell; a hang there is recorded as a timeout.
  PYTEST_ADDOPTS, PYTEST_PLUGINS, PYTHONPATH, PYTHONHOME, LD_PRELOAD and the other start-up
  variables are not passed into cells (each one dropped is named in the cell's reason).
  SEAMS_FAULT=OP:N fails the harness's Nth open/write/rename/fsync/mkdir/spawn/kill (tests only).
"""


class _StoreOnce(argparse._StoreAction):
    """argparse's `store`, but an option given twice with two values (`--out A --out B`, `--good 0.5 --good=0.6`)
    is ambiguous: refused in one line (argparse keeps the last silently). The same value twice is not."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        given = namespace.__dict__.setdefault(_GIVEN, {})
        if option_string is not None and self.dest in given and given[self.dest] != values:
            parser.error(f"{option_string} given twice ({ascii(str(given[self.dest]))} and {ascii(str(values))}); "
                         "give it once")
        given[self.dest] = values
        super().__call__(parser, namespace, values, option_string)


_GIVEN = "_seams_given_once"


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (like every other bad input), exit status 2, and a
    single-valued option given twice with two values is refused (_StoreOnce)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        ns, rest = super().parse_known_args(args, namespace)
        ns.__dict__.pop(_GIVEN, None)
        return ns, rest

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    """argparse type: a whole number of seconds above zero (a 0 or negative timeout would kill every test)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} must be a positive number of seconds")
    return value


def _workers_arg(text: str) -> int | str:
    """argparse type for --xdist: a number of workers or 'auto'."""
    from harness.run.workers import parse_workers

    try:
        return parse_workers(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


RUN_ENV_HELP = """\
environment (tox passes SEAMS_* through; what follows tox's `--` goes to pytest):
  SEAMS_TIMEOUT=S     default for --timeout
  SEAMS_JOBS=N        default for -j
  SEAMS_XDIST=N|auto  default for --xdist
  SEAMS_VERBOSE=1     same as -v
  SEAMS_HEARTBEAT_S=S off a terminal, a progress line per running cell at least every S s (default 30)
  SEAMS_HYPOTHESIS_PROFILE=ci|nightly|dev  examples per property (ci 12, nightly 100, dev 5; default ci)
  SEAMS_ASSUME_DEVICE=gpu|tpu  treat the device as present where the probe misses it
  SEAMS_BACKEND_TIMEOUT_S=S    deadline for a gpu/tpu cell's backend to start before its tests (default 30)
  SEAMS_WITH='PKG=PATH[@REF] ...'  sources swapped into the cells, as --with PKG=PATH[@REF] (for tox)
  SEAMS_RUN_ID=ID     the run id the cells record (default: tox's process under tox, else this run's):
                      `report --latest-run` merges one run's cells by it

examples:
  python -m harness run -j 2                               # up to 2 cells at once
  python -m harness run --cell jax060-cpu -- -k linearize  # extra args go to pytest
  tox -e jax060-cpu -- -k shard_map                         # the same under tox
  SEAMS_TIMEOUT=900 tox -e xla29-cpu                        # a harness option under tox
  python -m harness run --cell jax060-cpu --xdist 0         # one pytest process, cases one by one
  python -m harness run --build-only --matrix matrices/accelerators.yaml   # prove every gpu/tpu recipe, run nothing
  python -m harness run --cell jax072-cpu --with jax=../jax # your jax checkout (dirty is fine) on that cell
  python -m harness run --cell xla29-cpu --with jax=../jax@5f3c2a1   # a commit of it
"""


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="build cell envs and run the suites in each, then report",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=RUN_ENV_HELP,
                       description="Build each cell's env (uv, cached) and run the suites in it, one "
                                   "process per cell; results stream to OUT/results/CELL.jsonl, then the "
                                   "compatibility report is written to OUT (or --report-dir).")
    p.add_argument("--matrix", action="extend", nargs="+", type=Path, metavar="FILE",
                   help="matrix YAML files (several after one flag, e.g. --matrix matrices/sweeps/*.yaml, "
                        "or the flag repeated; default: matrices/default.yaml)")
    p.add_argument("--cell", action="append", metavar="NAME",
                   help="run only this cell (repeatable); looked up in every matrices/*.yaml unless --matrix is given")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: reports)")
    p.add_argument("--report-dir", type=Path, metavar="DIR",
                   help="write the report here instead of OUT (tox: reports/cells/CELL, so cells never overwrite "
                        "each other's report; merge them with `harness report reports/results`)")
    p.add_argument("--expectations", type=Path, default=DEFAULT_EXPECTATIONS,
                   help="known-issues file or folder (default: matrices/known_issues)")
    p.add_argument("--timeout", type=positive_int, metavar="S",
                   help="per-test timeout, overrides the matrix's timeout_s (default: $SEAMS_TIMEOUT)")
    p.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="run up to N cells at once (default: $SEAMS_JOBS, else as many as the cores carry: "
                        "a torch/torch_xla cell weighs a core, a jax-only cell half of one); 1 = one after another")
    p.add_argument("--xdist", type=_workers_arg, metavar="N|auto",
                   help="pytest-xdist workers inside each cell (default: $SEAMS_XDIST, else auto). auto: on "
                        "cpu, the cores a cell has to itself (cores // cells running at once; below 2, none; "
                        "none under `tox -p`); on gpu/tpu none, since the scenarios need every chip in one "
                        "process. 0 = one pytest process per cell. A number N on gpu/tpu gives each worker one "
                        "chip. Crashes and timeouts are still recorded per test")
    p.add_argument("--no-report", action="store_true", help="only write results; skip the report")
    p.add_argument("--python", type=Path, metavar="PATH",
                   help="run the cells in this interpreter instead of envs built from the index (a machine "
                        "that reaches none, an accelerator's image): each cell's pins and device runtime must "
                        "be installed there at their versions (checked as a built env is; otherwise the cell "
                        "is an env-error); nothing is installed into it. Cells run one after another")
    p.add_argument("--build-only", action="store_true",
                   help="build and verify each cell's env (pins installed and importable at their versions, and "
                        "the device's runtime: libtpu, jax's CUDA plugin), on any machine and whatever the device; "
                        "run no tests. The report shows each cell as 'env verified, not run: ...'; a recipe that "
                        "does not resolve is the cell's env-error with uv's reason")
    p.add_argument("-v", "--verbose", action="store_true", help="print every test, not only the news ($SEAMS_VERBOSE=1)")
    p.add_argument("--progress-events", action="store_true", help=argparse.SUPPRESS)  # -j worker -> parent
    p.add_argument("--worker-cell", metavar="JSON", help=argparse.SUPPRESS)  # -j parent -> worker
    p.add_argument("pytest_args", nargs="*", metavar="-- PYTEST ARGS", help="passed to pytest in every cell")
    _add_sweep_args(p)
    g = p.add_argument_group("your own build (docs/own-build.md)",
                             "--with PKG=PATH (a source tree, hashed when dirty), PKG=PATH@REF or PKG=URL@REF (a git "
                             "ref, exported with git archive), PKG=FILE.whl: take PKG from there in every named cell "
                             "(repeatable; also $SEAMS_WITH, whitespace-separated, for tox). A jax source is paired "
                             "with the newest released jaxlib its jax/version.py allows.")
    g.add_argument("--pair", action="append", default=[], metavar="PKG==VER",
                   help="with a source: use this binary partner instead of the rule's choice, e.g. jaxlib==0.5.3")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used by the docs test to keep README and --help in step)."""
    parser = OneLineParser(
        prog="python -m harness", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Conformance and regression suite for the JAX <-> PyTorch/XLA seams: run scenario "
                    "suites in exact version cells, judge results against known upstream issues, "
                    "report, diff and bisect.")
    from harness.reduce.cli import REUSE_HELP, add_reduce_parser, workers_arg  # the parser module alone: nothing heavy

    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(sub)

    p = sub.add_parser("report", help="merge cell results into report.json/html/md, junit.xml and repro/",
                       description="Merge cell results and judge them again: raw outcomes against the known "
                                   "issues (--expectations) and API presence against the API release ranges "
                                   "($SEAMS_APIS, default matrices/apis/), without re-running anything. "
                                   "repro/ gets CELL__CASE.md (the issue body) for every result that is news "
                                   "or a known bug, and beside it CELL__CASE.py, a standalone reproducer "
                                   "needing only the cell's packages, for every fail/error/crash.")
    p.add_argument("results", nargs="+", type=Path, metavar="RESULTS.jsonl",
                   help="results files, or folders meaning every *.jsonl in them (e.g. reports/results)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--expectations", type=Path, default=DEFAULT_EXPECTATIONS)
    p.add_argument("--baseline", type=Path, metavar="OLD/report.json",
                   help="mark each result that changed since this report (regressed, fixed, changed, new, gone) "
                        "in the HTML grid, with a 'changed since baseline' view")
    p.add_argument("--latest-run", action="store_true",
                   help="merge only the cells of this run, by the run id each cell's results record: under tox, "
                        "the cells this tox command ran (what `tox -e CELL,...,report` uses); elsewhere the newest "
                        "`harness run`'s ($SEAMS_RUN_ID names one); the files left out are named here and in report.md")
    p.add_argument("--reduce", action="store_true",
                   help="also reduce each failing result's repro/CASE.py to repro/CASE.min.py (`harness reduce`; "
                        "CASE.md then shows the reduced script first); writes a repro for every failing result, "
                        "not the first 500")
    p.add_argument("-j", "--jobs", type=workers_arg, default=1, metavar="N",
                   help="with --reduce: reduce in N processes at once (see `harness reduce --help`)")
    p.add_argument("--no-reuse", action="store_true", help="with --reduce: " + REUSE_HELP)

    p = sub.add_parser("diff", help="compare two report.json files: regressed, fixed, new, gone, drift")
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--markdown", type=Path, metavar="FILE", help="also write the diff as Markdown")

    p = sub.add_parser("matrix", help="list the cells of matrices (names, table, json, github, tox)")
    p.add_argument("--matrix", action="extend", nargs="+", type=Path, metavar="FILE")
    p.add_argument("--format", choices=("names", "table", "json", "github", "tox"), default="table")
    _add_sweep_args(p)

    p = sub.add_parser("validate", help="validate matrix, known-issues and API-range files (exit 2 on the first error)",
                       description="Validate matrices, known issues (matrices/known_issues/) and API release "
                                   "ranges (matrices/apis/); with no FILES, every one of them.")
    p.add_argument("files", nargs="*", type=Path, metavar="FILES")

    try:
        from harness.bisect.cli import add_bisect_parser
    except ImportError:
        pass
    else:
        add_bisect_parser(sub)
    from harness.nightly.filing import add_file_news_parser

    add_reduce_parser(sub)
    from harness.report.history import add_history_parser

    add_history_parser(sub)
    add_file_news_parser(sub)
    try:
        from harness.bench import add_bench_parser
    except ImportError:
        pass
    else:
        add_bench_parser(sub)
    return parser


def _add_sweep_args(p: argparse.ArgumentParser) -> None:
    """The sweep options shared by `run` and `matrix`."""
    g = p.add_argument_group("release sweeps")
    g.add_argument("--sweep", action="append", metavar="SPEC",
                   help="a cell per release on the index: 'jax>=0.4.38,<=0.10.2', 'torch_xla>=2.5,<2.10', "
                        "'torchax>=0.0.4' (repeatable; --matrix also takes sweep files, matrices/sweeps/*.yaml)")
    g.add_argument("--with", dest="sweep_with", action="append", default=[], metavar="PKG==VER|PKG=PATH[@REF]",
                   help="PKG==VER with --sweep: hold another package at a version in every swept cell; PKG=PATH[@REF] "
                        "or PKG=FILE.whl with run: take PKG from that source (repeatable)")
    g.add_argument("--sweep-extra", action="append", default=[], metavar="REQ",
                   help="with --sweep: an extra requirement in every swept cell, e.g. flax==0.12.0")
    g.add_argument("--pre", action="store_true", help="with --sweep or a `latest` pin: include pre-releases and .dev nightlies")
    g.add_argument("--index-url", help="with --sweep: list (and install) releases from this index")


def _cells(matrix_files: list[Path] | None, names: list[str] | None, args: argparse.Namespace | None = None):
    from harness.cells.matrix import catalogue, load_matrix
    from harness.cells.sweep import matrix_from_args

    twice = sorted({n for n in names or [] if (names or []).count(n) > 1})
    if twice:  # two runs of one cell would race for its results file: ambiguous, refused in one line
        raise UserError(f"--cell {', '.join(twice)} given more than once; name each cell once")
    swept = matrix_from_args(matrix_files, args) if args is not None else None
    if swept is not None:
        return swept.select(names) if names else list(swept.cells)
    if matrix_files:
        m = load_matrix(*matrix_files)
    elif names:
        m = catalogue()
    else:
        m = load_matrix()
    return m.select(names) if names else list(m.cells)


def _prepare(cell, progress):
    from harness.cells.envs import ensure_env

    return ensure_env(cell, log=lambda m: progress(cell.name, {"event": "env", "message": m}))


def _env_option(args: argparse.Namespace, attr: str, var: str) -> None:
    """Fill an unset `run` option from its SEAMS_* variable (how tox users pass harness options). Both given
    with two values is ambiguous: one line (as `--with` and SEAMS_WITH together are)."""
    raw = os.environ.get(var, "").strip()
    if not raw:
        return
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UserError(f"{var}={raw!r}: expected a whole number of at least 1")
    given = getattr(args, attr)
    if given is not None and given != value:
        flag = "-j" if attr == "jobs" else f"--{attr}"
        raise UserError(f"{flag} {given} and {var}={raw} disagree; give one (or the same value)")
    setattr(args, attr, value)


def _check_run_options(args: argparse.Namespace) -> None:
    if getattr(args, "build_only", False) and args.pytest_args:
        raise UserError(f"--build-only runs no tests, so pytest arguments make no sense with it: "
                        f"{' '.join(args.pytest_args)!r}; drop them or drop --build-only")
    _env_option(args, "timeout", "SEAMS_TIMEOUT")
    _env_option(args, "jobs", "SEAMS_JOBS")
    from harness.run.backend import backend_timeout

    backend_timeout()  # a malformed SEAMS_BACKEND_TIMEOUT_S is one line before any env is built
    raw = os.environ.get("SEAMS_XDIST", "").strip()
    try:
        from_env = _workers_arg(raw) if raw else None
    except argparse.ArgumentTypeError as exc:
        raise UserError(f"SEAMS_XDIST={raw!r}: {exc}") from None
    if args.xdist is not None and from_env is not None and args.xdist != from_env:
        raise UserError(f"--xdist {args.xdist} and SEAMS_XDIST={raw} disagree; give one (or the same value)")
    if args.xdist is None:
        args.xdist = "auto" if from_env is None else from_env
    if args.xdist == "auto" and os.environ.get("TOX_PARALLEL_ENV"):
        args.xdist = 0  # `tox -p` runs cells side by side already: their cores are taken
    if os.environ.get("SEAMS_VERBOSE", "").strip() not in ("", "0"):
        args.verbose = True
    for flag, value in (("--timeout", args.timeout), ("-j", args.jobs)):
        if value is not None and value < 1:
            raise UserError(f"{flag} {value}: expected a whole number of at least 1")
    if getattr(args, "python", None) is not None:
        _check_python(args)


def _check_python(args: argparse.Namespace) -> None:
    """--python names an executable file; it runs cells one at a time, builds nothing (one line otherwise)."""
    given: Path = args.python
    try:
        ok = given.is_file() and os.access(given, os.X_OK)
    except (OSError, ValueError):  # a name too long for the file system, a NUL
        ok = False
    if not ok:
        raise UserError(f"--python {str(given)[:200]!r}: not an executable file (give the interpreter, e.g. .venv/bin/python)")
    if args.build_only:
        raise UserError("--python runs cells in an interpreter the harness did not build: --build-only has nothing to build")
    if args.jobs not in (None, 1):
        raise UserError(f"-j {args.jobs} with --python: the cells share one interpreter, so they run one at a time")
    args.python = given.absolute()  # pytest runs in the checkout: a relative path must not move with it


def _die_with_parent() -> None:
    """A -j worker gets SIGINT (its normal clean-up path) when the parent harness dies (Linux)."""
    import ctypes
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if our parent was started ignoring it
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGINT, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took effect
        raise KeyboardInterrupt


def _note_replaced_report(report_dir: Path, cells: list, console) -> None:
    """Say so when this run's report replaces one that covered other cells (no silent loss)."""
    old = report_dir / "report.json"
    try:
        before = {c["cell"] for c in json.loads(old.read_text())["cells"]}
    except (OSError, ValueError, KeyError, TypeError):
        return
    dropped = sorted(before - {c.name for c in cells})
    if dropped:
        shown = ", ".join(dropped[:6]) + (f" and {len(dropped) - 6} more" if len(dropped) > 6 else "")
        console.print(f"note: replacing {old}, which also covered {shown}; their results stay in their "
                      f"results files: python -m harness report DIR/results merges every cell into one report")


def cmd_run(args: argparse.Namespace) -> int:
    """Run cells (up to -j at once) and, unless --no-report, render the report; exit 1 on news."""
    from harness.judge.expectations import load_expectations
    from harness.run.parallel import cell_from_json, default_jobs, run_parallel
    from harness.run.invocation import run_id
    from harness.run.progress import CellProgress, EventStream

    run_id()  # this invocation's id (tox's under tox), set before any -j worker starts: they inherit it
    # A -j worker gets its cell whole from the parent (sweep cells are not in any YAML file).
    if args.worker_cell:
        cells = [cell_from_json(args.worker_cell)]
    else:
        from harness.cells.floating import resolve_cells

        from harness.cells.sources import apply_with, describe, is_source_with, parse_pair, with_items

        sourced = [w for w in with_items(args.sweep_with) if is_source_with(w)]  # PKG=PATH[@REF]; PKG==VER holds
        args.sweep_with = [w for w in args.sweep_with if not is_source_with(w)]
        _one_way_per_package(sourced, args.sweep_with)
        cells = resolve_cells(_cells(args.matrix, args.cell, args), pre=args.pre)  # latest/nightly pins -> exact
        cells = apply_with(cells, sourced, parse_pair(args.pair))  # sources -> SHA / content hash, jax paired
        for cell in cells:
            for pkg, src in cell.sources.items():
                print(f"{cell.name}: {pkg} {src['pin']} from {describe(src)}"
                      + (f"; {src['pairing']}" if src.get("pairing") else ""), file=sys.stderr)
    load_expectations(args.expectations)  # fail fast on a malformed known-issues file
    _check_run_options(args)
    from harness.safeio import check_writable

    check_writable(args.out)  # a read-only or file --out: one line before any work
    check_writable(args.out / "results")
    from harness.cells.envs import envs_root
    from harness.cells.sources import repos_root

    envs_root(), repos_root()  # SEAMS_ENVS_DIR=/dev/null and the like: one line before any cell starts
    if args.progress_events:
        _die_with_parent()
    jobs = 1 if args.python else (args.jobs or default_jobs(cells))  # --python: one interpreter, one cell at a time
    report_dir: Path = args.report_dir or args.out
    if jobs > 1 and len(cells) > 1 and not args.progress_events:
        progress = CellProgress(verbose=args.verbose, name_cells=True)
        files, codes, errors = run_parallel(cells, jobs=jobs, out=args.out,
                                            expectations=args.expectations, timeout=args.timeout,
                                            verbose=args.verbose, pytest_args=args.pytest_args,
                                            progress=progress, weighted=args.jobs is None, xdist=args.xdist,
                                            build_only=args.build_only)
        if errors:  # a worker hit bad input or a harness bug: no report from a partial run
            return _worker_errors(errors, cells, files, codes, args.out)
        if args.no_report:  # each worker judged its cell; say what the news is, as a serial run does
            return max(_news_exit(files, args.expectations), 1 if any(codes) else 0)
        _note_replaced_report(report_dir, cells, progress.console)
        from harness.report.command import report_command

        return report_command(files, report_dir, args.expectations)
    return _run_serial(cells, args, report_dir, EventStream() if args.progress_events
                       else CellProgress(verbose=args.verbose))


def _worker_errors(errors: list[str], cells: list, files: list[Path], codes: list[int], out: Path) -> int:
    """A -j run some of whose workers stopped on bad input (or a harness bug): one line saying which and why,
    which cells finished (their results files are kept: `harness report` makes their report) and which never
    started; exit 2, or 3 where a worker's own exit says the harness has a bug. No report of a partial run
    replaces the last whole one."""
    done = [f for f, c in zip(files, codes) if c in (0, 1)]
    started = {f.stem for f in files}
    never = [c.name for c in cells if c.name not in started]
    parts = ["; ".join(errors)]
    if done:
        parts.append(f"{len(done)} cells finished, their results kept (harness report {out / 'results'}/CELL.jsonl "
                     f"--out {out}): {', '.join(f.stem for f in done)}"[:600])
    if never:
        parts.append(f"not started: {', '.join(never)}"[:300])
    print(f"error: {_one_line(' | '.join(parts))}", file=sys.stderr)
    worst = [c for c in codes if c > 1]
    return 3 if 3 in worst else 2


def _news_exit(files: list[Path], expectations: Path, quiet: bool = False) -> int:
    """--no-report's verdict: print the news (at most 20 lines) and return 1 when there is any."""
    from harness.nightly.news import news_lines

    news = news_lines(files, expectations)
    if not quiet:  # a -j worker's stderr is the parent's: the parent reports
        for line in news[:20]:  # the summary: stdout, as the report's summary is
            print(f"news: {line}")
        if len(news) > 20:
            print(f"news: ... and {len(news) - 20} more")
    return 1 if news else 0


def _run_serial(cells: list, args: argparse.Namespace, report_dir: Path, progress) -> int:
    """One cell after another, preparing the next cells' envs in the background."""
    from concurrent.futures import ThreadPoolExecutor

    from harness.run.cellrun import run_cell
    from harness.cells.devices import available
    from harness.cells.envs import ensure_env, given_env
    from harness.run.parallel import cores
    from harness.run.workers import worker_count
    from harness.judge.live import case_judge
    from rich.markup import escape

    out: Path = args.out
    files = []
    runs = []
    judge = case_judge(args.expectations)
    # Install the next cells' envs (network-bound) while the current cell runs its tests (CPU-bound).
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="env-prefetch")
    try:
        ready = {cell.name: pool.submit(_prepare, cell, progress) for cell in cells
                 if (args.build_only or available(cell.device)[0]) and not args.python}
        for i, cell in enumerate(cells, 1):
            progress.print(f"[bold]== cell {i}/{len(cells)}: {cell.name}[/] ("
                           + (f"in {escape(str(args.python))}, not built" if args.python else escape(cell.install_line())) + ")")
            fut = ready.get(cell.name)
            provider = (lambda _c, _log, fut=fut: fut.result()) if fut else ensure_env
            if args.python:
                provider = lambda c, _log: given_env(c, args.python)  # noqa: E731
            run = run_cell(cell, out / "results" / f"{cell.name}.jsonl", args.pytest_args,
                           judge=judge, timeout_s=args.timeout, progress=progress,
                           env_provider=provider, xdist=worker_count(cell.device, args.xdist, cores()),
                           build_only=args.build_only)
            files.append(run.results)
            runs.append(run)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        if hasattr(progress, "close"):
            progress.close()
        # An env build still running in the background (uv, the version check) must not outlive
        # the run, nor hold up the interpreter's exit: kill it (its temporary folder is removed).
        from harness import lifeline

        lifeline.kill_all()
    if args.no_report:
        return _news_exit(files, args.expectations, quiet=args.progress_events)
    from harness.report.command import report_command

    if hasattr(progress, "console"):
        _note_replaced_report(report_dir, cells, progress.console)
    return report_command(files, report_dir, args.expectations)


def cmd_report(args: argparse.Namespace) -> int:
    from harness.report.command import report_command

    # A folder stands for every results file in it (tox's `report` env cannot glob).
    paths = [q for p in args.results for q in (sorted(p.glob("*.jsonl")) if p.is_dir() else [p])]
    if not paths:
        raise UserError(f"{', '.join(map(str, args.results))}: no results files (*.jsonl) there; run some cells first")
    if args.jobs != 1 and not args.reduce:
        raise UserError(f"-j {args.jobs}: reduces in that many processes, so it needs --reduce")
    if args.no_reuse and not args.reduce:
        raise UserError("--no-reuse: says how --reduce searches, so it needs --reduce")
    # --reduce: every failing result gets its script (the cap would leave a default run's op cases out)
    code = report_command(paths, args.out, args.expectations, baseline=args.baseline, latest_run=args.latest_run,
                          **({"repro_limit": None} if args.reduce else {}))
    if args.reduce:
        from harness.reduce.batch import reduce_report, summary
        from harness.reduce.cli import memo_folder

        print(summary(reduce_report(args.out, workers=args.jobs, memo_dir=memo_folder(args.no_reuse))))
    return code


def cmd_diff(args: argparse.Namespace) -> int:
    from harness.report.diff import diff_command

    return diff_command(args.old, args.new, args.markdown)


def cmd_matrix(args: argparse.Namespace) -> int:
    from harness.cells.matrix import catalogue, load_matrix

    from harness.cells.sweep import matrix_from_args

    m = matrix_from_args(args.matrix, args)
    if m is None:
        m = load_matrix(*args.matrix) if args.matrix else (catalogue() if args.format == "tox" else load_matrix())
    if args.format == "names" or args.format == "tox":
        print("\n".join(m.names()))
    elif args.format == "json":
        print(json.dumps([c.describe() for c in m.cells], indent=1))
    elif args.format == "github":
        from harness.cells.devices import RUNNERS

        print(json.dumps({"include": [{"cell": c.name, "device": c.device, "runs-on": c.runs_on or RUNNERS[c.device]}
                                      for c in m.cells]}))
    else:
        for c in m.cells:
            print(f"{c.name:<16} {c.device:<4} {c.install_line()}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate matrices, known-issues and API-range files (every matrices/ file when none are named)."""
    from harness.judge.apis import DEFAULT_PATH as DEFAULT_APIS, load_api_ranges
    from harness.judge.expectations import load_expectations
    from harness.cells.matrix import MATRICES_DIR, catalogue, load_matrix
    from harness.cells.yamlio import load_yaml

    if not args.files:
        m = catalogue()
        exps = load_expectations(DEFAULT_EXPECTATIONS)
        apis = load_api_ranges(DEFAULT_APIS)
        print(f"ok: {len(m.cells)} cells in {MATRICES_DIR}, {len(exps)} known issues, {len(apis)} API ranges")
        return 0
    for f in args.files:
        files = sorted(f.glob("*.yaml")) if f.is_dir() else [f]
        if files and all(isinstance(d := load_yaml(x), dict) and "apis" in d for x in files):
            print(f"ok: {f}: {len(load_api_ranges(f))} API ranges")
        elif f.is_dir() or (isinstance(doc := load_yaml(f), dict) and "issues" in doc):
            print(f"ok: {f}: {len(load_expectations(f))} known issues")
        elif isinstance(doc, dict) and "sweeps" in doc:  # lists releases on the index to expand it
            from harness.cells.sweep import load_sweep

            print(f"ok: {f}: sweep of {len(load_sweep(f).cells)} cells")
        else:
            print(f"ok: {f}: {len(load_matrix(f).cells)} cells")
    return 0


COMMANDS = {"run": cmd_run, "report": cmd_report, "diff": cmd_diff, "matrix": cmd_matrix, "validate": cmd_validate}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse, dispatch, and turn UserError into one line with exit status 2."""
    try:
        return _main(argv)
    except BrokenPipeError:  # `harness ... | head`: the reader went away; bad circumstances, not a harness bug
        _quiet_stdout()
        print("error: the output pipe was closed before the command finished", file=sys.stderr)
        return 2


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail on the closed pipe again."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass


def _unencodable_word(argv: Sequence[str]) -> str | None:
    """One line for the first argument no file system encoding can take (a lone surrogate such as \\ud800 in
    a str given in-process: a real command line cannot hold one, Python decodes argv's bytes with
    surrogateescape), else None. Refused before anything runs: it would fail in whichever call first
    encodes it (a path's open, a subprocess's argv) as an internal error."""
    for i, word in enumerate(argv):
        try:
            os.fsencode(word)
        except UnicodeEncodeError as exc:
            return (f"argument {i + 1} ({ascii(word)[:80]}) holds {ascii(word[exc.start:exc.end])[1:-1]}, which is not "
                    "text a command line or a file name can hold (a lone surrogate); give it as text")
        except TypeError:
            return f"argument {i + 1} is a {type(word).__name__}, not text"
    return None


def _main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    bad = _unencodable_word(sys.argv[1:] if argv is None else list(argv))
    if bad:
        print(f"error: {bad}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    handler = COMMANDS.get(args.command) or getattr(args, "handler", None)
    from harness import lifeline

    lifeline.join_cgroup_from_env()  # started by news into a cgroup of its own: in it before anything starts
    lifeline.install_signal_handlers()  # SIGINT/SIGTERM/SIGHUP: kill the children, then unwind
    _absolute_paths(args)
    try:
        _check_fault_hook()
        return int(handler(args) or 0)
    except UserError as exc:
        print(f"error: {_one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        raise  # main() says it in one line
    except OSError as exc:  # a full or read-only disk is not a harness bug
        from harness.safeio import disk_error, path_error

        err = disk_error(exc) or path_error(exc)
        if err is None or os.environ.get("SEAMS_DEBUG"):
            return _internal(exc)
        print(f"error: {_one_line(str(err))}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", 2)
        print(f"interrupted ({signal.Signals(signum).name}): every child process was stopped; "
              "finished results are on disk", file=sys.stderr)
        return 128 + signum
    except ValueError as exc:
        err = _too_many_digits(exc) or _lone_surrogate(exc)  # bad input wherever it was parsed
        if err is None or os.environ.get("SEAMS_DEBUG"):
            return _internal(exc)
        print(f"error: {_one_line(str(err))}", file=sys.stderr)
        return err.exit_code
    except Exception as exc:  # a bug in the harness itself: say so in one line, traceback on request
        return _internal(exc)


def _lone_surrogate(exc: ValueError) -> UserError | None:
    """A UserError for text from the input (a JSON string's `\\ud800` escape, a path built from one) that a
    file name, a subprocess's argv or an encoded output cannot hold; the harness makes no surrogates itself.
    Else None."""
    if not isinstance(exc, UnicodeEncodeError) or "surrogates not allowed" not in str(exc):
        return None
    bad = exc.object[exc.start:exc.end] if isinstance(exc.object, str) else ""
    return UserError(f"a value in the input holds {ascii(bad)[1:-1] or 'a lone surrogate'} (a lone surrogate), "
                     f"which no file name or command line can hold: {ascii(exc.object)[:120]}")


def _too_many_digits(exc: ValueError) -> UserError | None:
    """A UserError for Python's bound on converting a long digit string to an int (a version `0.` followed
    by 5000 digits, a 5000-digit count): any number from the input may reach it - packaging's Version and
    SpecifierSet, JSON, YAML - and no number the harness reads needs that many digits. Else None."""
    if "integer string conversion" not in str(exc):
        return None
    return UserError(f"a number in the input has more than {sys.get_int_max_str_digits()} digits: no version, count "
                     "or id needs that many; check the file or option that holds it")


def _one_way_per_package(sourced: list[str], held: list[str]) -> None:
    """A package given both as a source (`--with jax=PATH`) and held at a version (`--with jax==0.6.0`) is
    ambiguous: one line, exit 2 (each kind's own repeats are refused where it is parsed)."""
    from packaging.utils import canonicalize_name

    names = {canonicalize_name(w.split("==", 1)[0]) for w in held if "==" in w}
    both = sorted(names & {canonicalize_name(w.split("=", 1)[0]) for w in sourced})
    if both:
        raise UserError(f"--with gives {', '.join(both)} both a source and a version; give one")


def _absolute_paths(args: argparse.Namespace) -> None:
    """Every path option made absolute against the caller's folder, once: the harness hands paths to
    processes that run elsewhere (pytest in the checkout, bisect under news), so any folder works."""
    for name, value in vars(args).items():
        if isinstance(value, Path):
            setattr(args, name, value.absolute())
        elif isinstance(value, list) and value and all(isinstance(v, Path) for v in value):
            setattr(args, name, [v.absolute() for v in value])


def _check_fault_hook() -> None:
    """A malformed SEAMS_FAULT (the anomaly tests' hook, harness.faults) is bad input, not ignored."""
    from harness import faults

    try:
        faults.check_env()
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _one_line(text: str) -> str:
    """The message as one printable line: newlines and control characters from input shown escaped."""
    from harness.redact import redact

    text = redact(text.encode("utf-8", "backslashreplace").decode("utf-8"))
    return "".join(ch if ch.isprintable() else ("\\n" if ch == "\n" else f"\\x{ord(ch):02x}") for ch in text)


def _internal(exc: BaseException) -> int:
    if os.environ.get("SEAMS_DEBUG"):
        raise exc
    print(f"internal error: {type(exc).__name__}: {_one_line(str(exc))} (a harness bug; rerun with SEAMS_DEBUG=1 for the traceback)",
          file=sys.stderr)
    return 3
