"""Frozen checks: the oracle for a failure that is the script's own check where no cell passes the case.

An assertion fails as surely once a reduction has gutted what it checks (a helper made to return
None fails "the compiled module lost the host placement" the same way), and with no cell where the
case passes there is no run to tell the two apart. So the checks are the specification: the reducer
may simplify everything but them. The *frozen set*, read from the original script:

- every check statement that ran up to the failure: the failing one and, in each traceback frame's
  function, the checks before the frame's line (the preconditions: "lowered without the host
  placement" and the eager numerics check stop a reduction that drops the bug's cause, since it
  then fails an earlier check, with another message). A check is an `assert`, a `raise` of the
  script's own (not a skip's `SystemExit`), or a call of an assertion helper: a callee named
  `assert*` (`np.testing.assert_allclose`), a method of a script class whose body checks
  (`observe.close(...)`), or a script function whose body checks;
- every top-level definition (function, class, assignment) those statements name, transitively
  (`has_frontend_attribute` -> `frontend_attribute_values`, `HOST_KEY`; `observe.close` -> the
  class defining `close` -> `to_numpy`), bodies included.

A candidate is kept only where each frozen statement is still there word for word (as the signature
says a statement: an `assert` by its test, a `raise` under an `if` with its condition), anywhere in
the script (inlining the scenario into the main block moves them), and each frozen definition is
there unchanged at the top level. What a check reads is held one step back: the assignment that last
bound each of its local inputs before it, in its function, stays as written (`got = library_sum(values)`
-> `got = 0` fails "off the exact sum" the same way with the library gone; `expected_jax_dtype = j`
made a dtype precondition vacuous), and no name a check reads may be bound to a bare constant the
original never bound it to. Further back (what `values` was, a script helper the value passes
through, gutted) is caught by a precondition, or by the failure's message (up to numbers), or not at
all: a contrast cell is the stronger oracle. Two things further back are held wherever they are:
each call the checks' values are computed from in the original (found by names, flow- and
scope-insensitively: every binding of a name the checks read, transitively; not inside the script's
own functions, nor a call of one) must still be among what the candidate's checks are computed from,
word for word; and each script function a call into the packages under test (`BRIDGE`: torchax,
torch_xla, jax, ...) runs (`jax_jit(traced)`) or that one decorates is held whole. A torchax_ops
op script reduced without them compared torch's result with the sample itself converted
(`got = env.to_xla(...)` for `torchax.interop.jax_jit(traced)(...)`), then with `traced` gutted to
return its arguments, then torch's reference called without the sample's kwargs: each failed
"Tensor-likes are not close" the same way, the op (or its reference) gone.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from harness.reduce.script import env_statement, preamble_length
from harness.reduce.signature import parents_of, statement_text

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# The packages whose runs of a script function are held whole (bridged_functions): the bridges and the
# jax side. Not torch: a function torch is handed (a hook, a `torch.compile`) is not the seam.
BRIDGE = ("torchax", "torch_xla", "jax", "jaxlib", "flax", "optax")
ORACLE = "frozen checks"  # what vouched for a reduction without a contrast cell (reduce.json, the provenance)


@dataclass(frozen=True)
class Frozen:
    """What a candidate must keep word for word: check statements (as statement_text says them,
    counted) and top-level definitions (their whole source)."""

    statements: Counter = field(default_factory=Counter)
    definitions: Counter = field(default_factory=Counter)
    inputs: Counter = field(default_factory=Counter)  # the assignment each check's local inputs last got, as written
    operands: frozenset = frozenset()  # the names the frozen checks read that the script binds in a function
    written: frozenset = frozenset()  # the original's statements, as written (a constant binding it had stays allowed)
    calls: frozenset = frozenset()  # the calls the checks' values are computed from, as written
    bridged: Counter = field(default_factory=Counter)  # the script's functions those calls run (or decorate), whole
    through: dict = field(default_factory=dict)  # helper -> its calls as written, for those the checked values come through

    def __bool__(self) -> bool:
        return bool(self.statements or self.definitions)


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _is_skip_raise(node: ast.Raise) -> bool:
    """`raise SystemExit(...)` (the exporter's skip, exit 125) or a bare re-raise: not a check."""
    exc = node.exc
    if exc is None:
        return True
    target = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(target, ast.Name) and target.id == "SystemExit"


def _own_statements(scope: ast.AST) -> list[ast.stmt]:
    """The statements of a function or module body and its blocks, not those of nested defs."""
    out: list[ast.stmt] = []
    todo = list(getattr(scope, "body", []))
    while todo:
        node = todo.pop(0)
        out.append(node)
        if isinstance(node, _DEFS):
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                todo.append(child)
            elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                todo.extend(child.body)
    return out


class _Checks:
    """Which statements of a script are checks, knowing which of its functions and methods check."""

    def __init__(self, tree: ast.Module):
        self.functions = {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.methods: dict[str, list[ast.ClassDef]] = {}
        for cls in (s for s in tree.body if isinstance(s, ast.ClassDef)):
            for m in cls.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.methods.setdefault(m.name, []).append(cls)
        self.checking_functions: set[str] = set()
        self.checking_methods: set[str] = set()
        for _ in range(10):  # to a fixpoint: a helper that calls a checking helper checks
            before = (len(self.checking_functions), len(self.checking_methods))
            for name, fn in self.functions.items():
                if any(self.is_check(s) for s in _own_statements(fn)):
                    self.checking_functions.add(name)
            for name, classes in self.methods.items():
                if any(self.is_check(s) for c in classes for m in c.body if getattr(m, "name", None) == name
                       for s in _own_statements(m)):
                    self.checking_methods.add(name)
            if (len(self.checking_functions), len(self.checking_methods)) == before:
                break

    def is_check(self, node: ast.stmt, helpers: bool = True) -> bool:
        """An assert, a raise of the script's own, or a statement that calls an assertion helper
        (helpers=False: not a script *function* that checks, the way a frame calls its scenario)."""
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Raise):
            return not _is_skip_raise(node)
        if not isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)) or node.value is None:
            return False
        for call in (n for n in ast.walk(node.value) if isinstance(n, ast.Call)):
            name = _callee(call)
            if name is None:
                continue
            if name.startswith("assert"):
                return True
            if isinstance(call.func, ast.Attribute) and name in self.checking_methods:
                return True
            if helpers and isinstance(call.func, ast.Name) and name in self.checking_functions:
                return True
        return False


