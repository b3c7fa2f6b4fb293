"""Credentials never leave the machine: `scheme://user:token@host` is shown as `scheme://***@host`.

Index URLs may carry a token (private indexes, `--index-url https://__token__:pypi-...@host`). The
real URL goes only to uv; everything shown or written (terminal lines, results, reasons, reports,
repros, filed issues) passes through redact().
"""

from __future__ import annotations

import re
from typing import Any

_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"<>]+@")


def redact(text: str) -> str:
    """text with the user and password of every URL in it replaced by ***."""
    return _USERINFO.sub(r"\g<scheme>***@", text) if "@" in text else text


def redact_all(value: Any) -> Any:
    """redact() applied to every string in a JSON-like value (keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_all(k): redact_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_all(v) for v in value]
    return value
