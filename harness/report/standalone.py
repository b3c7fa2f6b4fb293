"""Standalone reproducers: one Python file per failing case that needs only the cell's packages.

A scenario's core is a plain function in `suites/<family>/cores.py` (its `CORES` maps the test to
it). This module reads that source (never imports it: the host has no jax) and writes a script
that holds the core and everything it uses from the cores module, the IR/numerics helpers and the
compat shim, with the shim *resolved for the cell*: each `found(API, ...)` probe becomes the
presence the API's recorded range (matrices/apis/) gives for the cell's versions, and the branch
it guards is folded away. `pytest.skip` becomes an exit with 125 (git bisect's "cannot test"),
`observe` a small checker that asserts the same closeness. The script raises (exit 1, with the
message, the numbers or the IR fact) while the bug is there and exits 0 when it is fixed.

Only what the case reaches goes in (short enough to paste into an upstream issue): `require()` of a
package the cell installs becomes an import, an `api_absent` guard of an API the cell has folds
away, helpers left only returning a module become that name, records nobody reads go, and the
script's own Observe/skip/to_numpy come only as far as they are used. A package from a local
source is shown as a placeholder (`<jax source>`), never as a machine path.
"""

from __future__ import annotations

import ast
import builtins
import copy
import re
import shlex
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit, urlunsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from harness.judge.apis import ApiRange, default_api_ranges
from harness.paths import REPO, SUITES_DIR
from harness.cells.startup_env import is_startup_var
from harness.report.examples import failing_example
from harness.report.grammar import is_env_name, is_version, pip_words
from harness.redact import redact

# Harness modules a core may use; their source is inlined (resolved), never imported.
_INLINED = {
    "harness.incell.compat": REPO / "harness/incell/compat/__init__.py",
    "harness.incell.compat.jax_api": REPO / "harness/incell/compat/jax_api.py",
    "harness.incell.compat.torch_api": REPO / "harness/incell/compat/torch_api.py",
    "harness.incell.defaults": REPO / "harness/incell/defaults.py",
    "harness.incell.ir": REPO / "harness/incell/ir.py",
    "harness.incell.numerics": REPO / "harness/incell/numerics.py",
}
# Observe.close is the check alone: assert_allclose's message already names the greatest absolute and
# relative differences, and each line here is a line of every exported script that compares values.
_PRELUDE = '''
from harness.incell.numerics import to_numpy


def skip(reason):
    print(f"SKIP: {reason}")
    raise SystemExit(125)


class Observe(dict):

    def record(self, **facts):
        self.update(facts)
        for key, value in facts.items():
            print(f"{key}: {value}")

    def close(self, actual, expected, *, rtol, atol, name=""):
        np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), rtol=rtol, atol=atol, err_msg=name)
'''
_BUILTINS = set(dir(builtins))


class NoStandalone(Exception):
    """This case has no core to export (the reason is the message)."""


@dataclass
class _Module:
    name: str
    path: Path
    tree: ast.Module
    defs: dict[str, ast.stmt] = field(default_factory=dict)       # top-level def/class/assign by name
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # name -> (module, attr)


@lru_cache(maxsize=64)
def _load(name: str, path: Path) -> _Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    mod = _Module(name, path, tree)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            mod.defs[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Name):
                    mod.defs[t.id] = node
        elif isinstance(node, ast.Import):
            for a in node.names:
                mod.imports[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
            for a in node.names:
                mod.imports[a.asname or a.name] = (node.module, a.name)
    return mod


def _module_for(dotted: str) -> _Module | None:
    """A module whose source is inlined: the harness helpers and the suites' own files."""
    if dotted in _INLINED:
        return _load(dotted, _INLINED[dotted])
    if dotted.startswith("suites."):
        path = REPO / (dotted.replace(".", "/") + ".py")
        return _load(dotted, path) if path.is_file() else None
    return None


@dataclass(frozen=True)
class Target:
    """Where a case's core is: the family's cores module, the function, the arguments."""

    module: str
    function: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]


def _literal(mod: _Module, node: ast.expr) -> Any:
    """A pinned example: a literal in CORES, or the name of a module-level literal (the test's @example too)."""
    if isinstance(node, ast.Name) and isinstance(mod.defs.get(node.id), ast.Assign):
        node = mod.defs[node.id].value  # type: ignore[union-attr]
    return ast.literal_eval(node)


def find_core(case_id: str) -> Target:
    """The core a test id runs, with its arguments: the `[param]` ids, then a pinned example's."""
    path, _, rest = case_id.partition("::")
    func, _, bracket = rest.partition("[")
    bracket = bracket[:-1] if bracket.endswith("]") else bracket
    parts = Path(path).parts
    if len(parts) != 3 or parts[0] != "suites" or not parts[2].endswith(".py"):
        raise NoStandalone(f"{case_id}: not a scenario of suites/<family>/")
    cores_path = SUITES_DIR / parts[1] / "cores.py"
    if not cores_path.is_file():
        raise NoStandalone(f"suites/{parts[1]} has no cores.py")
    mod = _load(f"suites.{parts[1]}.cores", cores_path)
    table = mod.defs.get("CORES")
    if not isinstance(table, ast.Assign) or not isinstance(table.value, ast.Dict):
        raise NoStandalone(f"{cores_path.name} of suites/{parts[1]} has no CORES table")
    key = f"{parts[2]}::{func}"
    for k, v in zip(table.value.keys, table.value.values):
        if isinstance(k, ast.Constant) and k.value == key:
            example: dict[str, Any] = {}
            if isinstance(v, ast.Tuple):
                v, example = v.elts[0], _literal(mod, v.elts[1])
            if not isinstance(v, ast.Name) or not isinstance(mod.defs.get(v.id), ast.FunctionDef):
                raise NoStandalone(f"CORES[{key!r}] is not a function of {cores_path.name}")
            fn = mod.defs[v.id]
            params = [a.arg for a in fn.args.args if a.arg != "observe" and a.arg not in example]
            ids = [bracket] if len(params) == 1 else (bracket.split("-") if bracket else [])
            if len(ids) != len(params):
                raise NoStandalone(f"{case_id}: its ids {ids} do not fit {v.id}'s parameters {params}")
            return Target(mod.name, v.id, tuple(ids), tuple(example.items()))
    raise NoStandalone(f"{case_id}: no core for {key} in suites/{parts[1]}/cores.py")


