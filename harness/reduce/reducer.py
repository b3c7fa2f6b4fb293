"""Reduce a failing standalone script to what still fails the same way (pysource-minimize does the
search, with rewrites of this project's own around it: harness.reduce.transforms and
harness.reduce.unfold; this module says what "the same way" is and runs the candidates).

The script's provenance literals (CASE, CELL, INSTALL, ...: harness.reduce.script) are kept aside
and written back, shorter, by harness.reduce.normalise. The environment preamble (`os.environ`:
the cell's variables, which jax and torch_xla read before anything runs) is kept while the code is
reduced, under the predicate that a candidate's run has the original's signature
(harness.reduce.signature); then each variable is dropped where a fresh interpreter without it
(no fork server: the server imported jax under the cell's variables) still fails the same way.
"""

from __future__ import annotations

import ast
import hashlib
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Sequence

import pysource_minimize

from harness.reduce import ordered, rebase, specialise, transforms, unfold
from harness.reduce.checks import ORACLE, Frozen, frozen_checks, lacks
from harness.reduce.names import undefined_names
from harness.reduce.script import assemble, split_preamble, split_script  # split_preamble: the tests' too
from harness.reduce.server import ForkServer
from harness.reduce.signature import Signature, signature, statement_texts

# Shares of the budget: the search stops at the first, the rewrites after it at the second, and the
# cell's variables are tried with what is left (each try a fresh interpreter that imports jax itself).
SEARCH_SHARE, REWRITE_SHARE, ENV_SHARE = 0.65, 0.8, 0.97
MAX_SEEDS = 3  # reductions of earlier scripts tried as a script's first candidate
SHORT_ENOUGH = 15  # lines of the reduced script (its provenance included) past which pysource-minimize runs
MIN_TIMEOUT_S = 10  # a candidate's alarm: this, or 3x the original's run, whichever is more
FRESH_TIMEOUT_S = 300  # a fresh interpreter's run (it imports jax or torch_xla itself)
_RENAMED = "unique_name_"  # pysource-minimize's renaming of names: rejected, the names stay readable


class _OutOfBudget(Exception):
    """Raised by the predicate once the budget is spent: the search stops, the last kept candidate stands."""


class NotReducible(Exception):
    """The script cannot be reduced (it does not fail, or its failure is flaky): the reason."""


@dataclass
class Reduction:
    """What the reducer did: the provenance read from the script, the variables kept, the reduced
    code and its figures."""

    facts: dict[str, str]
    env: dict[str, str]
    body: str
    signature: Signature
    candidates: int = 0
    ran: int = 0
    seconds: float = 0.0
    budget_hit: bool = False
    contrast: list[str] = field(default_factory=list)  # cells where every kept candidate passed
    env_dropped: list[str] = field(default_factory=list)  # the cell's variables the reduced script does without
    env_checked: bool = False  # whether the variables were tried (a fresh interpreter was given and time was left)
    seeded: bool = False  # the search started from an earlier script's reduced code (same signature)
    oracle: str = ""  # what vouched for it beside the signature: "contrast cell", "frozen checks" or "" (the library's error)
    env_before: dict[str, str] = field(default_factory=dict)  # the variables before any was dropped (the script's)
    resumed: bool = False  # the search went on from an earlier batch's budget-bound reduction of this script
    settled: bool = False  # a search resumed from it found nothing shorter: a later batch takes it, not resumes it

    def record(self) -> dict:
        """The reduction as JSON data: what another process of the batch takes as a seed
        (harness.reduce.shared) and what a later batch takes again (harness.reduce.memo)."""
        return {"facts": self.facts, "env": self.env, "body": self.body, "signature": asdict(self.signature),
                "contrast": self.contrast, "env_dropped": self.env_dropped, "env_checked": self.env_checked,
                "env_before": self.env_before, "oracle": self.oracle, "budget_hit": self.budget_hit,
                "settled": self.settled}

    @classmethod
    def from_record(cls, d: dict) -> "Reduction":
        """A record read back, every value of its type (ValueError, KeyError, TypeError or AttributeError
        for one that is not a record()'s)."""
        def strings(m: object) -> dict[str, str]:
            return {str(k): str(v) for k, v in dict(m).items()}  # type: ignore[call-overload]

        sig = d["signature"]
        if not isinstance(sig, dict) or type(sig.get("status")) is not int or not isinstance(d["body"], str):
            raise ValueError("not a reduction's record")
        return cls(strings(d["facts"]), strings(d["env"]), d["body"],
                   Signature(sig["status"], *(None if sig.get(f) is None else str(sig[f]) for f in ("type", "failure", "where")),
                             sig.get("own_check") is True),
                   contrast=[str(c) for c in d["contrast"]], env_dropped=[str(n) for n in d["env_dropped"]],
                   env_checked=d["env_checked"] is True, env_before=strings(d["env_before"]),
                   oracle=str(d.get("oracle", "")), budget_hit=d.get("budget_hit") is True,
                   settled=d.get("settled") is True)