def checks_of(tree: ast.Module) -> Callable[[ast.stmt], bool]:
    """Whether a statement of tree is a check (an assert, a raise of the script's own, a call of an
    assertion helper: _Checks.is_check), knowing tree's checking functions and methods."""
    return _Checks(tree).is_check


def _innermost(tree: ast.Module, line: int) -> tuple[ast.AST, ast.stmt | None]:
    """(the function or module holding line, the innermost statement there that holds it)."""
    scope: ast.AST = tree
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best.lineno:
                best = node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno < line \
                    and (scope is tree or node.lineno >= scope.lineno):  # type: ignore[attr-defined]
                scope = node  # the innermost function holding the line
    return scope, best


def _ran_checks(tree: ast.Module, frames: list[int], checks: _Checks) -> list[ast.stmt]:
    """The check statements that ran: in each frame's function those before the frame's line, and the
    frame's own statement where it is a check (the scenario's call from the main block is not: it is
    a frame of its own, read statement by statement)."""
    out: list[ast.stmt] = []
    parents = parents_of(tree)
    for i, line in enumerate(frames):
        scope, stmt = _innermost(tree, line)
        if stmt is None:
            continue
        innermost = i == len(frames) - 1
        for s in _own_statements(scope):
            if s.lineno < stmt.lineno and not isinstance(s, _DEFS) and s.end_lineno is not None \
                    and s.end_lineno < stmt.lineno and checks.is_check(s) and not _never_ran(s, parents):
                out.append(s)
        if checks.is_check(stmt, helpers=innermost):
            out.append(stmt)
    return out