def _api_presence(ranges: Mapping[str, ApiRange], versions: Mapping[str, str]) -> dict[str, bool]:
    have = {canonicalize_name(k): v for k, v in versions.items() if v}
    out = {}
    for api, rng in ranges.items():
        version = have.get(rng.package)
        ships = rng.ships_in(version) if version else None
        if ships is not None:
            out[api] = ships
    return out


class _Resolve(ast.NodeTransformer):
    """Specialise one definition for the cell: shim attributes to names, probes to constants."""

    def __init__(self, mod: _Module, presence: Mapping[str, bool], consts: Mapping[str, Any] | None = None,
                 drop_records: bool = False, installed: frozenset[str] = frozenset(), no_torch: bool = False):
        self.mod, self.presence = mod, presence
        self.consts = dict(consts or {})  # the case's parameters, for folding its branches
        self.drop_records = drop_records  # observe.record(...) only records: nothing to check
        self.installed = installed  # top-level import names the cell installs: require() cannot skip
        self.shim: dict[str, str] = {}  # name a shim attribute became -> the module defining it
        self.hoisted: set[str] = set()  # `import M` for each require("M") turned into a plain import
        self.no_torch = no_torch  # a cell without torch has no torch tensors: to_numpy's torch branch goes
        # Names the definition binds itself: a shim attribute with such a name (`pvary = jax_api.pvary()`)
        # becomes `jax_api_pvary`, never a name the local shadows; renamed: new name -> the shim's name.
        self.bound: set[str] = set()
        self.renamed: dict[str, str] = {}

    def _const(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name) and isinstance(self.mod.defs.get(node.id), ast.Assign):
            value = self.mod.defs[node.id].value
            return value.value if isinstance(value, ast.Constant) else None
        return None

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name):
            base = node.value.id
            if base in self.mod.imports and _is_module(*self.mod.imports[base]):
                module, attr = self.mod.imports[base]
                name = node.attr
                if name in self.bound:
                    name = f"{base}_{node.attr}"
                    self.renamed[name] = node.attr
                self.shim[name] = f"{module}.{attr}" if attr else module
                return ast.copy_location(ast.Name(name, node.ctx), node)
            if base == "pytest" and node.attr == "skip":
                return ast.copy_location(ast.Name("skip", node.ctx), node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "found" and len(node.args) == 2:
            api = self._const(node.args[0])
            if isinstance(api, str) and api in self.presence:
                return ast.copy_location(ast.Constant(self.presence[api]), node)
            return node.args[1]  # no range to resolve by: the probe's own test, evaluated at run time
        if (self.no_torch and isinstance(node.func, ast.Name) and node.func.id == "hasattr" and len(node.args) == 2
                and self._const(node.args[1]) == "detach"):
            return ast.copy_location(ast.Constant(False), node)
        if isinstance(node.func, ast.Name) and node.func.id == "require" and len(node.args) == 1 and not node.keywords:
            module = self._const(node.args[0])
            if isinstance(module, str) and re.fullmatch(r"\w+(\.\w+)*", module) and module.split(".")[0] in self.installed:
                self.hoisted.add(f"import {module}")  # installed in the cell: require() is a plain import
                return ast.copy_location(ast.parse(module, mode="eval").body, node)
        return node

    def _guards_present_api(self, body: list[ast.stmt]) -> bool:
        """True if body is only `api_absent(API, ...)` for an API the cell's versions have (dead)."""
        if len(body) != 1 or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
            return False
        call = body[0].value
        return (isinstance(call.func, ast.Name) and call.func.id == "api_absent" and bool(call.args)
                and self.presence.get(self._const(call.args[0])) is True)

    def visit_Try(self, node: ast.Try) -> Any:
        self.generic_visit(node)
        for handler in node.handlers:  # `except ImportError: api_absent(API)` for a present API
            if self._guards_present_api(handler.body):
                handler.body = [ast.Raise()]
        if node.handlers and all(len(h.body) == 1 and isinstance(h.body[0], ast.Raise) and h.body[0].exc is None
                                 for h in node.handlers) and not node.finalbody and not node.orelse:
            return node.body  # every handler only re-raises: the try says nothing
        return node

    def visit_Assign(self, node: ast.Assign) -> Any:
        self.generic_visit(node)
        return None if _self_assign(node) else node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.consts:
            return ast.copy_location(ast.Constant(self.consts[node.id]), node)
        if isinstance(node.ctx, ast.Load) and self.mod.name.startswith("harness."):
            # the shim's own name constants (API names, skip prefixes) read better in place
            value = self._const(node)
            if isinstance(value, str):
                return ast.copy_location(ast.Constant(value), node)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        self.generic_visit(node)
        parts: list[ast.expr] = []
        for v in node.values:  # f"{'api absent'}: ..." after inlining a constant: plain text again
            if (isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Constant) and isinstance(v.value.value, str)
                    and v.conversion == -1 and v.format_spec is None):
                v = ast.Constant(v.value.value)
            if isinstance(v, ast.Constant) and parts and isinstance(parts[-1], ast.Constant):
                parts[-1] = ast.Constant(parts[-1].value + v.value)
            else:
                parts.append(v)
        node.values = parts
        if all(isinstance(v, ast.Constant) for v in parts):  # nothing left to format: a plain string
            return ast.copy_location(ast.Constant("".join(str(v.value) for v in parts)), node)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        # TABLE[case] with the case folded: just that entry of the module's table
        if self.consts and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant):
            table = self.mod.defs.get(node.value.id)
            if isinstance(table, ast.Assign) and isinstance(table.value, ast.Dict):
                for k, v in zip(table.value.keys, table.value.values):
                    if isinstance(k, ast.Constant) and k.value == node.slice.value:
                        return ast.copy_location(copy.deepcopy(v), node)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) != 1:
            return node
        try:
            left, right = ast.literal_eval(node.left), ast.literal_eval(node.comparators[0])
        except ValueError:
            return node
        ops = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
               ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
        op = ops.get(type(node.ops[0]))
        return node if op is None else ast.copy_location(ast.Constant(bool(op(left, right))), node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        known = [self._fold(v) for v in node.values]
        stop = isinstance(node.op, ast.Or)  # the value that decides: True for or, False for and
        if stop in known:
            return ast.copy_location(ast.Constant(stop), node)
        rest = [v for v, k in zip(node.values, known) if k is None]
        if not rest:
            return ast.copy_location(ast.Constant(not stop), node)
        return rest[0] if len(rest) == 1 else ast.copy_location(ast.BoolOp(node.op, rest), node)

    def _fold(self, test: ast.expr) -> bool | None:
        if isinstance(test, ast.Constant) and isinstance(test.value, bool):
            return test.value
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._fold(test.operand)
            return None if inner is None else not inner
        return None

    def visit_If(self, node: ast.If) -> Any:
        self.generic_visit(node)
        value = self._fold(node.test)
        if value is None and not node.orelse and self._guards_present_api(node.body):
            return None  # skips as api absent, but the API's range says this cell has it
        if value is None:
            return node
        return (node.body if value else node.orelse) or None

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        value = self._fold(node.test)
        return node if value is None else (node.body if value else node.orelse)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.annotation = None  # annotations would need the typing imports of every inlined module
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.returns = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        self.generic_visit(node)
        if node.value is None:  # a dataclass field: it must stay, its annotation as an unevaluated string
            node.annotation = ast.Constant(ast.unparse(node.annotation))
            return node
        return ast.copy_location(ast.Assign([node.target], node.value), node)

    def visit_Import(self, node: ast.Import) -> Any:
        return None if any(a.name == "pytest" for a in node.names) else node

    def visit_Expr(self, node: ast.Expr) -> Any:
        call = node.value  # a bare `found(API, test)` only records a presence: nothing to run standalone
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "found":
            return None
        self.generic_visit(node)
        if isinstance(node.value, ast.Constant) and not isinstance(node.value.value, str):
            return None  # what a resolved probe left as a statement
        if isinstance(node.value, (ast.Name, ast.Attribute)) and f"import {ast.unparse(node.value)}" in self.hoisted:
            return None  # `require("flatbuffers")` for its import only: the hoisted import does it
        call = node.value
        if self.drop_records and _is_record(call):
            return _record_as_print(node)
        return node


def _self_assign(node: ast.stmt) -> bool:
    """`torch = torch`: what `torch = require("torch")` becomes once the import is hoisted."""
    return (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Name) and node.value.id == node.targets[0].id)