def reduce_script(source: str, server: ForkServer, match: str | None, *, contrast: Sequence[ForkServer] = (),
                  budget_s: float = 300, say: Callable[[str], None] = lambda _m: None,
                  fresh: ForkServer | None = None, fresh_contrast: Sequence[ForkServer] = (),
                  seeds: Sequence[Reduction] = (), resume: Reduction | None = None) -> Reduction:
    """Reduce source (a failing standalone script) under its signature; raises NotReducible.

    contrast: servers of cells where the case passes (the fixing release first) and the full script
    exits 0: every kept candidate must exit 0 in the first (so the reduction keeps the bug, not merely
    a way to raise the same error: a reducer left alone turns a wrong gradient into a wrong call), and
    the script written in each of them.
    fresh (and fresh_contrast, the contrast cells'): servers that import at most numpy and torch and
    run without the cell's variables, where dropping a variable from the script is seen. seeds: reductions of
    scripts before: the code of one with this script's signature, or of the same case (another cell),
    is tried first (and the variables it did without). resume: an earlier batch's reduction of this very script
    that stopped at the budget (harness.reduce.memo): its code is tried before any seed, and where it fails the
    same way the search goes on from it, where a seed's ends the search (a budget-bound search's path is cut
    short; reduced again from its 40-line result, xla27-cpu's call sequences went to 33 lines in 64 s)."""
    start = time.monotonic()
    try:
        parts = split_script(source)
    except SyntaxError as exc:
        raise NotReducible(f"the script does not parse: {exc}") from None
    first = server.run(source, 600)
    sig = signature(first, source, match)
    if sig.status in (0, 125):
        raise NotReducible(f"the script does not fail here (exit {sig.status}): nothing to keep")
    again = server.run(source, 600)
    sig2 = signature(again, source, match)
    if sig2 != sig:
        raise NotReducible(f"flaky signature: two runs of the original disagree ({sig.describe()} / {sig2.describe()})")
    if match and str(sig.failure).startswith("no match"):
        raise NotReducible("the known issue's match is not in the script's output: its failure is another one")
    passing = [i for i, c in enumerate(contrast) if c.run(source, 600).status == 0]  # else it cannot tell the bug apart
    every = [contrast[i] for i in passing]  # each cell where the full script passes: the written script must too
    contrast = every[:1]  # the search's: the fixing release first; the others are checked at the end
    fresh_contrast = [fresh_contrast[i] for i in passing if i < len(fresh_contrast)]
    # An assertion fails as surely when the reducer guts what it checks ("the compiled module lost the host
    # placement" once the host computation is gone). A cell where the case passes tells them apart; without
    # one, the checks that ran (and what they name) are frozen: harness.reduce.checks.
    frozen = Frozen()
    if sig.own_check and not contrast:
        frozen = frozen_checks(source, transforms.frame_lines(first.output))
        if not frozen.statements and (first.record or {}).get("in_script") is False:
            # an AssertionError the library raised (torch_xla's `assert ..., "Jax is required for this
            # feature"`) at a statement of the script's that is no check: the library's error, reduced as
            # one (its type, message and statement are the signature), not the script's own check
            frozen = Frozen()
        elif not frozen.statements:
            raise NotReducible("the failure is the script's own check, no cell where the case passes (and the full "
                               "script exits 0) is given, and no check statement of the script's was found in its "
                               "traceback to freeze; pass --passes-in CELL")
    if frozen:
        # what keeps the script's meaning for its failing run may change its checks and their helpers too: the
        # branches it never took, a helper called once (harness.reduce.rebase). The script reduced is that
        # one, its frozen set read again from it
        rebased = rebase.rebase(source, server, sig, match, say)
        if rebased is not None:
            source, first = rebased
            parts = split_script(source)
            frozen = frozen_checks(source, transforms.frame_lines(first.output))
    timeout = max(MIN_TIMEOUT_S, int(3 * again.seconds) + 1)  # the first run also waited for the server's imports
    allowed = undefined_names(ast.parse(source))  # what the original itself leaves undefined (never reached)
    red = Reduction(dict(parts.facts), dict(parts.env), ast.unparse(ast.parse(parts.body)), sig,
                    contrast=[c.name for c in every],
                    oracle="contrast cell" if every else ORACLE if frozen else "", env_before=dict(parts.env))
    say(f"signature: {sig.describe()}; candidate timeout {timeout} s; "
        f"must pass in: {', '.join(red.contrast) or 'no contrast cell'}"
        + (f"; {sum(frozen.statements.values())} checks and {sum(frozen.definitions.values())} definitions frozen"
           if frozen else ""))
    seen: dict[str, bool] = {}
    limit = [SEARCH_SHARE]  # the share of the budget the current phase may use (the last ones keep room)
    tidying = False  # the last checks (the tidied script, the contrast cell's) run past the budget
    trace = bool(os.environ.get("SEAMS_REDUCE_TRACE"))
    # Every cell where the case passes runs each kept candidate at once where the failure is the script's
    # own check (a reduction that guts it must be caught before the search builds on it); for a failure
    # the library raises they run at each phase's end (checkpoint), and a candidate one of them does not
    # pass is backed out of, to the latest kept one they all pass: half the runs, the same guarantee,
    # and the next phase searches on from what every such cell passes.
    deferred = bool(contrast) and not sig.own_check
    since: list[str] = []  # candidates kept since the contrast cell last passed one
    vouched = [red.body]  # the last candidate the contrast cell passed (the original's code passes there)

    def key_of(candidate: str) -> str:
        return hashlib.sha256(candidate.encode()).hexdigest()

    def passes_contrast(candidate: str, cells: Sequence[ForkServer] | None = None) -> bool:
        """Exit 0 in the search's contrast cell (in `cells`: each of them)."""
        full = assemble(red.env, candidate)
        red.ran += 1
        return all(c.run(full, timeout).status == 0 for c in (contrast if cells is None else cells))

    # pysource-minimize also shortens values: `'_xla_compute_type'` -> `'pute_type'`, `1e-09` ->
    # `1.0000000000000003e-09`. A value no line of the script held is rejected unrun: what a reader sees
    # is the scenario's own (or nothing: 0, 1, '', None).
    constants = _constants(parts.body) | {0, 1, "", None, True, False, (first.record or {}).get("message", "")}
    # fold_literals writes `f"{'nested'}: got {n}"` as `f'nested: got {n}'`: a text no line held, made wholly of
    # the script's own strings and numbers' texts, in order; what pysource-minimize cuts out of a string is not
    pieces = _pieces(_constants(parts.body) | {(first.record or {}).get("message", "")})
    # and a value it computes from literals: `'torchax.default_env'.rpartition('.')` as `('torchax', '.',
    # 'default_env')`, whose 'torchax' no line held. What fold_literals makes of a kept candidate is allowed.
    derived: set = set()

    def keeps(candidate: str) -> bool:
        red.candidates += 1
        key = key_of(candidate)
        if key in seen:
            return seen[key]
        if _RENAMED in candidate or not all(v in constants or v in derived or _composed(v, pieces)
                                            for v in _constants(candidate)):
            seen[key] = False
            return False
        if not tidying and time.monotonic() - start > limit[0] * budget_s:  # this phase's share of the budget
            red.budget_hit = True
            raise _OutOfBudget
        ok = False
        try:
            full = assemble(red.env, candidate)
            tree = ast.parse(full)
        except SyntaxError:
            seen[key] = False
            return False
        # cheap first: the failing statement must still be there, word for word, every name defined, and
        # (no contrast cell, the failure the script's own check) every frozen check and definition unchanged
        if ((sig.where is None or sig.where in statement_texts(tree)) and not undefined_names(tree) - allowed
                and not lacks(tree, frozen)):
            red.ran += 1
            run = server.run(full, timeout)
            ok = signature(run, full, match) == sig
            if ok and not deferred:
                ok = passes_contrast(candidate, every)
            if trace:
                say(f"    {time.monotonic() - start:6.1f} s: run {red.ran} {run.seconds:.1f} s exit {run.status}: "
                    f"{'kept' if ok else 'rejected'} ({len(full.splitlines())} lines)")
        seen[key] = ok
        if ok:
            red.body = candidate
            since.append(candidate)
            derived.update(_constants(unfold.fold_literals(candidate)))
        return ok

    def checkpoint() -> None:
        """The contrast cell on the current candidate (deferred mode); where it fails, the latest kept
        candidate it passes (bisecting those kept since it last passed one), or the one it last passed.
        After such a back-out the rest of the reduction checks each kept candidate there at once: a step
        that breaks the contrast cell (a compat branch cut) had cost a whole phase's work (a generated
        module's script: 32 lines found in the cell, 58 left)."""
        nonlocal deferred
        if not deferred or red.body == vouched[0]:
            since.clear()
            return
        best = red.body
        if not passes_contrast(red.body, every):  # at a checkpoint, every cell where the case passes
            seen[key_of(red.body)] = False
            best = vouched[0]
            lo, hi = 0, len(since) - 1 if since and since[-1] == red.body else len(since)
            while lo < hi:
                mid = (lo + hi) // 2
                if passes_contrast(since[mid], every):
                    best, lo = since[mid], mid + 1
                else:
                    seen[key_of(since[mid])] = False
                    hi = mid
            for later in since[since.index(best) + 1 if best in since else 0:]:
                if seen.get(key_of(later)):
                    del seen[key_of(later)]  # kept unchecked, after one that fails there: judged again if met
            deferred = False
            say("  a cell where the case passes fails the candidate kept last: back to the latest one they all "
                "pass, and from here each kept candidate is checked there at once")
        red.body = vouched[0] = best
        since.clear()

    def first_kept(candidates: Iterable[str]) -> bool:
        for c in candidates:
            if c != red.body and keeps(c):
                return True
        return False

    steps: list[Callable[[str], list[str]]] = [
        lambda b: [transforms.unwrap_main(b), transforms.drop_skips(b)],
        lambda b: [transforms.dead_code(b), transforms.dead_code(b, imports=True)],
        lambda b: transforms.drop_unused_params_each(b),
        lambda b: [transforms.inline_calls(b), transforms.inline_calls(b, substitute=False)],
        lambda b: list(transforms.inline_returns(b)),
        lambda b: list(unfold.inline_bodies(b)),
        # a loop taken apart into tuple parts (`for i, kind in enumerate(...)`) changes the path of a
        # budget-bound search when tried from the start (xla27-cpu's call sequences: 31 -> 54 lines at the
        # budget): it is tried once pysource-minimize is done, where it helps (module grads 32 -> 26)
        lambda b: list(unfold.unroll_loops(b, parts=late[0])),
        lambda b: [unfold.plain_methods(b), unfold.conditional_returns(b), unfold.constant_dispatch(b), unfold.no_ops(b),
                   unfold.write_only_records(b), unfold.split_tuple_assignments(b), unfold.fold_literals(b)],
        lambda b: list(transforms.inline_names(b)),
        # the rewrites that keep when each operation runs (harness.reduce.ordered): what rebase applied
        # before the search, again on what the search left (`t = t.detach().cpu()`, then `return t.numpy()`)
        lambda b: [*ordered.fold_first_reads(b), *ordered.conditional_assignments(b), *ordered.inline_expressions(b)],
        lambda b: [transforms.merge_imports(b), transforms.hoist_imports(b), transforms.unused_targets(b),
                   transforms.inline_constants(b),
                   transforms.literal_message(b, sig.where, (first.record or {}).get("message", ""))],
        lambda b: [transforms.fold_constant_tests(b)],
        # what a generated scenario left general: a builder called on hypothesis's literal, written out; a
        # wrapper that only passes its arguments on; a loop filling a dict; an import below a namedtuple
        lambda b: list(specialise.partial_evaluation(b)),
        lambda b: [*specialise.eta_functions(b), *specialise.loop_comprehensions(b), specialise.literal_imports(b),
                   transforms.hoist_imports(b, past_calls=True)],
    ]

    # Tried one by one only (not in the composite: an unread `out, = g(t)` whose call is the failure goes too).
    alone: list[Callable[[str], list[str]]] = [lambda b: [transforms.dead_code(b, calls=True)]]

    def composite(body: str) -> str:
        """Every rewrite's first candidate, one after another, to a fixpoint: tried in one run first."""
        for _ in range(10):
            before = body
            for step in steps:
                got = [c for c in _rewritten(step, body) if c != body][:1]
                if got:
                    body = got[0]
            if body == before:
                break
        return body

    def rewrites() -> None:
        """The rewrites of harness.reduce.transforms and unfold, all at once first, then each kept only if it passes,
        to a fixpoint."""
        first_kept([composite(red.body)])
        for _ in range(20):
            body = red.body
            for step in [*alone, *steps]:
                first_kept(_rewritten(step, red.body))
            if red.body == body:
                return

    def phase(share: float, work: Callable[[], None]) -> None:
        limit[0] = share
        try:
            work()
        except _OutOfBudget:
            pass  # red.body is the last candidate the predicate kept: the search's current state
        except pysource_minimize.CouldNotMinimize as exc:
            raise NotReducible(str(exc)) from None
        nonlocal tidying
        was, tidying = tidying, True
        checkpoint()
        tidying = was

    def start_search() -> None:
        if resume is not None and resume.signature == sig and keeps(resume.body):
            say("  an earlier batch's budget-bound reduction of this script fails the same way: the search goes on "
                "from it")
            red.resumed = True
            rewrites()
            return
        # A script reduced before in this batch with the same signature (the same case in another cell, a
        # sibling case failing the same way) gives its reduced code as the first candidate: one run.
        same = [x for x in seeds if x.signature == sig]
        case = [x for x in seeds if x.signature != sig and x.facts.get("CASE") and x.facts.get("CASE") == parts.facts.get("CASE")]
        for seed in [*same, *case][:MAX_SEEDS]:
            if keeps(seed.body):
                say(f"  the reduced code of a script with the same {'signature' if seed in same else 'case'} "
                    "fails the same way here: kept")
                seeded.append(seed)
                red.seeded = True
                return
        cut = split_script(transforms.truncate(source, transforms.frame_lines(first.output))).body
        # what never ran goes, with what the rewrites take, in one run; else the code as printed must
        # fail as the script does
        cut = ast.unparse(ast.parse(cut))
        if not first_kept([composite(cut), cut]) and not keeps(red.body):
            raise NotReducible("the script's code, printed again by ast.unparse, does not fail the same way")
        rewrites()

    def search() -> None:
        if seeded:
            return  # that code is what this search would end in
        while first_kept(transforms.shrink_collections(red.body)):
            pass  # a table of cases or steps down to the entries the failure needs, halves first
        red.body = drop_statements(red.body, keeps)
        rewrites()
        # pysource-minimize's search goes node by node (an argument, a constant, a sub-expression): it
        # shortens lines more than it removes them, at a run a node. It runs where the script is still
        # over SHORT_ENOUGH lines.
        if len(assemble(red.env, red.body).splitlines()) + 4 > SHORT_ENOUGH:
            minimized.append(True)
            red.body = pysource_minimize.minimize(red.body, keeps, retries=0)

    late = [False]  # the tidy phase: the rewrites that only pay off at the end (unroll_loops' parts)

    def tidy() -> None:
        """What pysource-minimize's deletions left for the rewrites (a helper now called once), then each
        statement again: its node-by-node search leaves statements that no longer do anything
        (`TOL = dict(...)` cut to `dict(...)`, its name's readers gone) where the deletions before it
        could not take them."""
        late[0] = True
        rewrites()
        if minimized:
            red.body = drop_statements(red.body, keeps)

    seeded: list[Reduction] = []
    minimized: list[bool] = []  # pysource-minimize ran (its deletions can leave statements that do nothing)
    phase(SEARCH_SHARE, start_search)
    phase(SEARCH_SHARE, search)
    phase(REWRITE_SHARE, tidy)
    tidying = True
    if not any(seen.values()) and not keeps(red.body):  # the budget ran out before any candidate was kept
        raise NotReducible("the script's code, printed again by ast.unparse, does not fail the same way")
    tidy = without_bare_constants(red.body)
    if tidy != red.body:
        keeps(tidy)  # checked like any candidate
    checkpoint()
    if not seen.get(key_of(red.body)) and not keeps(red.body):  # backed out to the code as printed, never run
        raise NotReducible("the script's code, printed again by ast.unparse, does not fail the same way")
    same = seeded[0] if seeded and _same_program(seeded[0], red) else None
    if same is not None and red.env:
        # the seed's very script (its cell, code, variables, failure and contrast cells) was run without the
        # variables it dropped, in fresh interpreters of these cells: this run would be that run again (a
        # fresh torch_xla interpreter is 15-25 s of the 20 a seeded script took)
        red.env_dropped = [n for n in same.env_dropped if n in red.env]
        red.env = {k: v for k, v in red.env.items() if k not in red.env_dropped}
        red.env_checked = True
        say(f"  the variables as the seed's identical script found: without {', '.join(red.env_dropped) or 'none'}")
    elif fresh is not None and red.env:
        drop_env(red, fresh, fresh_contrast, match, start, budget_s, say,
                 seeded[0].env_dropped if seeded else resume.env_dropped if red.resumed and resume else [],
                 guess_s=first.seconds)
    red.seconds = time.monotonic() - start
    return red


