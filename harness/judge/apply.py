"""Apply known issues and API ranges to read results: raw outcomes stay facts, verdicts are recomputed each time."""

from __future__ import annotations

from typing import Mapping

from harness.incell.resultsfile import whole_suite
from harness.judge.apis import ApiDrift, ApiRange, default_api_ranges
from harness.judge.expectations import CoverIndex, Expectation, applying_expectations
from harness.judge.results import CellResults
from harness.judge.verdicts import judge, judge_case


def _exp_dict(exp: Expectation | ApiDrift | None) -> dict | None:
    if exp is None:
        return None
    return {"id": exp.id, "expect": exp.expect, "link": exp.link, "reason": exp.reason, "source": exp.source}


def apply_expectations(cells: list[CellResults], expectations: list[Expectation],
                       api_ranges: Mapping[str, ApiRange] | None = None) -> None:
    """Set each case's verdict (and each case-less cell's) from its raw outcome, the known issues
    and the API ranges (default: $SEAMS_APIS or matrices/apis/)."""
    ranges = default_api_ranges() if api_ranges is None else api_ranges
    for cell in cells:
        versions = cell.versions()
        # Versions and device are the cell's: decide once which known issues apply here, then
        # only match ids (10k cases x every known issue's specifiers was a tenth of a report).
        here = applying_expectations(expectations, versions, cell.device)
        index = CoverIndex(here)  # a lookup per case, not a scan of every known issue
        for case in cell.cases.values():
            found = index.covering(case.nodeid)
            v, exp = judge_case(case.raw, found, case.message, case.observations, versions, ranges)
            case.verdict, case.expectation = v, _exp_dict(exp)
        if _full_run(cell):
            cell.stale = stale_expectations(here, cell.collected_ids or [])
        if cell.status == "env-error":
            # An env that cannot be built is a known bug if an issue says exactly that for this cell.
            found = [e for e in here if e.expect == "env-error"]
            v, exp = judge("env-error", found, cell.reason)
            cell.verdict, cell.expectation = v, _exp_dict(exp)
        elif cell.status == "skipped":
            cell.verdict = "skipped"
        elif cell.status == "incomplete":
            cell.verdict = "incomplete"
        else:
            cell.verdict = "complete"


def _full_run(cell: CellResults) -> bool:
    """Whether the cell ran the whole suite: only then does a known issue that covers nothing mean
    it went stale (a run narrowed by -k, -m or node ids simply did not collect its tests)."""
    sel = cell.selection
    if sel is None or cell.collected_ids is None:
        return False  # results from before the plugin recorded its selection: keep what they say
    return whole_suite(sel)


def stale_expectations(applying: list[Expectation], collected: list[str]) -> list[dict]:
    """Of the known issues that apply to a cell's versions and device, those covering no collected case."""
    index = CoverIndex(applying)
    used = {id(e) for n in collected for e in index.covering(n)}
    return [{"id": e.id, "source": str(e.source), "tests": list(e.tests)} for e in applying if id(e) not in used]
