"""What a collection error says, as one message: the live progress line and the report judge it alike.

pytest records a failed collection as a CollectReport whose longrepr is its text (or, through
pytest-reportlog, a JSON tree). The runner judges it live against the known issues and the report
judges it again from the results file; both must read the same message, or a known collection
error shows as a regression while the cell runs and as a known bug in the report.
"""

from __future__ import annotations

import json
from typing import Any

MESSAGE_LINES = 6


def collect_message(longrepr: Any) -> str:
    """The telling lines of a collection error: pytest's `E   ...` lines, else its first lines."""
    text = longrepr if isinstance(longrepr, str) else json.dumps(longrepr)[:4000] if longrepr else "collection failed"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    head = errors + lines[:1] if errors else lines  # the exception first: it is what a summary shows
    return "\n".join(head[:MESSAGE_LINES])[:2000]
