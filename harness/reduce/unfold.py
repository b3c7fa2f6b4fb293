"""Rewrites that unfold the indirection a scenario's generality leaves in a reduced script, each a
candidate the reducer keeps only if it passes the same predicate (harness.reduce.transforms says why
a rewrite may then be wrong for some script):

- `inline_bodies`: a helper called once becomes its statements before the statement that called it,
  and its returned expression (None if it returns nothing) where the call was; in any block, so a
  step called from a generated module's `forward` unfolds there too. transforms.inline_calls and
  inline_returns cover a call that is a whole statement and a helper that only returns; this one
  covers `states, jfn = extract(generated_module(program, width))`.
- `unroll_loops`: `for name in ['mask_assign', 'slice_assign']:` becomes its body once per item.
- `constant_dispatch`: `STEPS['mask_assign']` (a table assigned once, only ever read by key) becomes
  the entry, `_mask_assign`.
- `split_tuple_assignments`: `_cpu, a = (0, [...])` becomes two assignments.
- `no_ops`: `h, made = (h, made)` (what inlining a `return (h, made)` leaves) and bare literals go.
- `write_only_records`: a dict a scenario filled for its checks, none of which is left, goes.
- `conditional_returns`: `if C: return A` then `return B` becomes `return A if C else B`.
- `fold_literals`: `getattr(xb, 'call_jax')` becomes `xb.call_jax`, `f"{'nested'}: ..."` the text.
- `plain_methods`: `observe.close(...)` of `observe = Observe()`, a class of methods that never read
  `self`, becomes `close(...)`, the method a function.
"""

from __future__ import annotations

import ast
import copy
import keyword
from collections.abc import Collection, Iterator

from harness.reduce.names import bound_names
from harness.reduce.signature import FoldedFStrings, parents_of
from harness.reduce.transforms import (
    _SCOPES,
    _blocks,
    _calls_of,
    _fix_empty,
    _loads,
    _module_names,
    _returns,
    _Subst,
    _written,
    bind_arguments,
    runs_code,
)

MAX_UNROLL = 8  # a loop over more items than this stays a loop
_SIMPLE = (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Assert, ast.Raise)
# Where a sub-expression may not run, or run more than once, when its statement does: a call there
# cannot move before the statement.
_CONDITIONAL = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.IfExp, ast.BoolOp)


def _site(tree: ast.Module, call: ast.Call, parents: dict[ast.AST, ast.AST]) -> tuple[ast.stmt, ast.AST] | None:
    """The simple statement whose evaluation always evaluates `call` (an assert's test, a raise's
    exception too), and the scope holding it (the module or a function); None if the call sits where it
    may not run (a lambda, a comprehension, a branch of `a if c else b` or `x and y`, an assert's
    message) or in a compound statement's header."""
    node: ast.AST = call
    while not isinstance(node, ast.stmt):
        parent = parents[node]
        if isinstance(parent, _CONDITIONAL) or (isinstance(parent, ast.Assert) and node is parent.msg):
            return None  # an assert's message is evaluated only where its test fails
        node = parent
    if not isinstance(node, _SIMPLE):
        return None
    scope = parents[node]
    while not isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        scope = parents[scope]
    if isinstance(scope, ast.ClassDef):
        return None  # a class body's names are its attributes
    return node, scope


def _scope_names(scope: ast.AST, skip: ast.AST) -> set[str]:
    """Every name the scope binds or reads: a function's, anywhere in it; the module's, as its
    statements other than `skip` (the helper being inlined) bind or read them (a function by the
    names it reads without binding them)."""
    if isinstance(scope, ast.Module):
        return set().union(*(_module_names(s) for s in scope.body if s is not skip))
    return bound_names(scope) | set(_loads(scope))


