"""Rewrites that specialise what a generated scenario left general, each a candidate the reducer keeps only
where it passes the same predicate (harness.reduce.transforms says why a rewrite may then be wrong for
some script):

- `partial_evaluation`: `build(template, a, b)`, a recursive builder called on a literal (`template =
  [{'w': (('', 0), Pair(None, 0))}, ()]`, hypothesis's example), becomes what it returns, written out:
  `[{'w': (a, Pair(None, b))}, ()]`. The builder's code is read, never run: the evaluator here knows
  literals, the script's namedtuples, `isinstance`, `len`, `type(x)(...)`, comparisons, subscripts,
  comprehensions over known values and calls of the builder itself, and gives up on anything else (a
  call of the packages, a value it cannot know). An argument it cannot know (`a`) stays a name and is
  written where the builder put it, so only a name or a constant may be one.
- `eta_functions`: `def fresh(*args): return probe(*args)` goes, and `probe` is named where `fresh` was.
- `loop_comprehensions`: `out = {}` then `for p, x in flat: out[p] = x` becomes `out = {p: x for p, x in
  flat}` (and `.append(v)` into a list, a list comprehension).
- `literal_imports`: `importlib.import_module('torchax').default_env()` becomes `torchax.default_env()`,
  with `import torchax` at the top.

transforms.hoist_imports(past_calls=True) moves an import below a call (`Pair = collections.namedtuple(...)`)
up beside these.
"""

from __future__ import annotations

import ast
import copy
import functools
import keyword
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from harness.reduce.names import bound_names
from harness.reduce.signature import parents_of
from harness.reduce.transforms import _written, import_lead

MAX_STEPS = 5_000  # evaluation steps for one call: a builder that takes more is left as it is
MAX_DEPTH = 40  # its recursion
MAX_NODES = 400  # a written-out result bigger than this (in AST nodes) is no reduction


class _Unknown(Exception):
    """The evaluator met what it does not know: no candidate for this call."""


@dataclass(frozen=True)
class _Sym:
    """A value the evaluator cannot know (an argument that is a name): written back as that name."""
    node: ast.expr


@dataclass(frozen=True)
class _RecordType:
    """A namedtuple class of the script's (`Pair = collections.namedtuple('Pair', ['first', 'second'])`)."""
    name: str
    fields: tuple[str, ...]


@dataclass(frozen=True)
class _Record:
    """An instance of one: a tuple, as namedtuple's are, that knows its class."""
    kind: _RecordType
    values: tuple


_TYPES = {"tuple": tuple, "list": list, "dict": dict, "str": str, "int": int, "float": float, "bool": bool,
          "type(None)": type(None)}
# methods that change a list, dict or set in place: a name any of them is called on (anywhere, in any scope:
# cheap and only ever refusing) is not a known literal
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "setdefault",
             "popitem", "add", "discard", "__setitem__", "__delitem__", "__iadd__"}
_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
            ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def _record_types(tree: ast.Module) -> dict[str, _RecordType]:
    """The script's namedtuple classes: `N = collections.namedtuple('N', ['a', 'b'])` (or `namedtuple(...)`),
    fields as a list or tuple of strings, bound once."""
    out: dict[str, _RecordType] = {}
    for s in tree.body:
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                and isinstance(s.value, ast.Call) and len(s.value.args) == 2 and not s.value.keywords):
            continue
        f = s.value.func
        if not ((isinstance(f, ast.Attribute) and f.attr == "namedtuple") or (isinstance(f, ast.Name) and f.id == "namedtuple")):
            continue
        try:
            name, fields = ast.literal_eval(s.value.args[0]), ast.literal_eval(s.value.args[1])
        except ValueError:
            continue
        if isinstance(name, str) and isinstance(fields, (list, tuple)) and all(isinstance(x, str) for x in fields):
            out[s.targets[0].id] = _RecordType(name, tuple(fields))
    return out


