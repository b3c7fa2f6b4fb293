"""Rewrites that move code without changing when it runs: what the reducer may apply to a script under
frozen checks (harness.reduce.rebase), where a rewrite must keep the failing run's meaning, not only
its signature.

- `fold_first_reads`: `arr = np.asarray(x)` then `arr = arr.astype(np.float64)` becomes
  `arr = np.asarray(x).astype(np.float64)`: a value, calls and all, moved into the next statement where
  that statement reads it once and first, before anything there may run code. Python evaluates the
  same things in the same order.
- `inline_expressions`: a helper that only returns an expression (`to_numpy(x)`: `return
  np.asarray(x).astype(np.float64)`) is written at every call, where it reads each parameter once, in
  the order the call passes them, before anything in it may run code: the argument is then evaluated
  where the call evaluated it.
- `conditional_assignments`: `if hasattr(x, 'detach'): x = x.detach().cpu().numpy()` becomes
  `x = x.detach().cpu().numpy() if hasattr(x, 'detach') else x` where x is bound before it for certain:
  the test, then the value or nothing, as before; a fold then takes it into `return np.asarray(x)`.

"May run code" is everything but loading a name, a constant, and an attribute of an imported module
(`np.asarray`: a lookup in the module's dict, or its `__getattr__`, which only names what it lacks;
not `np.testing.assert_allclose`, since the text does not say whether `np.testing` is a module or an
object whose property would run code).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Collection, Iterator

from harness.reduce.signature import parents_of
from harness.reduce.transforms import _blocks, _loads, _same_block, _Subst, _written

MAX_LINE = 150  # a line a rewrite here writes: as long as the longest check the exporter writes (held as written)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_OPAQUE = object()  # evaluation order unknown from here on: conditional or in a scope of its own


def _modules(tree: ast.Module) -> set[str]:
    """The names `import M` / `import M as m` bind at the top, never bound again anywhere."""
    imported = {(a.asname or a.name).split(".")[0] for s in tree.body if isinstance(s, ast.Import) for a in s.names}
    rebound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    rebound |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    rebound |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                and n not in tree.body for a in n.names}
    return imported - rebound


def _module_attribute(node: ast.Attribute, modules: set[str]) -> bool:
    """`np.asarray`: one attribute of an imported module. Not `np.testing.assert_allclose` nor `math.pi.p`:
    the text does not say whether the middle is a module (a property of what it names runs code)."""
    return isinstance(node.value, ast.Name) and node.value.id in modules


def _order(node: ast.AST, modules: set[str]) -> Iterator[object]:
    """node's evaluation as Python runs it: each Name loaded, each operation that may run code (the node
    itself), and _OPAQUE where what comes next may not run or runs elsewhere."""
    if isinstance(node, ast.Name):
        yield node
    elif isinstance(node, ast.Constant):
        return
    elif isinstance(node, ast.Attribute):
        if _module_attribute(node, modules):
            return
        yield from _order(node.value, modules)
        yield node
    elif isinstance(node, ast.Call):
        yield from _order(node.func, modules)
        yield from _items(node.args, modules)
        for k in node.keywords:
            yield from _order(k.value, modules)
            if k.arg is None:
                yield k
        yield node
    elif isinstance(node, ast.BinOp):
        yield from _order(node.left, modules)
        yield from _order(node.right, modules)
        yield node
    elif isinstance(node, ast.UnaryOp):
        yield from _order(node.operand, modules)
        yield node
    elif isinstance(node, ast.Subscript):
        yield from _order(node.value, modules)
        yield from _order(node.slice, modules)
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        yield from _items(node.elts, modules)
    elif isinstance(node, ast.Compare):  # the comparisons after the first are conditional
        yield from _order(node.left, modules)
        yield from _order(node.comparators[0], modules)
        yield node
        if len(node.comparators) > 1:
            yield _OPAQUE
    elif isinstance(node, ast.BoolOp):
        yield from _order(node.values[0], modules)
        yield _OPAQUE
    elif isinstance(node, ast.IfExp):
        yield from _order(node.test, modules)
        yield _OPAQUE
    elif isinstance(node, ast.keyword):
        yield from _order(node.value, modules)
    else:  # a lambda, a comprehension, an f-string, a walrus, an await: not followed
        yield _OPAQUE


def _items(items: list[ast.expr], modules: set[str]) -> Iterator[object]:
    """A call's arguments or a display's items, in order; unpacking one (`*xs`) iterates it: code."""
    for item in items:
        yield from _order(item.value if isinstance(item, ast.Starred) else item, modules)
        if isinstance(item, ast.Starred):
            yield item


def _statement_order(stmt: ast.stmt, modules: set[str]) -> Iterator[object] | None:
    """A simple statement's evaluation (None: a statement this module does not move code into)."""
    if isinstance(stmt, (ast.Expr, ast.Return)) and stmt.value is not None:
        return _order(stmt.value, modules)
    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        return _order(stmt.value, modules)
    return None