def _never_ran(stmt: ast.stmt, parents: dict[ast.AST, ast.AST]) -> bool:
    """A `raise` before the failure that is not the check of an `if` (`if c: raise`, where the condition
    was judged): had it run, it would have been the failure, so it is no precondition (an op script's
    `raise AssertionError` in the branch taken only where torch refuses the sample, a branch this run
    never took: frozen with what it reads, it held a statement after the failure, and every candidate
    was rejected unrun)."""
    parent = parents.get(stmt)
    return isinstance(stmt, ast.Raise) and not (isinstance(parent, ast.If) and stmt in parent.body)


def _top_definitions(tree: ast.Module) -> dict[str, list[ast.stmt]]:
    """Top-level name -> the statements defining it (defs, classes, assignments; not imports)."""
    out: dict[str, list[ast.stmt]] = {}
    for s in tree.body:
        if isinstance(s, _DEFS):
            out.setdefault(s.name, []).append(s)
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):  # `T[k] = v` too: it is part of what T is
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for name in {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}:
                out.setdefault(name, []).append(s)
    return out


def _reads(node: ast.AST) -> set[str]:
    """The plain names node reads."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _stored(stmt: ast.Assign | ast.AnnAssign) -> set[str]:
    """The plain names an assignment binds (`a`, `a, (b, c)`; not `x.a` or `x[a]`'s `x`)."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _referenced(node: ast.AST, checks: _Checks) -> set[str]:
    """The names node reads, and the script classes whose checking methods it calls."""
    names = _reads(node)
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
        if call.func.attr in checks.checking_methods:  # type: ignore[union-attr]
            names.update(c.name for c in checks.methods.get(call.func.attr, []))  # type: ignore[union-attr]
    return names


def frozen_checks(source: str, frames: list[int]) -> Frozen:
    """The frozen set of source (the full script) for a failure whose traceback ran through `frames`
    (its script lines, outermost first)."""
    tree = ast.parse(source)
    # the cell's variables are the exporter's preamble, not the script's code (`{...}.items()`, `k not in
    # os.environ`): the reducer writes them anew, so a frozen call or check there would reject every candidate.
    # The preamble as split_script reads it; an environment statement in the code stays the code's
    head = preamble_length(tree)
    tree.body = [s for i, s in enumerate(tree.body) if i >= head or env_statement(s) is None]
    checks = _Checks(tree)
    parents = parents_of(tree)
    ran = _ran_checks(tree, frames, checks)
    ran += [s for s in _loop_checks(ran, parents, checks) if s not in ran]
    # every assert whole, the failing one's message included: the signature compares messages up to
    # numbers, and literal_message would otherwise write the observed text out in place of an f-string
    # that reads what the check judges (xla28's `static True (bool), output 1: ...` kept its words with
    # the statics and JAX's reference gone). Loop headers that bind what a check reads stay too.
    statements = Counter(t for s in ran for t in [ast.unparse(s) if isinstance(s, ast.Assert)
                                                  else statement_text(s, parents.get(s))] if t)
    headers = _loop_headers(ran, parents)
    statements.update(statement_text(h, parents.get(h)) for h in headers)
    # what starts after the module's line that was running (the outermost frame) never ran before the failure
    until = frames[0] if frames else None
    defined = {name: [d for d in ds if until is None or d.lineno <= until] for name, ds in _top_definitions(tree).items()}
    judged = [*ran, *_conditions(ran, parents)]  # `if COND: raise ...` judges COND: what it reads is the check's
    read = set().union(*(_referenced(s, checks) for s in judged))
    todo = read.union(*(_referenced(h.iter, checks) for h in headers))
    frozen: dict[int, ast.stmt] = {}
    while todo:
        name = todo.pop()
        for d in defined.get(name, []):
            if id(d) not in frozen:
                frozen[id(d)] = d
                todo |= _referenced(d, checks)
    operands = frozenset(read - set(defined))
    written = frozenset(ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign)))
    inputs = Counter(ast.unparse(a) for a in _inputs([*judged, *headers], parents))
    calls = held_calls(tree, [*judged, *headers], until)
    bridged = bridged_functions(tree, [*judged, *headers], until=until)
    return Frozen(statements, Counter(ast.unparse(d) for d in frozen.values()), inputs, operands, written,
                  frozenset(calls), Counter(ast.unparse(d) for d in bridged), through_helpers(tree, [*judged, *headers], until))