def _is_module(module: str, attr: str | None) -> bool:
    """True if `from module import attr` (or `import module`) names an inlined module."""
    return attr is not None and f"{module}.{attr}" in _INLINED or (attr is None and module in _INLINED)


class _Tidy(ast.NodeTransformer):
    """Repair what folding emptied: a try whose finally held only records, a block left empty."""

    def visit_Try(self, node: ast.Try) -> Any:
        self.generic_visit(node)
        if not node.handlers and not node.finalbody:
            return node.body + node.orelse
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        body = getattr(node, "body", None)
        if (isinstance(node, ast.FunctionDef) and len(body) >= 2 and _assign_then_return(body[-2], body[-1])
                and sum(isinstance(n, ast.Name) and n.id == body[-1].value.id for n in ast.walk(node)) == 2):
            body[-2:] = [ast.copy_location(ast.Return(body[-2].value), body[-1])]  # `x = E; return x`: return E
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            end = next((i for i, st in enumerate(block) if isinstance(st, (ast.Return, ast.Raise))), None)
            if end is not None:
                del block[end + 1:]  # unreachable after a folded branch returned
        for name in ("body", "orelse"):  # a loop over a plain name or its .items() left doing nothing
            block = getattr(node, name, None)
            if isinstance(block, list):
                block[:] = [st for st in block if not _idle_loop(st)]
        if isinstance(getattr(node, "body", None), list) and not node.body:
            node.body.append(ast.Pass())
        return node


def _idle_loop(st: ast.stmt) -> bool:
    """`for ... in NAME / NAME.items() / .keys() / .values(): pass` (what folding left of a probe loop)."""
    if not isinstance(st, ast.For) or st.orelse or not all(isinstance(b, ast.Pass) for b in st.body):
        return False
    it = st.iter
    if isinstance(it, ast.Call) and not it.args and isinstance(it.func, ast.Attribute) \
            and it.func.attr in ("items", "keys", "values"):
        it = it.func.value
    return isinstance(it, ast.Name)


def _assign_then_return(assign: ast.stmt, ret: ast.stmt) -> bool:
    return (isinstance(assign, ast.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Name)
            and isinstance(ret, ast.Return) and isinstance(ret.value, ast.Name) and ret.value.id == assign.targets[0].id)


