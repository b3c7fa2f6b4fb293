"""Every "since", "fixed in", "flips" and variant sentence of a report is true of its per-cell outcomes.

Hypothesis generates matrices the way the default one is shaped and worse: several cells per
release (with and without flax), cells that differ in two packages, torch_xla cells whose jax
moves too, skipped cells in between. The report is built the real way (CellResults ->
build_report -> since_summary -> report.md); each sentence is then parsed and checked against the
raw outcomes and the cells' identities, with an independent reading of what "also moved" must name.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.judge.results import Case, CellResults
from harness.judge.since import since_summary, version_lines
from harness.report.markdown import render_since_markdown
from harness.report.model import build_report

GOOD, BAD = {"pass"}, {"fail", "error", "crash", "timeout"}
RAWS = ["pass", "fail", "error", "crash", "timeout", "skip"]
JAX = ["0.5.3", "0.6.0", "0.7.1", "0.10.2"]
XLA = ["2.6.0", "2.7.0", "2.8.1", "2.9.0"]


@st.composite
def cells(draw) -> list[dict]:
    """Cell specs: a main package release plus optional extras, some sharing a release."""
    out = []
    for i in range(draw(st.integers(2, 7))):
        if draw(st.booleans()):
            xla = draw(st.sampled_from(XLA))
            torch = draw(st.sampled_from([xla.rsplit(".", 1)[0] + ".0", "2.9.0"]))  # the pair, or not
            pins = {"torch": torch, "torch_xla": xla, "jax": draw(st.sampled_from(JAX))}
            if draw(st.booleans()):
                pins["jaxlib"] = draw(st.sampled_from([pins["jax"], "0.5.3"]))
        else:
            jax = draw(st.sampled_from(JAX))
            pins = {"jax": jax}
            if draw(st.booleans()):
                pins["jaxlib"] = draw(st.sampled_from([jax, jax, "0.5.3"]))
        extras = []
        if draw(st.booleans()):
            extras.append(f"flax=={draw(st.sampled_from(['0.11.2', '0.12.0']))}")
        if draw(st.booleans()):
            extras.append("optax==0.2.8")
        out.append({"name": f"c{i}", "pins": pins, "extras": extras})
    return out


def _build(specs: list[dict], outcomes: list[list[str]]) -> dict:
    results = []
    for spec, raws in zip(specs, outcomes):
        cases = {f"case{k}": Case(f"case{k}", raw, verdict="ok") for k, raw in enumerate(raws) if raw != "absent"}
        versions = {**spec["pins"], **dict(e.split("==") for e in spec["extras"])}
        results.append(CellResults(path=Path(f"{spec['name']}.jsonl"), cell=spec["name"], device="cpu",
                                   pins=dict(spec["pins"]), extras=list(spec["extras"]),
                                   run_info={"versions": versions}, status="complete", cases=cases))
    return build_report(results, [], "none")


def _identity(cell: dict) -> dict[str, str]:
    """What the cell chose, read independently of harness.judge.since: pins and extras, by name."""
    out = {k.replace("_", "-"): v for k, v in cell["pins"].items()}
    out.update(e.split("==") for e in cell["extras"])
    return out


def _pair_ok(package: str, name: str, version: str, a: dict, b: dict) -> bool:
    """Whether `name` moving between a and b is the named package's own pair (not something else)."""
    if package == "jax" and name == "jaxlib":
        return a.get("jaxlib") == a["jax"] and b.get("jaxlib") == b["jax"]
    if package == "torch-xla" and name == "torch":
        return all(x.get("torch") == ".".join(x["torch-xla"].split(".")[:2]) + ".0" for x in (a, b))
    return False


def _moved(package: str, a: dict, b: dict) -> set[str]:
    moved = {k for k in set(a) | set(b) if k != package and a.get(k) != b.get(k) and not _pair_ok(package, k, "", a, b)}
    if "jax" in moved and all(x.get("jaxlib") == x.get("jax") for x in (a, b)):
        moved.discard("jaxlib")  # jax named: its own jaxlib goes with it
    return {f"{k} {a.get(k, 'none')} -> {b.get(k, 'none')}" for k in moved}


