"""Is this run news? The one decision behind `harness run`'s exit status (with or without a report).

News is anything a maintainer must act on: a judged verdict in FAILING_VERDICTS in any case or any
case-less cell (regression, fixed, crash, timeout, env-error, incomplete - which includes a cell
with zero tests or with cases that never finished), or a results file that cannot be read at all.
It is decided from the results files as written, judged against the known issues, exactly as
`harness report` judges them, so `run --no-report` (each CI shard) and `report` never disagree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from harness.judge.outcomes import FAILING_VERDICTS


def news_lines(paths: Iterable[Path], expectations_path: Path | None = None) -> list[str]:
    """One line per piece of news in these results files (empty: nothing new, exit 0)."""
    from harness.judge.expectations import DEFAULT_PATH, load_expectations
    from harness.judge.apply import apply_expectations
    from harness.judge.results import read_many

    paths = list(paths)
    if not paths:
        return ["no cell ran (zero tests is never a pass)"]
    cells, errors = read_many(paths)
    apply_expectations(cells, load_expectations(expectations_path or DEFAULT_PATH))
    lines = list(errors)
    for cell in cells:
        bad = [c for c in cell.cases.values() if c.verdict in FAILING_VERDICTS]
        if bad:
            lines += [f"{cell.cell}: {c.verdict}: {c.nodeid}" for c in bad]
        elif cell.verdict in FAILING_VERDICTS or (not cell.cases and cell.verdict == "complete"):
            lines.append(f"{cell.cell}: {cell.verdict if cell.verdict != 'complete' else 'incomplete'}: {cell.reason}")
    return lines
