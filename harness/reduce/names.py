"""Names a candidate uses but never binds: such a candidate fails with a NameError (or, where the
use is never reached, is a script no maintainer should get), so the reducer rejects it without
running it. Scopes are ignored (a name bound anywhere counts as bound): cheap, and it only ever
lets a candidate through to be run, never keeps one that fails another way."""

from __future__ import annotations

import ast
import builtins

_KNOWN = set(dir(builtins)) | {"__file__", "__name__", "__builtins__", "__spec__", "__doc__"}


def bound_names(tree: ast.AST) -> set[str]:
    """Every name the tree binds somewhere: assignments, defs, imports, parameters, handlers."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            out.add(node.name)
    return out


def undefined_names(tree: ast.AST) -> set[str]:
    """Names loaded but bound nowhere (and not builtins)."""
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return used - bound_names(tree) - _KNOWN