def _fix_empty_bodies(tree: ast.AST) -> None:
    _Tidy().visit(tree)


class _DropImports(ast.NodeTransformer):
    """Removes import statements, inside functions, that the script's top already has word for word."""

    def __init__(self, top: set[str]):
        self.top = top

    def visit_Import(self, node: ast.Import) -> ast.AST | None:
        return None if ast.unparse(node) in self.top else node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
        return None if ast.unparse(node) in self.top else node


def _passed_as_values(defs: list[_Def]) -> set[str]:
    """Names of the script's functions handed to a call as an argument (`run_fresh(resolve_probe, ...)`),
    not called: such a function may be shipped as its own source (inspect.getsource, to a fresh
    interpreter), where only the imports inside it exist."""
    names = {d.name for d in defs if isinstance(d.node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    out: set[str] = set()
    for d in defs:
        for call in (n for n in ast.walk(d.node) if isinstance(n, ast.Call)):
            out |= {a.id for a in [*call.args, *(k.value for k in call.keywords)]
                    if isinstance(a, ast.Name) and a.id in names}
    return out


def _drop_local_twins(defs: list[_Def], top: set[str]) -> None:
    """A core imports inside its functions (its family collects where the package is absent); the
    script imports at its top. The inner twin would rebind the top's name (pyflakes' F811), so it
    goes and the function reads the top's import; not in a function passed as a value (a probe run
    from its source in a fresh process: there, the top's imports are not)."""
    shipped = _passed_as_values(defs)
    for d in defs:
        if isinstance(d.node, (ast.FunctionDef, ast.ClassDef)) and d.name not in shipped:
            _DropImports(top).generic_visit(d.node)
            _fix_empty_bodies(d.node)


@dataclass
class _Def:
    """One top-level definition of the script, resolved, with the imports it stands on."""

    module: str
    name: str
    node: ast.stmt
    hoisted: set[str] = field(default_factory=set)  # `import M` statements its require() calls became


class _Collector:
    """Every definition a core needs, in dependency order, resolved for one cell."""

    def __init__(self, presence: Mapping[str, bool], core: str, args: Mapping[str, Any],
                 installed: frozenset[str] = frozenset()):
        self.presence, self.core, self.args, self.installed = presence, core, args, installed
        self.out: list[_Def] = []
        self.done: set[tuple[str, str]] = set()
        self.imports: dict[str, str] = {}  # local name -> import statement

    def need(self, mod: _Module, name: str, as_name: str | None = None) -> None:
        """Collect `name` of mod (as `as_name` where a user's local would shadow it) and what it needs."""
        key = (mod.name, as_name or name)
        if key in self.done:
            return
        self.done.add(key)
        if name in mod.defs:
            node = copy.deepcopy(mod.defs[name])
            if as_name and isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                node.name = as_name
            if mod.name.endswith(".cores") and name == self.core:
                resolve = _Resolve(mod, self.presence, _foldable(node, self.args), drop_records=not _reads_observe(node),
                                   installed=self.installed)
            else:
                resolve = _Resolve(mod, self.presence, installed=self.installed,
                                   no_torch=mod.name == "harness.incell.numerics" and "torch" not in self.installed)
            resolve.bound = _bound_names(node)
            node = resolve.visit(node)
            ast.fix_missing_locations(node)
            _fix_empty_bodies(node)
            if not (mod.name.endswith(".cores") and name == self.core):
                _drop_docstrings(node)  # the core keeps its docstring: it says what is checked
            for ref in sorted(_free_names(node)):
                if ref == name:
                    continue
                if ref in resolve.shim:
                    shim = _module_for(resolve.shim[ref])
                    assert shim is not None
                    self.need(shim, resolve.renamed.get(ref, ref), as_name=ref if ref in resolve.renamed else None)
                else:
                    self.need(mod, ref)
            if not any(d.name == (as_name or name) for d in self.out):
                self.out.append(_Def(mod.name, as_name or name, node, resolve.hoisted))
            return
        if name in mod.imports:
            module, attr = mod.imports[name]
            if attr is None and module == "pytest":
                return
            if _is_module(module, attr):
                return  # its attributes were turned into names, each needed on its own
            inlined = _module_for(module)
            if inlined is not None and attr is not None:
                self.need(inlined, attr)
                return
            if attr is None:
                self.imports[name] = f"import {module}" if name == module else f"import {module} as {name}"
            else:
                self.imports[name] = f"from {module} import {attr}" + (f" as {name}" if name != attr else "")


def _foldable(fn: ast.FunctionDef, args: Mapping[str, Any]) -> dict[str, Any]:
    """The case's arguments the core never rebinds: their uses can become constants."""
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    inner = {a.arg for f in ast.walk(fn) if isinstance(f, (ast.FunctionDef, ast.Lambda)) and f is not fn
             for a in f.args.args}
    return {k: v for k, v in args.items() if k not in stored and k not in inner}


def _reads_observe(fn: ast.FunctionDef) -> bool:
    """True if the core reads back what it recorded (observe[...]): then its records must stay."""
    return any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "observe"
               for n in ast.walk(fn))


def _drop_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.FunctionDef, ast.ClassDef)) and len(body) > 1 and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            del body[0]


def _bound_names(node: ast.AST) -> set[str]:
    """Names a definition binds inside itself (assignments, parameters, inner definitions)."""
    out = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    out |= {n.arg for n in ast.walk(node) if isinstance(n, ast.arg)}
    return out | {n.name for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n is not node}


def _free_names(node: ast.AST) -> set[str]:
    """Names a definition loads that it does not bind itself (roughly: globals and builtins)."""
    loads, binds = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (loads if isinstance(n.ctx, ast.Load) else binds).add(n.id)
        elif isinstance(n, ast.arg):
            binds.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n is not node:
            binds.add(n.name)
        elif isinstance(n, ast.alias):
            binds.add((n.asname or n.name).split(".")[0])
    return (loads - binds) - _BUILTINS


