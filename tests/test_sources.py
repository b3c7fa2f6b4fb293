"""Sources beyond the index (harness.cells.sources): parsing, resolving, pairing, exporting, env keys.

Fast: real git repositories of a toy package in tmp, no env is built (the e2e tests in
tests/test_commits.py build cells from them).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from harness.cells.cell import Cell
from harness.cells.matrix import load_matrix
from harness.cells.sources import (SourceError, apply_with, is_source_with, materialize, pair_jaxlib,
                                   parse_pair, resolve_cell, resolve_source, spec_from_with, spec_from_yaml)
from harness.errors import UserError
from tests.toyrepo import git, make_toy_repo

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return make_toy_repo(tmp_path_factory.mktemp("toy") / "repo")


def _cell(**kw) -> Cell:
    return Cell(name="toy-cpu", device="cpu", pins=kw.pop("pins", {}), **kw)


# ---------------------------------------------------------------- parsing what users write

def test_with_forms(tmp_path, toy):
    wheel = tmp_path / "seamtoy-1.0-py3-none-any.whl"
    wheel.write_bytes(b"x")
    assert spec_from_with(f"seamtoy={toy.path}") == ("seamtoy", {"kind": "path", "location": str(toy.path)})
    assert spec_from_with(f"seamtoy={toy.path}@seamtoy-v1.0.0") == (
        "seamtoy", {"kind": "git", "location": str(toy.path), "ref": "seamtoy-v1.0.0"})
    assert spec_from_with(f"seamtoy={wheel}")[1] == {"kind": "wheel", "location": str(wheel)}
    assert spec_from_with("jax=https://github.com/jax-ml/jax@main")[1] == {
        "kind": "git", "location": "https://github.com/jax-ml/jax", "ref": "main"}
    assert spec_from_with("jax=git@github.com:jax-ml/jax.git")[1]["ref"] == "HEAD"
    # Relative paths are taken from where the command runs.
    assert spec_from_with("seamtoy=repo", toy.path.parent)[1]["location"] == str(toy.path)
    for bad in ("seamtoy", "=x", "seam toy=x", "seamtoy="):
        with pytest.raises(SourceError, match="write PKG=PATH"):
            spec_from_with(bad)


def test_source_with_is_told_from_a_held_release():
    assert is_source_with("jax=../jax") and is_source_with("jax=../jax@v1")
    assert not is_source_with("jax==0.6.0") and not is_source_with("flax==0.12.0")


def test_pair_parsing():
    assert parse_pair(["jaxlib==0.5.3"]) == {"jaxlib": "0.5.3"}
    for bad in ("jaxlib=0.5.3", "jaxlib==x.y", "jaxlib"):
        with pytest.raises(UserError, match="--pair"):
            parse_pair([bad])


def test_yaml_forms(tmp_path):
    assert spec_from_yaml("0.6.0", tmp_path) is None
    assert spec_from_yaml("dist/j-1-py3-none-any.whl", tmp_path) == {"kind": "wheel", "location": str(tmp_path / "dist/j-1-py3-none-any.whl")}
    assert spec_from_yaml({"path": "../jax"}, tmp_path / "m") == {"kind": "path", "location": str(tmp_path / "jax")}
    assert spec_from_yaml({"git": "../x", "ref": "abc", "subdir": "torchax"}, tmp_path / "m") == {
        "kind": "git", "location": str(tmp_path / "x"), "ref": "abc", "subdir": "torchax"}
    for bad, why in (({"git": "x", "tag": "y"}, "source pin is"), ({"path": ""}, "non-empty"),
                     ({"git": "x", "subdir": "../up"}, "inside the repository"), ({"git": "x", "ref": "a\nb"}, "control")):
        with pytest.raises(ValueError, match=why):
            spec_from_yaml(bad, tmp_path)


def test_matrix_takes_source_pins_and_names_the_line(tmp_path, toy):
    m = tmp_path / "m.yaml"
    m.write_text(f"schema: 1\ninclude:\n  - {{name: a-cpu, pins: {{seamtoy: {{git: {toy.path}, ref: seamtoy-v1.0.0}}}}}}\n"
                 "  - {name: b-cpu, pins: {jax: {path: ./jax}}}\n")
    a, b = load_matrix(m).cells
    assert a.pins == {} and a.sources == {"seamtoy": {"kind": "git", "location": str(toy.path), "ref": "seamtoy-v1.0.0"}}
    assert "jaxlib" not in b.pins and b.sources["jax"]["location"] == str(tmp_path / "jax")  # paired when resolved
    m.write_text("schema: 1\ninclude:\n  - name: a-cpu\n    pins:\n      jax: {git: x, branch: main}\n")
    with pytest.raises(UserError, match=r"m.yaml:5: jax: a source pin is"):
        load_matrix(m)


# ---------------------------------------------------------------- resolving

def test_git_ref_resolves_to_its_full_sha_and_declared_version(toy):
    src = resolve_source("seamtoy", {"kind": "git", "location": str(toy.path), "ref": "seamtoy-v1.0.0"})
    assert src["sha"] == toy.first_parent[0] and src["version"] == "1.0.0"
    assert src["pin"] == f"1.0.0+g{toy.first_parent[0][:10]}" and src["dirty"] is False
    assert src["paths"] == ["README.md", "pyproject.toml", "seamtoy"]  # docs/ is not needed by a build
    short = resolve_source("seamtoy", {"kind": "git", "location": str(toy.path), "ref": toy.regression[:7]})
    assert short["sha"] == toy.regression


@pytest.mark.parametrize("spec, why", [
    ({"kind": "git", "ref": "no-such-tag"}, "no commit 'no-such-tag'"),
    ({"kind": "git", "ref": "--output=/tmp/x"}, "no commit '--output=/tmp/x'"),
    ({"kind": "git", "ref": "HEAD", "subdir": "nothere"}, "no folder 'nothere'"),
    ({"kind": "git", "ref": "HEAD", "subdir": "docs"}, "no seamtoy/ folder"),
    ({"kind": "path", "subdir": "docs"}, "no seamtoy/ folder"),
    ({"kind": "path", "subdir": "seamtoy"}, "no seamtoy/ folder"),
])
def test_bad_sources_are_one_line_errors(toy, spec, why):
    with pytest.raises(SourceError, match=why) as exc:
        resolve_source("seamtoy", {"location": str(toy.path), **spec})
    assert "\n" not in str(exc.value)


def test_not_a_repository_or_missing(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(SourceError, match="not a git repository"):
        resolve_source("x", {"kind": "git", "location": str(tmp_path / "plain"), "ref": "HEAD"})
    with pytest.raises(SourceError, match="no such folder"):
        resolve_source("x", {"kind": "path", "location": str(tmp_path / "gone")})
    with pytest.raises(SourceError, match="no such wheel"):
        resolve_source("x", {"kind": "wheel", "location": str(tmp_path / "x-1-py3-none-any.whl")})


def test_a_url_is_cloned_once_and_resolves_like_a_path(toy, tmp_path, monkeypatch):
    monkeypatch.setenv("SEAMS_REPOS_DIR", str(tmp_path / "repos"))
    url = toy.path.as_uri()
    src = resolve_source("seamtoy", {"kind": "git", "location": url, "ref": "seamtoy-v1.1.0"})
    assert src["sha"] == toy.first_parent[-1]
    assert len(list((tmp_path / "repos").glob("*.git"))) == 1


def test_dirty_tree_is_content_hashed(tmp_path, toy):
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(toy.path), str(work)], check=True)
    clean = resolve_source("seamtoy", {"kind": "path", "location": str(work)})
    assert clean["sha"] == toy.first_parent[-1] and clean["dirty"] is False
    (work / "docs" / "big.txt").write_text("edited outside the build paths\n")
    assert resolve_source("seamtoy", {"kind": "path", "location": str(work)})["content_hash"] == clean["content_hash"]
    (work / "seamtoy" / "__init__.py").write_text("def double(x):\n    return x + x\n")
    dirty = resolve_source("seamtoy", {"kind": "path", "location": str(work)})
    assert dirty["dirty"] is True and dirty["content_hash"] != clean["content_hash"]
    assert dirty["pin"].startswith(f"1.0.0.dev20231114+g{toy.first_parent[-1][:10]}.dirty.")
    # __pycache__ and build output are not content.
    (work / "seamtoy" / "__pycache__").mkdir()
    (work / "seamtoy" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert resolve_source("seamtoy", {"kind": "path", "location": str(work)})["content_hash"] == dirty["content_hash"]
    # Env keys: same content, same env; another commit or edit, another env.
    keys = {_cell(sources={"seamtoy": s}, pins={"seamtoy": s["pin"]}).key() for s in (clean, dirty)}
    assert len(keys) == 2


def test_wheel_is_hashed_and_must_be_the_package(tmp_path):
    whl = tmp_path / "seamtoy-2.0-py3-none-any.whl"
    whl.write_bytes(b"zip")
    src = resolve_source("seamtoy", {"kind": "wheel", "location": str(whl)})
    assert src["version"] == "2.0" and src["content_hash"] == hashlib.sha256(b"zip").hexdigest()
    with pytest.raises(SourceError, match="a wheel of seamtoy, not of jax"):
        resolve_source("jax", {"kind": "wheel", "location": str(whl)})


# ---------------------------------------------------------------- exporting

def test_git_export_holds_only_the_build_paths(tmp_path, toy):
    src = resolve_source("seamtoy", {"kind": "git", "location": str(toy.path), "ref": toy.regression})
    out = materialize("seamtoy", src, tmp_path / "x")
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "pyproject.toml", "seamtoy"]
    assert "(1 if x == 3" in (out / "seamtoy" / "__init__.py").read_text()
    assert toy.regression[:12] in out.name  # uv caches a folder's build by its path


def test_tree_edited_after_resolving_is_refused(tmp_path, toy):
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(toy.path), str(work)], check=True)
    src = resolve_source("seamtoy", {"kind": "path", "location": str(work)})
    (work / "seamtoy" / "__init__.py").write_text("changed = 1\n")
    with pytest.raises(SourceError, match="changed while the env was being built"):
        materialize("seamtoy", src, tmp_path / "x")


# ---------------------------------------------------------------- pairing

def _jax_repo(path: Path, versions: list[tuple[str, str]]) -> list[str]:
    """A fake jax repository: one commit per (_version, _minimum_jaxlib_version)."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "jax").mkdir()
    (path / "setup.py").write_text("from setuptools import setup\nsetup(name='jax')\n")
    shas = []
    for i, (ver, low) in enumerate(versions):
        (path / "jax" / "version.py").write_text(f'_version = "{ver}"\n_minimum_jaxlib_version = "{low}"\n')
        git(path, "add", "-A", when=i)
        git(path, "commit", "-q", "-m", f"v {ver}", when=i)
        shas.append(git(path, "rev-parse", "HEAD"))
    return shas


