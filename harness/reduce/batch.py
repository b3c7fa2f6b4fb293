"""Reduce a batch of standalone scripts (`harness reduce`, `harness report --reduce`) and write
repro/CASE.min.py beside each (CASE.md then shows it first).

Each cell gets one fork server (its interpreter, the heavy packages imported once) for all its
scripts; a cell where the same case passes and the full script exits 0 (the fixing release first)
is the contrast every kept candidate must pass in. Figures go to repro/reduce.json.

An op case's script that the failing run's record made short (harness/report/standalone_op.py: only
the check the run failed) is minimal by construction: it is run once in its cell (the signature run:
it must fail, with the known issue's match where there is one) and recorded as such, not searched.
The others are reduced by cell, then known issue, so one reduction of an issue seeds the next script
with the same signature.

Under -j N, N worker processes each reduce whole parts (a cell and its set of heavy imports) and tell
each other and the harness what they do through the batch's shared folder (harness.reduce.shared:
seeds, claims, finished outcomes); a signal stops them all at once, a worker that dies is a recorded
fault, and what was finished is written either way.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

from packaging.version import InvalidVersion, Version

from harness.cells.envs import EnvError
from harness.errors import UserError
from harness.reduce.checks import ORACLE
from harness.reduce.cli import JAX_BUDGET_S, TORCH_BUDGET_S
from harness.reduce.normalise import reduced_script
from harness.reduce import memo
from harness.reduce import shared as folder
from harness.reduce.reducer import NotReducible, Reduction, reduce_script
from harness.reduce.script import split_script
from harness.reduce.server import ForkServer, compile_cache_env, heavy_imports

_TORCH = {"torch", "torch_xla", "torchax"}
MAX_CONTRAST = 2  # cells where the case passes that the reduced script is checked in (the search uses the first)
MAX_SERVERS = 2 + 2 * MAX_CONTRAST  # fork servers alive at once in a batch: one script's, fresh ones included
FRESH_PRELOAD = ("numpy", "torch")  # what a fresh server imports before forking: neither reads the cell's variables


@dataclass
class Job:
    """One script to reduce and what is known about it."""

    script: Path
    cell: str
    case_id: str | None = None
    contrast: list[str] = field(default_factory=list)  # cells to pass in, best first
    minimal: str | None = None  # the check an op script keeps, where the run's record made it short (no search)


@dataclass
class Outcome:
    """One script's reduction, as repro/reduce.json records it."""

    script: str
    cell: str
    lines_before: int
    lines_after: int | None = None
    seconds: float = 0.0
    candidates: int = 0
    ran: int = 0
    budget_hit: bool = False
    contrast: list[str] = field(default_factory=list)
    refused: str | None = None
    env_dropped: list[str] = field(default_factory=list)  # the cell's variables the reduced script does without
    seeded: bool = False  # the reduced code of an earlier script with the same signature was kept
    oracle: str = ""  # beside the signature: "contrast cell", "frozen checks" (the script's own, no passing cell) or ""
    by_construction: str | None = None  # minimal by construction: the one check the script keeps (run once, not searched)
    reused: bool = False  # an earlier batch's reduction of this very script and envs (harness.reduce.memo), run again
    resumed: bool = False  # the search went on from an earlier batch's budget-bound reduction of it (harness.reduce.memo)
    signature: str | None = None  # what the signature run gave (a script minimal by construction)
    # Not recorded in reduce.json: the reduced script (None when refused) and the script it was reduced from,
    # for write_reductions (which writes CASE.min.py only beside the same script).
    text: str | None = field(default=None, repr=False)
    source: str = field(default="", repr=False)

    def record(self) -> dict[str, Any]:
        """What repro/reduce.json holds for this script."""
        return {k: v for k, v in asdict(self).items() if k not in ("text", "source")}


def min_path(script: Path) -> Path:
    """repro/CASE.min.py for repro/CASE.py."""
    return script.with_name(script.name.removesuffix(".py") + ".min.py")


def known_match(source: str) -> str | None:
    """The known issue's `match` for the id the script's KNOWN_ISSUE literal names (the regex is the
    project's own, from matrices/known_issues/; the script only picks which)."""
    from harness.judge.expectations import load_expectations

    try:
        value = split_script(source).facts.get("KNOWN_ISSUE")
    except SyntaxError:
        return None
    ident = (value or "").split(":", 1)[0].strip()
    exp = next((e for e in load_expectations() if e.id == ident), None) if ident else None
    return exp.match if exp else None


