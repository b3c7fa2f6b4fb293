"""Reading facts out of IR text (StableHLO, HLO, jaxpr) that scenarios assert and record."""

from __future__ import annotations

import re

_ENTRY_RE = re.compile(r"^ENTRY\b.*?\{\s*$(.*?)^\}", re.M | re.S)
_PARAM_RE = re.compile(r"\bparameter\((\d+)\)")


def count_entry_parameters(hlo_text: str) -> int:
    """Number of parameters of the HLO module's ENTRY computation (HLO text, not StableHLO)."""
    m = _ENTRY_RE.search(hlo_text)
    if m is None:
        raise AssertionError("no ENTRY computation in the HLO text")
    return len(set(_PARAM_RE.findall(m.group(1))))


def count_main_arguments(stablehlo_text: str) -> int:
    """Number of arguments of the StableHLO module's public main function."""
    m = re.search(r"func\.func public @main\((.*?)\)\s*(->|\{)", stablehlo_text, re.S)
    if m is None:
        raise AssertionError("no public @main in the StableHLO text")
    return len(re.findall(r"%arg\d+\s*:", m.group(1)))


def frontend_attribute_values(text: str, key: str) -> list[str]:
    """Every value of frontend attribute `key` in StableHLO (`key = "v"`) or HLO (`key="v"`) text."""
    return re.findall(rf'\b{re.escape(key)}\s*=\s*"([^"]*)"', text)


def has_frontend_attribute(text: str, key: str, value: str) -> bool:
    """True if the IR text carries frontend attribute key=value anywhere."""
    return value in frontend_attribute_values(text, key)


def compiled_host_placement(text: str) -> list[str]:
    """What in a compiled module shows a computation placed on the host, one entry per sign: the
    frontend attribute `_xla_compute_type="host"` (what XLA's CPU compiler keeps), or an async call on
    the host execution thread (XLA's GPU compiler turns the placed call into `custom-call-start`
    `HostExecute` with `async_execution_thread="host"` and drops the attribute; seen with jax 0.11.2
    on an H100). Empty: no host placement survived compilation (merged into the device's code)."""
    found = [f'_xla_compute_type="{v}"' for v in frontend_attribute_values(text, "_xla_compute_type") if v == "host"]
    return found + re.findall(r'\basync_execution_thread="host"', text)


_COMPUTATION_RE = re.compile(r'^(?:ENTRY\s+)?%?([\w.\-]+)\s*(?:\(.*\)\s*->\s*.*)?\{\s*$')
_CALLED_RE = re.compile(r'\b(?:to_apply|calls|called_computations)=\{?%?([\w.\-]+)')


def outermost_host_calls(hlo_text: str) -> list[str]:
    """The computations called with `_xla_compute_type="host"` that no other host call encloses (HLO
    text). A host function that itself holds a jit is one host call, not two: jax 0.11's compute_on
    transform marks the jit's call inside it with the attribute as well (four marked calls for a
    forward and a derivative, where upstream's test of the same program without the inner jit
    counts two)."""
    calls: dict[str, list[tuple[str, bool]]] = {}  # computation -> (callee, host) for each call in it
    current = ""
    for line in hlo_text.splitlines():
        head = _COMPUTATION_RE.match(line)
        if head and not line.startswith((" ", "\t")):
            current = head.group(1)
            continue
        host = '_xla_compute_type="host"' in line
        calls.setdefault(current, []).extend((callee, host) for callee in _CALLED_RE.findall(line))
    todo = [c for sites in calls.values() for c, host in sites if host]
    inside = set(todo)  # every host call's callee and what it calls, transitively
    while todo:
        comp = todo.pop()
        for callee, _host in calls.get(comp, []):
            if callee not in inside:
                inside.add(callee)
                todo.append(callee)
    return [callee for comp, sites in calls.items() if comp not in inside for callee, host in sites if host]


def lines_mentioning(text: str, needle: str, limit: int = 5) -> list[str]:
    """A few IR lines containing needle (for observations: what the IR actually said)."""
    return [ln.strip()[:300] for ln in text.splitlines() if needle in ln][:limit]


def called_computation_parameter_counts(hlo_text: str) -> list[int]:
    """Parameter count of each computation reached through a `call(...)` with to_apply=%name."""
    counts = []
    for name in re.findall(r"\bcall\(.*?to_apply=%?([\w.\-]+)", hlo_text):
        m = re.search(rf"^%?{re.escape(name)}\s.*?\{{\s*$(.*?)^\}}", hlo_text, re.M | re.S)
        if m is not None:
            counts.append(len(set(_PARAM_RE.findall(m.group(1)))))
    return counts


_STABLEHLO_OP_RE = re.compile(r"=\s*\"?stablehlo\.([a-z_]+)\"?")


def stablehlo_ops_with_attribute(text: str, key: str) -> list[tuple[str, str | None]]:
    """(op name, value of frontend attribute `key` or None) for each StableHLO op line, in order.

    An invariant that holds per op ("every op of the region carries the stream, no op outside
    does") needs this; `has_frontend_attribute` only says the attribute appears somewhere.
    """
    out = []
    for line in text.splitlines():
        m = _STABLEHLO_OP_RE.search(line)
        if m is not None:
            values = frontend_attribute_values(line, key)
            out.append((m.group(1), values[0] if values else None))
    return out


def main_signature_attribute(stablehlo_text: str, key: str) -> tuple[list[str | None], list[str | None]]:
    """(per argument, per result) value of attribute `key` (`key = "v"`) on the public @main, None
    where an argument or result does not carry it: e.g. each output's `mhlo.memory_kind`."""
    m = re.search(r"func\.func public @main\((.*?)\)\s*->\s*\((.*?)\)\s*\{\s*$", stablehlo_text, re.S | re.M)
    if m is None:
        raise AssertionError("no public @main with results in the StableHLO text")

    def per_item(text: str, start: str) -> list[str | None]:
        items = re.split(start, text)[1:] if start else _split_top_level(text)
        out = []
        for item in items:
            v = re.search(rf'\b{re.escape(key)}\s*=\s*"([^"]*)"', item)
            out.append(v.group(1) if v else None)
        return out

    return per_item(m.group(1), r"%arg\d+\s*:"), per_item(m.group(2), "")


def _split_top_level(text: str) -> list[str]:
    """Comma-separated items of a result list, ignoring commas inside <>, {}, [], ()."""
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<{[(":
            depth += 1
        elif ch in ">}])":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    return items + ([cur] if cur.strip() else [])
