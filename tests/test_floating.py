"""Floating pins (`latest`, `nightly`) resolved against a local PEP 503 index, as a nightly index would be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cells.cell import Cell
from harness.cells.envs import EnvError, ensure_env
from harness.errors import UserError
from harness.cells.floating import resolve, resolve_cells
from harness.cells.matrix import load_matrix

REPO = Path(__file__).resolve().parent.parent
DEV = "0.11.0.dev20261122"


def _index(root: Path, versions: dict[str, list[str]]) -> str:
    for pkg, vs in versions.items():
        folder = root / pkg
        folder.mkdir(parents=True)
        links = ""
        for v in vs:
            tag = "py3-none-any" if pkg == "jax" else "cp311-cp311-manylinux2014_x86_64"
            if v.startswith("0.12"):
                tag = "py3-none-any" if pkg == "jax" else "cp312-cp312-manylinux2014_x86_64"  # not for 3.11
            name = f"{pkg}-{v}-{tag}.whl"
            links += f'<a href="../../files/{name}#sha256=00">{name}</a>\n'
        (folder / "index.html").write_text(f"<html><body>{links}</body></html>")
    return root.as_uri()


@pytest.fixture
def nightly_index(tmp_path):
    return _index(tmp_path / "nightly", {"jax": ["0.10.2", DEV], "jaxlib": ["0.10.2", DEV]})


@pytest.fixture
def release_index(tmp_path):
    return _index(tmp_path / "releases", {"jax": ["0.10.1", "0.10.2", "0.11.0rc1", "0.12.0"],
                                          "jaxlib": ["0.10.1", "0.10.2", "0.11.0rc1", "0.12.0"]})


def _cell(word: str, index_url: str | None = None) -> Cell:
    return Cell(name=f"jax{word}-cpu", device="cpu", pins={"jax": word, "jaxlib": word}, index_url=index_url)


def test_latest_is_the_newest_release_this_python_can_install(release_index):
    cell = resolve(_cell("latest", release_index))
    assert cell.pins == {"jax": "0.10.2", "jaxlib": "0.10.2"}  # 0.12.0's jaxlib has no cp311 wheel
    assert cell.floating == {"jax": "latest", "jaxlib": "latest"}
    assert cell.describe()["floating"] == {"jax": "latest", "jaxlib": "latest"}
    assert resolve(_cell("latest", release_index), pre=True).pins["jax"] == "0.11.0rc1"


def test_nightly_resolves_to_a_dev_build_and_installs_from_its_index(nightly_index, monkeypatch):
    monkeypatch.setenv("SEAMS_NIGHTLY_INDEX_URL", nightly_index)
    unresolved = _cell("nightly")
    cell = resolve(unresolved)
    assert cell.pins == {"jax": DEV, "jaxlib": DEV} and cell.extra_index_urls == (nightly_index,)
    assert "--extra-index-url" in cell.install_line() and f"jax=={DEV}" in cell.install_line()
    assert cell.key() != unresolved.key(), "the env cache key follows the resolved versions"
    plain = Cell(name="x-cpu", device="cpu", pins={"jax": "0.6.0", "jaxlib": "0.6.0"})
    assert plain.key() == Cell(name="y-cpu", device="cpu", pins={"jax": "0.6.0", "jaxlib": "0.6.0"}).key()


def test_nightly_that_resolves_to_a_release_is_an_env_error(release_index, monkeypatch):
    monkeypatch.setenv("SEAMS_NIGHTLY_INDEX_URL", release_index)
    [cell] = resolve_cells([_cell("nightly")])
    assert "not a development (.dev) version" in cell.unresolved and "0.11.0rc1" in cell.unresolved
    with pytest.raises(EnvError, match="floating pin not resolved"):
        ensure_env(cell)


def test_matrix_accepts_floating_words_only(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("include:\n  - {name: a-cpu, pins: {jax: latest}}\n  - {name: b-cpu, pins: {torch_xla: nightly}}\n")
    cells = load_matrix(f).cells
    assert cells[0].pins == {"jax": "latest", "jaxlib": "latest"} and cells[1].pins == {"torch-xla": "nightly"}
    f.write_text("include:\n  - {name: a-cpu, pins: {jax: newest}}\n")
    with pytest.raises(UserError, match=r"m\.yaml:2: .*latest / nightly"):
        load_matrix(f)
    f.write_text("include:\n  - {name: a-cpu, pins: {torch_xla: latest, torch: 2.9.0}}\n")
    with pytest.raises(UserError, match="brings its own torch"):
        load_matrix(f)


def test_run_records_an_unresolvable_nightly_as_env_error(tmp_path, release_index):
    m = tmp_path / "m.yaml"
    m.write_text("include:\n  - {name: jaxnightly-cpu, pins: {jax: nightly}}\n")
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--matrix", str(m), "--out", str(tmp_path / "out")],
                          cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "SEAMS_NIGHTLY_INDEX_URL": release_index, "SEAMS_ENVS_DIR": str(tmp_path / "envs")})
    assert proc.returncode == 1, proc.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    [cell] = report["cells"]
    assert cell["status"] == "env-error" and "not a development (.dev) version" in cell["reason"]


def test_report_shows_what_a_floating_pin_resolved_to(tmp_path):
    from results_fixtures import SHARD, case, cell_file

    from harness.report.command import report_command

    path = cell_file(tmp_path, "jaxlatest-cpu", "0.10.2", [case(SHARD, "pass")])
    lines = path.read_text().splitlines()
    start = json.loads(lines[0])
    start["floating"] = {"jax": "latest", "jaxlib": "latest"}
    path.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    (tmp_path / "known.yaml").write_text("issues: []\n")
    report_command([path], tmp_path / "out", tmp_path / "known.yaml")
    [cell] = json.loads((tmp_path / "out" / "report.json").read_text())["cells"]
    assert cell["floating"] == {"jax": "latest", "jaxlib": "latest"} and cell["versions"]["jax"] == "0.10.2"
    assert "jax 0.10.2 (latest)" in (tmp_path / "out" / "report.md").read_text()