def cell_named(name: str):
    """The catalogue's cell of that name (matrices/*.yaml), or a UserError naming how to list them."""
    from harness.cells.matrix import catalogue

    found = [c for c in catalogue().cells if c.name == name]
    if not found:
        raise UserError(f"no cell {name!r} in matrices/*.yaml; pass --cell with one of `python -m harness matrix --format names`")
    return found[0]


_STACK = ("torch_xla", "torch-xla", "torchax", "jax")  # what a cell is a release of, in this order


def _pinned(pins: dict[str, Any], pkg: str) -> Version | None:
    try:
        return Version(str(pins[pkg])) if pins.get(pkg) else None
    except InvalidVersion:
        return None


def contrast_cells(report: dict[str, Any], case_id: str, failing: str) -> list[str]:
    """Cells of the report where the case passes, compared on the package the failing cell is a release
    of (torch_xla, else torchax, else jax): the later releases first, the nearest (the fixing one)
    first; then the same release in another stack (newer jax under the same torch_xla); then cells
    without that package (torchax on its own, where a torch_xla cell fails); then older releases, the
    nearest first (where the case passed before a regression)."""
    cells = {c["cell"]: c for c in report["cells"]}
    case = next((c for c in report["cases"] if c["id"] == case_id), None)
    if case is None or failing not in cells:
        return []
    pins = cells[failing].get("pins") or {}
    key = next((p for p in _STACK if _pinned(pins, p) is not None), None)
    passing = sorted(n for n, r in case["results"].items() if r.get("raw") == "pass" and n in cells and n != failing)
    if key is None:
        return passing
    bad = _pinned(pins, key)
    assert bad is not None
    have = {n: _pinned(cells[n].get("pins") or {}, key) for n in passing}
    later = sorted((n for n in passing if have[n] is not None and have[n] > bad), key=lambda n: have[n])
    same = [n for n in passing if have[n] == bad]
    older = sorted((n for n in passing if have[n] is not None and have[n] < bad), key=lambda n: have[n], reverse=True)
    return later + same + [n for n in passing if have[n] is None] + older


# A batch writes what it has reduced so far at least this often (and after each part under -j): a kill,
# a full disk or a crashed worker hours into a default run's reduction loses at most this much work.
CHECKPOINT_S = 300.0
Checkpoint = Callable[[list[Job], list[Outcome]], None]


def reduce_jobs(jobs: list[Job], budget_s: float | None = None, say: Callable[[str], None] = print,
                workers: int = 1, checkpoint: Checkpoint | None = None, memo_dir: Path | None = None) -> list[Outcome]:
    """Reduce every job's script; the outcomes come back in sorted_jobs order, each with its reduced text
    (write_reductions writes them). workers > 1: that many processes at once, each reducing whole parts
    of the batch (parts_for_workers) with fork servers of its own; progress lines then come from each.
    checkpoint(done jobs, their outcomes), in sorted_jobs order: everything reduced so far, called every
    CHECKPOINT_S seconds at most (after each part under workers > 1), so the caller can write it.
    memo_dir: where earlier batches' reductions are kept (harness.reduce.memo), each taken again where it
    still holds; None: every script is searched."""
    ordered = sorted_jobs(jobs)
    parts = parts_for_workers(ordered, workers)
    if len(parts) <= 1:
        return _reduce_in_order(ordered, budget_s, say, checkpoint, memo_dir=memo_dir)
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    index = {id(j): i for i, j in enumerate(ordered)}
    outcomes: list[Outcome | None] = [None] * len(ordered)
    # spawn: a worker starts clean (no lock or thread of this process copied half-way); each part is
    # a list of Jobs and comes back as Outcomes, both plain dataclasses. The processes share their
    # reductions as seeds through a private folder: a part holds one cell, and the same case failing the
    # same way in another cell is the seeds' main catch (one run where it fails the same way there).
    with tempfile.TemporaryDirectory(prefix="seams-seeds-") as shared:
        # each worker dies with this process, ends at once on a signal (its fork servers killed) and leaves
        # its pid in the shared folder, for the stop below
        pool = ProcessPoolExecutor(min(workers, len(parts)), mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_start, initargs=(Path(shared),))
        by_script = {str(j.script): i for i, j in enumerate(ordered)}
        read: set[str] = set()

        def take() -> None:
            """The outcomes the workers published since the last look (the running parts' scripts done)."""
            names = {f.name for f in fields(Outcome)}
            for script, record in folder.take_outcomes(Path(shared), read):
                k = by_script.get(script)
                if k is not None and outcomes[k] is None and set(record) == names:
                    try:
                        outcomes[k] = Outcome(**record)
                    except TypeError:
                        continue

        def save() -> None:
            """Checkpoint everything finished: the parts done and the running parts' scripts done so far."""
            take()
            done = [i for i, o in enumerate(outcomes) if o is not None]
            if checkpoint is not None and done:
                checkpoint([ordered[i] for i in done], [outcomes[i] for i in done])  # type: ignore[misc]

        try:
            futures = {pool.submit(_part, part, budget_s, Path(shared), memo_dir): part for part in parts}  # the largest first
            started = last = time.monotonic()
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=CHECKPOINT_S, return_when=FIRST_COMPLETED)
                for fut in finished:
                    for job, out in zip(futures[fut], fut.result()):
                        outcomes[index[id(job)]] = out
                    say(f"reduce: a part of {len(futures[fut])} scripts done ({futures[fut][0].cell}); "
                        f"{sum(o is not None for o in outcomes)} of {len(outcomes)} scripts in "
                        f"{time.monotonic() - started:.0f} s")
                    sys.stdout.flush()  # whole, before a worker's next line
                if pending and (finished or time.monotonic() - last >= CHECKPOINT_S):
                    save()
                    last = time.monotonic()
        except BrokenProcessPool:
            # a worker died (the OOM killer, a kill from outside): a fault, not the batch's end. Its pool
            # cannot go on; what the workers finished stands, the rest is recorded as not reduced, and why
            pool.shutdown(wait=False, cancel_futures=True)
            folder.stop_workers(Path(shared))
            take()
            say("reduce: a worker process died (killed from outside, or out of memory); the scripts not done "
                "are recorded as not reduced")
            for k, o in enumerate(outcomes):
                if o is None:
                    job = ordered[k]
                    outcomes[k] = Outcome(job.script.name, job.cell, len(_text(job.script).splitlines()),
                                          refused="not reduced: a -j worker process died (killed from outside, "
                                                  "or out of memory) before it was done; reduce it again")
        except BaseException:
            # Ctrl-C, SIGTERM: no part may start after it (the executor's shutdown waited for every queued
            # part: hours on a default run), the parts running stop now, and what they finished is written
            pool.shutdown(wait=False, cancel_futures=True)
            folder.stop_workers(Path(shared))
            save()
            raise
        else:
            pool.shutdown(wait=True)
    return [o for o in outcomes if o is not None]