def through_helpers(tree: ast.Module, checks: Sequence[ast.AST], until: int | None = None) -> dict[str, frozenset[str]]:
    """The top-level helpers called where the checks' values are computed (`back = j2t(env, j)`) whose body
    calls something -> those calls, as written: held_calls leaves their bodies to the search, which must
    keep one of them in each (`def j2t(env, array): pass`, then `env(0)`, failed torchax 0.0.4's round
    trip the same way, without torchax)."""
    helpers = {d.name: d for d in tree.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    inside = _in_helpers(tree, checks)
    called = {n.func.id for part in _slice(tree, checks, until) if id(part) not in inside for n in ast.walk(part)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in helpers}
    made = {name: _calls_in(helpers[name]) for name in sorted(called)}
    return {name: calls for name, calls in made.items() if calls}


def _calls_in(fn: ast.AST) -> frozenset[str]:
    return frozenset(ast.unparse(n) for n in ast.walk(fn) if isinstance(n, ast.Call))


def _root(expr: ast.AST) -> str | None:
    """The name an expression's value is reached from: `torchax` for `torchax.interop.jax_jit(f)(x)`."""
    while isinstance(expr, (ast.Attribute, ast.Call, ast.Subscript)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def _bridge_roots(tree: ast.Module, packages: Sequence[str]) -> set[str]:
    """The names bound to a package under test (its import's alias), and to what a call into one returns
    (`env = torchax.default_env()`), to a fixpoint."""
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in packages}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in packages:
            roots |= {a.asname or a.name for a in node.names}
    assigns = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Call)]
    for _ in range(10):
        before = len(roots)
        roots |= {name for a in assigns if _root(a.value) in roots for name in _stored(a)}
        if len(roots) == before:
            break
    return roots


def _binders(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """Name -> what binds it anywhere in the script: an assignment, a loop's header (its target and
    sequence, not its body), a def or class (whole), a `with ... as` item."""
    out: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            names, part = _stored(node), node
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            names, part = {node.target.id}, node
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            names, part = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}, node.iter
        elif isinstance(node, _DEFS):
            names, part = {node.name}, node
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            names, part = {n.id for n in ast.walk(node.optional_vars) if isinstance(n, ast.Name)}, node.context_expr
        else:
            continue
        for name in names:
            out.setdefault(name, []).append(part)
    return out


def _slice(tree: ast.Module, checks: Sequence[ast.AST], until: int | None = None) -> list[ast.AST]:
    """The checks and whatever binds a name they read, transitively (flow- and scope-insensitive; `until`:
    only what starts at or before that line)."""
    binders = {name: [p for p in parts if until is None or getattr(p, "lineno", 0) <= until]
               for name, parts in _binders(tree).items()}
    seen: dict[int, ast.AST] = {id(c): c for c in checks}
    todo, names = list(checks), set()
    while todo:
        for name in _reads(todo.pop()) - names:
            names.add(name)
            for part in binders.get(name, []):
                if id(part) not in seen:
                    seen[id(part)] = part
                    todo.append(part)
    return list(seen.values())


