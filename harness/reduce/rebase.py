"""Before a reduction under frozen checks (harness.reduce.checks: no cell passes the case, so the checks
that ran and the helpers they name are held word for word), rewrite the whole script, those included,
by what keeps its meaning for the failing run, and hand the reducer that script to freeze and reduce.

The frozen set stands in for a contrast cell: a reduction that guts what a check judges fails the same
way, and nothing else tells the two apart. So it is changed only by rewrites that cannot change what a
check judges in this run:

- what the run never ran goes (harness.reduce.unrun: `to_numpy`'s branch for a type never seen, a
  refusal's `else: raise AssertionError('DID NOT RAISE')`), and an `if` that went the same way every
  time becomes that branch;
- a helper called once that the checks judge through (frozen whole, or itself checking) becomes its
  statements and its returned expression (harness.reduce.unfold inline_bodies, `ordered`: an argument
  that calls something is assigned first, as the call evaluated it). Other helpers stay for the search:
  inlined into a check's scope, their calls would be held as written (`judged` says why);
- a helper that only returns an expression, which reads its parameters first and in order, the checks
  judge through, is written at each call (harness.reduce.ordered inline_expressions: `to_numpy(x)`);
  a value moved into the next statement where that statement reads it once and before anything there
  may run code (ordered.fold_first_reads: `arr = np.asarray(x)`, `arr = arr.astype(...)`), and an `if`
  whose body only assigns a name bound before it becomes a conditional expression
  (ordered.conditional_assignments: `x = x.numpy() if hasattr(x, 'detach') else x`), which can then fold;
- `observe.close(...)` of an instance of a class of methods that never read `self` calls `close` as a
  function (unfold.plain_methods), which can then be inlined;
- a name assigned a value that calls nothing, once, and read in the next statement (`ordered`: a call
  moved into its reader would run later, or in a lambda each time), a short module constant, an `if` on a
  literal, a literal folded (`f"{'nested'}"`, `getattr(o, 'a')`), a tuple assignment split, a no-op,
  an import moved up past definitions that run no code.

Nothing that ran is deleted, and no value the run printed or raised is written out. Each rewrite is
still a candidate: kept only where the script fails the same way (the signature) and its checks can
still be read off the run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from harness.reduce import ordered, transforms, unfold, unrun
from harness.reduce.checks import checks_of, frozen_checks
from harness.reduce.script import split_preamble
from harness.reduce.server import ForkServer, Run
from harness.reduce.signature import Signature, signature

MAX_ROUNDS = 12  # rounds of the meaning-keeping rewrites (each kept rewrite is one run)

# Each: (code, the functions the checks judge through) -> candidates. The meaning of the run is kept by
# construction (the module docstring says how).
REWRITES: tuple[Callable[[str, set[str]], Iterable[str]], ...] = (
    lambda b, judged: unfold.inline_bodies(b, ordered=True, only=judged),
    lambda b, judged: ordered.inline_expressions(b, only=judged),
    lambda b, _judged: list(transforms.inline_names(b, ordered=True)),
    lambda b, _judged: ordered.fold_first_reads(b),
    lambda b, _judged: ordered.conditional_assignments(b),
    lambda b, _judged: [unfold.plain_methods(b), transforms.inline_constants(b), transforms.fold_constant_tests(b),
                        unfold.fold_literals(b), unfold.split_tuple_assignments(b), unfold.no_ops(b),
                        unfold.conditional_returns(b), transforms.merge_imports(b), transforms.hoist_imports(b)],
)


def judged(full: str, run: Run) -> set[str]:
    """The script functions the checks judge through: those frozen whole (a helper a check names, a function
    a bridge runs) and those that check (the scenario's core). Only these are inlined: a helper's calls
    become calls the checked values come through once its body is in the checks' scope, held as written
    (checks.held_calls), where the search was free to cut them in its body (`make_mesh_nd`'s
    `jax.devices()[:n]`: the pvary scripts went 33 -> 39 lines)."""
    tree = ast.parse(full)
    frozen = frozen_checks(full, transforms.frame_lines(run.output))
    names = {d.name for text in [*frozen.definitions, *frozen.bridged] for d in ast.parse(text).body
             if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    is_check = checks_of(tree)
    return names | {f.name for f in tree.body if isinstance(f, ast.FunctionDef)
                    and any(is_check(s) for s in ast.walk(f) if isinstance(s, ast.stmt) and s is not f)}


def rebase(source: str, server: ForkServer, sig: Signature, match: str | None,
           say: Callable[[str], None] = lambda _m: None) -> tuple[str, Run] | None:
    """(the script rewritten, its run) where some rewrite kept its signature and its checks; None where
    none applies or none kept them."""
    head, body = split_preamble(source)
    best: tuple[str, Run] | None = None

    def holds(code: str) -> bool:
        nonlocal best
        full = head + code + "\n"
        run = server.run(full, 600)
        if signature(run, full, match) != sig or not frozen_checks(full, transforms.frame_lines(run.output)).statements:
            return False
        best = (full, run)
        return True

    traced = server.run(source, 600, lines=True)
    code = ast.unparse(ast.parse(body))
    if traced.lines is not None and signature(traced, source, match) == sig:
        offset = len(source.splitlines()) - len(body.splitlines())
        pruned = unrun.drop_unrun(body, {n - offset for n in traced.lines if n > offset},
                                  {(a - offset, max(b - offset, 0)) for a, b in traced.steps or () if a > offset})
        if pruned != code and holds(pruned):
            code = pruned
            say("  what the failing run never ran is gone (its frozen checks' helpers too)")
    kept = 0
    for _ in range(MAX_ROUNDS):
        before = code
        through = judged(*(best or (source, traced)))  # the inlining is the round's first rewrite: current
        for rewrite in REWRITES:
            try:
                candidates = list(rewrite(code, through))
            except (ValueError, SyntaxError):  # ast.unparse cannot write it (a backslash in an f-string's expression)
                continue
            for candidate in dict.fromkeys(candidates):
                if candidate != code and holds(candidate):
                    code, kept = candidate, kept + 1
                    break
        if code == before:
            break
    if kept:
        say(f"  {kept} rewrites that keep the run's meaning, frozen checks and helpers included")
    return best