def _worker_start(shared: Path) -> None:
    """A -j worker's start: it dies with the harness (the parent-death signal), a signal kills its fork
    servers (their candidates die with them) and ends it at once, and it leaves its pid in the batch's
    shared folder (harness.reduce.shared.stop_workers)."""
    import signal

    from harness import lifeline

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _worker_signal)
    lifeline.set_parent_death_signal(signal.SIGTERM)
    folder.register_worker(shared)


def _worker_signal(signum: int, _frame: object) -> None:
    from harness import lifeline

    # No unwinding: the servers' groups are killed here, each candidate dies with its server, and the
    # worker may be blocked on the executor's queue lock, where a raise would leave it to the others.
    lifeline.kill_all()
    os._exit(128 + signum)


def _part(part: list[Job], budget_s: float | None, shared: Path, memo_dir: Path | None = None) -> list[Outcome]:
    """One part, in a -j worker."""
    return _reduce_in_order(part, budget_s, _whole_line, None, shared, memo_dir)


def _whole_line(message: str) -> None:
    """A worker's line, written whole: the workers and the harness share one stdout (a file or a pipe,
    block-buffered), and a line flushed in pieces ran into another process's."""
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


def parts_for_workers(ordered: list[Job], workers: int) -> list[list[Job]]:
    """The batch cut for `workers` processes, largest part first (a pool hands the next part to the first
    process free): one part per cell and set of heavy imports, since a part starts its own fork servers
    (a torch_xla one imports for 15-25 s of CPU) and seeds its own reductions; a group of more than
    len/workers scripts is cut in that many slices (their order kept), so one cell's op scripts keep
    every process busy. Order within a part is the batch's."""
    if workers <= 1 or len(ordered) <= 1:
        return [ordered] if ordered else []
    groups: dict[tuple, list[Job]] = {}
    for job in ordered:
        groups.setdefault((job.cell, tuple(heavy_imports(_text(job.script)))), []).append(job)
    most = -(-len(ordered) // workers)  # ceil
    parts = [g[i:i + most] for g in groups.values() for i in range(0, len(g), most)]
    return sorted(parts, key=len, reverse=True)


def _reduce_in_order(ordered: list[Job], budget_s: float | None, say: Callable[[str], None],
                     checkpoint: Checkpoint | None = None, shared: Path | None = None,
                     memo_dir: Path | None = None) -> list[Outcome]:
    """Reduce the jobs one after another, in this order (one fork server per cell and imports, shared by
    its scripts; each reduction seeds the later ones with the same signature); checkpoint as reduce_jobs.
    shared: a folder the batch's processes publish their reductions in, each taken as a seed here too."""
    from harness.cells.envs import ensure_env

    servers: dict[tuple[str, bool, tuple[str, ...]], ForkServer] = {}  # in the order last used
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="seams-reduce-") as tmp:
        def server(name: str, preload: list[str], fresh: bool = False) -> ForkServer:
            """The cell's fork server for scripts importing `preload` (its variables set, those imported
            once: a jax-only script never runs where torch_xla was imported); fresh: one that imports
            only numpy and torch (they read none of the cell's variables) and sets none of them, where
            a script without a variable runs without it."""
            key = (name, fresh, tuple(m for m in preload if m in FRESH_PRELOAD) if fresh else tuple(preload))
            if key not in servers:
                while len(servers) >= MAX_SERVERS:  # a torch_xla server holds a GB or more: the oldest goes
                    servers.pop(next(iter(servers))).close()
                cell = cell_named(name)
                scratch = Path(tmp) / f"{name}-{len(outcomes)}-{'fresh' if fresh else 'cell'}-{'-'.join(key[2]) or 'none'}"
                env = {} if fresh else {**cell.run_env(), **compile_cache_env(Path(tmp) / f"{name}-jax-cache")}
                s = ForkServer(ensure_env(cell).python, env, list(key[2]), scratch, name)
                s.start()
                servers[key] = s
            servers[key] = servers.pop(key)  # the most recently used last
            return servers[key]

        seeds: list = []  # the reductions so far, the latest first: a script with the same signature starts there
        taken: set[str] = set()  # the shared folder's files already among the seeds
        last = time.monotonic()
        queue = list(range(len(ordered)))
        done: dict[int, Outcome] = {}
        deferred: set[int] = set()
        try:
            while queue:
                i = queue.pop(0)
                job = ordered[i]
                claim = None
                if shared is not None and job.minimal is None:
                    if i not in deferred and folder.claimed_elsewhere(shared, _case_of(job)):
                        # another process is reducing this case (another cell) right now: its reduction will
                        # be this script's seed, so this one waits, once, at the end of the part
                        deferred.add(i)
                        queue.append(i)
                        continue
                    claim = folder.claim(shared, _case_of(job))
                if shared is not None:
                    folder.take_seeds(shared, seeds, taken)
                first = seeds[0] if seeds else None
                try:
                    where = f"[{job.cell} {len(done) + 1}/{len(ordered)}] "  # a batch of hours: how far this part is
                    done[i] = _one(job, server, budget_s, lambda m, w=where: say(w + m if not m.startswith(" ") else m),
                                   seeds, memo_dir=memo_dir)
                finally:
                    if claim is not None:
                        claim.unlink(missing_ok=True)
                outcomes.append(done[i])
                if shared is not None:
                    folder.publish_outcome(shared, job.script, asdict(done[i]))
                    if seeds and seeds[0] is not first:
                        taken.add(folder.publish_seed(shared, seeds[0]))
                if checkpoint is not None and queue and time.monotonic() - last >= CHECKPOINT_S:
                    kept = sorted(done)
                    checkpoint([ordered[k] for k in kept], [done[k] for k in kept])
                    last = time.monotonic()
        except BaseException:
            if checkpoint is not None and done:  # Ctrl-C, SIGTERM: what is finished is written before it ends
                kept = sorted(done)
                checkpoint([ordered[k] for k in kept], [done[k] for k in kept])
            raise
        finally:
            for s in servers.values():
                s.close()
    return [done[i] for i in sorted(done)]