JAXLIBS = [Version(v) for v in ("0.5.1", "0.5.3", "0.6.0", "0.6.1")]


def test_jaxlib_is_the_newest_release_the_tree_allows(tmp_path):
    shas = _jax_repo(tmp_path / "jax", [("0.5.4", "0.5.1"), ("0.6.0", "0.6.0"), ("0.9.0", "0.8.0")])
    base = _cell(pins={"jax": "0.5.3", "jaxlib": "0.5.3"})
    cell = lambda sha: apply_with([base], [f"jax={tmp_path / 'jax'}@{sha}"], {})  # noqa: E731

    import harness.cells.sources as sources

    orig = sources._released_jaxlibs
    sources._released_jaxlibs = lambda _c: (lambda: JAXLIBS)
    try:
        first = cell(shas[0])[0]
        assert first.pins["jaxlib"] == "0.5.3" and "[0.5.1, 0.5.4]" in first.sources["jax"]["pairing"]
        assert cell(shas[1])[0].pins["jaxlib"] == "0.6.0"
        with pytest.raises(SourceError, match=r"no released jaxlib in \[0.8.0, 0.9.0\].*--pair"):
            cell(shas[2])
        given = apply_with([base], [f"jax={tmp_path / 'jax'}@{shas[2]}"], {"jaxlib": "0.6.1"})[0]
        assert given.pins["jaxlib"] == "0.6.1" and given.sources["jax"]["pairing"] == "jaxlib 0.6.1: given with --pair"
    finally:
        sources._released_jaxlibs = orig
    assert pair_jaxlib({"version": "0.5.4", "minimum_jaxlib": "0.5.3", "location": "x", "kind": "git", "sha": "0" * 40},
                       JAXLIBS)[0] == "0.5.3"


