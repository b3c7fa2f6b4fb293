"""`harness bisect --commits` on toy git histories (tests/toyrepo.py).

The fast tests run the real command in-process on real repositories, with only the probe's
env+pytest replaced by the seeded truth, for every position of the regression and with commits
that do not build. The e2e tests build real cells from the commits (uv) and run the drill case.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.bisect.commits import CommitProber, first_parent, pr_link, resolve_bound
from harness.bisect.probe import Answer, Prober
from harness.cells.cell import Cell
from harness.cli import main
from harness.errors import UserError
from tests.toyrepo import CASE, make_toy_repo

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return make_toy_repo(tmp_path_factory.mktemp("toy") / "repo")


def test_bounds_resolve_release_tags_then_refs(toy):
    assert resolve_bound(toy.path, "seamtoy", "1.0.0") == toy.first_parent[0]
    assert resolve_bound(toy.path, "seamtoy", "seamtoy-v1.1.0") == toy.first_parent[-1]
    assert resolve_bound(toy.path, "seamtoy", toy.regression[:8]) == toy.regression
    with pytest.raises(UserError, match=r"no commit, tag seamtoy-v9.9 or v9.9 for '9.9'"):
        resolve_bound(toy.path, "seamtoy", "9.9")


def test_first_parent_history_steps_over_the_merged_branch(toy):
    commits = first_parent(toy.path, toy.first_parent[0], toy.first_parent[-1], "https://github.com/toy/seamtoy")
    assert [c.sha for c in commits] == toy.first_parent
    merge = next(c for c in commits if c.sha == toy.merge)
    assert merge.pr == "https://github.com/toy/seamtoy/pull/103"
    assert next(c for c in commits if c.sha == toy.regression).pr == "https://github.com/toy/seamtoy/pull/307"
    assert commits[2].pr == "https://github.com/toy/seamtoy/pull/202" and commits[1].pr is None
    with pytest.raises(UserError, match="not an ancestor"):
        first_parent(toy.path, toy.first_parent[-1], toy.first_parent[0])
    with pytest.raises(UserError, match="same commit"):
        first_parent(toy.path, toy.first_parent[1], toy.first_parent[1])


@pytest.mark.parametrize("message, link", [
    ("Fix x\n\nCOPYBARA_INTEGRATE_REVIEW=https://github.com/jax-ml/jax/pull/27100 from a:b 1234\nPiperOrigin-RevId: 1",
     "https://github.com/jax-ml/jax/pull/27100"),
    ("Merge pull request #27260 from hawkinsp:postrelease\n\nPostrelease", "https://github.com/o/r/pull/27260"),
    ("Add thing (#42)\n\nbody", "https://github.com/o/r/pull/42"),
    ("Plain change\n\nPiperOrigin-RevId: 748440123", None),
])
def test_pr_link_from_the_message(message, link):
    assert pr_link(message, "https://github.com/o/r") == link
    assert pr_link("Add thing (#42)", None) == "#42"


def _fake_truth(toy, bad_at: int, broken: set[int]):
    """A probe answer from the seeded history instead of a built env (the search and CLI are real)."""
    index = {sha: i for i, sha in enumerate(toy.first_parent)}

    def run(self: Prober, cell: Cell, version: str) -> Answer:
        if not cell.sources:  # a release probe (--to-commit starts with releases)
            return Answer(version, "bad" if version == "1.1.0" else "good", "fail" if version == "1.1.0" else "pass")
        assert cell.sources["seamtoy"]["sha"] == version  # the probe cell takes the package from that commit
        i = index[version]
        if i in broken:
            return Answer(version, "skip", "env-error", reason="uv: Failed to build `seamtoy @ file:///...`")
        return Answer(version, "bad" if i >= bad_at else "good", "fail" if i >= bad_at else "pass")
    return run


def _bisect_in_process(toy, tmp_path, monkeypatch, capsys, *extra: str) -> tuple[int, str]:
    monkeypatch.setenv("SEAMS_BISECT_CACHE", str(tmp_path / "cache"))
    rc = main(["bisect", CASE, "--commits", "--repo", str(toy.path), "--package", "seamtoy", "--good", "1.0.0",
               "--bad", "1.1.0", "--out", str(tmp_path / "out"), *extra])
    return rc, capsys.readouterr().out


@pytest.mark.parametrize("bad_at", range(1, 13))
def test_finds_the_seeded_commit_at_every_position(tmp_path, monkeypatch, capsys, bad_at):
    toy = make_toy_repo(tmp_path / "repo", bad_at=bad_at, broken_at=(), merge_at=3 if bad_at != 3 else None)
    monkeypatch.setattr(Prober, "_run_test", _fake_truth(toy, bad_at, set()))
    rc, out = _bisect_in_process(toy, tmp_path, monkeypatch, capsys)
    first_bad = toy.first_parent[bad_at]
    assert rc == 0 and f"first bad commit: {first_bad}" in out, out
    assert f"last good: {toy.first_parent[bad_at - 1]}" in out
    search = int(re.search(r"\((\d+) by the search", out).group(1))
    total = int(re.search(r"probes run: (\d+)", out).group(1))
    n = len(toy.first_parent) - 1
    assert search <= math.ceil(math.log2(n)), out
    assert total <= search + 2  # the bounds are confirmed only when the search never probed them


@pytest.mark.parametrize("bad_at, broken", [(9, {6}), (4, {6, 7}), (10, {6, 5, 7})])
def test_unbuildable_commits_are_skipped_and_routed_around(tmp_path, monkeypatch, capsys, bad_at, broken):
    toy = make_toy_repo(tmp_path / "repo", bad_at=bad_at, broken_at=(), merge_at=None)
    monkeypatch.setattr(Prober, "_run_test", _fake_truth(toy, bad_at, broken))
    rc, out = _bisect_in_process(toy, tmp_path, monkeypatch, capsys)
    assert rc == 0 and f"first bad commit: {toy.first_parent[bad_at]}" in out, out
    skips = int(re.search(r"skipped: (\d+)", out).group(1))
    search = int(re.search(r"\((\d+) by the search", out).group(1))
    assert search <= math.ceil(math.log2(len(toy.first_parent) - 1)) + skips, out
    assert "Failed to build" in out  # the skip says why


def test_a_skip_next_to_the_regression_is_named_not_guessed(tmp_path, monkeypatch, capsys):
    toy = make_toy_repo(tmp_path / "repo", bad_at=7, broken_at=(), merge_at=None)
    monkeypatch.setattr(Prober, "_run_test", _fake_truth(toy, 7, {6}))
    rc, out = _bisect_in_process(toy, tmp_path, monkeypatch, capsys)
    assert rc == 1 and "the first bad version is one of" in out
    assert toy.first_parent[6][:12] in out and toy.first_parent[7][:12] in out


def test_answers_are_cached_so_a_rerun_resumes(tmp_path, monkeypatch, capsys, toy):
    monkeypatch.setattr(Prober, "_run_test", _fake_truth(toy, 7, set()))
    rc, first = _bisect_in_process(toy, tmp_path, monkeypatch, capsys)
    assert rc == 0

    def boom(*_a):
        raise AssertionError("probed again")
    monkeypatch.setattr(Prober, "_run_test", boom)
    rc, again = _bisect_in_process(toy, tmp_path, monkeypatch, capsys)
    assert rc == 0 and "probes run: 0" in again and f"first bad commit: {toy.regression}" in again
    md = (tmp_path / "out" / "bisect-commits.md").read_text()
    assert f"`{toy.regression[:12]}`" in md and "(cached)" in md


def test_to_commit_goes_on_from_the_releases_into_their_commits(tmp_path, monkeypatch, capsys, toy):
    wheels = tmp_path / "simple" / "seamtoy"  # the release index: only file names are read when listing
    wheels.mkdir(parents=True)
    for v in ("0.9.0", "1.0.0", "1.1.0"):
        (wheels / f"seamtoy-{v}-py3-none-any.whl").write_bytes(b"")
    monkeypatch.setattr(Prober, "_run_test", _fake_truth(toy, 7, set()))
    monkeypatch.setenv("SEAMS_BISECT_CACHE", str(tmp_path / "cache"))
    rc = main(["bisect", CASE, "--package", "seamtoy", "--good", "0.9.0", "--bad", "1.1.0", "--index-url",
               wheels.parent.as_uri(), "--to-commit", "--repo", str(toy.path),
               "--out", str(tmp_path / "out"), "--markdown", str(tmp_path / "b.md")])
    out, err = capsys.readouterr()
    assert rc == 0 and "first bad: seamtoy 1.1.0; last good: seamtoy 1.0.0" in out
    assert "going on into the commits between seamtoy 1.0.0 and 1.1.0" in err
    assert f"first bad commit: {toy.regression}" in out
    md = (tmp_path / "b.md").read_text()  # what news files: the releases, then the commit
    assert md.index("first bad: seamtoy 1.1.0") < md.index(f"first bad commit: {toy.regression}")


@pytest.mark.parametrize("args, why", [
    (["--good", "1.0.0", "--bad", "7.7"], "no commit, tag seamtoy-v7.7 or v7.7"),
    (["--good", "1.1.0", "--bad", "1.0.0"], "not an ancestor"),
    (["--good", "1.0.0", "--bad", "1.1.0", "REPO=/nonexistent/repo"], "no such folder"),
    (["--good", "1.0.0", "--bad", "1.1.0", "--pair", "jaxlib"], "--pair 'jaxlib'"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, toy, capsys, args, why):
    # an option is given once (a second value is refused as ambiguous): REPO=PATH names the repository instead
    repo = next((a.removeprefix("REPO=") for a in args if a.startswith("REPO=")), str(toy.path))
    args = [a for a in args if not a.startswith("REPO=")]
    argv = ["bisect", CASE, "--commits", "--repo", repo, "--package", "seamtoy", "--out", str(tmp_path / "o"), *args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1, err
    assert not (tmp_path / "o" / "probes").exists()


def test_commits_need_a_repo(tmp_path, capsys):
    assert main(["bisect", CASE, "--commits", "--good", "1", "--bad", "2", "--out", str(tmp_path / "o")]) == 2
    assert "--commits needs --repo" in capsys.readouterr().err


def test_a_commit_without_a_jaxlib_for_it_is_a_skip_not_a_bad(tmp_path):
    from packaging.version import Version

    from tests.test_sources import _jax_repo

    shas = _jax_repo(tmp_path / "jax", [("0.5.4", "0.5.3"), ("0.9.0", "0.9.0")])
    base = Cell(name="bisect-cpu", device="cpu", pins={"jax": "0.5.3", "jaxlib": "0.5.3"})
    prober = CommitProber(base, "jax", str(tmp_path / "jax"), None, {}, jaxlib_versions=lambda: [Version("0.5.3")],
                          test_id=CASE, regress="fail", held={}, out_dir=tmp_path / "p")
    ok = prober.cell_for(shas[0])
    assert ok.pins["jaxlib"] == "0.5.3" and not ok.unresolved
    no = prober.cell_for(shas[1])
    assert "no released jaxlib in [0.9.0, 0.9.0]" in no.unresolved
    from harness.cells.envs import EnvError, ensure_env
    with pytest.raises(EnvError, match="cannot be probed"):  # the probe's env-error: a skip with this reason
        ensure_env(no)


# ---------------------------------------------------------------- real cells (uv, pytest in the env)

def _harness(tmp_path, *args, timeout=900):
    env = {**os.environ, "SEAMS_BISECT_CACHE": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=timeout)


@pytest.mark.e2e
def test_real_bisection_finds_the_seeded_commit_around_an_unbuildable_one(tmp_path):
    toy = make_toy_repo(tmp_path / "repo", bad_at=9, broken_at=(6,), merge_at=3)
    args = ["bisect", CASE, "--commits", "--repo", str(toy.path), "--package", "seamtoy", "--good", "1.0.0",
            "--bad", "1.1.0", "--out", str(tmp_path / "out")]
    proc = _harness(tmp_path, *args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"first bad commit: {toy.regression}" in proc.stdout
    assert f"last good: {toy.first_parent[8]}" in proc.stdout
    skips = int(re.search(r"skipped: (\d+)", proc.stdout).group(1))
    search = int(re.search(r"\((\d+) by the search", proc.stdout).group(1))
    assert skips == 1 and search <= math.ceil(math.log2(12)) + skips, proc.stdout
    assert re.search(rf"{toy.unbuildable[0][:12]} \S+ skip\s+env-error .*Failed to build `seamtoy`: pyproject.toml "
                     "does not parse", proc.stdout), proc.stdout
    assert "assert 7 == 6" in proc.stdout  # the error at the first bad commit
    again = _harness(tmp_path, *args)
    assert again.returncode == 0 and "probes run: 0" in again.stdout


@pytest.mark.e2e
def test_run_with_a_dirty_tree_names_it_and_a_tree_that_does_not_build_is_an_env_error(tmp_path):
    toy = make_toy_repo(tmp_path / "repo", bad_at=99, broken_at=(), merge_at=None)
    m = tmp_path / "m.yaml"
    m.write_text(f"schema: 1\ninclude:\n  - {{name: toy-cpu, pins: {{seamtoy: {{git: {toy.path}, ref: seamtoy-v1.1.0}}}}}}\n")
    (toy.path / "seamtoy" / "__init__.py").write_text((tmp_path / "repo" / "seamtoy" / "__init__.py").read_text()
                                                      .replace("2 * x", "2 * x + 1"))
    proc = _harness(tmp_path, "run", "--matrix", str(m), "--with", f"seamtoy={toy.path}", "--out", str(tmp_path / "o"),
                    "--xdist", "0", "--", CASE)
    assert proc.returncode == 1, proc.stderr[-3000:]  # the edit breaks the case: news
    assert "dirty" in proc.stderr
    records = [json.loads(x) for x in (tmp_path / "o" / "results" / "toy-cpu.jsonl").read_text().splitlines()]
    start = next(r for r in records if r["$report_type"] == "CellStart")
    assert start["sources"]["seamtoy"]["dirty"] is True and start["sources"]["seamtoy"]["sha"] == toy.first_parent[-1]
    info = next(r for r in records if r["$report_type"] == "RunInfo")
    assert "seamtoy" in json.dumps(info)
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert "dirty" in report["cells"][0]["pins"]["seamtoy"]
    assert report["cells"][0]["sources"]["seamtoy"]["location"] == str(toy.path)  # the run's record keeps the path
    md = (tmp_path / "o" / "report.md").read_text()  # the page shows its placeholder: no machine path
    assert f"(from &lt;seamtoy source&gt;@{toy.first_parent[-1][:12]} (dirty))" in md and str(toy.path) not in md
    # a tree that does not build: the cell's env-error, and no half-built env or export is left
    (toy.path / "pyproject.toml").write_text("[[[ not toml\n")
    envs = tmp_path / "envs"
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--matrix", str(m), "--with", f"seamtoy={toy.path}",
                           "--out", str(tmp_path / "o2"), "--xdist", "0", "--", CASE], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "SEAMS_ENVS_DIR": str(envs)}, timeout=600)
    assert proc.returncode == 1
    end = [json.loads(x) for x in (tmp_path / "o2" / "results" / "toy-cpu.jsonl").read_text().splitlines()][-1]
    assert end["status"] == "env-error" and "Failed to build `seamtoy`: pyproject.toml does not parse" in end["reason"], end
    assert not [p for p in envs.iterdir() if p.name.startswith(".tmp-")]


def test_news_goes_on_into_commits_where_a_repository_is_configured():
    from harness.nightly.filing import commit_args

    assert commit_args("jax", {}) == []
    assert commit_args("jax", {"SEAMS_REPO_JAX": "/src/jax"}) == ["--to-commit", "--repo=/src/jax"]  # a value, never an option
    assert commit_args("torchax", {"SEAMS_REPO_TORCHAX": "https://github.com/pytorch/xla", "SEAMS_SUBDIR_TORCHAX": "torchax"}) == [
        "--to-commit", "--repo=https://github.com/pytorch/xla", "--subdir=torchax"]
    assert commit_args("torch-xla", {"SEAMS_REPO_TORCH_XLA": "/src/xla"}) == []  # not pure Python


@pytest.mark.parametrize("reason, kept", [
    ("uv: Failed to build `seamtoy @ file:///x/seamtoy-1db3fb28ac92`", True),
    ("commit 1db3fb28ac92 cannot be probed: no released jaxlib in [0.9.0, 0.9.0]", True),
    ("jax==0.5.4+gc18139ba7b: import jax failed: RuntimeError: jaxlib version 0.5.3 is older than 0.6.0", True),
    ("jax==0.5.4+gc18139ba7b: import jax failed: MemoryError: ", False),
    ("uv: Failed to fetch: `https://pypi.org/simple/jaxlib/`", False),
    ("uv: Failed to build `jax @ file:///x`: Failed to fetch: `https://pypi.org/simple/setuptools/`", False),
])
def test_what_a_commit_cannot_do_is_a_fact_worth_caching(reason, kept):
    from harness.bisect.probe import definite

    assert definite(Answer("x", "skip", "env-error", reason=reason)) is kept


def test_ctrl_c_mid_bisection_then_a_rerun_resumes(tmp_path, monkeypatch, capsys, toy):
    truth = _fake_truth(toy, 7, set())
    done: list[str] = []

    def interrupted(self, cell, version):
        if len(done) == 2:
            raise KeyboardInterrupt  # Ctrl-C during the third probe
        done.append(version)
        return truth(self, cell, version)
    monkeypatch.setattr(Prober, "_run_test", interrupted)
    rc, _ = _bisect_in_process(toy, tmp_path, monkeypatch, capsys)
    assert rc == 130 and len(done) == 2
    again: list[str] = []

    def counted(self, cell, version):
        again.append(version)
        return truth(self, cell, version)
    monkeypatch.setattr(Prober, "_run_test", counted)
    rc, out = _bisect_in_process(toy, tmp_path, monkeypatch, capsys)
    assert rc == 0 and f"first bad commit: {toy.regression}" in out
    assert not set(again) & set(done), "the two finished probes were not run again"
    assert "cached answers reused: 2" in out


@pytest.mark.e2e
@pytest.mark.parametrize("broken, why", [
    ("packages", "package directory 'missing' does not exist"),
    ("setup.py", "No module named 'not_a_build_dependency'"),
])
def test_a_tree_whose_build_fails_says_why_in_one_line(tmp_path, monkeypatch, broken, why):
    from harness.cells.envs import EnvError, _build_wheel
    from tests.toyrepo import PYPROJECT

    monkeypatch.setenv("SEAMS_ENVS_DIR", str(tmp_path / "envs"))
    tree = tmp_path / "seamtoy-x"
    (tree / "seamtoy").mkdir(parents=True)
    (tree / "seamtoy" / "__init__.py").write_text("")
    pyproject = PYPROJECT.format(version="1.0.0")
    if broken == "packages":
        pyproject = pyproject.replace('["seamtoy"]', '["missing"]')
    else:
        (tree / "setup.py").write_text("import not_a_build_dependency\n")
    (tree / "pyproject.toml").write_text(pyproject)
    with pytest.raises(EnvError) as exc:
        _build_wheel("seamtoy", tree, tmp_path, lambda _m: None)
    assert exc.value.reason.startswith("Failed to build `seamtoy`: ") and why in exc.value.reason, exc.value.reason
    assert "\n" not in exc.value.reason
    assert not list((tmp_path / "envs").glob(".tmp-*"))  # the build env was kept whole or not at all


def test_a_commit_bisection_writes_the_issue_form_too(tmp_path, monkeypatch, capsys):
    """Issue 30: `bisect --commits` writes issue.md like a release bisection: a title that says what
    broke and since which commit, the bisection inside, no machine path in the rerun line."""
    toy = make_toy_repo(tmp_path / "repo", bad_at=5, broken_at=(), merge_at=3)
    monkeypatch.setattr(Prober, "_run_test", _fake_truth(toy, 5, set()))
    monkeypatch.setattr(sys, "argv", ["harness", "bisect", CASE, "--commits", "--repo", str(toy.path), "--package",
                                      "seamtoy", "--good", "1.0.0", "--bad", "1.1.0", "--out", str(tmp_path / "out")])
    rc, _out = _bisect_in_process(toy, tmp_path, monkeypatch, capsys)
    assert rc == 0
    issue = (tmp_path / "out" / "issue.md").read_text()
    first = issue.splitlines()[0]
    assert first.startswith("# test_double fails on seamtoy ") and f"since seamtoy commit {toy.first_parent[5][:12]}" in first
    assert "### Bisection" in issue and f"first bad commit: {toy.first_parent[5]}" in issue
    assert str(tmp_path) not in issue and "--repo '<repository checkout>'" in issue


def test_bisect_reports_are_one_set_an_earlier_ones_are_gone_and_a_symlink_is_refused_before_probing(
        tmp_path, monkeypatch, capsys):
    """Issue 31: bisect.md, bisect-commits.md and issue.md are switched into --out as one set (links into
    bisect-set/, as the report set): a commit bisection into the folder of an earlier release bisection
    leaves no bisect.md of that one; a symlink where a report goes is refused in one line before any probe,
    the file it points to untouched; --markdown naming one of the set's names is refused too."""
    from harness.bisect.cli import BISECT_SET

    toy = make_toy_repo(tmp_path / "repo", bad_at=5, broken_at=(), merge_at=3)
    out = tmp_path / "out"
    out.mkdir()
    (out / "bisect.md").write_text("an earlier release bisection's report")  # an earlier version's, in place
    monkeypatch.setattr(Prober, "_run_test", _fake_truth(toy, 5, set()))
    rc, _out = _bisect_in_process(toy, tmp_path, monkeypatch, capsys)
    assert rc == 0
    assert not (out / "bisect.md").exists(), "the earlier bisection's report is gone with its set"
    assert os.readlink(out / "bisect-commits.md") == f"{BISECT_SET}/bisect-commits.md"
    assert "first bad commit" in (out / "bisect-commits.md").read_text() and (out / "issue.md").is_file()

    precious = tmp_path / "precious"
    precious.write_text("keep me")
    (out / "issue.md").unlink()
    (out / "issue.md").symlink_to(precious)

    def boom(*_a):
        raise AssertionError("probed before the outputs were checked")
    monkeypatch.setattr(Prober, "_run_test", boom)
    argv = ["bisect", CASE, "--commits", "--repo", str(toy.path), "--package", "seamtoy", "--good", "1.0.0",
            "--bad", "1.1.0"]
    other = tmp_path / "other"
    for extra, says in ((["--out", str(out)], "issue.md: is a symlink"),
                        (["--out", str(other), "--markdown", str(other / "bisect.md")], "is one of the reports")):
        capsys.readouterr()
        rc = main([*argv, *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and says in err[0], err
        assert precious.read_text() == "keep me"