def _case_of(job: Job) -> str:
    """The case a job reduces (its id, else the script's name less its cell): what a claim names."""
    return job.case_id or job.script.name.partition("__")[2] or job.script.name


def _installs(name: str, modules: list[str]) -> bool:
    """Whether the catalogue's cell installs every heavy package the script imports (numpy always)."""
    from harness.cells.cell import IMPORT_NAMES
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    cell = cell_named(name)
    dists = list(cell.pins)
    for extra in cell.extras:
        try:
            dists.append(Requirement(str(extra)).name)
        except InvalidRequirement:
            continue
    have = {IMPORT_NAMES.get(canonicalize_name(d), canonicalize_name(d).replace("-", "_")) for d in dists}
    return all(m in have for m in modules if m != "numpy")


def sorted_jobs(jobs: list[Job]) -> list[Job]:
    """The order a batch reduces in (and its outcomes come back in): by cell, then by what the script
    imports (one fork server for the run of them), then by known issue (one reduction per issue and
    cell: the first one's seeds the next with the same signature), then by name (a case's variants side by side)."""
    def key(j: Job) -> tuple:
        text = _text(j.script)  # read once per job
        return (j.cell, heavy_imports(text), _issue(text), j.script.name)

    return sorted(jobs, key=key)


def _issue(source: str) -> str:
    """The script's KNOWN_ISSUE literal (only to sort by; "" for none)."""
    try:
        return str(split_script(source).facts.get("KNOWN_ISSUE") or "")
    except SyntaxError:
        return ""


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# An op script's OpInfo database (2 s or more to import): imported once in the fork server, not in each run
OPINFO = "torch.testing._internal.common_methods_invocations"