def redact_url(url: str) -> str:
    """An index URL without its credentials (user:token@host -> ***@host)."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        return urlunsplit(parts._replace(netloc=f"***@{host}" + (f":{parts.port}" if parts.port else "")))
    return url


def source_placeholder(package: str) -> str:
    """What a paste-ready text shows for a source on this machine (never its path): `<jax source>`."""
    return f"<{package} source>"


def shown_requirement(package: str, src: Mapping[str, Any]) -> str:
    """A source's PEP 508 requirement as a paste shows it: a URL as it is (credentials redacted), a
    local repository, tree or wheel as its placeholder (source_notes says what it stands for)."""
    from harness.cells.cell import is_url

    loc = str(src.get("location") or "")
    where = redact(loc) if is_url(loc) else source_placeholder(package)
    if src.get("kind") == "git":
        sub = f"#subdirectory={src['subdir']}" if src.get("subdir") else ""
        return f"{package} @ git+{where}@{src.get('sha') or src.get('ref') or 'HEAD'}{sub}"
    if src.get("kind") == "wheel" and not is_url(loc):
        return f"{package} @ {where}/{Path(loc).name}"  # the wheel's file name says what it is
    return f"{package} @ {where}"


def shown_sources(cell: Mapping[str, Any]) -> dict[str, str]:
    """package -> one line for each source of the cell as a page shows it ('<jax source>@75e4279e32b0',
    a content hash, '(dirty)'; a URL with credentials redacted): report.md, report.html."""
    from harness.cells.cell import is_url

    out = {}
    for pkg, src in (cell.get("sources") or {}).items():
        if not isinstance(src, Mapping):
            continue
        loc = str(src.get("location") or "")
        where = (redact(loc) if is_url(loc) else source_placeholder(str(pkg))) + (f"/{src['subdir']}" if src.get("subdir") else "")
        sha, digest = str(src.get("sha") or ""), str(src.get("content_hash") or "")
        label = f"{where}@{sha[:12]}" if sha else f"{where} sha256:{digest[:12]}"
        out[str(pkg)] = label + (" (dirty)" if src.get("dirty") is True else "")
    return out


def source_notes(cell: Mapping[str, Any]) -> list[str]:
    """One line per local source placeholder: what it stands for (kind, commit, content hash)."""
    from harness.cells.cell import is_url

    out = []
    for pkg, src in (cell.get("sources") or {}).items():
        if not isinstance(src, Mapping) or is_url(str(src.get("location") or "")):
            continue
        kind = src.get("kind")
        what = {"git": "a local git repository", "path": "a local source tree",
                "wheel": "a local wheel"}.get(str(kind), "a local source")
        facts = []
        if src.get("sha"):
            facts.append(f"commit {src['sha']}" + (" with uncommitted edits" if src.get("dirty") else ""))
        if src.get("content_hash") and (kind != "git"):
            facts.append(f"content sha256 {str(src['content_hash'])[:16]}")
        if src.get("subdir"):
            facts.append(f"package in {src['subdir']}/")
        if src.get("version"):
            facts.append(f"version {src['version']}")
        out.append(f"{source_placeholder(str(pkg))}: {what} this cell took {pkg} from ({', '.join(facts) or 'unresolved'}); "
                   "its path is not shown: use your copy of it")
    return out


def show_sources(words: list[str], cell: Mapping[str, Any]) -> list[str]:
    """Install-line words with each source requirement (`jax @ git+file:///src/jax@SHA`) shown as
    shown_requirement() gives it: no machine path in a paste-ready text."""
    sources = {canonicalize_name(k): v for k, v in (cell.get("sources") or {}).items() if isinstance(v, Mapping)}
    out = []
    for w in words:
        name = w.split(" @ ", 1)[0].split("[", 1)[0] if " @ " in w else ""
        src = sources.get(canonicalize_name(name)) if name else None
        out.append(shown_requirement(canonicalize_name(name), src) if src is not None else w)
    return out


def shown_pip_words(words: list[str], cell: Mapping[str, Any]) -> list[str]:
    """A pip line's words as every paste shows them: the cell's local sources as placeholders, each
    URL (and each index option's value) without its credentials."""
    out, url_next = [], False
    for w in show_sources(words, cell):
        out.append(redact_url(w) if url_next or "://" in w else w)
        url_next = w in ("--index-url", "--extra-index-url", "--find-links", "-i", "-f")
    return out


# PyTorch's CPU-only wheels: torch without the CUDA libraries PyPI's Linux wheel pulls in (GBs).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_CPU_NOTE = "torch from PyTorch's CPU wheels: the cell runs on CPU, no CUDA libraries to download"


def torch_cpu_wheels(cell: Mapping[str, Any]) -> bool:
    """Whether a pasted install line should take torch's CPU build: a cpu cell that installs torch
    from the default index (no index of its own, torch not from a source)."""
    pins = {canonicalize_name(str(k)) for k in (cell.get("pins") or {})}
    sources = {canonicalize_name(str(k)) for k in (cell.get("sources") or {})}
    words = str(cell.get("install_line") or "")
    return (cell.get("device", "cpu") == "cpu" and "torch" in pins and "torch" not in sources
            and "--index-url" not in words and " -i " not in words)


def standalone_install_line(cell: Mapping[str, Any]) -> str:
    """The cell's pip line (pins and extras, index URLs redacted, sources as placeholders), plus the
    numpy the scripts use; a cpu cell's torch comes from PyTorch's CPU wheels (torch_cpu_wheels)."""
    out = shown_pip_words(pip_words(cell), cell)  # derived from parsed words or the pins, never copied
    if torch_cpu_wheels(cell):  # pip takes torch X+cpu from there (it sorts above PyPI's X), the rest from PyPI
        out[2:2] = ["--extra-index-url", TORCH_CPU_INDEX]
    if not any(re.match(r"numpy\b", w) for w in out):
        version = (cell.get("versions") or {}).get("numpy")
        out.append(f"numpy=={version}" if is_version(version) else "numpy")
    return shlex.join(out)


def run_env(cell: Mapping[str, Any]) -> dict[str, str]:
    """The environment variables the cell ran under (XLA_FLAGS, PJRT_DEVICE, JAX_PLATFORMS...)."""
    env = cell.get("env") or cell.get("run_env") or {}
    if not isinstance(env, Mapping):
        return {}
    # A name checked by the grammar, never one that changes how Python or a loader starts (LD_PRELOAD,
    # PYTHONSTARTUP, ...): a report's env is data, and the script sets it for whatever it starts.
    return {k: str(v) for k, v in env.items() if is_env_name(k) and not is_startup_var(k) and not k.startswith("LD_")}


def _installed(cell: Mapping[str, Any]) -> frozenset[str]:
    """Top-level import names of the packages the cell installs (pins, extras, sources, versions)."""
    from harness.cells.cell import IMPORT_NAMES

    dists = [*(cell.get("pins") or {}), *(cell.get("sources") or {}),
             *(k for k, v in (cell.get("versions") or {}).items() if v)]
    for extra in cell.get("extras") or ():
        try:
            dists.append(Requirement(str(extra)).name)
        except InvalidRequirement:
            continue
    return frozenset(IMPORT_NAMES.get(canonicalize_name(d), canonicalize_name(d).replace("-", "_")) for d in dists)


class _Replace(ast.NodeTransformer):
    """Calls `f()` of the trivial helpers become the name they return; `x = x` left behind goes."""

    def __init__(self, names: Mapping[str, str]):
        self.names = names

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.names and not node.args and not node.keywords:
            return ast.copy_location(ast.Name(self.names[node.func.id], ast.Load()), node)
        return node

    def visit_Assign(self, node: ast.Assign) -> Any:
        self.generic_visit(node)
        return None if _self_assign(node) else node


class _DropRecords(ast.NodeTransformer):
    """`observe.record(...)` records facts for the report: standalone, the script prints them instead
    (what it found, before the asserts below it), and an assertion inside one still runs."""

    def visit_Expr(self, node: ast.Expr) -> Any:
        return _record_as_print(node) if _is_record(node.value) else node


def _is_record(call: ast.expr) -> bool:
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "record"
            and isinstance(call.func.value, ast.Name) and call.func.value.id == "observe")


