"""YAML loading that remembers line numbers, so validation errors can name file:line.

Hostile input is bounded: files over MAX_BYTES, documents that expand (through aliases) to more
than MAX_NODES nodes or nest deeper than MAX_DEPTH are one UserError, never a hang or a traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.errors import UserError
from harness.safeio import read_input

# Matrices and known-issues files are a few KB; these bounds leave room and stop bombs early.
MAX_BYTES = 1_000_000
MAX_NODES = 100_000
MAX_DEPTH = 64


class LineDict(dict):
    """A mapping from YAML that knows the line of itself and of each key (1-based)."""

    line: int = 0
    key_lines: dict[str, int]


# libyaml's parser when PyYAML was built with it (the wheels are): the pure-Python scanner was a
# tenth of a 10k-result report's time, spent re-reading the same few KB of known issues.
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[misc,valid-type]
    pass


class _Bad(Exception):
    """A problem at a line of the document being loaded (load_yaml adds the file name)."""

    def __init__(self, line: int, msg: str) -> None:
        super().__init__(msg)
        self.line = line


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if not isinstance(key_node, yaml.ScalarNode):
            raise _Bad(line, f"a key must be a plain name, not a {'list' if isinstance(key_node, yaml.SequenceNode) else 'mapping'}")
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise _Bad(line, f"duplicate key {key!r}")
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = line
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# Versions such as 0.10 must stay strings: YAML would read them as the float 0.1.
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:float"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


_OPEN = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken, yaml.BlockSequenceStartToken,
         yaml.BlockMappingStartToken)
_CLOSE = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)


def _check_depth(text: str) -> None:
    """Reject deep nesting from the token stream, before the (recursive, slow) composer sees it."""
    depth = 0
    try:
        for token in yaml.scan(text, Loader=_Loader):
            if isinstance(token, _OPEN):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _Bad(token.start_mark.line + 1, f"nested deeper than {MAX_DEPTH} levels")
            elif isinstance(token, _CLOSE):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        # libyaml 0.2.5 as bundled from PyYAML 6.0.4 on stops at its own limit (1000 levels) while
        # looking ahead, before we see the 65th token: the same fault, so the same message.
        if "nesting depth" not in str(exc.problem):
            raise
        mark = exc.problem_mark or exc.context_mark
        raise _Bad(mark.line + 1 if mark else 1, f"nested deeper than {MAX_DEPTH} levels") from None


def _check_size(node: yaml.Node) -> None:
    """Count the nodes the document expands to (aliases included) without expanding it."""
    memo: dict[int, int] = {}

    def size(n: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise _Bad(n.start_mark.line + 1, f"nested deeper than {MAX_DEPTH} levels")
        if id(n) in memo:
            return memo[id(n)]
        memo[id(n)] = MAX_NODES + 1  # a cycle (an alias to its own parent) counts as too big
        total = 1
        if isinstance(n, yaml.SequenceNode):
            children = n.value
        elif isinstance(n, yaml.MappingNode):
            children = [x for pair in n.value for x in pair]
        else:
            children = []
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_NODES:
                raise _Bad(child.start_mark.line + 1, f"expands to more than {MAX_NODES} nodes (an alias bomb?); "
                                "write the document out instead of nesting aliases")
        memo[id(n)] = total
        return total

    size(node, 0)


def load_yaml(path: Path) -> Any:
    """Parse a YAML file; syntax errors, bombs and non-UTF-8 text become one UserError line with file:line."""
    data = read_input(path, MAX_BYTES, "matrix or known-issues")  # a FIFO or a device: one line, never a hang
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise UserError(f"{path}:{line}: not UTF-8 text (byte {data[exc.start]:#04x}); save the file as UTF-8") from None
    if "\x00" in text:
        raise UserError(f"{path}:{text[:text.index(chr(0))].count(chr(10)) + 1}: contains a NUL byte: a binary file, not YAML")
    try:
        _check_depth(text)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_size(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except _Bad as exc:
        raise UserError(f"{path}:{exc.line}: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise UserError(f"{where}: YAML syntax error: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: YAML error: {exc}") from None
    except RecursionError:
        raise UserError(f"{path}: nested too deeply to be a matrix or known-issues file") from None
    except TypeError as exc:  # e.g. a merge key (<<) that points at something unhashable
        raise UserError(f"{path}: not a valid document: {exc}") from None


def line_of(node: Any, key: str | None = None) -> int:
    """Line of a mapping (or of one of its keys); 0 when unknown."""
    if isinstance(node, LineDict):
        try:
            if key is not None and key in node.key_lines:
                return node.key_lines[key]
        except TypeError:  # an unhashable key value passed by a caller
            pass
        return node.line
    return 0