def test_pair_without_a_source_is_bad_input():
    with pytest.raises(SourceError, match="--pair only applies"):
        apply_with([_cell(pins={"jax": "0.6.0"})], [], {"jaxlib": "0.6.0"})


def test_resolved_cell_names_its_source_everywhere(toy):
    cell = resolve_cell(_cell(sources={"seamtoy": {"kind": "git", "location": str(toy.path), "ref": "seamtoy-v1.1.0"}}))
    sha = toy.first_parent[-1]
    # seamtoy-v1.1.0's tree still declares 1.0.0: not that release's commit, so a dev release dated by the commit
    assert cell.pins == {"seamtoy": f"1.0.0.dev20231114+g{sha[:10]}"}
    assert f"seamtoy @ git+{toy.path.as_uri()}@{sha}" in cell.install_line()
    assert cell.describe()["sources"]["seamtoy"]["sha"] == sha


def test_run_rejects_bad_sources_in_one_line(toy, tmp_path):
    m = tmp_path / "m.yaml"
    m.write_text(f"schema: 1\ninclude:\n  - {{name: toy-cpu, pins: {{seamtoy: {{git: {toy.path}, ref: HEAD}}}}}}\n")
    for extra, why in ((["--with", f"seamtoy={toy.path}@nope"], "no commit 'nope'"),
                       (["--with", f"seamtoy={tmp_path}"], "does not hold the seamtoy package"),
                       (["--pair", "jaxlib=1"], "--pair 'jaxlib=1'")):
        proc = subprocess.run([sys.executable, "-m", "harness", "run", "--matrix", str(m), "--out", str(tmp_path / "o"),
                               "--no-report", *extra], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and why in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
        assert not (tmp_path / "o" / "results").exists() or not list((tmp_path / "o" / "results").iterdir())


def test_a_resolved_cell_travels_to_a_j_worker_whole(toy):
    from harness.run.parallel import cell_from_json, cell_to_json

    cell = resolve_cell(_cell(sources={"seamtoy": {"kind": "git", "location": str(toy.path), "ref": "HEAD"}}))
    back = cell_from_json(cell_to_json(cell))
    assert back == cell and back.key() == cell.key()


def test_the_report_names_a_cells_sources(tmp_path):
    """CellStart's sources reach report.json as records (kind, location, commit); a tampered record
    keeps only what fits, never a crash; pages label them without the machine's paths."""
    from harness.judge.results import _sources
    from harness.report.standalone import shown_sources

    rec = {"jax": {"kind": "git", "location": "/src/jax", "sha": "75e4279e32b045e6448f6fc752085f2b8618f7b3",
                   "dirty": False},
           "seamtoy": {"kind": "path", "location": "/w", "sha": "a" * 40, "dirty": True, "content_hash": "b" * 64},
           "flax": {"kind": "wheel", "location": "/d/flax.whl", "content_hash": "c" * 64, "sha": 7, "evil": "x"},
           "optax": {"kind": "git", "location": "https://u:tok@example.org/optax.git", "sha": "d" * 40},
           "bad": "not a dict"}
    got = _sources(rec)
    assert set(got) == {"jax", "seamtoy", "flax", "optax"} and "sha" not in got["flax"] and "evil" not in got["flax"]
    assert shown_sources({"sources": got}) == {
        "jax": "<jax source>@75e4279e32b0", "seamtoy": "<seamtoy source>@aaaaaaaaaaaa (dirty)",
        "flax": "<flax source> sha256:cccccccccccc", "optax": "https://***@example.org/optax.git@dddddddddddd"}
    assert _sources(["x"]) == {} and _sources(None) == {}


@pytest.mark.parametrize("kind, requirement", [
    ("git", "jax @ git+file:///home/alice/src/jax@" + "a" * 40),
    ("path", "jax @ file:///home/alice/src/jax"),
    ("wheel", "jax @ file:///home/alice/dist/jax-0.6.1.dev0-py3-none-any.whl"),
])
def test_no_local_path_reaches_a_shared_output(tmp_path, kind, requirement):
    """Every kind of local source, through the real report: report.md, report.html, junit.xml and
    each repro (CASE.md, CASE.py) show a placeholder; only report.json, the run's record, keeps it."""
    import json

    from harness.report.command import report_command
    from tests.results_fixtures import case, cell_file, known_issues

    path = cell_file(tmp_path, "mine-cpu", "0.6.1",
                     [case("suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[base]", "fail", "boom")])
    lines = path.read_text().splitlines()
    start = json.loads(lines[0])
    loc = requirement.split("file://", 1)[1].split("@")[0]
    start["sources"] = {"jax": {"kind": kind, "location": loc, "version": "0.6.1.dev0",
                                **({"sha": "a" * 40, "ref": "main"} if kind == "git" else {"content_hash": "b" * 64})}}
    start["install_line"] = f"pip install {__import__('shlex').quote(requirement)} jaxlib==0.6.0"
    start["pins"] = {"jax": "0.6.1.dev0", "jaxlib": "0.6.0"}
    path.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    out = tmp_path / "out"
    report_command([path], out, known_issues(tmp_path, ""))
    shared = [p for p in out.rglob("*") if p.is_file() and p.name != "report.json"]
    assert len([p for p in shared if p.parent.name == "repro"]) == 2  # CASE.md and CASE.py
    for p in shared:
        text = p.read_text()
        assert "alice" not in text, f"{p.name} shows the local path"
    assert "&lt;jax source&gt;" in (out / "report.md").read_text()  # HTML-escaped in a Markdown table
    repro = next((out / "repro").glob("*.md")).read_text()
    assert "--with" in repro and "<jax source>" in repro


def test_seams_with_is_read_like_the_command_line(toy, tmp_path):
    from harness.cells.sources import with_items

    assert with_items(["a=b"], {"SEAMS_WITH": "jax=../jax 'torchax=/a b@main'"}) == ["a=b", "jax=../jax", "torchax=/a b@main"]
    with pytest.raises(SourceError, match="SEAMS_WITH"):
        with_items([], {"SEAMS_WITH": "jax='unclosed"})
    m = tmp_path / "m.yaml"  # tox hands SEAMS_* to `harness run --cell ENV`: the same check, the same one line
    m.write_text(f"schema: 1\ninclude:\n  - {{name: toy-cpu, pins: {{seamtoy: {{git: {toy.path}, ref: HEAD}}}}}}\n")
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--matrix", str(m), "--out", str(tmp_path / "o")],
                          cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "SEAMS_WITH": f"seamtoy={toy.path}@no-such-ref"})
    assert proc.returncode == 2 and "no commit 'no-such-ref'" in proc.stderr