def _module_bindings(tree: ast.Module) -> dict[str, int]:
    """How many times each module-level name is bound at module level; a name some function declares
    `global` counts as bound again (it may change anywhere)."""
    counts: dict[str, int] = {}
    todo: list[ast.AST] = list(tree.body)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            counts[n.id] = counts.get(n.id, 0) + 1
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[n.name] = counts.get(n.name, 0) + 1
            todo += list(n.decorator_list) + ([] if isinstance(n, ast.ClassDef) else list(n.args.defaults))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                key = (a.asname or a.name).split(".")[0]
                counts[key] = counts.get(key, 0) + 1
        elif not isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            todo += list(ast.iter_child_nodes(n))
    for g in ast.walk(tree):
        if isinstance(g, ast.Global):
            for name in g.names:
                counts[name] = counts.get(name, 0) + 2
    return counts


class _Evaluator:
    """Evaluates a builder's body on known and unknown arguments, reading its AST; never runs the script."""

    def __init__(self, functions: dict[str, ast.FunctionDef], globals_: dict[str, object]):
        self.functions = functions
        self.globals = globals_
        self.steps = 0

    def call(self, fn: ast.FunctionDef, args: list[object], depth: int) -> object:
        if depth > MAX_DEPTH:
            raise _Unknown
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs or len(a.args) != len(args):
            raise _Unknown
        env = dict(zip((p.arg for p in a.args), args))
        result = self.block(fn.body, env, depth)
        if result is _FELL_OFF:
            return None
        return result

    def block(self, body: list[ast.stmt], env: dict[str, object], depth: int) -> object:
        for s in body:
            self.tick()
            if isinstance(s, ast.Return):
                return self.expr(s.value, env, depth) if s.value is not None else None
            if isinstance(s, ast.If):
                got = self.block(s.body if self.truth(self.expr(s.test, env, depth)) else s.orelse, env, depth)
                if got is not _FELL_OFF:
                    return got
            elif isinstance(s, ast.Assign) and len(s.targets) == 1:
                self.bind(s.targets[0], self.expr(s.value, env, depth), env)
            elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
                continue  # a docstring
            else:
                raise _Unknown
        return _FELL_OFF

    def bind(self, target: ast.expr, value: object, env: dict[str, object]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(t, ast.Starred) for t in target.elts):
            items = self.items(value)
            if len(items) != len(target.elts):
                raise _Unknown
            for t, v in zip(target.elts, items):
                self.bind(t, v, env)
            return
        raise _Unknown

    def tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Unknown

    @staticmethod
    def known(value: object) -> object:
        if isinstance(value, _Sym):
            raise _Unknown
        return value

    def truth(self, value: object) -> bool:
        value = self.known(value)
        if isinstance(value, _Record):
            return bool(value.values)
        if isinstance(value, (_RecordType, _Sym)):
            raise _Unknown
        return bool(value)

    def items(self, value: object) -> list[object]:
        value = self.known(value)
        if isinstance(value, _Record):
            return list(value.values)
        if isinstance(value, (tuple, list, str)):
            return list(value)
        if isinstance(value, dict):
            return list(value)
        raise _Unknown

    def expr(self, node: ast.expr, env: dict[str, object], depth: int) -> object:
        self.tick()
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in self.globals:
                return self.globals[node.id]
            if node.id in _TYPES:
                return _TYPES[node.id]
            raise _Unknown
        if isinstance(node, (ast.Tuple, ast.List)):
            got = [self.expr(e, env, depth) for e in node.elts if not isinstance(e, ast.Starred)]
            if len(got) != len(node.elts):
                raise _Unknown
            return tuple(got) if isinstance(node, ast.Tuple) else got
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise _Unknown
            return {self.hashable(self.expr(k, env, depth)): self.expr(v, env, depth) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.BoolOp):
            value: object = None
            for v in node.values:
                value = self.expr(v, env, depth)
                if self.truth(value) == isinstance(node.op, ast.Or):
                    return value
            return value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.truth(self.expr(node.operand, env, depth))
        if isinstance(node, ast.IfExp):
            return self.expr(node.body if self.truth(self.expr(node.test, env, depth)) else node.orelse, env, depth)
        if isinstance(node, ast.Compare):
            return self.compare(node, env, depth)
        if isinstance(node, ast.Subscript):
            base = self.known(self.expr(node.value, env, depth))
            key = self.known(self.expr(node.slice, env, depth))
            if isinstance(base, _Record):
                base = base.values
            if not isinstance(base, (tuple, list, dict, str)) or isinstance(key, slice):
                raise _Unknown
            try:
                return base[key]  # type: ignore[index]
            except (KeyError, IndexError, TypeError):
                raise _Unknown from None
        if isinstance(node, ast.Attribute):
            base = self.known(self.expr(node.value, env, depth))
            if isinstance(base, _Record) and node.attr in base.kind.fields:
                return base.values[base.kind.fields.index(node.attr)]
            raise _Unknown
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.DictComp)):
            return self.comprehension(node, env, depth)
        if isinstance(node, ast.Call):
            return self.call_expr(node, env, depth)
        raise _Unknown

    @staticmethod
    def hashable(value: object) -> object:
        try:
            hash(value)
        except TypeError:
            raise _Unknown from None
        return value

    def compare(self, node: ast.Compare, env: dict[str, object], depth: int) -> bool:
        left = self.known(self.expr(node.left, env, depth))
        for op, right_node in zip(node.ops, node.comparators):
            right = self.known(self.expr(right_node, env, depth))
            if isinstance(op, (ast.Is, ast.IsNot)):
                if not (right is None or left is None or isinstance(right, bool)):
                    raise _Unknown  # identity of anything but None and the bools is the interpreter's
                ok = (left is right) == isinstance(op, ast.Is)
            elif type(op) in _COMPARE and not any(isinstance(x, (_Record, _RecordType, type)) for x in (left, right)):
                try:
                    ok = bool(_COMPARE[type(op)](left, right))
                except TypeError:
                    raise _Unknown from None
            else:
                raise _Unknown
            if not ok:
                return False
            left = right
        return True

    def comprehension(self, node: ast.expr, env: dict[str, object], depth: int) -> object:
        gens = node.generators  # type: ignore[attr-defined]
        out: list[object] = []

        def loop(i: int, scope: dict[str, object]) -> None:
            if i == len(gens):
                if isinstance(node, ast.DictComp):
                    out.append((self.hashable(self.known(self.expr(node.key, scope, depth))), self.expr(node.value, scope, depth)))
                else:
                    out.append(self.expr(node.elt, scope, depth))  # type: ignore[attr-defined]
                return
            g = gens[i]
            if g.is_async:
                raise _Unknown
            for item in self.iterate(g.iter, scope, depth):
                inner = dict(scope)
                self.bind(g.target, item, inner)
                if all(self.truth(self.expr(c, inner, depth)) for c in g.ifs):
                    loop(i + 1, inner)

        loop(0, env)
        if isinstance(node, ast.DictComp):
            return dict(out)
        if isinstance(node, ast.GeneratorExp):
            return _Generated(tuple(out))
        return out

    def iterate(self, node: ast.expr, env: dict[str, object], depth: int) -> list[object]:
        # `template.items()` of a known dict; else the items of a known value
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("items", "keys", "values")
                and not node.args and not node.keywords):
            base = self.known(self.expr(node.func.value, env, depth))
            if not isinstance(base, dict):
                raise _Unknown
            return [*{"items": base.items, "keys": base.keys, "values": base.values}[node.func.attr]()]
        value = self.expr(node, env, depth)
        if isinstance(value, _Generated):
            return list(value.items)
        return self.items(value)

    def call_expr(self, node: ast.Call, env: dict[str, object], depth: int) -> object:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise _Unknown
        f = node.func
        if isinstance(f, ast.Name) and f.id not in env:
            if f.id in self.functions:
                return self.call(self.functions[f.id], [self.expr(a, env, depth) for a in node.args], depth + 1)
            if f.id == "isinstance" and len(node.args) == 2:
                return self.isinstance(self.known(self.expr(node.args[0], env, depth)), self.known(self.expr(node.args[1], env, depth)))
            if f.id == "len" and len(node.args) == 1:
                return len(self.items(self.expr(node.args[0], env, depth)))
            if f.id == "type" and len(node.args) == 1:
                value = self.known(self.expr(node.args[0], env, depth))
                return value.kind if isinstance(value, _Record) else type(value)
        callee = self.expr(f, env, depth)
        args = [self.expr(a, env, depth) for a in node.args]
        if isinstance(callee, _Sym):  # `leaf_fn(spec)`: a call the evaluator writes, not makes
            return _Sym(ast.Call(copy.deepcopy(callee.node), [_written_value(a) for a in args], []))
        if isinstance(callee, _RecordType):
            if len(args) == 1 and isinstance(args[0], _Generated):
                raise _Unknown  # `Pair(gen)`: namedtuple takes its fields, not an iterable
            if len(args) != len(callee.fields):
                raise _Unknown
            return _Record(callee, tuple(args))
        if callee is dict and len(args) <= 1:  # `dict([(k, v), ...])`
            pairs = [self.items(p) for p in (self.items_of(args[0]) if args else [])]
            if any(len(p) != 2 for p in pairs):
                raise _Unknown
            return {self.hashable(self.known(k)): v for k, v in pairs}
        if callee in (tuple, list) and len(args) <= 1:
            items = self.items_of(args[0]) if args else []
            return tuple(items) if callee is tuple else list(items)
        raise _Unknown

    def items_of(self, value: object) -> list[object]:
        return list(value.items) if isinstance(value, _Generated) else self.items(value)

    @staticmethod
    def isinstance(value: object, kinds: object) -> bool:
        wanted = kinds if isinstance(kinds, tuple) else (kinds,)
        for k in wanted:
            if isinstance(k, _RecordType):
                if isinstance(value, _Record) and value.kind == k:
                    return True
            elif isinstance(k, type) and k in _TYPES.values():
                if isinstance(value, _Record):
                    if k is tuple:
                        return True  # a namedtuple is a tuple
                elif isinstance(value, k):
                    return True
            else:
                raise _Unknown
        return False