def _worth_printing(value: ast.expr) -> bool:
    """A fact is printed when it checks something (an `assert_...(...)` call: it must run) or is made
    of what the core computed anyway (names, constants, arithmetic): a fact that needs a helper call of
    its own (`shard_map_home()`) would pull more code into the script for a number nobody checks;
    builtins and methods (`float(np.max(...))`) are no such helpers."""
    called = [c.func.id for c in ast.walk(value) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]
    if any(n.startswith("assert") for n in called):
        return True
    return all(n in _BUILTINS for n in called)  # float(np.max(...)), len(x): numpy and builtins only


def _record_as_print(node: ast.Expr) -> list[ast.stmt]:
    """`observe.record(a=X, **{k: Y})` -> `print('a:', X)`, `print(k + ':', Y)`: each fact computed
    and shown (`assert_within_bound(...)` inside one still asserts), none stored."""
    call = node.value
    assert isinstance(call, ast.Call)
    out: list[ast.stmt] = []
    pairs: list[tuple[ast.expr, ast.expr]] = []
    for kw in call.keywords:
        if kw.arg is not None:
            pairs.append((ast.Constant(f"{kw.arg}:"), kw.value))
        elif isinstance(kw.value, ast.Dict):
            pairs += [(ast.BinOp(k, ast.Add(), ast.Constant(":")), v) for k, v in zip(kw.value.keys, kw.value.values)
                      if k is not None]
        else:  # `**facts` of another shape (a dict built above): shown whole
            out.append(ast.Expr(ast.Call(ast.Name("print", ast.Load()), [kw.value], [])))
    for label, value in pairs:
        if _worth_printing(value):
            out.append(ast.Expr(ast.Call(ast.Name("print", ast.Load()), [label, value], [])))
    return [ast.fix_missing_locations(ast.copy_location(st, node)) for st in out]


def _bound_by_imports(stmts: list[ast.stmt]) -> dict[str, str]:
    """name -> the import statement binding it."""
    out = {}
    for st in stmts:
        for a in st.names:  # type: ignore[attr-defined]
            name = a.asname or (a.name.split(".")[0] if isinstance(st, ast.Import) else a.name)
            out[name] = ast.unparse(st)
    return out


