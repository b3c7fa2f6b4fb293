"""Bounded work (issue 31): known issues are matched through an index, not a scan per result."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from harness.judge.apply import apply_expectations  # noqa: E402
from harness.judge.expectations import CoverIndex, Expectation  # noqa: E402
from harness.judge.results import Case, CellResults  # noqa: E402

_ID_CHARS = st.sampled_from(list("ab/:[]-_.x"))


def _exp(i: int, tests: tuple[str, ...]) -> Expectation:
    return Expectation(id=f"k{i}", tests=tests, expect="fail", link="https://example.org", reason="r")


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(ids=st.lists(st.text(_ID_CHARS, max_size=10), min_size=1, max_size=8),
       patterns=st.lists(st.lists(st.text(_ID_CHARS, max_size=10), min_size=1, max_size=3), max_size=8))
def test_the_index_finds_exactly_what_covers_finds_in_file_order(ids, patterns):
    exps = [_exp(i, tuple(p)) for i, p in enumerate(patterns)]
    index = CoverIndex(exps)
    for nodeid in ids:
        assert index.covering(nodeid) == [e for e in exps if e.covers(nodeid)]


def test_100k_results_against_10k_known_issues_are_judged_in_seconds():
    ids = [f"suites/fam{i % 7}/test_mod{i % 50}.py::test_case{i % 997}[p{i}-x]" for i in range(100_000)]
    exps = [_exp(i, (f"suites/fam{i % 7}/test_mod{i % 50}.py::test_case{i}", f"suites/other/test_{i}.py"))
            for i in range(10_000)]
    cell = CellResults(path=Path("x.jsonl"), cell="big-cpu", device="cpu", pins={"jax": "0.6.0"}, status="complete",
                       cases={n: Case(n, "fail" if k % 3 else "pass", message="boom") for k, n in enumerate(ids)})
    t = time.monotonic()
    apply_expectations([cell], exps, api_ranges={})
    took = time.monotonic() - t
    assert took < 20, f"{took:.1f} s"  # a scan per result took minutes; the index takes a few seconds on 2 busy cores
    judged = {c.verdict for c in cell.cases.values()}
    assert "known-bug" in judged and "regression" in judged


def test_reading_an_input_reserves_what_its_size_needs_not_the_limit(tmp_path):
    import tracemalloc

    from harness.errors import UserError
    from harness.safeio import read_input

    small = tmp_path / "small.jsonl"
    small.write_bytes(b'{"a": 1}\n' * 10)
    tracemalloc.start()
    try:
        assert read_input(small, 1_000_000_000, "results") == small.read_bytes()
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"reading 90 bytes reserved {peak} bytes"
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 1000)
    assert len(read_input(exact, 1000, "results")) == 1000
    with pytest.raises(UserError, match="larger than"):
        read_input(exact, 999, "results")