def _own_bound(stmts: list[ast.stmt]) -> set[str]:
    """The names these statements bind in their own scope: a nested def or class by its name only."""
    out: set[str] = set()
    todo: list[ast.AST] = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            todo.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            todo.append(node.generators[0].iter)  # the rest is the comprehension's own scope
            continue
        if isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom, ast.MatchAs, ast.MatchStar, ast.Global, ast.Nonlocal)) or (
                isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)):
            out |= bound_names(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _replace(stmt: ast.stmt, new: list[ast.stmt], parents: dict[ast.AST, ast.AST]) -> None:
    """Put the statements `new` where stmt is in its block."""
    block = next(b for b in _blocks(parents[stmt]) if any(s is stmt for s in b))
    i = next(k for k, s in enumerate(block) if s is stmt)
    block[i:i + 1] = new


def _free(nodes: list[ast.AST], skip: tuple[ast.AST, ...] = ()) -> set[str]:
    """The names these nodes read from outside (not counting what is under `skip`): a comprehension's,
    lambda's or nested def's own names (its targets, parameters, locals) are its own."""
    out: set[str] = set()
    for node in nodes:
        if any(node is k for k in skip):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda,
                               ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = _free(list(ast.iter_child_nodes(node)), skip)
            own = bound_names(node) - ({node.name} if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else set())
            out |= inner - own
        else:
            out |= _free(list(ast.iter_child_nodes(node)), skip)
    return out


def _rebound_after(site: ast.stmt, scope: ast.AST, helper: ast.FunctionDef) -> set[str]:
    """The names a helper's locals may overwrite at a call site in its scope's own block (no loop around it):
    names the statements after the site assign (a plain `name = ...`) before anything reads them, and that
    no function or lambda of the scope other than the helper reads (it could run later and see the
    helper's value). `co = compute_on()` after the call of a helper with a local `co` is such a name."""
    body = getattr(scope, "body", [])
    if not any(s is site for s in body):
        return set()
    after = body[next(i for i, s in enumerate(body) if s is site) + 1:]
    nested = {n.id for d in ast.walk(scope) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
              and d is not helper and d is not scope for n in ast.walk(d) if isinstance(n, ast.Name)}
    out: set[str] = set()
    candidates = {n.id for n in ast.walk(helper) if isinstance(n, ast.Name)} - nested
    for name in candidates:
        for stmt in after:
            if isinstance(stmt, ast.Assign) and name in _store_names(stmt) and name not in _loads(stmt.value) \
                    and all(isinstance(t, ast.Name) for t in stmt.targets):
                out.add(name)
                break
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt)):
                break  # read (or bound otherwise) first
    return out


