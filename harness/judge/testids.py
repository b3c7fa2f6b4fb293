"""Test ids a suite module declares, read statically (no import: the suites need a cell's jax)."""

from __future__ import annotations

import ast
import itertools
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.paths import REPO


class _Unknown(Exception):
    """The parameters are computed in a way a static read cannot follow."""


def _idval(value: Any, argname: str, index: int) -> str:
    # As pytest names parameters: strings, numbers, bools and None by value, anything else by position.
    if isinstance(value, str):
        return value.encode("unicode_escape").decode("ascii")
    if value is None or isinstance(value, (bool, int, float, complex)):
        return str(value)
    return f"{argname}{index}"


def _module_values(tree: ast.Module) -> dict[str, ast.expr]:
    return {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)}


def _values(node: ast.expr, names: dict[str, ast.expr]) -> list[Any]:
    """The literal parameter values of an argvalues expression (a literal, NAME, list(NAME) of a dict)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple", "sorted") \
            and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise _Unknown
        node = names[node.id]
    if isinstance(node, ast.Dict):
        return [ast.literal_eval(k) if k is not None else _fail() for k in node.keys]
    if isinstance(node, (ast.List, ast.Tuple)):
        out = []
        for el in node.elts:
            if isinstance(el, ast.Call):  # pytest.param(..., id="x")
                ident = next((k.value for k in el.keywords if k.arg == "id"), None)
                if not (isinstance(ident, ast.Constant) and isinstance(ident.value, str)):
                    raise _Unknown
                out.append(_Id(ident.value))
            else:
                out.append(ast.literal_eval(el))
        return out
    raise _Unknown


def _fail() -> Any:
    raise _Unknown


class _Id(str):
    """An explicit id from pytest.param(id=...)."""


def _decorator_ids(dec: ast.expr, names: dict[str, ast.expr]) -> list[str] | None:
    """Ids one @pytest.mark.parametrize contributes, None if dec is not one."""
    if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr == "parametrize"):
        return None
    kw = {k.arg: k.value for k in dec.keywords}
    argnames_node = dec.args[0] if dec.args else kw.get("argnames")
    values_node = dec.args[1] if len(dec.args) > 1 else kw.get("argvalues")
    if argnames_node is None or values_node is None:
        raise _Unknown
    try:
        argnames = ast.literal_eval(argnames_node)
    except ValueError:
        raise _Unknown from None
    if isinstance(argnames, str):
        argnames = [a.strip() for a in argnames.split(",") if a.strip()]
    try:
        values = _values(values_node, names)
    except ValueError:
        raise _Unknown from None
    if "ids" in kw:
        try:
            ids = ast.literal_eval(kw["ids"])
        except ValueError:
            raise _Unknown from None
        if not isinstance(ids, (list, tuple)) or len(ids) != len(values):
            raise _Unknown
        return [str(i) for i in ids]
    out = []
    for i, v in enumerate(values):
        if isinstance(v, _Id):
            out.append(str(v))
        elif len(argnames) > 1 and isinstance(v, (list, tuple)):
            out.append("-".join(_idval(x, argnames[j], i) for j, x in enumerate(v)))
        else:
            out.append(_idval(v, argnames[0], i))
    return out


def read_suite_module(nodeid: str) -> tuple[str, ast.Module] | None:
    """(source, parsed tree) of the module a node id names, inside this checkout only; else None.

    Ids come from results files and the command line: nothing outside the checkout is read.
    """
    path = nodeid.partition("::")[0]
    if not path.endswith(".py") or "\x00" in path:
        return None
    file = (REPO / path).resolve()
    if REPO not in file.parents:
        return None
    try:
        st = file.stat()
    except (OSError, ValueError):
        return None
    return _parsed(str(file), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=64)
def _parsed(file: str, mtime_ns: int, size: int) -> tuple[str, ast.Module] | None:
    """Read and parse once per file version: a report's 500 repros name a handful of modules."""
    try:
        text = Path(file).read_text(encoding="utf-8")
        return text, ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return None


def declared_ids(nodeid: str) -> set[str] | None:
    """The `[...]` parameter ids the test function of nodeid declares ({""} if unparametrized).

    None when that cannot be read statically (fixture params, computed values, no such function):
    the caller then cannot reject an id, only accept it.
    """
    parts = nodeid.partition("::")[2].split("[")[0].split("::")
    read = read_suite_module(nodeid)
    if read is None:
        return None
    text, tree = read
    if "params=" in text or "pytestmark" in text or "pytest_generate_tests" in text:
        return None  # parameters from fixtures or hooks: not followed statically
    names = _module_values(tree)
    scope: list[ast.stmt] = tree.body
    for cls in parts[:-1]:
        found = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if found is None or any(_decorator_ids(d, names) is not None for d in found.decorator_list):
            return None
        scope = found.body
    func = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == parts[-1]), None)
    if func is None:
        return None
    try:
        layers = [ids for d in reversed(func.decorator_list) if (ids := _decorator_ids(d, names)) is not None]
    except (_Unknown, ValueError, TypeError, SyntaxError, RecursionError):
        return None
    if not layers:
        return {""}
    return {"-".join(combo) for combo in itertools.product(*layers)}
