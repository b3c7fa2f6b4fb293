"""A repro's `harness run` line makes the same cell again, however the cell was made (issue 19).

Every way a cell comes about is made here the way `harness run` makes it (the same parser and
steps as cmd_run: matrix or sweep, floating pins resolved, --with / SEAMS_WITH sources swapped in
and resolved), with the package index stubbed. From the cell's record (what the report keeps) the
repro's options are derived (harness.report.repro.cell_selection, selection_notes), run through
the same steps again, and must give the same pins, extras and source identities. The repro's texts
(CASE.md, CASE.py's install line) must not show a machine path: a local source is a placeholder
(`<seamtoy source>`) that the test puts back, as a user puts their own copy.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from harness.cli import _cells, build_parser
from harness.cells.floating import resolve_cells
from harness.cells.sources import apply_with, is_source_with, parse_pair, with_items
from harness.paths import REPO
from harness.report.repro import cell_selection, harness_install_line, repro_markdown, selection_notes
from harness.report.standalone import source_placeholder, standalone_install_line
from tests.toyrepo import make_toy_repo

INDEX = {"jax": ["0.6.0", "0.6.1", "0.6.2"], "jaxlib": ["0.6.0", "0.6.1", "0.6.2"], "flax": ["0.10.0"],
         "seamtoy": ["1.0.0"]}


@pytest.fixture()
def index(monkeypatch):
    """The package index, stubbed: what the sweeps and floating pins see (the test may move it on)."""
    listing = {k: list(v) for k, v in INDEX.items()}
    monkeypatch.setattr("harness.cells.floating.list_versions", lambda pkg, *a, **k: list(listing.get(pkg, [])))
    monkeypatch.setattr("harness.cells.sweep.sweep_releases",
                        lambda pkg, spec, *a, **k: [v for v in listing.get(str(pkg), []) if SpecifierSet(str(spec)).contains(v)])
    return listing


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return make_toy_repo(tmp_path_factory.mktemp("toy") / "repo")


def _make(argv: list[str], environ: dict[str, str] | None = None) -> list:
    """The cells `harness run ARGV` would run (cmd_run's steps, no env built)."""
    args = build_parser().parse_args(["run", *argv])
    sourced = [w for w in with_items(args.sweep_with, environ or {}) if is_source_with(w)]
    args.sweep_with = [w for w in args.sweep_with if not is_source_with(w)]
    cells = resolve_cells(_cells(args.matrix, args.cell, args), pre=args.pre)
    return apply_with(cells, sourced, parse_pair(args.pair))


def _identity(cell) -> tuple:
    return (cell.device, dict(sorted(cell.pins.items())), sorted(cell.extras),
            {k: (s.get("kind"), s.get("sha"), s.get("content_hash"), s.get("subdir")) for k, s in cell.sources.items()})


def _ways(tmp_path: Path, toy) -> dict[str, tuple[list[str], dict[str, str], str]]:
    """way -> (argv, environment, cell name): every way a cell can be made."""
    wheel = tmp_path / "wheels" / "seamtoy-1.0.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"not really a zip: only hashed here")
    tree = tmp_path / "tree"
    subprocess.run(["git", "clone", "-q", str(toy.path), str(tree)], check=True)
    (tree / "seamtoy" / "__init__.py").write_text("def double(x):\n    return x + x\n")  # dirty
    matrix = tmp_path / "mine.yaml"
    matrix.write_text("schema: 1\ndefaults: {device: cpu, env: {XLA_FLAGS: --xla_force_host_platform_device_count=8}}\n"
                      "include:\n  - {name: toy-cpu, pins: {jax: 0.6.0}, extras: [flax==0.10.0]}\n"
                      "  - {name: float-cpu, pins: {jax: latest}}\n"
                      f"  - {{name: srcpin-cpu, pins: {{jax: 0.6.0, seamtoy: {{git: {toy.path}, ref: HEAD}}}}}}\n")
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text("schema: 1\nsweeps:\n  - {package: jax, versions: '>=0.6.1', pins: {flax: 0.10.0}}\n")
    git_with = f"seamtoy={toy.path}@HEAD"
    return {
        "matrix file": (["--cell", "jax060-cpu"], {}, "jax060-cpu"),
        "own matrix file": (["--matrix", str(matrix), "--cell", "toy-cpu"], {}, "toy-cpu"),
        "source pin in a matrix": (["--matrix", str(matrix), "--cell", "srcpin-cpu"], {}, "srcpin-cpu"),
        "sweep file": (["--matrix", str(sweep_file), "--cell", "jax061-cpu"], {}, "jax061-cpu"),
        "command-line sweep": (["--sweep", "jax>=0.6,<0.7", "--with", "flax==0.10.0", "--sweep-extra", "optax==0.2.4",
                                "--cell", "jax061-cpu"], {}, "jax061-cpu"),
        "floating pin": (["--matrix", str(matrix), "--cell", "float-cpu"], {}, "float-cpu"),
        "--with git ref": (["--cell", "jax060-cpu", "--with", git_with], {}, "jax060-cpu"),
        "--with dirty tree": (["--cell", "jax060-cpu", "--with", f"seamtoy={tree}"], {}, "jax060-cpu"),
        "--with wheel": (["--cell", "jax060-cpu", "--with", f"seamtoy={wheel}"], {}, "jax060-cpu"),
        "SEAMS_WITH": (["--cell", "jax060-cpu"], {"SEAMS_WITH": shlex.quote(git_with)}, "jax060-cpu"),
        "sweep with a source": (["--sweep", "jax==0.6.2", "--with", git_with, "--cell", "jax062-cpu"], {}, "jax062-cpu"),
    }


def _put_back(argv: list[str], cell: dict, tmp_path: Path) -> list[str]:
    """What a user does with the placeholders and a matrix file named by its name: their own copies."""
    out = []
    for word in argv:
        for pkg, src in (cell.get("sources") or {}).items():
            loc = Path(src["location"])
            word = word.replace(source_placeholder(pkg), str(loc.parent if src["kind"] == "wheel" else loc))
        out.append(str(tmp_path / word) if (tmp_path / word).is_file() and word.endswith(".yaml") else word)
    return out


def test_the_repro_makes_the_same_cell_for_every_way_a_cell_is_made(tmp_path, toy, index):
    ways = _ways(tmp_path, toy)
    for way, (argv, environ, name) in ways.items():
        made = [c for c in _make(argv, environ) if c.name == name]
        assert len(made) == 1, (way, [c.name for c in _make(argv, environ)])
        original, record = made[0], made[0].describe()
        selection = cell_selection(record)
        again = [c for c in _make(_put_back([*selection, "--cell", name], record, tmp_path)) if c.name == name]
        assert again and _identity(again[0]) == _identity(original), (way, selection)
        # The texts a user pastes: no machine path; the placeholders say what they stand for.
        case = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[base]"
        result = {"raw": "fail", "verdict": "news", "message": "AssertionError"}
        texts = [repro_markdown(case, record, result), standalone_install_line(record),
                 harness_install_line(record["install_line"], record)]
        for text in texts:
            assert str(tmp_path) not in text and str(toy.path) not in text, (way, text)
        if record.get("sources"):
            assert f"# {source_placeholder('seamtoy')}: " in texts[0], way
            assert source_placeholder("seamtoy") in texts[1] and source_placeholder("seamtoy") in texts[2], way
            assert "--with" in selection, way
    assert len(ways) >= 10


def test_a_floating_pin_is_named_and_its_exact_release_can_be_made_again(tmp_path, toy, index):
    argv, _env, name = _ways(tmp_path, toy)["floating pin"]
    record = next(c for c in _make(argv) if c.name == name).describe()
    assert record["pins"]["jax"] == "0.6.2" and record["floating"]["jax"] == "latest"
    notes = selection_notes(record)
    assert any("jax: latest -> 0.6.2" in n for n in notes), notes
    exact = next(n for n in notes if n.startswith("exactly these pins: "))
    index["jax"].append("0.7.0")  # the index moves on: the matrix now floats elsewhere, the exact line does not
    index["jaxlib"].append("0.7.0")
    assert next(c for c in _make(argv) if c.name == name).pins["jax"] == "0.7.0"
    words = shlex.split(exact.removeprefix("exactly these pins: "))
    assert words[:4] == ["python", "-m", "harness", "run"]
    cells = _make(words[4:])
    assert [c.pins for c in cells] == [{"jax": "0.6.2", "jaxlib": "0.6.2"}]
    assert "float-cpu floats" in repro_markdown("suites/x/test_y.py::test_z", record, {"raw": "fail", "verdict": "news"})


def test_a_command_line_sweep_is_its_one_release_with_what_it_held(tmp_path, toy, index):
    argv, _env, name = _ways(tmp_path, toy)["command-line sweep"]
    record = next(c for c in _make(argv) if c.name == name).describe()
    assert cell_selection(record) == ["--sweep", "jax==0.6.1", "--with", "flax==0.10.0", "--sweep-extra", "optax==0.2.4"]
    assert str(REPO) not in " ".join(cell_selection(record))