def _same_program(seed: Reduction, red: Reduction) -> bool:
    """Whether red is the seed's script over again: the same cell, code, variables (before either dropped
    any), signature and contrast cells, and the seed's variables were tried in fresh interpreters."""
    return (seed.env_checked and seed.facts.get("CELL") == red.facts.get("CELL") and seed.body == red.body
            and seed.signature == red.signature and seed.contrast == red.contrast
            and dict(seed.env_before) == dict(red.env))


def drop_env(red: Reduction, fresh: ForkServer, fresh_contrast: Sequence[ForkServer], match: str | None,
             start: float, budget_s: float, say: Callable[[str], None], first: Sequence[str] = (),
             guess_s: float = 0.0) -> None:
    """Drop the cell's variables the reduced script does not need: `first` (what the seed's script did
    without) and, if that does not pass, all at once, then one at a time. Each try runs in a fresh
    interpreter without the cell's variables (the fork server's parent imported jax under them), and
    in the contrast cell's, where it must still exit 0; a try starts only where it can end within
    the budget (a fresh torch_xla interpreter is 15-60 s here)."""
    red.env_checked = True

    took = [guess_s]  # a fresh run's seconds: at first the original's first run, which waited for the imports

    def still_fails(env: dict[str, str]) -> bool:
        full = assemble(env, red.body)
        run = fresh.run(full, FRESH_TIMEOUT_S)
        took[0] = run.seconds
        red.ran += 1
        ok = signature(run, full, match) == red.signature
        return ok and all(c.run(full, FRESH_TIMEOUT_S).status == 0 for c in fresh_contrast)

    names = list(red.env)
    tries = [[*names]] + ([[n] for n in names] if len(names) > 1 else [])
    if first:
        tries.insert(0, [n for n in first if n in red.env])
    for i, drop in enumerate(tries):
        if first and i == 1 and red.env_dropped:
            break  # the seed's variables were enough: as its script found
        if time.monotonic() - start + took[0] * (1 + len(fresh_contrast)) > ENV_SHARE * budget_s:
            red.budget_hit = True  # the try would end past the budget: the variables left stay
            break
        if not all(n in red.env for n in drop):
            continue
        env = {k: v for k, v in red.env.items() if k not in drop}
        if still_fails(env):
            red.env_dropped += drop
            red.env = env
            say(f"  without {', '.join(drop)}: the same signature in a fresh interpreter")
        if not red.env:
            break