def _rebinds(fn: ast.AST, name: str, helper: str) -> bool:
    """True if fn binds `name` other than by `name = helper()` (then helper() cannot become `name`)."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets):
            v = n.value
            if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == helper and len(n.targets) == 1):
                return True
        elif isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load):
            continue  # the assignment itself, judged above
        elif isinstance(n, ast.arg) and n.arg == name:
            return True
        elif isinstance(n, (ast.Import, ast.ImportFrom)) and name in _bound_by_imports([n]):
            return True
        elif isinstance(n, (ast.For, ast.With, ast.comprehension, ast.NamedExpr, ast.AugAssign)):
            if any(isinstance(t, ast.Name) and t.id == name and not isinstance(t.ctx, ast.Load) for t in ast.walk(n)):
                return True
    return False


def _inline_trivial(defs: list[_Def], imports: dict[str, str]) -> None:
    """A helper that only imports and returns a module (`xla()` -> `torch_xla`, `compute_on()` -> `co`)
    becomes that name, its imports hoisted to the top of the script."""
    for d in list(defs):
        fn = d.node
        if (not isinstance(fn, ast.FunctionDef) or fn.decorator_list or fn.args.args or fn.args.kwonlyargs
                or fn.args.vararg or fn.args.kwarg or fn.args.posonlyargs):
            continue
        *pre, last = fn.body
        if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Name)
                and all(isinstance(st, (ast.Import, ast.ImportFrom)) for st in pre)):
            continue
        value, bound = last.value.id, _bound_by_imports(pre)
        hoisted = {**_bound_by_imports([ast.parse(h).body[0] for h in d.hoisted]), **bound}
        if value not in hoisted and value not in imports:
            continue  # it returns something it computes: not a plain import
        if any(n in {x.name for x in defs} or imports.get(n, stmt) != stmt for n, stmt in bound.items()):
            continue  # hoisting would collide with another top-level name
        users = [u for u in defs if u is not d and d.name in _free_names(u.node)]
        if any(_rebinds(u.node, value, d.name) for u in users):
            continue
        for u in users:
            _Replace({d.name: value}).visit(u.node)
            _fix_empty_bodies(u.node)
            u.hoisted |= d.hoisted | set(bound.values())
        defs.remove(d)


def _shake(defs: list[_Def], roots: set[str]) -> list[_Def]:
    """Only the definitions reached from roots (transitively), in their order."""
    by_name = {d.name: d for d in defs}
    keep: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in keep or name not in by_name:
            continue
        keep.add(name)
        todo += _free_names(by_name[name].node)
    return [d for d in defs if d.name in keep]


def _observe_methods(defs: list[_Def]) -> set[str] | None:
    """The Observe methods the script calls (None: nothing reads `observe`, pass None)."""
    loads = [n for d in defs for n in ast.walk(d.node) if isinstance(n, ast.Name) and n.id == "observe"
             and isinstance(n.ctx, ast.Load)]
    if not loads:
        return None
    return {n.attr for d in defs for n in ast.walk(d.node) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "observe"}


def _prelude(methods: set[str]) -> _Module:
    """The script's own helpers (skip, Observe), Observe with only the methods used."""
    mod = _Module("standalone", Path("<prelude>"), ast.parse(_PRELUDE))
    for node in mod.tree.body:
        if isinstance(node, ast.ClassDef):
            node.body = [b for b in node.body if not isinstance(b, ast.FunctionDef) or b.name in methods] or [ast.Pass()]
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            mod.defs[node.name] = node
        elif isinstance(node, ast.ImportFrom):
            mod.imports[node.names[0].name] = (node.module or "", node.names[0].name)
    return mod


def _source(node: ast.stmt) -> str:
    """A definition's source, without the blank line unparse puts after a block's opening line."""
    out: list[str] = []
    for line in ast.unparse(node).splitlines():
        if line.strip() or not (out and out[-1].rstrip().endswith(":")):
            out.append(line)
    return "\n".join(out)


# The names the header's values are bound to (string literals: a value from a results file or a report is
# data, never a comment Python could read as a coding cookie nor a line a newline could end).
HEADER_NAMES = ("CASE", "CELL", "KNOWN_ISSUE", "INSTALL", "INSTALL_NOTE", "SOURCES", "EXAMPLE")
# One fixed line first: Python reads a `coding:` cookie only from a comment among the first two lines, and
# this one holds no data (the second is CASE's literal, never a comment).
HEADER_LINES = ("# Standalone reproducer (xla-seams): exit 1 while the bug is there, 0 once fixed, 125 if it cannot run"
                " here. Install with INSTALL; the script sets the cell's environment variables itself.",)


def _literal_line(name: str, value: Any) -> str:
    """`NAME = 'value'`: ascii() escapes every newline, line separator (U+2028, U+0085), NUL and quote."""
    return f"{name} = {ascii(value)}"


def _literals_line(pairs: list[tuple[str, Any]]) -> str:
    """`A, B = 'a', 'b'` (one pair: `A = 'a'`): the provenance in as few lines as it reads well in."""
    if len(pairs) == 1:
        return _literal_line(*pairs[0])
    return f"{', '.join(n for n, _v in pairs)} = {', '.join(ascii(v) for _n, v in pairs)}"


def _header(case_id: str, cell: Mapping[str, Any], expectation: Mapping[str, Any] | None,
            example_note: str | None = None) -> list[str]:
    """What a maintainer needs: how to run it and what the exit says (fixed text), then as literals the
    case, the cell and the known issue on one line, the install line with its note, what a source
    placeholder stands for and which example runs; then the cell's environment variables (`_env_preamble`)."""
    lines = list(HEADER_LINES)
    which: list[tuple[str, Any]] = [("CASE", str(case_id)), ("CELL", f"{cell.get('cell', '?')} ({cell.get('device', 'cpu')})")]
    if expectation:
        which.append(("KNOWN_ISSUE", f"{expectation.get('id', '')}: {expectation.get('link', '')}"))
    lines.append(_literals_line(which))
    install: list[tuple[str, Any]] = [("INSTALL", standalone_install_line(cell))]
    if torch_cpu_wheels(cell):
        install.append(("INSTALL_NOTE", TORCH_CPU_NOTE))
    lines.append(_literals_line(install))
    notes = source_notes(cell)
    if notes:
        lines.append(_literal_line("SOURCES", notes))
    if example_note:
        lines.append(_literal_line("EXAMPLE", example_note))
    return lines + _env_preamble(run_env(cell))


