"""Reductions kept from one batch to the next: a nightly reduces the same failing scripts in the same
cell envs night after night (2 h 26 min for the default run's 8,852 on 2 cores), and where nothing that
decides a reduction changed, the last one is taken again once a run shows it still holds.

What decides a reduction is the key: the reducer's own source (harness/reduce/*.py and the fork server
it runs candidates in: a changed reducer searches again), the full script, the cell's interpreter (its
env folder is NAME-HASH12, the hash of its pins) and variables, the contrast cells' interpreters and
variables, the known issue's match and the budget. On a hit the reduced code runs once in the cell's
fork server, where its signature must be the recorded one, and once in each contrast cell, where it must
exit 0: the checks a search's last candidate passed. The variables it dropped were dropped by fresh runs
of this same code in these same envs (as harness.reduce.reducer._same_program takes a seed's). A miss,
or a record that no longer holds, is searched as if there were none, and the search's result replaces
the record. A record whose search stopped at the budget is not taken but resumed: the next search starts
from its code (harness.reduce.reducer.reduce_script's `resume`), and its result replaces the record where
it is shorter; where it is not, the record stays, settled, and later batches take it.

The folder ($SEAMS_REDUCE_CACHE, default ~/.cache/xla-seams/reductions) is the user's cache, beside
the cell envs the harness runs and with the same trust: a record's code is a script the reducer wrote,
and it is only ever run as a candidate under the predicate. A record is read as JSON data; one that
does not parse, or has the wrong shape, is a miss.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from harness.errors import UserError
from harness.reduce.reducer import Reduction
from harness.reduce.script import assemble
from harness.reduce.server import ForkServer, compile_cache_env
from harness.reduce.signature import signature
from harness.safeio import atomic_write, folder_from_env

MAX_RECORD_BYTES = 1_000_000  # a reduced script and its figures; more is not a record this wrote
CACHE_VARIABLES = frozenset(compile_cache_env(Path()))  # the names only: left out of the key (key())
TIMEOUT_S = 300  # the checking runs' alarm (a search's candidates get 3x the original's run, at least 10 s)


def cache_dir() -> Path:
    """Where the records are ($SEAMS_REDUCE_CACHE, else ~/.cache/xla-seams/reductions)."""
    return folder_from_env("SEAMS_REDUCE_CACHE", Path.home() / ".cache" / "xla-seams" / "reductions")


@lru_cache(maxsize=1)
def reducer_version() -> str:
    """A hash of the reducer's source: a record made by other reducer code is not this reducer's result. The
    fork server's too (harness/incell/forkserver.py: what a run records, the lines it traces, decides a
    reduction under frozen checks)."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in [*sorted(here.glob("*.py")), here.parent / "incell" / "forkserver.py"]:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def key(source: str, cell: ForkServer, contrast: Sequence[ForkServer], match: str | None, budget_s: float) -> str:
    """The record's name for this script, reduced in this cell against these contrast cells."""
    def where(s: ForkServer) -> list:
        # the compilation cache's folder is the batch's own scratch (a new one each batch): where candidates'
        # executables are cached decides nothing a reduction keeps (a hit is the miss's executable)
        return [str(s.python), sorted((k, v) for k, v in s.env.items() if k not in CACHE_VARIABLES)]

    what = {"reducer": reducer_version(), "script": source, "cell": where(cell),
            "contrast": [where(c) for c in contrast], "match": match, "budget_s": budget_s}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def store(folder: Path, name: str, red: Reduction) -> str | None:
    """Keep red under name (written whole: a reader sees the old record or the new one); None, or why it
    could not be kept (a full disk, a folder not writable: the reduction stands, the next batch searches)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / f"{name}.json", json.dumps(red.record()), durable=False)
    except (OSError, UserError) as exc:
        return str(exc)
    return None


def load(folder: Path, name: str) -> Reduction | None:
    """The record kept under name, or None (none, or not one this module wrote)."""
    path = folder / f"{name}.json"
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_RECORD_BYTES:
            return None
        return Reduction.from_record(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def resumable(red: Reduction) -> bool:
    """Whether a later batch goes on with red's search rather than taking it: it stopped at the budget, and no
    search resumed from it has yet come out no shorter."""
    return red.budget_hit and not red.settled


def still_holds(red: Reduction, cell: ForkServer, contrast: Sequence[ForkServer], match: str | None,
                timeout_s: int) -> tuple[bool, int]:
    """(whether the recorded reduction still fails as recorded in the cell and passes in each contrast cell it
    passed in when recorded, how many runs that took); (False, 0) where one of those is not among contrast."""
    contrast = [c for c in contrast if c.name in red.contrast]
    if len(contrast) != len(red.contrast):
        return False, 0
    full = assemble(red.env, red.body)
    run = cell.run(full, timeout_s)
    if signature(run, full, match) != red.signature:
        return False, 1
    for n, c in enumerate(contrast, start=2):
        if c.run(full, timeout_s).status != 0:
            return False, n
    return True, 1 + len(contrast)
