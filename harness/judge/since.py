"""'Since which release?': per case, the first bad and last good release along each version line of a report.

A cell's identity is every package it chose (its pins, its exactly pinned extras, its sources),
valued by what was installed. A version line is the cells of one main package (torch_xla, else
torchax, else jax) on one device, one cell per release, ordered by that release. Where one release
has several cells (xla29-cpu and xla29noflax-cpu: the same release with and without flax), the line
takes the one most like its neighbours and each other cell there is compared with it on its own
("variant" rows): a line never passes from one variant to another unnamed.

Every sentence names the cells it is about, and a step along a line that also moved something
besides the named package (and its pair: jaxlib with jax, torch X.Y.0 with torch_xla X.Y) says
what ("also moved: jax 0.6.2 -> 0.7.1, flax 0.11.2 -> none"). Along a line each case's raw outcome
is good (pass), bad (fail, error, crash, timeout) or unknown (skipped, env-error, incomplete,
missing); unknown releases are stepped over, like a bisection's skips, and named.
tests/test_since_truth.py checks every sentence against the per-cell outcomes it summarises.
"""

from __future__ import annotations

from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness.cells.releases import paired_pins

_BAD_RAW = {"fail", "error", "crash", "timeout"}
MAIN_PACKAGES = ("torch-xla", "torchax", "jax")
NONE = "none"  # how a package a cell does not install reads in "also moved"


def cell_identity(cell: dict[str, Any]) -> dict[str, str]:
    """Every package the cell chose (pins, exact extras, sources), at its installed version where known.

    report.json carries this as the cell's "identity"; older reports are read from pins and extras.
    """
    if isinstance(cell.get("identity"), dict):
        return {canonicalize_name(str(k)): str(v) for k, v in cell["identity"].items()}
    chosen: dict[str, str] = {canonicalize_name(str(k)): str(v) for k, v in (cell.get("pins") or {}).items()}
    for extra in cell.get("extras") or ():
        try:
            req = Requirement(str(extra))
        except InvalidRequirement:
            continue
        exact = [s.version for s in req.specifier if s.operator in ("==", "===")]
        chosen[canonicalize_name(req.name)] = exact[0] if exact else str(req.specifier) or "any"
    for pkg in cell.get("sources") or {}:
        chosen.setdefault(canonicalize_name(str(pkg)), "source")
    installed = {canonicalize_name(str(k)): str(v) for k, v in (cell.get("versions") or {}).items() if v}
    # a package built from a commit: its pin is the commit's version (sources.commit_version)
    from_commit = {canonicalize_name(str(k)) for k, s in (cell.get("sources") or {}).items()
                   if isinstance(s, dict) and s.get("sha")}
    return {k: v if k in from_commit else installed.get(k, v) for k, v in chosen.items()}


def _main_package(identity: dict[str, str]) -> str | None:
    return next((p for p in MAIN_PACKAGES if p in identity), None)


def _pair_names(package: str, version: str) -> set[str]:
    try:
        return set(paired_pins(package, version))
    except InvalidVersion:
        return {package}


def also_moved(package: str, a: dict[str, str], b: dict[str, str]) -> list[str]:
    """'pkg old -> new' for every package besides `package` that differs between identities a and b.

    The package's pair (jaxlib with jax, torch X.Y.0 with torch_xla X.Y) is part of the package
    when both cells hold it at the pair's version, as jaxlib is part of a jax that is named;
    anything else that differs is named.
    """
    pair_a = paired_pins(package, a[package]) if package in a else {}
    pair_b = paired_pins(package, b[package]) if package in b else {}
    out = []
    for pkg in sorted(set(a) | set(b)):
        if pkg == package or a.get(pkg) == b.get(pkg):
            continue
        if pkg in pair_a and pkg in pair_b and _same_release(a.get(pkg), pair_a[pkg]) and _same_release(b.get(pkg), pair_b[pkg]):
            continue
        if pkg == "jaxlib" and package != "jax" and a.get("jax") == a.get(pkg) and b.get("jax") == b.get(pkg):
            continue  # jaxlib moved as jax's own pair, and jax is named: "jax 0.6.2 -> 0.7.1" says both
        out.append(f"{pkg} {a.get(pkg, NONE)} -> {b.get(pkg, NONE)}")
    return out


def _same_release(installed: str | None, paired: str) -> bool:
    try:
        return installed is not None and Version(installed).release == Version(paired).release
    except InvalidVersion:
        return installed == paired


def _difference(a: dict[str, str], b: dict[str, str]) -> int:
    return sum(a.get(k) != b.get(k) for k in set(a) | set(b))