def _store_names(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, ast.Assign):
        return {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return {stmt.target.id}
    return set()  # `x += f(a)` reads x after f's body ran: not a name the statement only assigns


def inline_bodies(code: str, *, ordered: bool = False, only: Collection[str] | None = None) -> Iterator[str]:
    """Candidates, one per helper: a top-level function called once, from a simple statement that always
    evaluates the call, returning only at its end (or not at all), becomes its statements before that
    statement (parameters substituted where the argument is a literal, a name or read once, else assigned)
    and its returned expression at the call. Refused where one of its locals would change a name the
    calling scope uses (unless the calling statement assigns that name right after), or a name it reads
    from the module would be the caller's local. ordered: an argument that calls something is assigned
    first, never written where it is read (which runs it after the helper's statements before). only: the
    names of the helpers that may be inlined (all where None)."""
    tree = ast.parse(code)
    # `*shapes` and `**kw` too (bind_arguments: a call's extras become a tuple, a dict)
    functions = [s for s in tree.body if isinstance(s, ast.FunctionDef) and not s.decorator_list
                 and (only is None or s.name in only)]
    parents = parents_of(tree)  # tree stays as parsed: each candidate is a copy
    for fn in functions:
        calls = _calls_of(tree, fn.name)
        if not calls or len(calls) != 1:
            continue
        call = calls[0]
        if any(n is call for n in ast.walk(fn)):
            continue  # recursive
        values = bind_arguments(fn, call)
        if values is None:
            continue
        body = list(fn.body)
        if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            body = body[1:]  # the docstring
        result: ast.expr = ast.Constant(None)
        if body and isinstance(body[-1], ast.Return):
            result = body[-1].value or ast.Constant(None)
            body = body[:-1]
        if _returns(ast.Module(body=body, type_ignores=[])):
            continue
        found = _site(tree, call, parents)
        if found is None:
            continue
        site, scope = found
        params = list(values)
        inner = ast.Module(body=body + [ast.Expr(result)], type_ignores=[])
        reads = _loads(inner)
        local = _own_bound(body) | set(params)
        stored = _own_bound(body)
        same = {p for p in params if isinstance(values[p], ast.Name) and values[p].id == p and p not in stored}
        clash = (local - same) & _scope_names(scope, fn)
        if clash - _store_names(site) - _rebound_after(site, scope, fn):
            continue  # a local of the helper would change a name the caller's scope uses
        free = _free(list(inner.body)) - local
        if not isinstance(scope, ast.Module) and free & (bound_names(scope) - {scope.name}):
            continue  # a global the helper reads is the caller's local
        pre: list[ast.stmt] = []
        subst: dict[str, ast.expr] = {}
        for p in params:
            if reads.get(p, 0) == 0 and p not in stored:
                continue
            v = values[p]
            if p not in stored and (isinstance(v, (ast.Constant, ast.Name))
                                    or (reads.get(p, 0) == 1 and (not ordered or not runs_code(v)))):
                subst[p] = v
            else:
                pre.append(ast.Assign([ast.Name(p, ast.Store())], v, lineno=0))
        new_body = pre + [_Subst(subst).visit(copy.deepcopy(s)) for s in body]
        new_result = _Subst(subst).visit(copy.deepcopy(result))
        cand = copy.deepcopy(tree)
        pairs = dict(zip(map(id, ast.walk(tree)), ast.walk(cand)))
        c_call, c_site, c_fn = pairs[id(call)], pairs[id(site)], pairs[id(fn)]
        c_parents = parents_of(cand)
        if isinstance(c_site, ast.Expr) and c_site.value is c_call:
            keep = [] if isinstance(new_result, (ast.Constant, ast.Name)) else [ast.Expr(new_result)]
        else:
            parent = c_parents[c_call]
            for field, value in ast.iter_fields(parent):
                if value is c_call:
                    setattr(parent, field, new_result)
                elif isinstance(value, list):
                    for k, v in enumerate(value):
                        if v is c_call:
                            value[k] = new_result
            keep = [c_site]
        _replace(c_site, new_body + keep or [ast.Pass()], c_parents)
        cand.body.remove(c_fn)
        text = _written(cand)
        if text is not None:
            yield text


def plain_methods(code: str) -> str:
    """A module-level instance `observe = Observe()` (also in the main block) of a script class that only
    holds methods, none of which reads `self` (or `__class__`), used only as `observe.close(...)`: the
    methods become functions
    where the class was and the calls call them (`close(...)`); the class and the instance go. An
    instance whose class has a base (`dict`) works the same, as no attribute but these methods is read.
    Refused where a method's name is a name the module already uses."""
    tree = ast.parse(code)
    parents = parents_of(tree)
    classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        d.name for d in ast.walk(tree) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and parents.get(d) is tree}
    # the instance at the top level, or in a top-level block (the main block, where the scenario was inlined)
    holders = [tree.body] + [b for s in tree.body if isinstance(s, ast.If) for b in (s.body, s.orelse)]
    for holder, inst in [(h, i) for h in holders for i in h]:
        if not (isinstance(inst, ast.Assign) and len(inst.targets) == 1 and isinstance(inst.targets[0], ast.Name)
                and isinstance(inst.value, ast.Call) and isinstance(inst.value.func, ast.Name)
                and not inst.value.args and not inst.value.keywords and inst.value.func.id in classes):
            continue
        name, cls = inst.targets[0].id, classes[inst.value.func.id]
        methods = [m for m in cls.body if not (isinstance(m, ast.Expr) and isinstance(m.value, ast.Constant))]
        if cls.decorator_list or cls.keywords or not methods or not all(
                isinstance(m, ast.FunctionDef) and not m.decorator_list and m.args.args and not m.args.posonlyargs
                for m in methods):
            continue
        by_name = {m.name: m for m in methods}  # type: ignore[union-attr]
        if len(by_name) != len(methods) or set(by_name) & used or any(
                isinstance(n, ast.Name) and n.id in (m.args.args[0].arg, "__class__", "super")  # type: ignore[union-attr]
                for m in methods for n in ast.walk(m)):
            continue
        uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name and n is not inst.targets[0]]
        if any(not (isinstance(parents[n], ast.Attribute) and parents[n].attr in by_name
                    and isinstance(parents[parents[n]], ast.Call) and parents[parents[n]].func is parents[n])
               for n in uses):
            continue
        if [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == cls.name] != [inst.value.func]:
            continue  # the class is read elsewhere (isinstance, a subclass)
        for n in uses:
            call = parents[parents[n]]
            call.func = ast.Name(parents[n].attr, ast.Load())
        for m in methods:
            m.args.args = m.args.args[1:]  # type: ignore[union-attr]
        at = tree.body.index(cls)
        tree.body[at:at + 1] = methods
        holder.remove(inst)
        if not holder and holder is not tree.body:
            holder.append(ast.Pass())
        return ast.unparse(ast.fix_missing_locations(tree))
    return code


