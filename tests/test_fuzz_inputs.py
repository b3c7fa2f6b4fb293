"""Fuzz: generated YAML and JSON-lines fed to validate, matrix, report, diff and history end in exit 0, 1 or 2,
never a traceback or an internal error, and a rejection is exactly one line on stderr.

The generators build near-valid documents (the real keys and record types, wrong types and shapes
mixed in) and then damage some of them (cut short, stray bytes), so the examples reach deep into
the validators rather than stopping at the first syntax error. Calls are in-process for speed;
a few go through real processes. Counts of tried / rejected inputs are printed with `-s`.
"""

from __future__ import annotations

import collections
import functools
import os
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from harness.cli import main  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
STATS: collections.Counter = collections.Counter()
FUZZ = settings(max_examples=80, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

MATRIX_KEYS = ("schema", "description", "defaults", "stacks", "devices", "exclude", "include", "pins", "extras",
               "env", "timeout_s", "index_url", "find_links", "runs_on", "name", "device", "stack", "jax", "jaxlib",
               "torch", "torch_xla")
ISSUE_KEYS = ("issues", "id", "tests", "when", "devices", "expect", "match", "link", "reason", "jax", "torch-xla")
WORDS = ["cpu", "tpu", "gpu", "fpga", "0.6.0", "2.9.0", ">=0.6", "absent", "fail", "crash", "pass", "a-cpu",
         "jax060-cpu", "https://github.com/x/y/issues/1", "none filed", "suites/", "(a|a)*$", "[", "-1", "",
         "a\nb", "x\x00y", "\x1b[31m", "../x", "$(id)"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.sampled_from(WORDS),
                    st.text(max_size=12), st.floats(allow_nan=True, allow_infinity=True))


@functools.lru_cache(maxsize=None)
def _tree(keys: tuple[str, ...]) -> st.SearchStrategy:
    """Nested lists and mappings of scalars, keys mostly the real ones (built once: strategies are costly)."""
    return st.recursive(scalars, lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(keys), st.text(max_size=6)), kids, max_size=4)), max_leaves=10)


def _damage(data: bytes, draw) -> bytes:
    how = draw(st.sampled_from(["none", "none", "cut", "bytes"]))
    if how == "cut" and data:
        return data[:draw(st.integers(0, len(data)))]
    if how == "bytes":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    return data


@st.composite
def yaml_docs(draw, keys: tuple[str, ...], top: str | None) -> bytes:
    doc = draw(_tree(keys))
    if top is not None and draw(st.booleans()):
        doc = {top: doc}
    try:
        text = yaml.safe_dump(doc, allow_unicode=True)
    except yaml.YAMLError:
        text = str(doc)
    return _damage(text.encode("utf-8", "surrogatepass"), draw)


RECORD_TYPES = ["CellStart", "RunInfo", "Collected", "TestStart", "TestReport", "TestCrash", "TestTimeout",
                "EnvError", "CellSkipped", "StaleExpectation", "CellEnd", "Bogus"]
RECORD_KEYS = ("schema_version", "cell", "device", "pins", "versions", "count", "nodeid", "when", "outcome",
               "duration", "user_properties", "signal", "returncode", "timeout_s", "reason", "id", "complete",
               "status", "duration_s", "raw", "message", "observations")


@st.composite
def records(draw) -> dict:
    rec = {"$report_type": draw(st.sampled_from(RECORD_TYPES))}
    good = {"schema_version": 1, "cell": "a-cpu", "device": "cpu", "pins": {"jax": "0.6.0"}, "versions": {"jax": "0.6.0"},
            "count": 1, "nodeid": "suites/x.py::t", "when": "call", "outcome": "failed", "duration": 0.1,
            "user_properties": [["seams", {"raw": "fail", "message": "m", "observations": {}}]], "returncode": -6,
            "timeout_s": 5, "reason": "r", "id": "x", "complete": True, "status": "complete"}
    for key in draw(st.lists(st.sampled_from(RECORD_KEYS), max_size=6)):
        rec[key] = good.get(key) if draw(st.booleans()) and key in good else draw(_tree(RECORD_KEYS))
    return rec