@pytest.mark.parametrize("rec, why", [
    ({"dist": "1.0.0", "direct_url": None}, "installed from the index, not from its source"),
    ({"dist": "1.0.0", "direct_url": "file:///elsewhere/seamtoy"}, "installed from file:///elsewhere/seamtoy"),
    ({"dist": "1.0.0", "direct_url": "SRC", "file": "/work/seamtoy/__init__.py"}, "outside the env"),
    ({"dist": "2.0.0", "direct_url": "SRC", "file": "ENV/lib/python3.11/site-packages/seamtoy/__init__.py"},
     "the tree declares 1.0.0 but the build installed 2.0.0"),
])
def test_the_version_check_wants_the_build_of_that_source(tmp_path, rec, why):
    from harness.cells.envs import EnvError, _check_source

    src_dir, env = tmp_path / "src" / "seamtoy-abc", tmp_path / "env"
    src_dir.mkdir(parents=True)
    (env / "bin").mkdir(parents=True)
    rec = {k: str(v).replace("SRC", src_dir.as_uri()).replace("ENV", str(env)) if isinstance(v, str) else v
           for k, v in rec.items()}
    cell = _cell(sources={"seamtoy": {"version": "1.0.0"}})
    with pytest.raises(EnvError, match=why):
        _check_source("seamtoy", rec, src_dir, env / "bin" / "python", cell)
    good = {"dist": "1.0.0.dev20261123", "direct_url": src_dir.as_uri(),
            "file": str(env / "lib/python3.11/site-packages/seamtoy/__init__.py")}
    _check_source("seamtoy", good, src_dir, env / "bin" / "python", cell)  # a .dev build of the declared release


