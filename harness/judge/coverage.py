"""Coverage gaps: cases that ran in no cell of a run, and skips the matrix itself could fix.

A case that skips everywhere is a whole area nobody checks, however green the grid looks. Two
kinds are worth a maintainer's attention:
- never ran: the case was collected but skipped (or never finished) in every cell of the run;
  its skip reasons, with the cells that gave each, say what would make it run (a device, a
  release, a package);
- fixable skips: a case skipped in some cell only because that cell does not install a package
  (`require()`'s "not in cell: X"), which the matrix could add. A package some cell of the run
  pins (jax, torch, torch_xla, torchax) is what cells differ by, so its absence is by design
  (a jax-only cell has no torch) and not listed.
- uncalled APIs: an API with a recorded release range (matrices/apis/, the public interop surface
  the suites know) that ships in some cell of the run, yet no case in any such cell probed it:
  an entry point that can break without any case noticing.
All are computed from the report's raw outcomes and observations, so re-rendering a report
recomputes them.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from packaging.utils import canonicalize_name

from harness.judge.apis import OBSERVATION as APIS_OBSERVATION, ApiRange, default_api_ranges

# What harness.incell.compat.require() says when a package is missing (kept in step with it; the
# judge stage must not import incell's compat, which imports pytest).
NOT_IN_CELL = "not in cell"
_MISSING = re.compile(re.escape(NOT_IN_CELL) + r": ([A-Za-z0-9_.\-]+)")
# Raw outcomes under which a case did not check anything in that cell.
_DID_NOT_RUN = frozenset({"skip", "incomplete", "env-error"})


def _reasons(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each distinct skip reason once, with the cells that gave it (sorted, stable)."""
    by_reason: dict[str, list[str]] = {}
    for cell, r in results.items():
        reason = " ".join(str(r.get("message") or r.get("raw") or "no reason recorded").split())
        by_reason.setdefault(reason, []).append(cell)
    return [{"reason": reason, "cells": sorted(cells)} for reason, cells in sorted(by_reason.items())]


def _norm(package: str) -> str:
    return re.sub(r"[-_.]+", "_", package).lower()


def uncalled_apis(report: dict[str, Any], ranges: Mapping[str, ApiRange]) -> list[dict[str, Any]]:
    """APIs that ship in some cell of the run (by their range) but that no case there probed."""
    probed: dict[str, set[str]] = {}  # cell -> APIs some case recorded (present or absent)
    for case in report.get("cases") or []:
        for cell, r in (case.get("results") or {}).items():
            seen = ((r.get("observations") or {}).get(APIS_OBSERVATION)) or {}
            probed.setdefault(cell, set()).update(seen)
    out = []
    for api, rng in sorted(ranges.items()):
        shipping = []
        for c in report.get("cells") or []:
            versions = {canonicalize_name(k): v for k, v in (c.get("versions") or {}).items()}
            version = versions.get(rng.package)
            if version is not None and rng.ships_in(version) and c["cell"] in probed:
                shipping.append(c["cell"])
        if shipping and not any(api in probed[cell] for cell in shipping):
            out.append({"api": api, "package": rng.package, "shipped": str(rng.shipped), "cells": sorted(shipping)})
    return out


def coverage_gaps(report: dict[str, Any], ranges: Mapping[str, ApiRange] | None = None) -> dict[str, list[dict[str, Any]]]:
    """{"never_ran": [...], "fixable": [...]} for a report's cases (see the module docstring).

    A case with no result in any cell (a run of zero cells) is not a gap of the matrix: there is
    nothing to say about it. The whole-cell pseudo cases are not cases.
    """
    never_ran: list[dict[str, Any]] = []
    fixable: dict[str, dict[str, Any]] = {}  # one entry per missing package (reason): what to install
    axes = {_norm(p) for c in report.get("cells") or [] for p in (c.get("pins") or {})}
    for case in report.get("cases") or []:
        results = case.get("results") or {}
        if not results or str(case["id"]).startswith("("):
            continue
        raws = [r.get("raw") for r in results.values()]
        if "skip" in raws and all(raw in _DID_NOT_RUN for raw in raws):
            never_ran.append({"id": case["id"], "family": case.get("family", ""), "reasons": _reasons(results)})
        for cell, r in results.items():
            reason = " ".join(str(r.get("message") or "").split())
            missing = _MISSING.match(reason) if r.get("raw") == "skip" else None
            if missing and _norm(missing.group(1)) not in axes:
                entry = fixable.setdefault(reason, {"reason": reason, "cases": set(), "cells": set()})
                entry["cases"].add(case["id"])
                entry["cells"].add(cell)
    return {"never_ran": never_ran,
            "fixable": [{"reason": f["reason"], "cases": sorted(f["cases"]), "cells": sorted(f["cells"])}
                        for _, f in sorted(fixable.items())],
            "uncalled_apis": uncalled_apis(report, default_api_ranges() if ranges is None else ranges)}


def gap_headline(gaps: dict[str, list[dict[str, Any]]]) -> str | None:
    """One line for a summary ("1 case never ran anywhere in this matrix: ..."), or None."""
    never = gaps.get("never_ran") or []
    if not never:
        return None
    names = ", ".join(g["id"].rsplit("/", 1)[-1] for g in never[:3]) + (", ..." if len(never) > 3 else "")
    return f"{len(never)} case{'s' if len(never) != 1 else ''} never ran anywhere in this matrix: {names}"