def _in_helpers(tree: ast.Module, checks: Sequence[ast.AST]) -> set[int]:
    """The ids of the nodes in a helper's body: every def but one a check runs in (the scenario's `core`).
    Every helper's, not only those the slice reached: the slice is scope-insensitive, so a comprehension in
    a helper nothing calls that binds `k` or `v` (as the checked helper's does) is part of it."""
    checked_in = {id(d) for d in ast.walk(tree) if isinstance(d, _DEFS) for c in checks
                  if any(n is c for n in ast.walk(d))}
    return {id(n) for d in ast.walk(tree) if isinstance(d, _DEFS) and id(d) not in checked_in for n in ast.walk(d)}


def held_calls(tree: ast.Module, checks: Sequence[ast.AST], until: int | None = None) -> set[str]:
    """The calls (as written) the checks' values are computed from: in the checks and in whatever binds
    a name they read, transitively; not those inside the script's own functions (a helper's body is
    the script's to simplify, held whole where a check or a bridge names it) nor calls of them."""
    own = {d.name for d in ast.walk(tree) if isinstance(d, _DEFS)}
    parts = _slice(tree, checks, until)
    inside = _in_helpers(tree, checks)
    held: set[str] = set()
    for part in parts:
        if id(part) in inside:
            continue
        held |= {ast.unparse(n) for n in ast.walk(part) if isinstance(n, ast.Call)
                 and not (isinstance(n.func, ast.Name) and n.func.id in own)}
    return held


def bridged_functions(tree: ast.Module, checks: Sequence[ast.AST], packages: Sequence[str] = BRIDGE,
                      until: int | None = None) -> list[ast.AST]:
    """The script's functions that a bridge call the checks' values come through runs (`jax_jit(traced)`,
    `call_jax(f, ...)`: an argument naming one) or that a bridge decorates (`@jax.jit`): what the bridge
    runs is the original's, whole (the op inside `traced` is what a torchax_ops script tests; gutted to
    return its arguments, the comparison failed the same way)."""
    roots, part_of = _bridge_roots(tree, packages), _slice(tree, checks, until)
    defs = {d.name: d for d in ast.walk(tree) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    named: set[str] = set()
    for n in (n for part in part_of for n in ast.walk(part)):
        if isinstance(n, ast.Call) and _root(n) in roots:
            named |= {a.id for a in [*n.args, *(k.value for k in n.keywords)] if isinstance(a, ast.Name)}
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(_root(d) in roots for d in n.decorator_list):
            named.add(n.name)
    return [defs[name] for name in sorted(named) if name in defs]


def _conditions(ran: Sequence[ast.AST], parents: dict[ast.AST, ast.AST]) -> list[ast.expr]:
    """The condition of each `if COND: raise ...` among ran: what that check judges (its message may name
    none of it: `raise AssertionError('no placement')`)."""
    return [parents[s].test for s in ran if isinstance(s, ast.Raise) and isinstance(parents.get(s), ast.If)  # type: ignore[attr-defined]
            and any(b is s for b in parents[s].body)]  # type: ignore[attr-defined]


def _enclosing_loops(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> list[ast.For | ast.While]:
    """The loops around a statement, innermost first, up to its function."""
    out = []
    while node in parents and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        node = parents[node]
        if isinstance(node, (ast.For, ast.While)):
            out.append(node)
    return out


def _loop_checks(ran: list[ast.stmt], parents: dict[ast.AST, ast.AST], checks: _Checks) -> list[ast.stmt]:
    """The checks in the body of a loop around a check that ran: they ran on the iterations before
    (the numerics check after the dtype check, for the static that passed first)."""
    out: list[ast.stmt] = []
    for check in ran:
        for loop in _enclosing_loops(check, parents):
            out += [s for s in _own_statements(loop) if checks.is_check(s) and s not in out]
    return out


def _loop_headers(ran: list[ast.stmt], parents: dict[ast.AST, ast.AST]) -> list[ast.For]:
    """The `for` headers around a check that bind a name the check (or a header inside) reads: what
    it judges is drawn from the same sequence as the original drew it."""
    out: list[ast.For] = []
    for check in ran:
        reads = _reads(check)
        for loop in _enclosing_loops(check, parents):
            bound = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)} if isinstance(loop, ast.For) else set()
            if bound & reads and loop not in out:
                out.append(loop)
                reads |= _reads(loop.iter)
    return out


