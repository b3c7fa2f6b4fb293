"""The failing run's own hypothesis example, as the keyword arguments of the case's core.

A property case's core is exported with the example pinned in CORES; when a run fails, the plugin
records hypothesis's "Falsifying example: test_x(prog=Program(...), ...)" note. That input, not
the pinned one, is what reproduces this failure, so the exporter takes it when it can be read:
each keyword is a literal (`calls=[...]`), or a record of literals (`prog=Program(a=1, b=(2,))`,
a dataclass or namedtuple repr) whose fields are the core's parameters, as the pinned example's are.
"""

from __future__ import annotations

import ast
from typing import Any, Iterable

_PREFIXES = ("Falsifying example", "Falsifying explicit example", "Failing explicit example", "Failing test case")


def _call(text: str) -> ast.Call | None:
    """The `test_x(...)` call that follows the note's first ':' (hypothesis prints it over lines)."""
    head, sep, rest = text.partition(":")
    if not sep or not head.strip().startswith(_PREFIXES):
        return None
    lines = rest.strip().splitlines()
    for end in range(1, len(lines) + 1):  # the call ends where the text first parses (notes may follow)
        try:
            node = ast.parse("\n".join(lines[:end]).strip(), mode="eval").body
        except SyntaxError:
            continue
        return node if isinstance(node, ast.Call) else None
    return None


def _fields(node: ast.Call) -> dict[str, Any]:
    """A record call of literal keywords (`Program(a=1, b=(2,))`), flattened to its fields."""
    if node.args:
        # st.builds(Record, ...) prints its positional draws; the suites draw records with
        # @st.composite, whose repr (dataclass, namedtuple) names every field
        raise ValueError("a record printed with positional fields")
    if all(k.arg for k in node.keywords):  # type: ignore[attr-defined]
        return {k.arg: ast.literal_eval(k.value) for k in node.keywords}  # type: ignore[attr-defined,misc]
    raise ValueError("a value of the example is not a literal")


def failing_example(text: str | None, params: Iterable[str]) -> tuple[dict[str, Any] | None, str]:
    """(core keyword arguments, "") from the failing run's example text, or (None, why not)."""
    if not text:
        return None, "the run recorded no example"
    call = _call(text)
    if call is None:
        return None, "no example call in the run's note"
    wanted, out, unread = set(params), {}, ""
    for kw in call.keywords:  # pytest's fixtures and parameters are printed too: only the core's count
        if kw.arg is None:
            return None, "the example passes **kwargs"
        try:
            if kw.arg in wanted:
                out[kw.arg] = ast.literal_eval(kw.value)
            elif isinstance(kw.value, ast.Call):
                out.update({k: v for k, v in _fields(kw.value).items() if k in wanted})
        except ValueError as exc:
            unread = str(exc) if "record" in str(exc) else "a value of the example is not a literal"
        except (TypeError, SyntaxError, MemoryError, RecursionError):
            unread = "a value of the example is not a literal"
    if set(out) != wanted:
        missing = f"the example gives no {', '.join(sorted(wanted - set(out)))}"
        return None, f"{unread}: {missing}" if unread else missing
    return out, ""
