"""Release sweeps from a local PEP 503 index, and the 'since which release' summary over version lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.judge.since import since_summary, summarize_case, version_lines
from harness.report.markdown import render_since_markdown
from harness.cells.sweep import cell_stem, from_spec, load_sweep

REPO = Path(__file__).resolve().parent.parent


def _index(root: Path, packages: dict[str, list[str]]) -> str:
    for pkg, versions in packages.items():
        folder = root / "simple" / pkg
        folder.mkdir(parents=True)
        for v in versions:
            (folder / f"{pkg.replace('-', '_')}-{v}-py3-none-any.whl").write_bytes(b"")
    return (root / "simple").as_uri()


@pytest.fixture
def index(tmp_path):
    return _index(tmp_path, {
        "jax": ["0.4.38", "0.5.0", "0.5.3", "0.6.0", "0.6.1", "0.7.0.dev20250601"],
        "jaxlib": ["0.4.38", "0.5.0", "0.5.3", "0.6.0", "0.7.0.dev20250601"],  # no jaxlib 0.6.1
        "torch-xla": ["2.6.0", "2.7.0", "2.8.0", "2.8.1"],
    })


def test_cell_names_are_what_users_type():
    assert cell_stem("jax", "0.4.38") == "jax0438"
    assert cell_stem("jax", "0.10.2") == "jax0102"
    assert cell_stem("torch_xla", "2.7.0") == "xla27"
    assert cell_stem("torch-xla", "2.8.1") == "xla281"
    assert cell_stem("torchax", "0.0.13") == "torchax0013"


def test_jax_sweep_moves_jaxlib_and_skips_releases_without_one(index):
    m = from_spec("jax>=0.5", index_url=index)
    assert m.names() == ["jax050-cpu", "jax053-cpu", "jax060-cpu"]
    cell = m.cell("jax060-cpu")
    assert cell.pins == {"jax": "0.6.0", "jaxlib": "0.6.0"}
    assert "XLA_FLAGS" in cell.env  # the default matrix's settings carry over


def test_pre_adds_nightlies(index):
    assert "jax070dev20250601-cpu" in from_spec("jax>=0.6", index_url=index, pre=True).names()


def test_torch_xla_sweep_pairs_torch_and_holds_pins(index):
    m = from_spec("torch_xla>=2.7", held={"jax": "0.6.2"}, index_url=index)
    assert m.names() == ["xla27-cpu", "xla28-cpu", "xla281-cpu"]
    assert m.cell("xla281-cpu").pins == {"jax": "0.6.2", "jaxlib": "0.6.2", "torch-xla": "2.8.1", "torch": "2.8.0"}


def test_sweep_file_with_rules_and_line_numbers(index, tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(f"""schema: 1
defaults: {{device: cpu, index_url: "{index}"}}
sweeps:
  - package: torch_xla
    versions: ">=2.7"
    with:
      - {{versions: "~=2.8.0", pins: {{jax: 0.6.2}}, extras: ["flax==0.11.2"]}}