@st.composite
def results_files(draw) -> bytes:
    start = {"$report_type": "CellStart", "schema_version": 1, "cell": "a-cpu", "device": "cpu", "pins": {"jax": "0.6.0"}}
    recs = ([start] if draw(st.integers(0, 9)) else []) + draw(st.lists(records(), max_size=6))
    if draw(st.booleans()):
        recs.append({"$report_type": "CellEnd", "complete": True, "status": "complete"})
    lines = [json.dumps(r, default=str).encode("utf-8", "surrogatepass") for r in recs]
    return _damage(b"\n".join(lines) + b"\n", draw)


def _paths(node, prefix=()):
    """Every path into a JSON document (for mutations)."""
    yield prefix
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        yield from _paths(v, prefix + (k,))


@st.composite
def report_docs(draw) -> bytes:
    """A well-formed report.json (random cells, cases, verdicts, numerics); a third get mutated or damaged."""
    from harness.judge.outcomes import VERDICTS

    cells = draw(st.lists(st.sampled_from(["a-cpu", "b-cpu", "c|<!---tpu"]), min_size=1, max_size=3, unique=True))
    numerics = st.fixed_dictionaries({"numerics": st.fixed_dictionaries({"max_abs_err": scalars, "atol": scalars})})
    result = st.fixed_dictionaries({"raw": st.sampled_from(["pass", "fail", "crash", "skip", "incomplete"]),
                                    "verdict": st.sampled_from(VERDICTS)},
                                   optional={"observations": st.one_of(st.none(), numerics), "message": st.one_of(st.none(), st.text(max_size=20)),
                                             "expectation": st.just({"id": "x", "link": "none filed", "reason": "r"})})
    case_ids = st.sampled_from(["suites/x.py::t", "suites/y.py::u[a b]", "a\x1b|`<!--"])
    cases = draw(st.dictionaries(case_ids, st.dictionaries(st.sampled_from(cells), result, max_size=len(cells)), max_size=3))
    doc = {"schema_version": 1, "generated_at": draw(st.sampled_from(["2026-11-22T00:00:00+00:00", "2026-11-23T00:00:00+00:00"])),
           "counts": {}, "errors": [],
           "cells": [{"cell": c, "device": "cpu", "status": "complete", "reason": "", "verdict": "complete",
                      "pins": {"jax": "0.6.0"}, "install_line": "pip install jax==0.6.0", "versions": {"jax": "0.6.0"},
                      "devices": {}, "python": "3.11", "platform": "linux", "run_env": {}, "counts": {},
                      "stale_expectations": [], "expectation": None} for c in cells],
           "cases": [{"id": i, "family": "x", "results": r} for i, r in cases.items()]}
    broken = draw(st.integers(0, 2)) == 0
    if broken:
        for _ in range(draw(st.integers(1, 3))):
            path = draw(st.sampled_from(list(_paths(doc))[1:]))
            parent = doc
            for k in path[:-1]:
                parent = parent[k]
            if isinstance(parent, dict) and draw(st.booleans()):
                del parent[path[-1]]
            else:
                parent[path[-1]] = draw(_tree(("id", "cell", "verdict", "raw")))
    data = json.dumps(doc, default=str).encode("utf-8", "surrogatepass")
    return _damage(data, draw) if broken else data


def _check(command: str, rc: int, err: str) -> None:
    STATS[f"{command} tried"] += 1
    STATS[f"{command} exit {rc}"] += 1
    assert rc in (0, 1, 2), (rc, err[-3000:])
    assert "Traceback" not in err and "internal error" not in err, err[-3000:]
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), err[-3000:]


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


@FUZZ
@given(data=yaml_docs(MATRIX_KEYS, "include"))
def test_fuzz_matrix_yaml(tmp_path, capsys, data):
    path = _write(tmp_path, "m.yaml", data)
    for argv in (["validate", str(path)], ["matrix", "--matrix", str(path), "--format", "json"]):
        rc = main(argv)
        _check(argv[0], rc, capsys.readouterr().err)


@FUZZ
@given(data=yaml_docs(ISSUE_KEYS, "issues"))
def test_fuzz_known_issues_yaml(tmp_path, capsys, data):
    path = _write(tmp_path, "known.yaml", b"issues:\n" + data if data[:1] == b"-" else data)
    rc = main(["validate", str(path)])
    _check("validate", rc, capsys.readouterr().err)


