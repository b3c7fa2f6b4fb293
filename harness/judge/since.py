"""'Since which release?': per case, the first bad and last good release along each version line of a report.

A version line is a group of the report's cells that differ only in one moving package: cells
whose main package is torch_xla (else torchax, else jax) on the same device with the same other
pins, ordered by that package's version - a release sweep, or the jax053..jax0102 stacks of the
default matrix. Along a line each case's raw outcome is good (pass), bad (fail, error, crash,
timeout) or unknown (skipped, env-error, incomplete, missing); unknown releases are stepped over,
like a bisection's skips, and named.
"""

from __future__ import annotations

from typing import Any

from packaging.version import InvalidVersion, Version

_BAD_RAW = {"fail", "error", "crash", "timeout"}
# What moves with the main package (its pair and, for torch_xla/torchax cells, the jax of the era).
_MOVES = {"torch-xla": {"torch-xla", "torch", "jax", "jaxlib"}, "torchax": {"torchax", "jax", "jaxlib"},
          "jax": {"jax", "jaxlib"}}


def _main_package(pins: dict[str, str]) -> str | None:
    for pkg in ("torch-xla", "torchax", "jax"):
        if pkg in pins:
            return pkg
    return None


def version_lines(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Groups of >= 2 cells along one moving package, each ordered oldest first."""
    groups: dict[tuple, list[tuple[Version, str]]] = {}
    for cell in report["cells"]:
        pins = {k.replace("_", "-"): str(v) for k, v in (cell.get("pins") or {}).items()}
        pkg = _main_package(pins)
        if pkg is None:
            continue
        try:
            ver = Version(pins[pkg])
        except InvalidVersion:
            continue
        held = tuple(sorted((k, v) for k, v in pins.items() if k not in _MOVES[pkg]))
        groups.setdefault((pkg, cell.get("device", ""), held), []).append((ver, cell["cell"]))
    lines = []
    for (pkg, device, held), members in groups.items():
        members.sort(key=lambda m: m[0])
        kept, seen = [], set()
        for ver, name in members:  # two cells at one version (e.g. with/without flax): keep the first
            if ver not in seen:
                seen.add(ver)
                kept.append((str(ver), name))
        if len(kept) >= 2:
            lines.append({"package": pkg, "device": device, "held": dict(held),
                          "versions": [v for v, _ in kept], "cells": [n for _, n in kept]})
    return sorted(lines, key=lambda line: (line["package"], line["device"], line["cells"][0]))


def _state(result: dict[str, Any] | None) -> str:
    if result is None:
        return "unknown"
    raw = result.get("raw")
    return "good" if raw == "pass" else ("bad" if raw in _BAD_RAW else "unknown")


def summarize_case(states: list[tuple[str, str]]) -> dict[str, Any]:
    """first_bad / last_good / transitions / a sentence for one case along one line of (version, state)."""
    known = [(v, s) for v, s in states if s != "unknown"]
    unknown = [v for v, s in states if s == "unknown"]
    out: dict[str, Any] = {"first_bad": None, "last_good": None, "transitions": [], "untested": unknown}
    if not known:
        out["summary"] = "no release along the line ran this case"
        return out
    flips = [(known[i - 1][0], known[i][0], known[i][1]) for i in range(1, len(known)) if known[i][1] != known[i - 1][1]]
    out["transitions"] = [{"from": a, "to": b, "becomes": s} for a, b, s in flips]
    first, last = known[0], known[-1]
    if not flips:
        word = "passes" if first[1] == "good" else "fails"
        out["summary"] = f"{word} in every release tested ({first[0]}..{last[0]})"
        if first[1] == "bad":
            out["first_bad"] = first[0]  # at least since the oldest tested: the line starts too late to say more
            out["summary"] += "; bad since at least the oldest"
        return out
    if len(flips) == 1:
        before, after, becomes = flips[0]
        if becomes == "bad":
            out.update(first_bad=after, last_good=before, summary=f"fails since {after} (last good {before})")
        else:
            out.update(first_good=after, last_bad=before, summary=f"fixed in {after} (last bad {before})")
    else:
        out["summary"] = "flips: " + ", ".join(f"{'bad' if s == 'bad' else 'good'} from {b}" for _, b, s in flips)
        bad_after = [b for _, b, s in flips if s == "bad"]
        out["first_bad"] = bad_after[-1] if last[1] == "bad" else None
        good_before = [a for a, _, s in flips if s == "bad"]
        out["last_good"] = good_before[-1] if last[1] == "bad" else last[0]
    if unknown:
        out["summary"] += f"; not tested: {', '.join(unknown)}"
    return out


def since_summary(report: dict[str, Any]) -> list[dict[str, Any]]:
    """For every version line and every case run along it: first bad / last good and a sentence."""
    out = []
    for line in version_lines(report):
        for case in report["cases"]:
            results = case["results"]
            if not any(c in results for c in line["cells"]):
                continue
            states = [(v, _state(results.get(c))) for v, c in zip(line["versions"], line["cells"])]
            out.append({"case": case["id"], "package": line["package"], "device": line["device"],
                        "cells": line["cells"], "states": [s for _, s in states], **summarize_case(states)})
    return out