def test_a_package_in_a_folder_of_a_bigger_repository(tmp_path):
    """`subdir:` (torchax inside pytorch/xla): resolved, named and exported from that folder only."""
    from tests.toyrepo import GOOD_CODE, PYPROJECT

    repo = tmp_path / "big"
    (repo / "torchax" / "seamtoy").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "setup.py").write_text("raise SystemExit('the outer project, not this package')\n")
    (repo / "torchax" / "pyproject.toml").write_text(PYPROJECT.format(version="0.3.0"))
    (repo / "torchax" / "seamtoy" / "__init__.py").write_text(GOOD_CODE)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "one")
    src = resolve_source("seamtoy", {"kind": "git", "location": str(repo), "ref": "main", "subdir": "torchax"})
    assert src["version"] == "0.3.0" and src["paths"] == ["pyproject.toml", "seamtoy"]
    assert resolve_cell(_cell(sources={"seamtoy": src})).install_line().endswith(f"@{src['sha']}#subdirectory=torchax'")
    out = materialize("seamtoy", src, tmp_path / "x")
    assert sorted(p.name for p in out.iterdir()) == ["pyproject.toml", "seamtoy"]
    tree = resolve_source("seamtoy", {"kind": "path", "location": str(repo), "subdir": "torchax"})
    assert tree["version"] == "0.3.0" and tree["dirty"] is False