def conditional_returns(code: str) -> str:
    """A top-level function `if C: return A` then `return B` (imports between them moved to the top of
    the function) returns `A if C else B`: one expression, which inline_returns can then write at the
    call (a compatibility helper: `env.t2j_copy(t) if hasattr(env, 't2j_copy') else tx_tensor.t2j(t)`)."""
    tree = ast.parse(code)
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or not fn.body:
            continue
        *head, guard = [s for s in fn.body if not isinstance(s, (ast.Import, ast.ImportFrom))][:-1] or [None]
        last = fn.body[-1]
        if (head or not isinstance(guard, ast.If) or not isinstance(last, ast.Return) or last.value is None
                or len(guard.body) != 1 or not isinstance(guard.body[0], ast.Return) or guard.body[0].value is None
                or guard.orelse):
            continue
        imports = [s for s in fn.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        fn.body = imports + [ast.Return(ast.IfExp(guard.test, guard.body[0].value, last.value))]
        return ast.unparse(ast.fix_missing_locations(tree))
    return ast.unparse(tree)


def _pure(node: ast.expr) -> bool:
    """A literal, a name, or a tuple, list or dict of those: what substituting cannot make run code."""
    return all(isinstance(n, (ast.Constant, ast.Name, ast.Tuple, ast.List, ast.Dict, ast.Load)) for n in ast.walk(node))


def _literal_items(node: ast.expr, tree: ast.Module, parents: dict[ast.AST, ast.AST]) -> list[ast.expr] | None:
    """The items of a list or tuple literal of literals and names, or of tuples and lists of those (or
    of a module name assigned such a literal once and only ever read, never as `name.attr`,
    `name[...] = ` or `del`); `enumerate(LITERAL)`: (index, item) pairs."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "enumerate"
            and len(node.args) == 1 and not node.keywords):
        items = _literal_items(node.args[0], tree, parents)
        return None if items is None else [ast.Tuple([ast.Constant(i), e], ast.Load()) for i, e in enumerate(items)]
    if isinstance(node, ast.Name):
        assigns = [s for s in tree.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                   and isinstance(s.targets[0], ast.Name) and s.targets[0].id == node.id]
        stores = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == node.id and not isinstance(n.ctx, ast.Load)]
        if len(assigns) != 1 or len(stores) != 1:
            return None
        if any(isinstance(n, ast.Name) and n.id == node.id and isinstance(parents.get(n), (ast.Attribute, ast.Subscript))
               for n in ast.walk(tree)):
            return None  # `program.append(...)`, `program[0] = ...`: not a constant
        node = assigns[0].value
    if not isinstance(node, (ast.List, ast.Tuple)) or len(node.elts) > MAX_UNROLL:
        return None
    if not all(_pure(e) for e in node.elts):
        return None
    return list(node.elts)


def _bind(target: ast.expr, item: ast.expr) -> dict[str, ast.expr] | None:
    """The loop variables' values for one item (`for i, kind in ...`: the item's parts); None if the
    item cannot be taken apart here."""
    if isinstance(target, ast.Name):
        return {target.id: item}
    if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(item, (ast.Tuple, ast.List))
            and len(target.elts) == len(item.elts)):
        out: dict[str, ast.expr] = {}
        for t, v in zip(target.elts, item.elts):
            part = _bind(t, v)
            if part is None:
                return None
            out.update(part)
        return out
    return None


def _breaks(loop: ast.For) -> bool:
    """True if the loop's own body breaks or continues (not a nested loop's)."""
    todo: list[ast.AST] = list(loop.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Break, ast.Continue)):
            return True
        if not isinstance(node, (ast.For, ast.AsyncFor, ast.While, *_SCOPES)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def unroll_loops(code: str, parts: bool = True) -> Iterator[str]:
    """Candidates, one per loop: `for NAME in LITERAL:` (or a module list of literals; at most
    MAX_UNROLL items, no break, continue or else, NAME not assigned in the body and not read after it)
    becomes its body once per item, NAME written as the item. With parts, also `for i, kind in
    enumerate(LITERAL)` and tuple targets, where the result is no longer than the loop."""
    tree = ast.parse(code)
    parents = parents_of(tree)  # tree stays as parsed: each candidate is a copy
    for loop in [n for n in ast.walk(tree) if isinstance(n, ast.For)]:
        if loop.orelse or _breaks(loop):
            continue
        items = _literal_items(loop.iter, tree, parents)
        if items is None:
            continue
        if not parts and not isinstance(loop.target, ast.Name):
            continue
        bound = [_bind(loop.target, item) for item in items]
        if any(b is None for b in bound):
            continue
        names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
        if names & _own_bound(loop.body):
            continue
        scope: ast.AST = parents[loop]
        while not isinstance(scope, (ast.Module, *_SCOPES)):
            scope = parents[scope]
        body = scope.body if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else []
        if names & _free(list(body), skip=tuple(loop.body)):
            continue  # read after the loop (or before it: the same name), where it holds another value
        unrolled = [_Subst(values).visit(copy.deepcopy(s)) for values in bound for s in loop.body]  # type: ignore[arg-type]
        cand = copy.deepcopy(tree)
        c_loop = dict(zip(map(id, ast.walk(tree)), ast.walk(cand)))[id(loop)]
        _replace(c_loop, unrolled or [ast.Pass()], parents_of(cand))
        out = ast.unparse(ast.fix_missing_locations(cand))
        if isinstance(loop.target, ast.Name) or len(out.splitlines()) <= len(code.splitlines()):
            yield out  # a loop taken apart into its parts only where that is no longer (see the reducer)


def constant_dispatch(code: str) -> str:
    """`TABLE[key]` becomes the entry, where TABLE is a module name assigned a dict literal once, with
    literal keys, and every other use of it reads one entry (`TABLE[...]`, never `TABLE.update` or a
    store): a dispatch table of steps or variants, each read by a literal key after unrolling."""
    tree = ast.parse(code)
    parents = parents_of(tree)
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Dict) and all(isinstance(k, ast.Constant) for k in stmt.value.keys)):
            continue
        name = stmt.targets[0].id
        uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name and n is not stmt.targets[0]]
        if any(not isinstance(n.ctx, ast.Load) for n in uses):
            continue
        if not all(isinstance(parents[n], ast.Subscript) and parents[n].value is n
                   and isinstance(parents[n].ctx, ast.Load) for n in uses):
            continue
        table = {k.value: v for k, v in zip(stmt.value.keys, stmt.value.values)}  # type: ignore[union-attr]
        for n in uses:
            sub = parents[n]
            if isinstance(sub.slice, ast.Constant) and sub.slice.value in table:
                holder = parents[sub]
                for field, value in ast.iter_fields(holder):
                    if value is sub:
                        setattr(holder, field, copy.deepcopy(table[sub.slice.value]))
                    elif isinstance(value, list):
                        for k, v in enumerate(value):
                            if v is sub:
                                value[k] = copy.deepcopy(table[sub.slice.value])
    return ast.unparse(ast.fix_missing_locations(tree))


def _same_names(target: ast.expr, value: ast.expr) -> bool:
    if isinstance(target, ast.Name) and isinstance(value, ast.Name):
        return target.id == value.id
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
        return len(target.elts) == len(value.elts) and all(_same_names(t, v) for t, v in zip(target.elts, value.elts))
    return False


def _no_op(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Assign):
        return len(stmt.targets) == 1 and _same_names(stmt.targets[0], stmt.value)
    return isinstance(stmt, ast.Expr) and all(
        isinstance(n, (ast.Constant, ast.Name, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Load)) for n in ast.walk(stmt.value))


def no_ops(code: str) -> str:
    """Statements that do nothing go: `x = x`, `h, made = (h, made)` (what inlining `return (h, made)`
    leaves) and a bare literal or name (`{'mask_assign': _mask_assign}` once its name went); a block
    left empty gets `pass`."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        for block in _blocks(node):
            block[:] = [s for s in block if not _no_op(s)] or [ast.Pass()]
    return ast.unparse(tree)