def _rewritten(step: Callable[[str], list[str]], body: str) -> list[str]:
    """A rewrite's candidates, or none where ast.unparse cannot write one (Python 3.11: a string with a
    backslash substituted into an f-string's expression part raises ValueError)."""
    try:
        return step(body)
    except ValueError:
        return []


def _preorder(tree: ast.AST) -> list[tuple[list[ast.stmt], ast.stmt]]:
    """(the list holding it, the statement) for every statement, in document order."""
    out: list[tuple[list[ast.stmt], ast.stmt]] = []

    def visit(node: ast.AST) -> None:
        for _field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.stmt):
                        out.append((value, item))
                    if isinstance(item, ast.AST):
                        visit(item)
            elif isinstance(value, ast.AST):
                visit(value)

    visit(tree)
    return out


def drop_statements(code: str, keeps: Callable[[str], bool]) -> str:
    """Delete single statements, the last first, until none can go (pysource-minimize's first pass
    goes top-level first, where a helper cannot go while a line inside a function still uses it:
    on a 100-line script that is most of a minute's budget spent on nothing). A statement goes with
    what only it used (transforms.dead_code) in one run where that passes."""
    for _ in range(3):
        changed = False
        k = len(_preorder(ast.parse(code))) - 1
        while k >= 0:
            tree = ast.parse(code)
            holder, stmt = _preorder(tree)[k]
            holder.remove(stmt)
            if not holder and holder is not tree.body:  # ast: a block is never empty
                holder.append(ast.Pass())
            candidate = ast.unparse(tree)
            cascade = transforms.dead_code(candidate)
            tries = [cascade, candidate]
            if isinstance(stmt, (ast.If, ast.With, ast.Try)):  # or its block in its place: `if c: X` -> `X`
                tries.append(_unwrapped(code, k))
            for c in dict.fromkeys(tries):
                if c != code and keeps(c):
                    code, changed = c, True
                    break
            # statements before k keep their places (unless the cascade took some); k's subtree went or was tried
            k = min(k, len(_preorder(ast.parse(code)))) - 1
        if not changed:
            break
    return code