def test_a_commit_gets_a_version_that_sorts_with_the_releases_by_the_commit(toy):
    """Issue 30: a build from a commit sorts after the release before it, before the one it declares,
    and after older commits; at its release tag it is that release. The SHA stays in the label."""
    from packaging.version import Version

    from harness.cells.sources import build_env_for, commit_version

    tagged = resolve_source("seamtoy", {"kind": "git", "location": str(toy.path), "ref": "seamtoy-v1.0.0"})
    assert tagged["release_tag"] == "seamtoy-v1.0.0" and Version(tagged["pin"]).public == "1.0.0"
    later = resolve_source("seamtoy", {"kind": "git", "location": str(toy.path), "ref": toy.first_parent[-1]})
    assert later["commit_date"] == "2023-11-14T22:" + later["commit_date"][14:] and later["sha"][:10] in later["pin"]
    # what jax's tree would declare between releases: the next one
    between = {**later, "version": "0.5.4", "release_tag": None}
    assert Version("0.5.3") < Version(commit_version(between)) < Version("0.5.4") < Version("0.6.0")
    older = {**between, "commit_date": "2023-11-13T09:00:00Z"}
    assert Version(commit_version(older)) < Version(commit_version(between))
    assert commit_version(between) == f"0.5.4.dev20231114+g{later['sha'][:10]}"
    # a known-issue range reaches it: jax>=0.5.3 holds, <0.5.3 does not
    from packaging.specifiers import SpecifierSet

    assert SpecifierSet(">=0.5.3").contains(commit_version(between), prereleases=True)
    # jax's build is told the same version (WHEEL_VERSION_SUFFIX) and the commit (JAX_GIT_HASH)
    env = build_env_for("jax", {**between, "pin": commit_version(between)})
    assert env == {"WHEEL_VERSION_SUFFIX": f".dev20231114+g{later['sha'][:10]}", "JAX_GIT_HASH": later["sha"]}
    assert build_env_for("torchax", {**between, "pin": commit_version(between)}) == {}