@FUZZ
@given(data=results_files())
def test_fuzz_results_jsonl(tmp_path, capsys, data):
    path = _write(tmp_path, "a-cpu.jsonl", data)
    rc = main(["report", str(path), "--out", str(tmp_path / "out")])
    _check("report", rc, capsys.readouterr().err)


@FUZZ
@given(old=report_docs(), new=report_docs())
def test_fuzz_diff(tmp_path, capsys, old, new):
    a, b = _write(tmp_path, "old.json", old), _write(tmp_path, "new.json", new)
    for argv in (["diff", str(a), str(b), "--markdown", str(tmp_path / "d.md")],
                 ["history", str(a), str(b), "--out", str(tmp_path / "h")]):  # history re-renders the html too
        rc = main(argv)
        _check(argv[0], rc, capsys.readouterr().err)


@settings(max_examples=3, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=results_files(), doc=yaml_docs(MATRIX_KEYS, "include"))
def test_fuzz_in_real_processes(tmp_path, data, doc):
    results, matrix = _write(tmp_path, "a-cpu.jsonl", data), _write(tmp_path, "m.yaml", doc)
    for argv in (["report", str(results), "--out", str(tmp_path / "out")], ["validate", str(matrix)]):
        proc = subprocess.run([sys.executable, "-m", "harness", *argv], cwd=REPO, capture_output=True, text=True, timeout=120)
        _check(argv[0] + " (process)", proc.returncode, proc.stderr)


@pytest.fixture(scope="module", autouse=True)
def _print_counts():
    yield
    if STATS:
        print("\nfuzz inputs: " + ", ".join(f"{k}: {v}" for k, v in sorted(STATS.items())))


RECORD = json.dumps({"$report_type": "TestStart", "nodeid": "suites/x/test_a.py::test_a"}).encode()


@FUZZ
@given(chunks=st.lists(st.one_of(st.binary(max_size=200), st.just(RECORD + b"\n"), st.just(b"\n"),
                                 st.just(RECORD[:17]), st.just(b'{"$report_type": 5}\n')), max_size=12))
def test_fuzz_the_results_stream(tmp_path, chunks):
    """The pipe from pytest is outside input too: whatever bytes come, the file gets whole records only."""
    from harness.run.stream import ResultsStream

    path = tmp_path / "r.jsonl"
    path.write_bytes(b'{"$report_type": "CellStart"}\n')
    stream = ResultsStream(path)
    w = stream.open_pipe()
    got = []
    for chunk in chunks:
        os.write(w, chunk)
        got += stream.pump()
    os.close(w)
    got += stream.close_pipe()
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    records = [json.loads(ln) for ln in lines[:-1]]  # every line is JSON
    assert all(isinstance(r, dict) and isinstance(r.get("$report_type"), str) for r in records)
    assert records[1:] == got, "what the runner saw is what the file holds"
    STATS["stream tried"] += 1


CLI_WORDS = ["report", "diff", "validate", "matrix", "history", "--out", "--matrix", "--format", "--cell",
             "--expectations", "--markdown", "--last", "json", "table", "names", "tox", "github", "-1", "0", "",
             "x\x00y", "$(id)", "a-cpu", "jax060-cpu", "--", "-k", "/dev/null", "/nonexistent", ".", "--help"]


@FUZZ
@given(argv=st.lists(st.sampled_from(CLI_WORDS), min_size=1, max_size=7))
def test_fuzz_the_command_line(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse: usage errors (one line, 2) and --help (0)
        rc = exc.code if isinstance(exc.code, int) else 2
    _check("cli", rc, capsys.readouterr().err)


API_KEYS = ("apis", "api", "package", "shipped", "evidence", "link", "jax", "torch-xla", "default", "defaults")


@FUZZ
@given(data=yaml_docs(API_KEYS, "apis"))
def test_fuzz_api_ranges_yaml(tmp_path, capsys, data):
    path = _write(tmp_path, "apis.yaml", b"apis:\n" + data if data[:1] == b"-" else data)
    rc = main(["validate", str(path)])
    _check("validate apis", rc, capsys.readouterr().err)
