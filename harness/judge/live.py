"""The verdict of each case as a cell runs, for its progress lines: the same judge as the report's.

The runner (harness.run) sits below the judge in the flow, so it cannot import it: the CLI builds
this callable and hands it to `run_cell`, which calls it with each finished case and the versions
the cell reported. A run without one (a bisect probe) shows raw outcomes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from harness.judge.apis import default_api_ranges, load_api_ranges
from harness.judge.expectations import DEFAULT_PATH, applicable_expectations, load_expectations
from harness.judge.verdicts import judge_case

if TYPE_CHECKING:  # the runner defines what it calls; importing it for real would load the runner
    from harness.run.cellrun import CaseJudge


def case_judge(expectations: Path | None = None, apis: Path | None = None) -> CaseJudge:
    """judge(nodeid, raw, message, observations, versions, device) -> verdict, from the known issues
    (default: matrices/known_issues/) and API ranges (default: $SEAMS_APIS or matrices/apis/)."""
    path = expectations or DEFAULT_PATH
    known = load_expectations(path) if path.exists() else []
    ranges = load_api_ranges(apis) if apis else default_api_ranges()

    def judge(nodeid: str, raw: str, message: str | None, observations: Mapping[str, Any],
              versions: Mapping[str, str | None], device: str) -> str:
        found = applicable_expectations(known, nodeid, versions, device)
        return judge_case(raw, found, message, observations, versions, ranges)[0]

    return judge
