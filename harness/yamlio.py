"""YAML loading that remembers line numbers, so validation errors can name file:line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.errors import UserError


class LineDict(dict):
    """A mapping from YAML that knows the line of itself and of each key (1-based)."""

    line: int = 0
    key_lines: dict[str, int]


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    out.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise UserError(f"duplicate key {key!r} at line {key_node.start_mark.line + 1}")
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = key_node.start_mark.line + 1
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# Versions such as 0.10 must stay strings: YAML would read them as the float 0.1.
_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:float"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(path: Path) -> Any:
    """Parse a YAML file; syntax errors become one UserError line with file:line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    except UserError as exc:
        raise UserError(f"{path}: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise UserError(f"{where}: YAML syntax error: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: YAML error: {exc}") from None


def line_of(node: Any, key: str | None = None) -> int:
    """Line of a mapping (or of one of its keys); 0 when unknown."""
    if isinstance(node, LineDict):
        if key is not None and key in node.key_lines:
            return node.key_lines[key]
        return node.line
    return 0