def _one(job: Job, server: Callable[..., ForkServer], budget_s: float | None,
         say: Callable[[str], None], seeds: list | None = None, memo_dir: Path | None = None) -> Outcome:
    source = job.script.read_text(encoding="utf-8", errors="replace")
    out = Outcome(job.script.name, job.cell, len(source.splitlines()), source=source)
    preload = heavy_imports(source)
    if job.minimal is not None:  # an op script imports the OpInfo database (once, in the server); a coexist one not
        opinfo = [OPINFO] if (job.case_id or "").startswith("suites/torchax_ops/") else []
        return _by_construction(job, source, out, server(job.cell, [*preload, *opinfo]), say)
    budget = budget_s if budget_s is not None else (TORCH_BUDGET_S if set(preload) & _TORCH else JAX_BUDGET_S)
    start = time.monotonic()
    say(f"reduce {job.script.name} ({out.lines_before} lines) in {job.cell}")
    try:
        runs_it = [c for c in job.contrast if _installs(c, preload)][:MAX_CONTRAST]  # jax alone cannot run torch_xla
        contrast = [server(c, preload) for c in runs_it]
        cell, match = server(job.cell, preload), known_match(source)
        name = memo.key(source, cell, contrast, match, budget) if memo_dir is not None else None
        record = memo.load(memo_dir, name) if memo_dir is not None and name else None
        resume = record if record is not None and memo.resumable(record) else None
        red = _reused(record, cell, contrast, match, out, say) if record is not None and resume is None else None
        if red is None:
            red = reduce_script(source, cell, match, contrast=contrast,
                                budget_s=budget, say=lambda m: say("  " + m), fresh=server(job.cell, preload, True),
                                fresh_contrast=[server(c, preload, True) for c in runs_it],
                                seeds=seeds or (), resume=resume)
            if resume is not None and red.resumed:
                red = _shorter(red, resume, cell, contrast, match, say)
            why = memo.store(memo_dir, name, red) if memo_dir is not None and name else None
            if why:
                say(f"  the reduction could not be kept for the next batch: {why}")
    except NotReducible as exc:
        out.refused, out.seconds = str(exc), round(time.monotonic() - start, 1)
        say(f"  refused: {exc}")
        return out
    except (EnvError, UserError) as exc:  # a cell that cannot be built or found: this script, not the batch
        out.refused, out.seconds = f"cannot run in {job.cell}: {exc}", round(time.monotonic() - start, 1)
        say(f"  refused: {out.refused}")
        return out
    text = _written(red)
    out.text = text  # written by write_reductions, with the batch's other outputs, as a whole
    out.lines_after, out.seconds = len(text.splitlines()), round(time.monotonic() - start, 1)
    out.candidates, out.ran, out.budget_hit, out.contrast = red.candidates, out.ran + red.ran, red.budget_hit, red.contrast
    out.env_dropped, out.seeded, out.oracle, out.resumed = red.env_dropped, red.seeded, red.oracle, red.resumed
    if seeds is not None and all(x.body != red.body or x.signature != red.signature for x in seeds):
        seeds.insert(0, red)
    how = (f"an earlier batch's reduction, {out.ran} checking runs" if out.reused else
           f"{out.ran} runs" + (", resumed from an earlier batch's reduction" if red.resumed else "")
           + (", budget reached" if red.budget_hit else ""))
    say(f"  {out.lines_before} -> {out.lines_after} lines in {out.seconds} s ({how}) -> {min_path(job.script).name}")
    return out


