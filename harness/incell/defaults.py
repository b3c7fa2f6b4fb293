"""A release's defaults as facts, judged like API presence (matrices/apis/, harness.judge.apis).

A scenario that passes every option explicitly cannot see a release that flips a default, and
most users call with the defaults. So the suites also call each API bare, and record its
signature's defaults here: every default as the observation `defaults: {API: {param: repr}}`
(what a diff between two reports shows), and each default the suites rely on as an API fact
named `API(param=value)`, present when this release's signature has exactly that default.
matrices/apis/ gives the releases where each such default holds, so a flipped (or removed)
default is `api-drift`, news, even when the behaviour happens to agree.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from harness.incell.compat import found

DEFAULTS_OBSERVATION = "defaults"


def signature_defaults(fn: Callable) -> dict[str, str]:
    """{parameter: repr(default)} of fn's signature (parameters without a default left out)."""
    return {name: repr(p.default) for name, p in inspect.signature(fn).parameters.items()
            if p.default is not inspect.Parameter.empty}


def default_fact(api: str, param: str, value: Any) -> str:
    """The API-fact name of one default: `jax.jit(keep_unused=False)`."""
    return f"{api}({param}={value!r})"


def check_defaults(observe: Any, api: str, fn: Callable, relied_on: dict[str, Any]) -> dict[str, str]:
    """Record fn's defaults under `api` and, per relied-on default, whether this release has it.

    Returns the defaults seen. Never fails the case: whether a default may differ in this
    release is policy (the ranges), judged with the recorded facts.
    """
    seen = signature_defaults(fn)
    observe.setdefault(DEFAULTS_OBSERVATION, {})[api] = seen
    for param, value in relied_on.items():
        found(default_fact(api, param, value), seen.get(param) == repr(value))
    return seen
