"""Read a bridge's installed source (parsed with ast, never imported) for the APIs it uses.

Two kinds of use are collected, each with its file and line and how it is guarded:
- jax attribute chains: `jax.lax.psum`, `jnp.zeros` (through `import jax.numpy as jnp`),
  `from jax.experimental.shard_map import shard_map`, `jax._src.core.Tracer`;
- torch operator overloads: `torch.ops.aten.prod.dim_Dimname`, `aten.add.Tensor` (through
  `aten = torch.ops.aten` or `from torch.ops import aten`).

A use is `try` guarded when it sits in the body of a try statement with handlers (the bridge
takes another path when it fails: a silent fallback), `conditional` when it sits under an `if`
whose test calls hasattr or reads a version (the bridge asks before it uses), else unguarded.
Aliases are collected per file, wherever the import sits (a function-local `import jax` counts):
a file that binds one name to two modules is rare, and the chain is then reported under both.
This module imports nothing beyond the standard library: the host's tests run it on synthetic files.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

GUARDS = ("none", "conditional", "try")  # weakest first: a use seen several ways keeps the weakest


@dataclass(frozen=True)
class Use:
    """One use of an API at one place in the bridge's source."""

    api: str  # dotted: jax.lax.psum, torch.ops.aten.prod.dim_Dimname
    file: str  # relative to the folder holding the bridge's package (torchax/ops/jaten.py)
    line: int
    guard: str  # one of GUARDS


def _dotted(node: ast.AST) -> list[str] | None:
    """['a', 'b', 'c'] for the expression a.b.c, None for anything else (a call, a subscript)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _is_version_test(test: ast.AST) -> bool:
    """An `if` test that asks before using: hasattr(...), or anything naming a version."""
    for sub in ast.walk(test):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "hasattr":
            return True
        name = sub.attr if isinstance(sub, ast.Attribute) else sub.id if isinstance(sub, ast.Name) else ""
        if "version" in name.lower():
            return True
    return False


class _Guards(ast.NodeVisitor):
    """Maps each node to the guard it sits under (the strongest enclosing one)."""

    def __init__(self) -> None:
        self.guard: dict[int, str] = {}
        self._stack: list[str] = ["none"]

    def _push(self, guard: str, nodes: Iterable[ast.AST]) -> None:
        rank = max(GUARDS.index(guard), GUARDS.index(self._stack[-1]))
        self._stack.append(GUARDS[rank])
        for n in nodes:
            self.visit(n)
        self._stack.pop()

    def generic_visit(self, node: ast.AST) -> None:
        self.guard[id(node)] = self._stack[-1]
        super().generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        self.guard[id(node)] = self._stack[-1]
        self._push("try" if node.handlers else "none", node.body)
        for n in [*node.handlers, *node.orelse, *node.finalbody]:
            self.visit(n)

    visit_TryStar = visit_Try

    def visit_If(self, node: ast.If) -> None:
        self.guard[id(node)] = self._stack[-1]
        self.visit(node.test)
        self._push("conditional" if _is_version_test(node.test) else "none", [*node.body, *node.orelse])


def _aliases(tree: ast.AST, roots: tuple[str, ...]) -> dict[str, set[str]]:
    """Local name -> the dotted module paths it is bound to, for imports under `roots`."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in roots:
                    # `import jax.numpy as jnp` binds jnp; `import jax.numpy` binds jax
                    name, target = (a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0])
                    out.setdefault(name, set()).add(target)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in roots:
                for a in node.names:
                    if a.name != "*":
                        out.setdefault(a.asname or a.name, set()).add(f"{node.module}.{a.name}")
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            chain = _dotted(node.value)  # `aten = torch.ops.aten`: resolved below against the import aliases
            if chain and chain[0] in roots and len(chain) > 1:
                out.setdefault(node.targets[0].id, set()).add(".".join(chain))
    return out


def _mark_parents(tree: ast.AST) -> None:
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            child._seams_parent = parent  # type: ignore[attr-defined]


def scan_file(path: Path, rel: str, roots: tuple[str, ...] = ("jax", "torch")) -> list[Use]:
    """The uses in one file (outermost attribute chains only: `jax.lax.psum` once, not `jax.lax` too)."""
    source = path.read_text(encoding="utf-8", errors="replace")
    tree = ast.parse(source, filename=rel)
    _mark_parents(tree)
    guards = _Guards()
    guards.visit(tree)
    aliases = _aliases(tree, roots)
    out: list[Use] = []
    for node in ast.walk(tree):
        guard = guards.guard.get(id(node), "none")
        if isinstance(node, ast.Import):
            out += [Use(a.name, rel, node.lineno, guard) for a in node.names if a.name.split(".")[0] in roots]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in roots:
                out += [Use(node.module if a.name == "*" else f"{node.module}.{a.name}", rel, node.lineno, guard)
                        for a in node.names]
        elif isinstance(node, ast.Attribute) and not isinstance(getattr(node, "_seams_parent", None), ast.Attribute):
            chain = _dotted(node)
            if chain:
                out += [Use(".".join([base, *chain[1:]]), rel, node.lineno, guard)
                        for base in _expand(chain[0], aliases, roots)]
    return out


def _expand(name: str, aliases: dict[str, set[str]], roots: tuple[str, ...], depth: int = 0) -> set[str]:
    """The dotted paths a local name stands for, following `aten = torch.ops.aten` style chains."""
    out: set[str] = set()
    for target in aliases.get(name, ()):
        head, _, rest = target.partition(".")
        if head in aliases and depth < 4 and aliases[head] != {head}:
            out |= {f"{b}.{rest}" if rest else b for b in _expand(head, aliases, roots, depth + 1)}
        elif head in roots:
            out.add(target)
    return out


def scan_package(root: Path, package_dir: Path) -> list[Use]:
    """The uses in every .py file under package_dir (file names relative to root), in file order."""
    out: list[Use] = []
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        try:
            out += scan_file(path, rel)
        except SyntaxError:  # a file for another Python (templates, py2 leftovers): not code this cell runs
            continue
    return out
