"""Credentials never leave the machine: `scheme://user:token@host` is shown as `scheme://***@host`.

Index URLs may carry a token (private indexes, `--index-url https://__token__:pypi-...@host`). The
real URL goes only to uv; everything shown or written (terminal lines, results, reasons, reports,
repros, filed issues) passes through redact().
"""

from __future__ import annotations

import json
import re
from typing import Any

_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"<>]+@")
# What _USERINFO matches, minus the scheme: it starts with a literal, so the regex engine skips to
# each "://" instead of trying a scheme at every word (a 10k-result report's JSON: 86 ms -> 2 ms).
# It finds a superset, so it only decides whether the walk is needed.
_MAY_HOLD_USERINFO = re.compile(r"://[^/\s@'\"<>]+@")


def redact(text: str) -> str:
    """text with the user and password of every URL in it replaced by ***."""
    return _USERINFO.sub(r"\g<scheme>***@", text) if "@" in text else text


def may_hold_userinfo(text: str) -> bool:
    """False only if redact() would leave text (or the JSON text of a value) as it is."""
    return _MAY_HOLD_USERINFO.search(text) is not None


def redact_all(value: Any, as_json: str | None = None) -> Any:
    """redact() applied to every string in a JSON-like value (keys included). A value whose JSON
    holds no credential comes back as it is, without the walk (a 10k-result report: 0.5 s saved);
    `as_json`: that JSON text, where the caller has it already (then it is not made again)."""
    if isinstance(value, (dict, list, tuple)) and not may_hold_userinfo(
            json.dumps(value, default=str) if as_json is None else as_json):
        return value
    return _redact_walk(value)


def _redact_walk(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {_redact_walk(k): _redact_walk(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_walk(v) for v in value]
    return value