@dataclass(frozen=True)
class _Generated:
    """What a generator expression yields: only ever consumed whole here (`type(t)(gen)`, `tuple(gen)`)."""
    items: tuple


_FELL_OFF = object()  # a block that ended without returning: the function goes on (or returns None)


def _written_value(value: object) -> ast.expr:
    """value as an expression: a literal, a record as a call of its class, an unknown as what it was."""
    if isinstance(value, _Sym):
        return copy.deepcopy(value.node)
    if isinstance(value, _Record):
        return ast.Call(ast.Name(value.kind.name, ast.Load()), [_written_value(v) for v in value.values], [])
    if isinstance(value, tuple):
        return ast.Tuple([_written_value(v) for v in value], ast.Load())
    if isinstance(value, list):
        return ast.List([_written_value(v) for v in value], ast.Load())
    if isinstance(value, dict):
        return ast.Dict([_written_value(k) for k in value], [_written_value(v) for v in value.values()])
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return ast.Constant(value)
    raise _Unknown  # a type, a generator: not a value a script writes


def _known_globals(tree: ast.Module, records: dict[str, _RecordType]) -> dict[str, object]:
    """Module names bound once to a literal (namedtuples of the script's included), never changed in place
    (no `x.append`, no `x[k] = v`): what a builder may read as known."""
    stored = _module_bindings(tree)
    changed = {n.value.id for n in ast.walk(tree) if isinstance(n, (ast.Attribute, ast.Subscript))
               and isinstance(n.value, ast.Name) and (n.attr in _MUTATORS if isinstance(n, ast.Attribute)
                                                      else not isinstance(n.ctx, ast.Load))}
    ev = _Evaluator({}, dict(records))
    out: dict[str, object] = dict(records)
    for s in tree.body:
        if (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                and stored.get(s.targets[0].id) == 1 and s.targets[0].id not in changed and s.targets[0].id not in records):
            try:
                value = ev.expr(s.value, {}, 0)
                _written_value(value)  # a value a script can write
            except (_Unknown, RecursionError):
                continue
            out[s.targets[0].id] = value
            ev.globals[s.targets[0].id] = value
    return out