def write_only_records(code: str) -> str:
    """A dict nothing reads back (`run = {'env': env}`, `run['x'] = f(x)`, `run.update(jit=g(x))`, at
    most rebound, never read) goes, each value that calls something kept as a statement of its own."""
    tree = ast.parse(code)
    parents = parents_of(tree)
    for name in sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}):
        uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name]
        writes: list[tuple[ast.stmt, list[ast.expr]]] = []
        for n in uses:
            p = parents[n]
            if isinstance(n.ctx, ast.Store) and isinstance(p, ast.Assign) and p.targets == [n] and isinstance(
                    p.value, (ast.Dict, ast.Constant)):
                writes.append((p, list(p.value.values) if isinstance(p.value, ast.Dict) else []))
            elif isinstance(p, ast.Subscript) and isinstance(p.ctx, ast.Store) and isinstance(parents[p], ast.Assign) \
                    and parents[p].targets == [p]:
                writes.append((parents[p], [parents[p].value]))
            elif (isinstance(p, ast.Attribute) and p.attr == "update" and isinstance(parents[p], ast.Call)
                  and parents[p].func is p and isinstance(parents[parents[p]], ast.Expr)
                  and all(k.arg for k in parents[p].keywords) and not parents[p].args):
                writes.append((parents[parents[p]], [k.value for k in parents[p].keywords]))
            else:
                break
        else:
            if not any(isinstance(p.value, ast.Dict) for p, _ in writes if isinstance(p, ast.Assign)):
                continue  # not a dict
            for stmt, values in writes:
                kept = [ast.Expr(v) for v in values if any(isinstance(x, ast.Call) for x in ast.walk(v))]
                _replace(stmt, kept, parents)
            _fix_empty(tree)
            return ast.unparse(ast.fix_missing_locations(tree))
    return ast.unparse(tree)