def _named_moves(text: str) -> set[str]:
    m = re.search(r"also moved: (.*?)(?:\)|;|$)", text)
    return set(m.group(1).split(", ")) if m else set()


def _check_row(row: dict, report: dict, identity=None) -> None:
    by_name = {c["cell"]: c for c in report["cells"]}
    case = next(c for c in report["cases"] if c["id"] == row["case"])
    raw = {c: (case["results"].get(c) or {}).get("raw") for c in row["cells"]}
    state = {c: "good" if raw[c] in GOOD else "bad" if raw[c] in BAD else "unknown" for c in row["cells"]}
    ident = {c: (identity or _identity)(by_name[c]) for c in row["cells"]}
    pkg, text = row["package"], row["summary"]
    for v, c in zip(row["versions"], row["cells"]):
        assert ident[c][pkg] == v, (c, v, pkg)
    if row["kind"] == "variant":
        a, b = row["cells"]
        m = re.fullmatch(rf"at {pkg} \S+: (passes|fails) in {a}, (passes|fails) in {b}; they differ in (.*)", text)
        assert m, text
        assert [state[a], state[b]] == [{"passes": "good", "fails": "bad"}[w] for w in m.group(1, 2)]
        differ = {k for k in set(ident[a]) | set(ident[b]) if ident[a].get(k) != ident[b].get(k)}
        named = set() if m.group(3) == "nothing recorded" else {part.split(" ", 1)[0] for part in m.group(3).split("; ")}
        assert named == differ, text
        return
    assert len(set(row["versions"])) == len(row["versions"]), "one cell per release along a line"
    known = [(v, c) for v, c in zip(row["versions"], row["cells"]) if state[c] != "unknown"]
    untested = [v for v, c in zip(row["versions"], row["cells"]) if state[c] == "unknown"]
    if untested and known:
        assert text.endswith(f"; not tested: {', '.join(untested)}"), text
    else:
        assert "not tested" not in text
    steps = [(known[i - 1], known[i]) for i in range(1, len(known)) if state[known[i][1]] != state[known[i - 1][1]]]
    if m := re.match(r"(passes|fails) in every release tested \((\S+)\.\.(\S+)\)", text):
        want = "good" if m.group(1) == "passes" else "bad"
        assert all(state[c] == want for _, c in known) and (m.group(2), m.group(3)) == (known[0][0], known[-1][0])
    elif m := re.match(r"(fails since|fixed in) (\S+) \(last (?:good|bad) (\S+)\)", text):
        assert len(steps) == 1, text
        (v0, c0), (v1, c1) = steps[0]
        assert (m.group(2), m.group(3)) == (v1, v0)
        assert state[c1] == ("bad" if m.group(1) == "fails since" else "good")
        assert _named_moves(text) == _moved(pkg, ident[c0], ident[c1]), text
    elif text.startswith("flips: "):
        parts = re.findall(r"(bad|good) from (\S+?)(?: \(also moved: ([^)]*)\))?(?:,|;|$)", text[len("flips: "):])
        assert len(parts) == len(steps) >= 2, text
        for (word, ver, moved), ((_v0, c0), (v1, c1)) in zip(parts, steps):
            assert (word, ver) == (state[c1], v1)
            assert (set(moved.split(", ")) if moved else set()) == _moved(pkg, ident[c0], ident[c1]), text
    else:
        assert text.startswith("no release along the line ran this case") and not known, text
    # the table's "first bad" / "last good" columns name cells that were bad / good there
    cell_at = dict(zip(row["versions"], row["cells"]))
    if row["first_bad"] and known:
        assert state[cell_at[row["first_bad"]]] == "bad"
    if row["last_good"]:
        assert state[cell_at[row["last_good"]]] == "good"


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_every_since_sentence_is_true_of_the_per_cell_outcomes(data):
    specs = data.draw(cells())
    n_cases = data.draw(st.integers(1, 4))
    outcomes = [data.draw(st.lists(st.sampled_from(RAWS + ["absent"]), min_size=n_cases, max_size=n_cases))
                for _ in specs]
    report = _build(specs, outcomes)
    rows = since_summary(report)
    for row in rows:
        _check_row(row, report)
    # no cell is dropped from its group: each is on its release line or in a variant pair
    groups: dict[str, set[str]] = {}
    for c in report["cells"]:
        main = "torch-xla" if "torch-xla" in c["identity"] else "jax"
        groups.setdefault(main, set()).add(c["identity"][main])
    on_lines = {(ln["package"], c) for ln in version_lines(report) for c in ln["cells"]}
    for c in report["cells"]:
        main = "torch-xla" if "torch-xla" in c["identity"] else "jax"
        assert len(groups[main]) < 2 or (main, c["cell"]) in on_lines, c["cell"]
    md = render_since_markdown(rows)
    for row in rows:
        if row["first_bad"]:
            cell = dict(zip(row["versions"], row["cells"]))[row["first_bad"]]
            assert f"{row['first_bad']} ({cell})" in md