def partial_evaluation(code: str) -> Iterator[str]:
    """Candidates, one per builder: each call of a top-level function on at least one known argument (a
    literal, a name bound once to one) and the others names or constants, replaced by what it returns,
    written out; the function goes where no call of it is left."""
    tree = ast.parse(code)
    stored = _module_bindings(tree)
    functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef) and not s.decorator_list
                 and stored.get(s.name) == 1}
    if not functions:
        return
    records = _record_types(tree)
    known = _known_globals(tree, records)
    for name in functions:
        cand = copy.deepcopy(tree)
        c_fn = next(s for s in cand.body if isinstance(s, ast.FunctionDef) and s.name == name)
        replaced = 0
        parents = parents_of(cand)
        own = {id(n) for n in ast.walk(c_fn)}  # the builder's own recursion stays
        for call, put in _calls(cand):
            if not (isinstance(call.func, ast.Name) and call.func.id == name) or id(call) in own:
                continue
            shadowed = _local_names(call, parents)
            got = _evaluated(call, functions, {n: v for n, v in known.items() if n not in shadowed})
            if got is not None:
                put(got)
                replaced += 1
        if not replaced:
            continue
        if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(cand) if id(n) not in own):
            cand.body.remove(c_fn)
        text = _written(cand)
        if text is not None:
            yield text