def _pairs(target: ast.expr, value: ast.expr) -> list[tuple[ast.expr, ast.expr]] | None:
    """(target, value) for each name, or tuple not matched by a display, a tuple assignment binds, in the order it
    binds them; None where a target is starred or not a name, or a display's length differs."""
    if isinstance(target, ast.Name):
        return [(target, value)]
    if not isinstance(target, (ast.Tuple, ast.List)) or not all(
            isinstance(t, (ast.Name, ast.Tuple, ast.List)) for t in target.elts):
        return None
    if not isinstance(value, (ast.Tuple, ast.List)):
        other = [n for n in ast.walk(target) if not isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Store))]
        return None if other else [(target, value)]  # `a, b = pair`: kept as one
    if len(target.elts) != len(value.elts) or any(isinstance(v, ast.Starred) for v in value.elts):
        return None
    out: list[tuple[ast.expr, ast.expr]] = []
    for t, v in zip(target.elts, value.elts):
        got = _pairs(t, v)
        if got is None:
            return None
        out += got
    return out


def split_tuple_assignments(code: str) -> str:
    """`_cpu, a = (0, [...])` becomes `_cpu = 0` and `a = [...]` (what inlining `return (cpu, on_xla)`
    leaves), nested ones too (`(args, kw), (ref, _) = ((xs, 0), (ref, 0))`: `args = xs`, `kw = 0`, `ref = ref`,
    which no_ops takes, `_ = 0`), where each name is bound once and no value reads a name an earlier part binds
    (every value was read before any name was bound), nor calls something where a function may read one of
    those (`a, b = (1, f())`, f reading the global a); dead_code then takes the unread one."""
    tree = ast.parse(code)
    in_functions = {n.id for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                    for n in ast.walk(f) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for node in ast.walk(tree):
        for block in _blocks(node):
            out: list[ast.stmt] = []
            for s in block:
                pairs = _pairs(s.targets[0], s.value) if (
                    isinstance(s, ast.Assign) and len(s.targets) == 1
                    and isinstance(s.targets[0], (ast.Tuple, ast.List))) else None
                every = [n.id for n in ast.walk(s.targets[0]) if isinstance(n, ast.Name)] if pairs else []
                if pairs and len(pairs) > 1 and len(every) == len(set(every)):
                    earlier: set[str] = set()
                    for t, v in pairs:
                        if earlier & (set(_loads(v)) | (in_functions if runs_code(v) else set())):
                            break
                        earlier |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
                    else:
                        out += [ast.Assign([t], v, lineno=0) for t, v in pairs]
                        continue
                out.append(s)
            block[:] = out
    return ast.unparse(ast.fix_missing_locations(tree))


class _Fold(FoldedFStrings):
    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if (isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) == 2 and not node.keywords
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                and node.args[1].value.isidentifier() and not keyword.iskeyword(node.args[1].value)):
            return ast.copy_location(ast.Attribute(node.args[0], node.args[1].value, ast.Load()), node)
        f = node.func
        if (isinstance(f, ast.Attribute) and f.attr in _STR_METHODS and isinstance(f.value, ast.Constant)
                and isinstance(f.value.value, str) and len(node.args) <= 2 and not node.keywords
                and all(isinstance(a, ast.Constant) and type(a.value) in (str, int)
                        and (type(a.value) is str or abs(a.value) <= _MAX_INT_ARG) for a in node.args)):
            try:
                value = getattr(f.value.value, f.attr)(*(a.value for a in node.args))
            except Exception:  # noqa: BLE001 (`'a'.split('')`, `'{0}'.format()`: the script's own error, left to raise)
                return node
            if _literal_value(value) and len(repr(value)) <= _MAX_FOLDED:
                return ast.copy_location(_literal(value), node)
            return node
        if (isinstance(f, ast.Attribute) and f.attr == "get" and 1 <= len(node.args) <= 2 and not node.keywords
                and isinstance(node.args[0], ast.Constant) and all(_pure(a) for a in node.args[1:])):
            table = _table(f.value)
            if table is not None:
                default = node.args[1] if len(node.args) == 2 else ast.Constant(None)
                return copy.deepcopy(table.get(node.args[0].value, default))
        if isinstance(f, ast.Lambda):
            return _applied(f, node) or node
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load) or not isinstance(node.slice, ast.Constant):
            return node
        key = node.slice.value
        if (isinstance(node.value, (ast.List, ast.Tuple)) and isinstance(key, int) and not isinstance(key, bool)
                and -len(node.value.elts) <= key < len(node.value.elts) and all(_pure(e) for e in node.value.elts)):
            return node.value.elts[key]
        table = _table(node.value)
        if table is not None and key in table:
            return table[key]
        return node


