"""Grammars for values read from results files, report.json, matrices or the command line that end up in
generated text (a script, a shell line, an argv): a value is either checked here or embedded as a literal.

A pip line in particular is derived, never copied: each word of a cell's recorded install line is parsed
(an index option with a URL, or a PEP 508 requirement re-rendered by `packaging`), and a line with any
other word is rebuilt from the pins, each name and version checked.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Mapping

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

# pytest node id: a relative .py path of plain path characters, `::` names, and one `[param]` of printable
# ASCII. Never starts with `-` (an option), never holds a newline, a line separator or a NUL.
_NODE_ID = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]*\.py(?:::[A-Za-z_][A-Za-z0-9_]*)*(?:\[[\x20-\x5a\x5c\x5e-\x7e]*\])?")
_PACKAGE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508 names
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INDEX_OPTIONS = ("--index-url", "--extra-index-url", "--find-links")
# An index option's value: a URL or an absolute path of printable ASCII, no space, no quote, no option.
_LOCATION = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|/)[\x21-\x7e]*")


def is_node_id(value: Any) -> bool:
    """A pytest node id of this project's shape (`suites/x/test_y.py::test_z[param]`), not an option."""
    return isinstance(value, str) and _NODE_ID.fullmatch(value) is not None and "\\" not in value.partition("[")[0]


def is_package_name(value: Any) -> bool:
    """A PEP 508 distribution name (`jax`, `torch_xla`, `torch-xla`)."""
    return isinstance(value, str) and _PACKAGE.fullmatch(value) is not None


def is_version(value: Any) -> bool:
    """A PEP 440 version (`0.6.0`, `2.9.0+cpu`, `0.7.2.dev20250101`)."""
    if not isinstance(value, str) or not value.isascii() or not value.strip() == value:
        return False
    try:
        Version(value)
    except InvalidVersion:
        return False
    return True


def is_env_name(value: Any) -> bool:
    """An environment variable name a shell and os.environ both take (`XLA_FLAGS`)."""
    return isinstance(value, str) and _ENV_NAME.fullmatch(value) is not None


def _plain(word: str) -> bool:
    """One word a line can show as it is: printable ASCII only (no newline, separator, NUL), not an option."""
    return word.isascii() and word.isprintable() and not word.startswith("-")


def _requirement(word: str) -> str | None:
    """word re-rendered as a PEP 508 requirement, or None if it is not one."""
    try:
        text = str(Requirement(word))
    except InvalidRequirement:
        return None
    return text if _plain(text) else None


def pins_words(cell: Mapping[str, Any]) -> list[str]:
    """`pip install NAME==VERSION ...` from the cell's pins, each name and version checked (others left out)."""
    pins = cell.get("pins") if isinstance(cell.get("pins"), Mapping) else {}
    return ["pip", "install"] + [f"{canonicalize_name(k)}=={v}" for k, v in pins.items()
                                 if is_package_name(k) and is_version(v)]


def pip_words(cell: Mapping[str, Any]) -> list[str]:
    """The cell's pip line as words, each one parsed: index options with a URL or path, PEP 508
    requirements. A recorded line that is not all such words gives the line of the pins instead."""
    try:
        words = shlex.split(str(cell.get("install_line") or ""))
    except ValueError:
        return pins_words(cell)
    if words[:2] != ["pip", "install"] or len(words) == 2:
        return pins_words(cell)
    out, i = ["pip", "install"], 2
    while i < len(words):
        w = words[i]
        if w in _INDEX_OPTIONS:
            if i + 1 >= len(words) or not _LOCATION.fullmatch(words[i + 1]):
                return pins_words(cell)
            out += [w, words[i + 1]]
            i += 2
            continue
        req = _requirement(w) if _plain(w) else None
        if req is None:
            return pins_words(cell)
        out.append(req)
        i += 1
    return out