def _local_names(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> set[str]:
    """The names the scopes around node bind (a lambda's or function's parameters and locals, a
    comprehension's targets): there a module name's known value is not what the name holds."""
    out: set[str] = set()
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            out |= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
            if not isinstance(node, ast.Lambda):
                out |= bound_names(ast.Module(body=node.body, type_ignores=[]))
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            out |= {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
    return out


def _calls(tree: ast.AST) -> Iterator[tuple[ast.Call, Callable[[ast.expr], None]]]:
    """Each call in tree (as it was when asked) with what puts an expression in its place."""
    for node in list(ast.walk(tree)):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                for k, child in enumerate(value):
                    if isinstance(child, ast.Call):
                        yield child, functools.partial(value.__setitem__, k)
            elif isinstance(value, ast.Call):
                yield value, functools.partial(setattr, node, field)


def _evaluated(call: ast.Call, functions: dict[str, ast.FunctionDef], known: dict[str, object]) -> ast.expr | None:
    if call.keywords or not call.args:
        return None
    args: list[object] = []
    for a in call.args:
        if isinstance(a, ast.Constant):
            args.append(a.value)
        elif isinstance(a, ast.Name) and a.id in known and not isinstance(known[a.id], _RecordType):
            args.append(known[a.id])
        elif isinstance(a, ast.Name):
            args.append(_Sym(ast.Name(a.id, ast.Load())))  # unknown: written where the builder puts it
        else:
            try:
                args.append(ast.literal_eval(a))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None
    if all(isinstance(a, _Sym) for a in args):
        return None  # nothing known: nothing to specialise
    try:
        out = _written_value(_Evaluator(functions, known).call(functions[call.func.id], args, 0))  # type: ignore[union-attr]
    except (_Unknown, RecursionError):
        return None
    if sum(1 for _ in ast.walk(out)) > MAX_NODES:
        return None
    return out


def eta_functions(code: str) -> Iterator[str]:
    """Candidates, one per wrapper: a top-level `def f(a, *args, **kw): return g(a, *args, **kw)`, passing
    its parameters through in order to a module name g, goes and g is read where f was."""
    tree = ast.parse(code)
    stored = _module_bindings(tree)
    for fn in [s for s in tree.body if isinstance(s, ast.FunctionDef)]:
        a = fn.args
        body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if (fn.decorator_list or a.defaults or a.kwonlyargs or a.posonlyargs or len(body) != 1
                or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call)
                or stored.get(fn.name) != 1):
            continue
        call = body[0].value
        if not isinstance(call.func, ast.Name) or call.func.id == fn.name or stored.get(call.func.id) != 1:
            continue
        want: list[ast.expr] = [ast.Name(p.arg, ast.Load()) for p in a.args] + (
            [ast.Starred(ast.Name(a.vararg.arg, ast.Load()), ast.Load())] if a.vararg else [])
        if ast.dump(ast.Tuple(call.args)) != ast.dump(ast.Tuple(want)):
            continue
        if [(k.arg, ast.dump(k.value)) for k in call.keywords] != ([(None, ast.dump(ast.Name(a.kwarg.arg, ast.Load())))] if a.kwarg else []):
            continue
        cand = copy.deepcopy(tree)
        cand.body = [s for s in cand.body if not (isinstance(s, ast.FunctionDef) and s.name == fn.name)]
        for n in ast.walk(cand):
            if isinstance(n, ast.Name) and n.id == fn.name:
                n.id = call.func.id
        text = _written(cand)
        if text is not None:
            yield text


def _collected(loop: ast.For, name: str) -> tuple[str, ast.expr, ast.expr | None] | None:
    """('dict', key, value) for `name[key] = value`, ('list', value, None) for `name.append(value)`: the
    loop's one statement."""
    if loop.orelse or len(loop.body) != 1:
        return None
    s = loop.body[0]
    if (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Subscript)
            and isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id == name):
        return "dict", s.targets[0].slice, s.value
    if (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Attribute)
            and s.value.func.attr == "append" and isinstance(s.value.func.value, ast.Name)
            and s.value.func.value.id == name and len(s.value.args) == 1 and not s.value.keywords):
        return "list", s.value.args[0], None
    return None