def _read_first(events: Iterator[object] | None, name: str) -> bool:
    """Whether the first load of `name` comes before anything that may run code."""
    for e in events or ():
        if isinstance(e, ast.Name) and isinstance(e.ctx, ast.Load):
            if e.id == name:
                return True
            continue
        return False
    return False


def _scope_of(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    node = parents[node]
    while not isinstance(node, (ast.Module, *_SCOPES)):
        node = parents[node]
    return node


def _long(stmt: ast.stmt) -> bool:
    return max((len(ln) for ln in ast.unparse(stmt).splitlines()), default=0) + stmt.col_offset > MAX_LINE


def _inside(node: ast.AST, parents: dict[ast.AST, ast.AST], scope: ast.AST, kinds: tuple[type, ...]) -> bool:
    """Whether a `kinds` statement holds node within its scope."""
    while node is not scope:
        node = parents[node]
        if isinstance(node, kinds):
            return True
    return False


def _binds(scope: ast.AST, name: str, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether name is a local of scope (a function's, a lambda's or a comprehension's): bound there, not
    declared global or nonlocal there."""
    if isinstance(scope, (ast.Module, ast.ClassDef)):
        return False
    args = scope.args if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else None
    params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a} if args else set()
    mine = [n for n in ast.walk(scope) if n is not scope and _scope_of(n, parents) is scope]
    declared = {x for n in mine if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names}
    stored = {n.id for n in mine if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return name not in declared and name in (params | stored)


def _before(load: ast.Name, stmt: ast.stmt, reader: ast.stmt, parents: dict[ast.AST, ast.AST], scope: ast.AST) -> bool:
    """Whether `load` can only see a value bound before stmt's or the one reader reads: in reader, or
    written before reader (stmt's own value included) where no loop runs stmt again."""
    if any(n is load for n in ast.walk(reader)):
        return True
    loops = (ast.For, ast.AsyncFor, ast.While)
    return (not _inside(stmt, parents, scope, loops)
            and (load.lineno, load.col_offset) < (reader.lineno, reader.col_offset))


def fold_first_reads(code: str) -> Iterator[str]:
    """Candidates, one per assignment: `n = VALUE` followed by a statement that reads n once and first
    (nothing before that read may run code) becomes that statement with VALUE in place of n. n must be
    a module's name no function reads, or a function's local no scope inside it reads (never a class's;
    no `global` or `del` names it), in the same block. Where the
    next statement rebinds n, only it sees VALUE (unless a handler could, were it to raise); otherwise n
    is read nowhere else but before VALUE is bound, outside any loop that runs the assignment again."""
    tree = ast.parse(code)
    parents = parents_of(tree)
    modules = _modules(tree)
    names: dict[str, list[ast.Name]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            names.setdefault(n.id, []).append(n)
    declared = {x for n in ast.walk(tree) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names}
    for block in [b for node in ast.walk(tree) for b in _blocks(node)]:
        for i, stmt in enumerate(block[:-1]):
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
                continue
            name, reader = stmt.targets[0].id, block[i + 1]
            if name in declared or isinstance(stmt.value, (ast.Lambda, ast.Starred)) or any(
                    isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(stmt.value)):
                continue
            scope = _scope_of(stmt, parents)
            if isinstance(scope, ast.ClassDef):
                continue  # a class attribute: what the methods and the class's users read
            uses = names.get(name, [])
            if not isinstance(scope, ast.Module):  # a function's local: another function's same name is another
                inside = {id(n) for n in ast.walk(scope)}
                uses = [n for n in uses if id(n) in inside]
            if any(isinstance(n.ctx, ast.Del) or (_scope_of(n, parents) is not scope
                                                  and not _binds(_scope_of(n, parents), name, parents)) for n in uses):
                continue  # a closure or another function reads it, or it is deleted
            if _loads(reader).get(name, 0) != 1 or not _read_first(_statement_order(reader, modules), name):
                continue
            rebinds = isinstance(reader, ast.Assign) and any(t.id == name for t in reader.targets)  # type: ignore[attr-defined]
            if rebinds and _inside(stmt, parents, scope, (ast.Try, ast.TryStar)):
                continue  # a handler would see this value where the next statement raised
            if not rebinds and any(isinstance(n.ctx, ast.Load) and not _before(n, stmt, reader, parents, scope)
                                   for n in uses):
                continue  # read where this value, not the next statement's, could be what it sees
            cand = copy.deepcopy(tree)
            c_block = _same_block(cand, tree, block)
            new = _Subst({name: stmt.value}).visit(c_block[i + 1])
            if _long(new):
                continue
            c_block[i + 1] = new
            del c_block[i]
            text = _written(cand)
            if text is not None:
                yield text


def _expression_of(fn: ast.FunctionDef) -> ast.expr | None:
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def _enclosing_bound(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> set[str]:
    """The names bound by every function, lambda or comprehension around node (not the module)."""
    out: set[str] = set()
    while node in parents:
        node = parents[node]
        if isinstance(node, _SCOPES):
            out |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
            out |= {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
            out |= {node.name} if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else set()
    return out


def inline_expressions(code: str, only: Collection[str] | None = None) -> Iterator[str]:
    """Candidates, one per helper: a top-level function (no decorator, no default, plain parameters)
    whose body only returns an expression becomes that expression at each of its calls, where it reads
    each parameter at most once and each argument but a literal in the order the call passes them, before
    anything in it may run code (every use of its name is a call with plain arguments; a parameter it
    never reads takes only a name or a literal). only: the names of the helpers that may be inlined (all where None)."""
    tree = ast.parse(code)
    parents = parents_of(tree)
    modules = _modules(tree)
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.decorator_list or (only is not None and fn.name not in only):
            continue
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            continue
        result = _expression_of(fn)
        if result is None:
            continue
        params = [p.arg for p in a.args]
        events = list(_order(result, modules))
        reads = [e.id for e in events if isinstance(e, ast.Name) and e.id in params]
        if any(_loads(result).get(p, 0) > 1 for p in params):
            continue
        first = []
        for e in events:  # the parameters read before anything may run code, in order
            if not isinstance(e, ast.Name):
                break
            if e.id in params:
                first.append(e.id)
        free = {n.id for n in ast.walk(result) if isinstance(n, ast.Name)} - set(params)
        uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == fn.name]
        calls = [parents[n] for n in uses]
        if not calls or not all(isinstance(c, ast.Call) and c.func is n and not any(
                isinstance(x, ast.Starred) for x in c.args) and all(k.arg for k in c.keywords)
                for c, n in zip(calls, uses)):
            continue  # passed as a value, or called with *args / **kw
        if any(n is c for c in calls for n in ast.walk(fn)) or any(
                n is c2 for c in calls for c2 in calls if c2 is not c for n in ast.walk(c)):
            continue  # recursive, or a call in another's arguments
        substitutions = []
        for call in calls:
            values = dict(zip(params, call.args))
            values.update({k.arg: k.value for k in call.keywords if k.arg in params})
            if len(values) != len(params) or len(call.args) > len(params) or any(k.arg not in params for k in call.keywords):
                break
            # an argument is evaluated where the call evaluated it: in order, before anything else
            evaluated = [p for p in params if not isinstance(values[p], ast.Constant)]
            if [p for p in first if p in evaluated] != evaluated or [p for p in reads if p in evaluated] != evaluated:
                break
            if any(p not in reads and not isinstance(values[p], (ast.Constant, ast.Name)) for p in params):
                break  # an argument the body never reads still ran once
            if free & _enclosing_bound(call, parents):
                break  # a name the helper reads from the module is a local where it is called
            substitutions.append((call, values))
        else:
            cand = copy.deepcopy(tree)
            pairs = dict(zip(map(id, ast.walk(tree)), ast.walk(cand)))
            c_parents = parents_of(cand)
            changed = []
            for call, values in substitutions:
                c_call = pairs[id(call)]
                new = _Subst(values).visit(copy.deepcopy(result))
                holder = c_parents[c_call]
                for field, value in ast.iter_fields(holder):
                    if value is c_call:
                        setattr(holder, field, new)
                    elif isinstance(value, list):
                        value[:] = [new if v is c_call else v for v in value]
                stmt = c_call
                while not isinstance(stmt, ast.stmt):
                    stmt = c_parents[stmt]
                changed.append(stmt)
            cand.body.remove(pairs[id(fn)])
            if any(_long(s) for s in changed if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))):
                continue
            text = _written(cand)
            if text is not None:
                yield text


def conditional_assignments(code: str) -> Iterator[str]:
    """Candidates, one per `if`: `if TEST: n = VALUE` (no else) becomes `n = VALUE if TEST else n` where n is
    bound before it for certain (a parameter of the function around it, never deleted, or assigned
    earlier in the same block): TEST, then VALUE or nothing, are evaluated as before, and n = n keeps
    the value it had. Then fold_first_reads can move it into its reader (`to_numpy`'s
    `if hasattr(x, 'detach'): x = ...` and `return np.asarray(x)` become one return)."""
    tree = ast.parse(code)
    parents = parents_of(tree)
    declared = {x for n in ast.walk(tree) if isinstance(n, (ast.Global, ast.Nonlocal)) for x in n.names}
    for block in [b for node in ast.walk(tree) for b in _blocks(node)]:
        for i, stmt in enumerate(block):
            if not (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1):
                continue
            (inner,) = stmt.body
            if not (isinstance(inner, ast.Assign) and len(inner.targets) == 1 and isinstance(inner.targets[0], ast.Name)):
                continue
            name = inner.targets[0].id
            scope = _scope_of(stmt, parents)
            deleted = any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Del) for n in ast.walk(scope))
            param = isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and name in {
                a.arg for a in [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs]}
            earlier = any(isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)
                          for s in block[:i])
            if name in declared or deleted or not (param or earlier) or any(
                    isinstance(n, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(stmt)):
                continue
            cand = copy.deepcopy(tree)
            c_block = _same_block(cand, tree, block)
            c_if = c_block[i]
            new = ast.Assign(targets=[ast.Name(name, ast.Store())],
                             value=ast.IfExp(test=c_if.test, body=c_if.body[0].value, orelse=ast.Name(name, ast.Load())))
            ast.copy_location(new, c_if)
            if _long(ast.fix_missing_locations(new)):
                continue
            c_block[i] = new
            text = _written(cand)
            if text is not None:
                yield text