def _reused(red: Reduction, cell: ForkServer, contrast: list[ForkServer], match: str | None,
            out: Outcome, say: Callable[[str], None]) -> Reduction | None:
    """An earlier batch's reduction of this script in these envs, where one run in the cell and one in each
    cell the full script passed in show it still holds (out records the runs); else None (search)."""
    holds, out.ran = memo.still_holds(red, cell, contrast, match, memo.TIMEOUT_S)
    if not holds:
        if out.ran:  # else a cell it passed in is not among this batch's: searched, silently, as before
            say(f"  an earlier batch's reduction no longer fails as recorded here ({out.ran} runs): searched again")
        return None
    out.reused = True
    say(f"  an earlier batch's reduction of this script in these envs: it still holds ({out.ran} runs)")
    return red


def _written(red: Reduction) -> str:
    """The reduced script CASE.min.py holds."""
    return reduced_script(red.facts, red.env, red.body, red.contrast, frozen=red.oracle == ORACLE,
                          crash=red.signature.status < 0)


def _shorter(red: Reduction, record: Reduction, cell: ForkServer, contrast: list[ForkServer], match: str | None,
             say: Callable[[str], None]) -> Reduction:
    """The search resumed from record, or record where that search wrote nothing shorter and the record still
    holds (its checks as a kept record's): then settled, so a later batch takes it and does not resume again
    (each resume costs a whole budget; one that gains nothing would be the next one's start again)."""
    kept = len(_written(record).splitlines())
    if len(_written(red).splitlines()) < kept:
        return red
    holds, ran = memo.still_holds(record, cell, contrast, match, memo.TIMEOUT_S)
    if not holds:
        return red
    say(f"  the resumed search wrote nothing shorter than the earlier batch's {kept} lines: that one is kept, settled")
    # this batch's search is what reduce.json reports: one that ended within the budget found the record a
    # fixpoint, and the record is no longer a cut-short search's
    record.candidates, record.ran, record.seconds, record.budget_hit = red.candidates, red.ran + ran, red.seconds, red.budget_hit
    record.resumed = record.settled = True
    return record


def _by_construction(job: Job, source: str, out: Outcome, server: ForkServer, say: Callable[[str], None]) -> Outcome:
    """A script minimal by construction: one run in its cell (the signature run), recorded, not searched."""
    from harness.reduce.signature import signature

    start = time.monotonic()
    try:
        match = known_match(source)
        sig = signature(server.run(source, 600), source, match)
    except (EnvError, UserError) as exc:
        out.refused, out.seconds = f"cannot run in {job.cell}: {exc}", round(time.monotonic() - start, 1)
        say(f"  refused: {out.refused}")
        return out
    out.seconds, out.ran, out.signature = round(time.monotonic() - start, 1), 1, sig.describe()
    if sig.status in (0, 125):
        out.refused = f"the script does not fail here (exit {sig.status}): nothing to keep"
    elif match and str(sig.failure).startswith("no match"):
        out.refused = "the known issue's match is not in the script's output: its failure is another one"
    else:
        out.lines_after, out.by_construction = out.lines_before, job.minimal
    say(f"minimal by construction {job.script.name} ({out.lines_before} lines, only its {job.minimal} check) in "
        f"{job.cell}: {out.refused or sig.describe()} in {out.seconds} s")
    return out


def report_jobs(report_dir: Path) -> list[Job]:
    """A job for every failing result of a report that has repro/CASE.py."""
    from harness.report.diff import load_report
    from harness.report.model import iter_results
    from harness.report.repro import FAILING_RAW, safe_name

    report = load_report(report_dir / "report.json")
    cells = {c["cell"]: c for c in report["cells"]}
    jobs = []
    for case_id, cell, r in iter_results(report):
        script = report_dir / "repro" / f"{safe_name(cell)}__{safe_name(case_id or 'cell')}.py"
        if case_id and r.get("raw") in FAILING_RAW and script.is_file():
            minimal = _minimal(script, case_id, cells[cell], r)
            jobs.append(Job(script, cell, case_id, contrast_cells(report, case_id, cell), minimal))
    return jobs


def _minimal(script: Path, case_id: str, cell: dict[str, Any], r: dict[str, Any]) -> str | None:
    """The check an op case's or a coexist case's script keeps where the run's record made it short and the
    file is that script (exported again from the same result: a file another exporter wrote is searched as
    any other)."""
    from harness.report.repro import script_for, short_check

    check = short_check(case_id, r)
    if check is None or _text(script) != script_for(case_id, cell, r):
        return None
    return check