def test_the_default_matrix_shape_names_flax_and_keeps_xla29_on_its_line():
    """The issue's case: xla29-cpu passes, xla29noflax-cpu fails; the line must not end at the flax-less cell."""
    specs = [{"name": "xla28-cpu", "pins": {"torch": "2.8.0", "torch_xla": "2.8.1", "jax": "0.6.2"},
              "extras": ["flax==0.11.2", "optax==0.2.8"]},
             {"name": "xla29-cpu", "pins": {"torch": "2.9.0", "torch_xla": "2.9.0", "jax": "0.7.1"},
              "extras": ["flax==0.12.0", "optax==0.2.8"]},
             {"name": "xla29noflax-cpu", "pins": {"torch": "2.9.0", "torch_xla": "2.9.0", "jax": "0.7.1"}, "extras": []}]
    report = _build(specs, [["pass"], ["pass"], ["fail"]])
    rows = since_summary(report)
    assert [r["kind"] for r in rows] == ["line", "variant"]
    line, variant = rows
    assert line["cells"] == ["xla28-cpu", "xla29-cpu"] and line["summary"].startswith("passes in every release")
    assert variant["summary"] == ("at torch-xla 2.9.0: passes in xla29-cpu, fails in xla29noflax-cpu; they differ in "
                                  "flax 0.12.0 in xla29-cpu, none in xla29noflax-cpu; "
                                  "optax 0.2.8 in xla29-cpu, none in xla29noflax-cpu")
    report = _build(specs, [["pass"], ["fail"], ["fail"]])
    line = since_summary(report)[0]
    assert line["summary"] == "fails since 2.9.0 (last good 2.8.1); also moved: flax 0.11.2 -> 0.12.0, jax 0.6.2 -> 0.7.1"


def test_a_real_reports_since_sentences_are_true():
    """SEAMS_SINCE_REPORT=DIR/report.json checks a real run's report the same way (e.g. the main job's:
    393 rows, none false, on 2026-11-24); without it, the report this test builds from the fixtures'
    results files does."""
    import json
    import os

    path = os.environ.get("SEAMS_SINCE_REPORT")
    if path:
        report = json.loads(Path(path).read_text())
    else:
        report = _build([{"name": "jax053-cpu", "pins": {"jax": "0.5.3", "jaxlib": "0.5.3"}, "extras": []},
                         {"name": "jax072-cpu", "pins": {"jax": "0.7.2", "jaxlib": "0.7.2"}, "extras": ["flatbuffers==25.2.10"]}],
                        [["pass", "fail"], ["fail", "fail"]])
        report["since"] = since_summary(report)
    assert report["since"]
    for row in report["since"]:
        by_name = {c["cell"]: c for c in report["cells"]}
        assert set(row["cells"]) <= set(by_name)
        _check_row(row, report, identity=lambda c: c["identity"])