def _env_preamble(env: Mapping[str, str]) -> list[str]:
    """`import os` and the cell's variables in one statement, each set only where the caller's environment
    has none (as `setdefault` would): nothing for a cell that sets none. (A reduced script's is
    harness.reduce.script.env_lines: the variables the reduction kept, set outright.)"""
    if not env:
        return []
    return ["import os", f"os.environ.update({{k: v for k, v in {dict(env)!a}.items() if k not in os.environ}})"]


def export_script(case_id: str, cell: Mapping[str, Any], expectation: Mapping[str, Any] | None = None,
                  ranges: Mapping[str, ApiRange] | None = None, example: str | None = None,
                  message: str | None = None) -> str:
    """The standalone reproducer of one case on one cell (raises NoStandalone without a core).

    `example`: the failing run's hypothesis note (observations["falsifying_example"]); a property's
    script then runs that input instead of the example pinned in CORES, where it can be read; `message`:
    the failing run's (an op case's script then keeps only the check it names)."""
    if "::" not in case_id:  # a whole module: its collection failed (the module imports this one: here)
        from harness.report.standalone_module import export_module_script

        return export_module_script(case_id, cell, expectation)
    if case_id.startswith(("suites/torchax_ops/test_ops.py::test_op[", "suites/torchax_ops/test_ops.py::test_op_")):
        # an OpInfo op case (or its in-place / out= / error-input form): the op, the sample, the two results
        from harness.report.standalone_op import export_op_script  # imports this module: here, not at the top

        return export_op_script(case_id, cell, expectation, example, message)
    if case_id.startswith("suites/coexist/"):
        # a failing coexist run whose message names what failed: only that, minimal by construction
        # (the module imports this one: here, not at the top)
        from harness.report.standalone_coexist import export_coexist_script, short_form

        short = short_form(case_id, message)
        if short is not None:
            return export_coexist_script(case_id, cell, expectation, short)
    target = find_core(case_id)
    example_note = ""
    if target.kwargs and example:
        got, why = failing_example(example, [k for k, _v in target.kwargs])
        if got is not None:
            target = replace(target, kwargs=tuple(got.items()))
            example_note = "the failing run's own (as hypothesis reported it)"
        else:
            example_note = f"the one pinned in the suite ({why})"
    versions = {**{k: str(v) for k, v in (cell.get("pins") or {}).items()},
                **{k: str(v) for k, v in (cell.get("versions") or {}).items() if v}}
    presence = _api_presence(default_api_ranges() if ranges is None else ranges, versions)
    fn = _module_for(target.module).defs[target.function]  # type: ignore[union-attr]
    params = [a.arg for a in fn.args.args if a.arg != "observe"]  # type: ignore[union-attr]
    col = _Collector(presence, target.function, {**dict(zip(params, target.args)), **dict(target.kwargs)},
                     _installed(cell))
    cores = _module_for(target.module)
    assert cores is not None
    col.need(cores, target.function)
    defs = col.out
    if not any(_reads_observe(d.node) for d in defs):
        for d in defs:
            _DropRecords().visit(d.node)
            _fix_empty_bodies(d.node)
    _inline_trivial(defs, col.imports)
    defs = _shake(defs, {target.function})
    methods = _observe_methods(defs)
    prelude = _prelude(methods or set())
    col.out = defs
    used = set().union(*(_free_names(d.node) for d in defs), *({h.split()[1].split(".")[0] for h in d.hoisted} for d in defs))
    if not used & {"torch", "torch_xla", "torchax"}:  # no torch tensor can reach to_numpy
        col.installed = col.installed - {"torch"}
    if methods is not None:
        col.need(prelude, "Observe")
    if any("skip" in _free_names(d.node) for d in col.out):
        col.need(prelude, "skip")
    defs = col.out
    _drop_local_twins(defs, set(col.imports.values()) | set().union(*(d.hoisted for d in defs)))
    names = [d.name for d in defs] + list(HEADER_NAMES)
    if len(names) != len(set(names)) or set(HEADER_NAMES) & set().union(*(_free_names(d.node) for d in defs)):
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise NoStandalone(f"{case_id}: inlined names collide: {dupes}")
    used = set().union(*(_free_names(d.node) for d in defs))
    imports = {stmt for name, stmt in col.imports.items() if name in used}
    imports |= set().union(*(d.hoisted for d in defs))
    if methods is not None and "close" in methods or "np" in used:
        imports.add("import numpy as np")

    lines = _header(case_id, cell, expectation, example_note)
    # An import no definition reads is there for importing itself (a `require("flatbuffers")`, torch_xla
    # registering its device): kept, and marked as meant for the linter (tests/test_standalone_lint.py).
    bound = _bound_by_imports([ast.parse(stmt).body[0] for stmt in imports])
    unread = {stmt for name, stmt in bound.items() if name not in used}
    lines += [stmt + ("  # noqa: F401 (imported for what the import does)" if stmt in unread else "")
              for stmt in sorted(imports, key=lambda s: (s.startswith("from"), s))] + [""]
    for d in defs:
        is_def = isinstance(d.node, (ast.FunctionDef, ast.ClassDef))
        if is_def and lines[-1] != "":
            lines.append("")
        lines += [_source(d.node)] + ([""] if is_def else [])
    args = [repr(a) for a in target.args] + [f"{k}={v!r}" for k, v in target.kwargs]
    call = f"{target.function}({', '.join(args + ['observe=' + ('None' if methods is None else 'Observe()')])})"
    lines += ['if __name__ == "__main__":', f"    {call}",
              f"    print({'no failure: ' + case_id.rsplit('::', 1)[-1] + ' behaves as the suite expects'!r})", ""]
    return "\n".join(lines)