def rewrite_markdown(report_dir: Path, names: frozenset[str]) -> int:
    """CASE.md again for each result whose script `names` holds: the reduced script first where it has a
    CASE.min.py, else as `harness report` wrote it (reduced again and refused, or its earlier reduction
    cleared); returns how many."""
    from harness.report.diff import load_report
    from harness.report.repro import repro_files, repro_markdown, script_for, since_for
    from harness.safeio import atomic_write

    report = load_report(report_dir / "report.json")
    cells = {c["cell"]: c for c in report["cells"]}
    n = 0
    for case_id, cell, r, name in repro_files(report, limit=None):  # report --reduce writes past the cap
        stem = name.removesuffix(".md")
        if f"{stem}.py" not in names:
            continue
        reduced = report_dir / "repro" / f"{stem}.min.py"
        have = reduced.is_file() and not reduced.is_symlink()
        script = script_for(case_id, cells[cell], r)
        md = repro_markdown(case_id, cells[cell], r, script, f"{stem}.py",  # the title as report wrote it (since when)
                            reduced=reduced.read_text(encoding="utf-8") if have else None, reduced_name=reduced.name,
                            since=since_for(report, case_id, cell))
        atomic_write(report_dir / "repro" / name, md, durable=False)
        n += 1
    return n


def write_figures(repro_dir: Path, outcomes: list[Outcome], merge: bool = False) -> None:
    """repro/reduce.json: one record per script (the docs' figures are read from it). merge: the
    records of scripts reduced before (`harness reduce` on some of them) stay, a script's latest wins."""
    from harness.safeio import atomic_write

    records: dict[str, dict] = {}
    path = repro_dir / "reduce.json"
    if merge and path.is_file() and not path.is_symlink():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            records = {r["script"]: r for r in old if isinstance(r, dict) and isinstance(r.get("script"), str)}
        except (ValueError, OSError):
            records = {}
    records.update({o.script: o.record() for o in outcomes})
    atomic_write(path, json.dumps(list(records.values()), indent=1) + "\n", durable=False)


def scripts_left(scripts: list[Path]) -> list[Path]:
    """`harness reduce --rest`: the scripts that repro/reduce.json beside each does not record yet (a
    batch stopped before them), less the CASE.min.py outputs a glob brings along. A reduce.json that is
    not a list of records is one line and exit 2: what is left cannot be told."""
    recorded: dict[Path, set[str]] = {}
    left = []
    for script in scripts:
        if script.name.endswith(".min.py"):
            continue
        folder = script.parent
        if folder not in recorded:
            recorded[folder] = _recorded(folder / "reduce.json")
        if script.name not in recorded[folder]:
            left.append(script)
    return left