def loop_comprehensions(code: str) -> Iterator[str]:
    """Candidates, one per loop: `out = {}` (or `[]`) right before a loop whose one statement fills it
    (`out[k] = v`, `out.append(v)`), reading nothing else of it, becomes one comprehension."""
    tree = ast.parse(code)
    spots: list[tuple[list[ast.stmt], int]] = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                spots += [(block, i) for i in range(len(block) - 1)]
    for block, i in spots:
        init, loop = block[i], block[i + 1]
        if not (isinstance(init, ast.Assign) and len(init.targets) == 1 and isinstance(init.targets[0], ast.Name)
                and isinstance(loop, ast.For)):
            continue
        name = init.targets[0].id
        got = _collected(loop, name)
        if got is None:
            continue
        kind, first, second = got
        empty = isinstance(init.value, ast.Dict) and not init.value.keys if kind == "dict" else (
            isinstance(init.value, ast.List) and not init.value.elts)
        reads = [n for n in ast.walk(loop) if isinstance(n, ast.Name) and n.id == name]
        if not empty or len(reads) != 1:
            continue
        gen = ast.comprehension(copy.deepcopy(loop.target), copy.deepcopy(loop.iter), [], 0)
        value = (ast.DictComp(copy.deepcopy(first), copy.deepcopy(second), [gen]) if kind == "dict"
                 else ast.ListComp(copy.deepcopy(first), [gen]))
        new = ast.Assign([ast.Name(name, ast.Store())], value, lineno=0)
        saved = block[i:i + 2]
        block[i:i + 2] = [new]
        text = _written(tree)
        block[i:i + 1] = saved
        if text is not None:
            yield text


def literal_imports(code: str) -> str:
    """`importlib.import_module('torchax')` (what folding `torchax_entry('default_env')`'s f-string and
    rpartition leaves) becomes `torchax`, imported at the top with `import torchax`, where no other binding
    of that name is in the script."""
    tree = ast.parse(code)
    stored = _module_bindings(tree)
    imported = {(a.asname or a.name) for s in tree.body if isinstance(s, ast.Import) for a in s.names}
    for call, put in _calls(tree):
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "import_module"
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "importlib"
                and len(call.args) == 1 and not call.keywords
                and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str)):
            continue
        dotted = call.args[0].value
        parts = dotted.split(".")
        if not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
            continue
        if stored.get(parts[0], 0) - (parts[0] in imported or dotted in imported) > 0:
            continue  # the name is bound to something else somewhere
        expr: ast.expr = ast.Name(parts[0], ast.Load())
        for p in parts[1:]:
            expr = ast.Attribute(expr, p, ast.Load())
        put(expr)
        if dotted not in imported:
            tree.body.insert(import_lead(tree), ast.Import([ast.alias(dotted)]))
        return _written(tree) or code
    return code