def version_lines(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Lines of >= 2 releases (one cell each, oldest first) and, where a release has several cells,
    one "variant" pair per extra cell (the line's cell at that release first)."""
    groups: dict[tuple[str, str], dict[Version, list[tuple[str, dict[str, str]]]]] = {}
    for cell in report["cells"]:
        ident = cell_identity(cell)
        pkg = _main_package(ident)
        if pkg is None:
            continue
        try:
            ver = Version(ident[pkg])
        except InvalidVersion:
            continue
        groups.setdefault((pkg, cell.get("device", "")), {}).setdefault(ver, []).append((cell["cell"], ident))
    lines = []
    for (pkg, device), by_version in groups.items():
        versions = sorted(by_version)
        if len(versions) < 2:
            continue
        picked: list[tuple[str, dict[str, str]]] = []
        for i, ver in enumerate(versions):
            options = sorted(by_version[ver], key=lambda c: c[0])
            # like the previous pick; the first release is compared with the next release's first cell
            ref = picked[-1][1] if picked else sorted(by_version[versions[i + 1]], key=lambda c: c[0])[0][1]
            picked.append(min(options, key=lambda c: (_difference(c[1], ref), c[0])))
        lines.append({"package": pkg, "device": device, "kind": "line", "versions": [str(v) for v in versions],
                      "cells": [n for n, _ in picked], "identities": [i for _, i in picked]})
        for ver, (name, ident) in zip(versions, picked):
            for other, other_ident in sorted(by_version[ver], key=lambda c: c[0]):
                if other != name:
                    lines.append({"package": pkg, "device": device, "kind": "variant", "versions": [str(ver)] * 2,
                                  "cells": [name, other], "identities": [ident, other_ident]})
    return sorted(lines, key=lambda ln: (ln["package"], ln["device"], ln["kind"], ln["cells"]))


def _state(result: dict[str, Any] | None) -> str:
    if result is None:
        return "unknown"
    raw = result.get("raw")
    return "good" if raw == "pass" else ("bad" if raw in _BAD_RAW else "unknown")


def _moved_note(package: str, idents: list[dict[str, str]] | None, i: int, j: int) -> str:
    if not idents:
        return ""
    moved = also_moved(package, idents[i], idents[j])
    return f"also moved: {', '.join(moved)}" if moved else ""


def summarize_case(states: list[tuple[str, str]], identities: list[dict[str, str]] | None = None,
                   package: str = "") -> dict[str, Any]:
    """first_bad / last_good / transitions / a sentence for one case along one line of (version, state).

    With the cells' identities, each step the sentence names says what else moved in it.
    """
    known = [i for i, (_v, s) in enumerate(states) if s != "unknown"]
    unknown = [v for v, s in states if s == "unknown"]
    out: dict[str, Any] = {"first_bad": None, "last_good": None, "transitions": [], "untested": unknown}
    if not known:
        out["summary"] = "no release along the line ran this case"
        return out
    steps = [(known[k - 1], known[k]) for k in range(1, len(known)) if states[known[k]][1] != states[known[k - 1]][1]]
    out["transitions"] = [{"from": states[a][0], "to": states[b][0], "becomes": states[b][1],
                           "also_moved": also_moved(package, identities[a], identities[b]) if identities else []}
                          for a, b in steps]
    first, last = states[known[0]], states[known[-1]]
    if not steps:
        word = "passes" if first[1] == "good" else "fails"
        out["summary"] = f"{word} in every release tested ({first[0]}..{last[0]})"
        if first[1] == "bad":
            out["first_bad"] = first[0]  # at least since the oldest tested: the line starts too late to say more
            out["summary"] += "; bad since at least the oldest"
    elif len(steps) == 1:
        a, b = steps[0]
        before, after = states[a][0], states[b][0]
        if states[b][1] == "bad":
            out.update(first_bad=after, last_good=before, summary=f"fails since {after} (last good {before})")
        else:
            out.update(first_good=after, last_bad=before, summary=f"fixed in {after} (last bad {before})")
        note = _moved_note(package, identities, a, b)
        if note:
            out["summary"] += f"; {note}"
    else:
        parts = []
        for a, b in steps:
            note = _moved_note(package, identities, a, b)
            parts.append(f"{'bad' if states[b][1] == 'bad' else 'good'} from {states[b][0]}" + (f" ({note})" if note else ""))
        out["summary"] = "flips: " + ", ".join(parts)
        bad_after = [states[b][0] for a, b in steps if states[b][1] == "bad"]
        out["first_bad"] = bad_after[-1] if last[1] == "bad" else None
        good_before = [states[a][0] for a, b in steps if states[b][1] == "bad"]
        out["last_good"] = good_before[-1] if last[1] == "bad" else last[0]
    if unknown:
        out["summary"] += f"; not tested: {', '.join(unknown)}"
    return out


def _variant_row(line: dict[str, Any], states: list[str]) -> dict[str, Any]:
    """Two cells at one release that differ in something else: which passes, which fails, and the difference."""
    (a, b), (ia, ib) = line["cells"], line["identities"]
    differ = [f"{k} {ia.get(k, NONE)} in {a}, {ib.get(k, NONE)} in {b}"
              for k in sorted(set(ia) | set(ib)) if ia.get(k) != ib.get(k)]
    word = {"good": "passes", "bad": "fails"}
    summary = (f"at {line['package']} {line['versions'][0]}: {word[states[0]]} in {a}, {word[states[1]]} in {b}; "
               f"they differ in {'; '.join(differ) or 'nothing recorded'}")
    return {"first_bad": None, "last_good": None, "transitions": [], "untested": [], "summary": summary}


def since_summary(report: dict[str, Any]) -> list[dict[str, Any]]:
    """For every version line and every case run along it: first bad / last good and a sentence.

    Variant pairs give a row only where their two cells disagree (good in one, bad in the other).
    """
    out = []
    for line in version_lines(report):
        for case in report["cases"]:
            results = case["results"]
            if not any(c in results for c in line["cells"]):
                continue
            states = [_state(results.get(c)) for c in line["cells"]]
            if line["kind"] == "variant":
                if set(states) != {"good", "bad"}:
                    continue
                summary = _variant_row(line, states)
            else:
                summary = summarize_case(list(zip(line["versions"], states)), line["identities"], line["package"])
            out.append({"case": case["id"], "package": line["package"], "device": line["device"], "kind": line["kind"],
                        "cells": line["cells"], "versions": line["versions"], "states": states, **summary})
    return out