def _recorded(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not a reduce.json (unreadable: {type(exc).__name__}); what is left cannot be told") from None
    if not isinstance(records, list) or not all(isinstance(r, dict) and isinstance(r.get("script"), str) for r in records):
        raise UserError(f"{path}: not a reduce.json (a list of records, each naming its script); what is left cannot be told")
    return {r["script"] for r in records}


def reduce_report(report_dir: Path, budget_s: float | None = None, say: Callable[[str], None] = print,
                  workers: int = 1, memo_dir: Path | None = None) -> list[Outcome]:
    """`harness report --reduce`: reduce every failing result's script of the report in report_dir
    (memo_dir: as reduce_jobs)."""
    jobs = report_jobs(report_dir)
    check_outputs([j.script for j in jobs])
    write = ReductionWriter(merge=False, say=say)
    outcomes = reduce_jobs(jobs, budget_s, say, workers, checkpoint=write, memo_dir=memo_dir)
    write(jobs, outcomes)
    return outcomes


def recover_set(script: Path) -> None:
    """Put back the report set that holds OUT/repro/CASE.py where a writer killed without RENAME_EXCHANGE
    left it aside (harness.safeio.sweep_stale), before the script is looked for."""
    from harness.report.command import SET_DIR
    from harness.safeio import sweep_stale

    sweep_stale(Path(os.path.abspath(script)).parent.parent, SET_DIR)


def report_home(script: Path) -> tuple[Path, str] | None:
    """(the --out folder, the set folder's name) of the report set holding repro/CASE.py, or None for a
    script outside one. OUT/repro/CASE.py and OUT/report-set/repro/CASE.py are in OUT's set; a report
    written before sets had a folder (OUT/report.json a regular file) is adopted when the set is switched."""
    from harness.report.command import SET_DIR

    home = script.resolve().parent.parent
    if home.name == SET_DIR and (home / "report.json").is_file():
        return home.parent, SET_DIR
    if (home / "report.json").is_file():  # an earlier version's layout, or one a killed adoption half made
        return home, SET_DIR
    return None


def check_outputs(scripts: list[Path]) -> None:
    """UserError (one line) before any reduction runs where its outputs could not be written: a symlink or
    special file in a report set's place, or where a CASE.min.py goes beside a script outside a set."""
    from harness.report.command import SET_ENTRIES
    from harness.safeio import check_set_place, refuse_special

    for script in scripts:
        home = report_home(script)
        if home is None:
            refuse_special(min_path(script))
        else:
            check_set_place(home[0], SET_ENTRIES, home[1])


def write_reductions(jobs: list[Job], outcomes: list[Outcome], merge: bool, say: Callable[[str], None] = print) -> None:
    """Write each reduced script as CASE.min.py, with repro/reduce.json and the CASE.md files that show it,
    as a new report set switched in whole (harness.safeio.replacing_set): a kill at any step leaves the
    previous set or the new one. The new set starts as the current one; a script reduced again and refused
    loses its earlier CASE.min.py. merge: reduce.json keeps the records of scripts not in this batch (else
    it holds this batch's alone, and no earlier CASE.min.py stays). A CASE.min.py is written only where the
    set still holds the script it was reduced from (a report that replaced it meanwhile: said, not written).
    A script outside a report set gets its CASE.min.py beside it (one atomic rename)."""
    from harness.report.command import SET_ENTRIES
    from harness.safeio import atomic_write, replacing_set

    homes: dict[tuple[Path, str], list[tuple[Job, Outcome]]] = {}
    for job, out in zip(sorted_jobs(jobs), outcomes):
        home = report_home(job.script)
        if home is None:
            if out.text is not None:
                atomic_write(min_path(job.script), out.text, durable=False)
            continue
        homes.setdefault(home, []).append((job, out))
    for (out_dir, set_name), done in homes.items():
        with replacing_set(out_dir, SET_ENTRIES, set_name, from_current=True) as stage:
            repro = stage / "repro"
            names = {job.script.name for job, _ in done}
            for p in list(repro.glob("*.min.py")) if repro.is_dir() else []:
                if not merge or p.name.removesuffix(".min.py") + ".py" in names:
                    p.unlink()  # an earlier reduction this batch does not produce
                    names.add(p.name.removesuffix(".min.py") + ".py")  # its CASE.md, without it
            for job, out in done:
                if out.text is None:
                    continue
                script = repro / job.script.name
                if _text(script) != out.source:
                    say(f"{job.script.name}: the report in {out_dir} has another script by that name now; "
                        "its reduction was not written")
                    continue
                atomic_write(min_path(script), out.text, durable=False)
            if repro.is_dir():
                write_figures(repro, [o for _, o in done], merge=merge)
                rewrite_markdown(stage, frozenset(names))


class ReductionWriter:
    """write_reductions for a batch's checkpoints and its end: each call writes only the outcomes no
    call before it wrote, since the report set holds those already (each call switches a whole set in).
    A default run's checkpoints (every CHECKPOINT_S, about 29 in 2.5 h) had rewritten every CASE.min.py
    and CASE.md done so far each time. merge=False (report --reduce): the first call clears an earlier
    batch's reductions and reduce.json, the later ones add to what it wrote."""

    def __init__(self, merge: bool, say: Callable[[str], None] = print):
        self.merge, self.say = merge, say
        self.written: set[str] = set()
        self.calls = 0

    def __call__(self, jobs: list[Job], outcomes: list[Outcome]) -> None:
        new = [(j, o) for j, o in zip(sorted_jobs(jobs), outcomes) if str(j.script) not in self.written]
        if not new and self.calls:
            return
        write_reductions([j for j, _ in new], [o for _, o in new], merge=self.merge or self.calls > 0, say=self.say)
        self.calls += 1
        self.written.update(str(j.script) for j, _ in new)


def summary(outcomes: list[Outcome]) -> str:
    """One line: how many reduced, lengths before and after, time (and how many were minimal by construction)."""
    built = [o for o in outcomes if o.by_construction]
    if built:
        rest = summary([o for o in outcomes if not o.by_construction])
        return (f"{len(built)} scripts minimal by construction (one signature run each, "
                f"{sum(o.seconds for o in built):.0f} s); {rest}")
    done = [o for o in outcomes if o.lines_after is not None]
    if not done:
        return f"reduce: 0 of {len(outcomes)} scripts reduced"
    after = sorted(o.lines_after for o in done if o.lines_after is not None)
    before = sorted(o.lines_before for o in done)
    return (f"reduce: {len(done)} of {len(outcomes)} scripts reduced; lines {before[0]}-{before[-1]} "
            f"(median {_median(before)}) -> {after[0]}-{after[-1]} (median {_median(after)}); "
            f"{sum(o.seconds for o in outcomes):.0f} s, the slowest {max(o.seconds for o in outcomes):.0f} s")


def _median(xs: list[int]) -> float:
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