def _constants(code: str) -> set:
    """The values written in code (strings, numbers, ...; an f-string's text parts too)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and not isinstance(n.value, (bytes, type(...))):
            out.add(n.value if not isinstance(n.value, float) or n.value == n.value else "nan")
    return out


def _pieces(constants: set) -> frozenset[str]:
    """The texts a folded string may be made of: the script's strings, and its numbers and booleans as an
    f-string prints them (`f"{8}"` is `'8'`)."""
    return frozenset(v if isinstance(v, str) else str(v) for v in constants
                     if v != "" and isinstance(v, (str, int, float)))


def _composed(value: object, pieces: frozenset[str]) -> bool:
    """Whether value is a string made of two or more whole pieces, end to end (`'nested: got '` of `'nested'`
    and `': got '`); a string cut short (`'pute_type'` of `'_xla_compute_type'`) is not, unless the script
    held the very pieces it is made of."""
    if not isinstance(value, str) or not value:
        return False
    ends = {0: 0}  # position -> the fewest pieces that end there
    for i in range(len(value)):
        if i not in ends:
            continue
        for piece in pieces:
            if value.startswith(piece, i):
                j = i + len(piece)
                ends[j] = min(ends.get(j, j + 1), ends[i] + 1)
    return ends.get(len(value), 0) >= 2


def _unwrapped(code: str, k: int) -> str:
    """code with its k-th statement (an if, a with, a try) replaced by the block it runs."""
    tree = ast.parse(code)
    holder, stmt = _preorder(tree)[k]
    i = next(j for j, s in enumerate(holder) if s is stmt)
    holder[i:i + 1] = stmt.body + (stmt.finalbody if isinstance(stmt, ast.Try) else [])  # type: ignore[attr-defined]
    return ast.unparse(tree)


def without_bare_constants(code: str) -> str:
    """code without statements that are a bare constant (`0`: what pysource-minimize leaves where it
    replaced an expression statement; they do nothing, and a reader wonders why they are there)."""
    tree = ast.parse(code)
    for holder, stmt in reversed(_preorder(tree)):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            holder.remove(stmt)
            if not holder and holder is not tree.body:
                holder.append(ast.Pass())
    return ast.unparse(tree)