""")
    m = load_sweep(f)
    assert m.cell("xla27-cpu").extras == ()
    assert m.cell("xla281-cpu").extras == ("flax==0.11.2",) and m.cell("xla281-cpu").pins["jax"] == "0.6.2"
    f.write_text(f.read_text().replace('versions: ">=2.7"', 'versions: "=>2.7"'))
    with pytest.raises(UserError, match=r"s\.yaml:5: versions: '=>2.7' is not a PEP 440 specifier"):
        load_sweep(f)


@pytest.mark.parametrize("spec, message", [
    ("jax>=9", "no jax release on the index matches"),
    ("jax[cuda]>=0.5", "only a package name and version specifiers"),
    ("jax>=>", "write PACKAGE SPECIFIERS"),
])
def test_bad_sweeps_are_one_line(index, spec, message):
    with pytest.raises(UserError, match=message.replace("[", r"\[")):
        from_spec(spec, index_url=index)


def test_cli_lists_a_sweep_and_rejects_bad_input(index):
    run = lambda *a: subprocess.run([sys.executable, "-m", "harness", "matrix", *a], cwd=REPO,  # noqa: E731
                                    capture_output=True, text=True)
    ok = run("--sweep", "jax>=0.5", "--index-url", index, "--format", "names")
    assert ok.returncode == 0 and ok.stdout.split() == ["jax050-cpu", "jax053-cpu", "jax060-cpu"]
    bad = run("--sweep", "jax>=0.5", "--index-url", index, "--with", "torch")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def _report(cells: dict[str, dict[str, str]], results: dict[str, dict[str, str]]) -> dict:
    return {"cells": [{"cell": n, "device": "cpu", "pins": p} for n, p in cells.items()],
            "cases": [{"id": case, "results": {c: {"raw": raw} for c, raw in r.items()}}
                      for case, r in results.items()]}


JAX_CELLS = {f"jax{v.replace('.', '')}-cpu": {"jax": v, "jaxlib": v} for v in ("0.5.3", "0.6.0", "0.7.2", "0.10.2")}


def test_version_lines_group_cells_moving_one_package():
    cells = {**JAX_CELLS, "xla27-cpu": {"torch-xla": "2.7.0", "torch": "2.7.0", "jax": "0.5.3"},
             "xla29-cpu": {"torch-xla": "2.9.0", "torch": "2.9.0", "jax": "0.7.1", "flax": "0.12.0"},
             "xla29noflax-cpu": {"torch-xla": "2.9.0", "torch": "2.9.0", "jax": "0.7.1"},
             "torchax0013-cpu": {"torchax": "0.0.13", "torch": "2.9.0", "jax": "0.7.2"}}
    found = version_lines(_report(cells, {}))
    lines = {ln["package"]: ln["cells"] for ln in found if ln["kind"] == "line"}
    assert lines == {"jax": ["jax053-cpu", "jax060-cpu", "jax072-cpu", "jax0102-cpu"],
                     "torch-xla": ["xla27-cpu", "xla29noflax-cpu"]}  # a lone torchax cell is no line
    # the release's other cell is compared with the line's cell at that release, not dropped
    assert [ln["cells"] for ln in found if ln["kind"] == "variant"] == [["xla29noflax-cpu", "xla29-cpu"]]


def test_first_bad_last_good_along_the_jax_line():
    results = {"base": {"jax053-cpu": "pass", "jax060-cpu": "fail", "jax072-cpu": "fail", "jax0102-cpu": "skip"},
               "fixed": {"jax053-cpu": "fail", "jax060-cpu": "pass", "jax072-cpu": "pass", "jax0102-cpu": "pass"},
               "fine": {c: "pass" for c in JAX_CELLS},
               "flaky": {"jax053-cpu": "pass", "jax060-cpu": "crash", "jax072-cpu": "pass", "jax0102-cpu": "fail"}}
    rows = {r["case"]: r for r in since_summary(_report(JAX_CELLS, results))}
    assert (rows["base"]["first_bad"], rows["base"]["last_good"]) == ("0.6.0", "0.5.3")
    assert rows["base"]["summary"] == "fails since 0.6.0 (last good 0.5.3); not tested: 0.10.2"
    assert rows["fixed"]["summary"] == "fixed in 0.6.0 (last bad 0.5.3)" and rows["fixed"]["first_bad"] is None
    assert rows["fine"]["summary"].startswith("passes in every release tested")
    assert (rows["flaky"]["first_bad"], rows["flaky"]["last_good"]) == ("0.10.2", "0.7.2")
    md = render_since_markdown(list(rows.values()))
    assert "## Since which release" in md and "<code>base</code>" in md and "<code>fine</code>" not in md


def test_a_line_that_always_fails_does_not_claim_a_last_good():
    out = summarize_case([("0.5.3", "bad"), ("0.6.0", "bad")])
    assert out["first_bad"] == "0.5.3" and out["last_good"] is None and "at least the oldest" in out["summary"]
    assert summarize_case([("0.5.3", "unknown")])["summary"] == "no release along the line ran this case"


def test_report_command_writes_the_since_section(tmp_path):
    from results_fixtures import SHARD, case, cell_file

    from harness.report.command import report_command

    files = [cell_file(tmp_path, f"jax{v.replace('.', '')}-cpu", v, [case(SHARD, raw)])
             for v, raw in (("0.5.3", "pass"), ("0.6.0", "fail"), ("0.7.2", "fail"))]
    (tmp_path / "none.yaml").write_text("issues: []\n")
    report_command(files, tmp_path / "out", tmp_path / "none.yaml")
    doc = json.loads((tmp_path / "out" / "report.json").read_text())
    row = next(r for r in doc["since"] if r["case"] == SHARD)
    assert (row["first_bad"], row["last_good"]) == ("0.6.0", "0.5.3")
    assert "fails since 0.6.0 (last good 0.5.3)" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.e2e
def test_real_sweep_says_since_which_release(tmp_path):
    """jax 0.5.3..0.6.0 from PyPI (no release with a jaxlib between): shard_map base fails since 0.6.0."""
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--sweep", "jax>=0.5.3,<=0.6.0", "--out",
                           str(tmp_path), "--", "suites/shard_map/test_linearize_transpose.py"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads((tmp_path / "report.json").read_text())
    assert [c["cell"] for c in doc["cells"]] == ["jax053-cpu", "jax060-cpu"]
    row = next(r for r in doc["since"]
               if r["case"] == "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[base]")
    assert (row["first_bad"], row["last_good"]) == ("0.6.0", "0.5.3"), row
