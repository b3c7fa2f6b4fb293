"""Standalone reproducers of a suite module's collection error: a result whose id is the module's path
(pytest could not import or parametrize `suites/F/test_x.py`, so none of its cases ran).

What collecting a module reaches of the cell's packages is what it and the suite modules it imports
name: `import X`, `from X import ...` and `require("X")` (the compat shim's import), anywhere in them,
since collection calls their functions to parametrize. The script imports those packages one by one,
in the order the modules name them (the test module, then each suite module where the test module
imports it), so it stops where collection stopped when a package cannot be imported: the known
issue's `match` reads the same exception (`import torchax` raising, for the two of a default run).
A package collection never reaches may come first in that list; then the script fails elsewhere and
the reducer's signature run says so (`harness reduce` searches it down to the import that fails).

The names come from this project's own suite sources, each checked as a dotted module name and written
with `ascii()`; nothing of the result's message reaches the script.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any, Mapping

from harness.paths import REPO, SUITES_DIR
from harness.report.standalone import NoStandalone, _header

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_MODULE_ID = re.compile(r"suites/[A-Za-z0-9_]+/(?:[A-Za-z0-9_]+/)*test_[A-Za-z0-9_]+\.py")
# the project's own and the test tools': never a package of the cell under test
_NOT_THE_CELLS = {"harness", "suites", "pytest", "hypothesis", "_pytest", "__future__", "conftest"}


def is_module_id(case_id: str | None) -> bool:
    """A result of a whole suite module (its collection), not of one case."""
    return isinstance(case_id, str) and _MODULE_ID.fullmatch(case_id) is not None


def _named(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(line, column, dotted name) of every import and `require("X")` of the module, and of every suite
    module it imports (as `suites.F.m`, to recurse into)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, node.col_offset, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.append((node.lineno, node.col_offset, node.module))
            if node.module == "suites" or node.module.startswith("suites."):
                out += [(node.lineno, node.col_offset, f"{node.module}.{a.name}") for a in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "require"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.append((node.lineno, node.col_offset, node.args[0].value))
    return sorted(out)


def module_imports(path: Path, seen: set[Path] | None = None) -> list[str]:
    """The cell's packages and modules the suite module at `path` names, in order, the suite modules it
    imports followed where it imports them; each name once."""
    seen = set() if seen is None else seen
    if path in seen or not path.is_file():
        return []
    seen.add(path)
    names: list[str] = []
    for _line, _col, name in _named(ast.parse(path.read_text(encoding="utf-8"))):
        if name.startswith("suites."):
            names += module_imports(REPO / (name.replace(".", "/") + ".py"), seen)
            continue
        top = name.split(".")[0]
        if _DOTTED.fullmatch(name) and top not in _NOT_THE_CELLS and top not in sys.stdlib_module_names:
            names.append(name)
    return list(dict.fromkeys(names))


def export_module_script(case_id: str, cell: Mapping[str, Any], expectation: Mapping[str, Any] | None) -> str:
    """The script of a module's collection error: the header, then its packages imported in order."""
    path = REPO / case_id
    if not is_module_id(case_id) or SUITES_DIR not in path.parents:
        raise NoStandalone(f"{case_id}: not a suite module")
    names = module_imports(path)
    if not names:
        raise NoStandalone(f"{case_id}: imports none of the cell's packages")
    lines = _header(case_id, cell, expectation)
    lines += ["import importlib", "",
              f"for name in {names!a}:  # what collecting the module imports of the cell's, in its modules' order",
              "    print('import', name)",
              "    importlib.import_module(name)",
              f"print({'no failure: ' + case_id + ' is collected as the suite expects'!a})", ""]
    return "\n".join(lines)