# every public method of str (an immutable builtin: none has a side effect), on literal arguments:
# `'torchax.default_env'.rpartition('.')`; folded where the result is a literal (not maketrans' dict)
_STR_METHODS = frozenset(m for m in dir(str) if not m.startswith("_"))
_MAX_INT_ARG = 100  # `'a'.center(10**9)` in a hostile script: the reducer would build it
_MAX_FOLDED = 150  # a folded value as long as a line a rewrite may write


def _literal_value(value: object) -> bool:
    """Whether _literal can write value: a str, bytes, bool or int, or a tuple or list of them."""
    if isinstance(value, (tuple, list)):
        return all(_literal_value(v) for v in value)
    return type(value) in (str, bytes, bool, int)


def _literal(value: object) -> ast.expr:
    """A str, bytes, bool or int, or a tuple or list of them, as the literal that writes it."""
    if isinstance(value, tuple):
        return ast.Tuple([_literal(v) for v in value], ast.Load())
    if isinstance(value, list):
        return ast.List([_literal(v) for v in value], ast.Load())
    return ast.Constant(value)


def _table(node: ast.expr) -> dict | None:
    """A dict display of distinct literal keys whose values are literals, names or dotted names (reading
    it runs nothing but lookups): key -> value; None for anything else."""
    if not (isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) for k in node.keys)
            and all(isinstance(v, (ast.Constant, ast.Name, ast.Attribute)) and _pure_attr(v) for v in node.values)):
        return None
    keys = [k.value for k in node.keys]  # type: ignore[union-attr]
    if len(dict.fromkeys(keys)) != len(keys):  # 1 and True are one key
        return None
    return dict(zip(keys, node.values))