def _scope(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    """The function (or module) a statement runs in."""
    while node in parents and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = parents[node]
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else next(
        n for n in parents.values() if isinstance(n, ast.Module))


def _inputs(ran: list[ast.stmt], parents: dict[ast.AST, ast.AST]) -> list[ast.stmt]:
    """For each check, the assignment that last bound each name it reads, in its own function, before it
    (`got = library_sum(values)` for `assert close_enough(got, want)`): the values a check judges are
    computed as the original computed them (`expected_jax_dtype = j` made a dtype check vacuous)."""
    out: dict[int, ast.stmt] = {}
    for check in ran:
        # a loop header (what a check's loop draws from): the names its sequence reads (`outs`, `host`)
        assigns = [a for a in _own_statements(_scope(check, parents))
                   if isinstance(a, (ast.Assign, ast.AnnAssign)) and a.lineno < check.lineno]
        for name in _reads(check.iter if isinstance(check, ast.For) else check):
            last = [a for a in assigns if name in _stored(a)]
            if last:
                out[id(last[-1])] = last[-1]
    return list(out.values())


def _constant_only(node: ast.AST) -> bool:
    """A value that reads and calls nothing (`0`, `''`, `(1, None)`, `-1`): what a gutted input becomes."""
    return all(isinstance(n, (ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.UnaryOp, ast.BinOp,
                              ast.expr_context, ast.operator, ast.unaryop)) for n in ast.walk(node))


def _bindings(stmt: ast.Assign | ast.AnnAssign) -> list[tuple[str, ast.AST]]:
    """(name, the value it gets) for each plain name an assignment binds (a tuple unpacked item by item)."""
    value = stmt.value
    if value is None:
        return []
    out: list[tuple[str, ast.AST]] = []
    for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
        if isinstance(target, ast.Name):
            out.append((target.id, value))
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            out += [(t.id, v) for t, v in zip(target.elts, value.elts) if isinstance(t, ast.Name)]
    return out


def _severed(tree: ast.Module, frozen: Frozen) -> bool:
    """Whether a name a frozen check reads is now bound to a bare constant the original did not bind."""
    for stmt in (n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))):
        if any(name in frozen.operands and _constant_only(v) for name, v in _bindings(stmt)) \
                and ast.unparse(stmt) not in frozen.written:
            return True
    return False


def lacks(tree: ast.Module, frozen: Frozen) -> bool:
    """Whether a candidate lost (or changed) a frozen check statement or definition."""
    if not frozen:
        return False
    parents = parents_of(tree)
    stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    have = Counter(t for n in stmts for t in [statement_text(n, parents.get(n))] if t)
    have.update(ast.unparse(n) for n in stmts if isinstance(n, ast.Assert))
    if frozen.statements - have:
        return True
    if frozen.inputs - Counter(ast.unparse(n) for n in stmts if isinstance(n, (ast.Assign, ast.AnnAssign))):
        return True
    if frozen.calls:
        checks = [n for n in stmts if statement_text(n, parents.get(n)) in frozen.statements
                  or (isinstance(n, ast.Assert) and ast.unparse(n) in frozen.statements)]
        checks += _conditions(checks, parents)
        if not frozen.calls <= held_calls(tree, checks):  # a call the checked values came through is gone
            return True
    if frozen.bridged - Counter(ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        return True
    if any(isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name in frozen.through
           and not any(c in frozen.through[d.name] for c in _calls_in(d)) for d in tree.body):
        return True  # a helper the checked values come through makes none of the calls it made
    return bool(frozen.definitions - Counter(ast.unparse(s) for s in tree.body)) or _severed(tree, frozen)