def _applied(fn: ast.Lambda, call: ast.Call) -> ast.expr | None:
    """`(lambda torch: torch.tensor(...))(torch)` -> `torch.tensor(...)`: each argument a name or a literal
    (reading it runs nothing), the parameters plain, no scope inside the body binding a name involved."""
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or call.keywords:
        return None
    if len(call.args) != len(a.args) or not all(isinstance(x, (ast.Name, ast.Constant)) for x in call.args):
        return None
    params = [p.arg for p in a.args]
    involved = set(params) | {x.id for x in call.args if isinstance(x, ast.Name)}
    if bound_names(fn.body) & involved:  # an expression binds only in a scope of its own, or by a walrus
        return None
    return ast.copy_location(_Subst(dict(zip(params, call.args))).visit(copy.deepcopy(fn.body)), call)


def _pure_attr(node: ast.expr) -> bool:
    """A literal, a name or a dotted name (`torch.nn.Sigmoid`): an entry of a table read by key."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, (ast.Constant, ast.Name))


def fold_literals(code: str) -> str:
    """`getattr(obj, 'name')` becomes `obj.name`; a literal string or integer inside an f-string
    becomes part of its text (`f"{'nested'}: got {x}"` -> `f'nested: got {x}'`); `[2][0]` becomes
    `2` and `{'sigmoid': torch.nn.Sigmoid, 'softplus': torch.nn.Softplus}['softplus']` (or `.get`) the entry;
    `'softplus'.startswith('linear')` becomes False (an `if` on it then folds: transforms), and
    `'torchax.default_env'.rpartition('.')` the tuple; `(lambda torch: torch.tensor(...))(torch)` becomes
    its body with the arguments for its parameters, where each is a name or a literal."""
    tree = _Fold().visit(ast.parse(code))
    return ast.unparse(ast.fix_missing_locations(tree))

