"""`harness news`: news items, bisect bounds, dry-run output, and idempotent filing through a fake gh."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.paths import REPO
from harness.nightly.filing import bisect_bounds, marker, news_items

A, B, C = "suites/a.py::test_a", "suites/b.py::test_b", "suites/c.py::test_c"


def _night(day: int, jax: str, results: dict[str, str]) -> dict:
    verdict = {"pass": "ok", "fail": "regression", "crash": "crash", "kfail": "known-bug"}
    raw = {"kfail": "fail"}
    return {"schema_version": 1, "generated_at": f"2026-11-{day:02d}T03:00:00+00:00", "counts": {}, "errors": [],
            "cells": [{"cell": "jaxlatest-cpu", "device": "cpu", "status": "complete", "reason": "", "verdict": "complete",
                       "pins": {"jax": jax, "jaxlib": jax}, "install_line": f"pip install jax=={jax} jaxlib=={jax}",
                       "versions": {"jax": jax, "jaxlib": jax, "numpy": "2.0.0"}, "devices": {}, "python": "3.11",
                       "platform": "linux", "run_env": {"JAX_PLATFORMS": "cpu"}, "counts": {},
                       "stale_expectations": [], "expectation": None}],
            "cases": [{"id": case, "family": "x", "results": {"jaxlatest-cpu": {
                "raw": raw.get(o, o), "verdict": verdict[o], "message": "boom" if o != "pass" else None,
                "observations": {}, "expectation": None, "signal": "SIGABRT" if o == "crash" else None}}}
                for case, o in results.items()]}


OLD = _night(1, "0.6.0", {A: "pass", B: "fail"})
NEW = _night(2, "0.7.2", {A: "fail", B: "pass", C: "crash"})


def test_news_items_and_stable_markers():
    items = news_items(OLD, NEW)
    assert {(i["case"], i["kind"]) for i in items} == {(A, "regression"), (B, "fixed"), (C, "crash")}
    again = news_items(OLD, NEW)
    assert [marker(i) for i in items] == [marker(i) for i in again]
    assert len({marker(i) for i in items}) == 3


def test_bisect_bounds_are_the_versions_that_moved():
    assert bisect_bounds(OLD, NEW, "jaxlatest-cpu") == ("jax", "0.6.0", "0.7.2")
    assert bisect_bounds(OLD, OLD, "jaxlatest-cpu") is None


def _write(tmp: Path) -> tuple[Path, Path]:
    (tmp / "old.json").write_text(json.dumps(OLD))
    (tmp / "new.json").write_text(json.dumps(NEW))
    return tmp / "old.json", tmp / "new.json"


def _cli(tmp: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    old, new = _write(tmp)
    return subprocess.run([sys.executable, "-m", "harness", "news", str(old), str(new), "--no-bisect",
                           "--out", str(tmp / "news"), *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def test_dry_run_prints_each_issue_and_calls_no_gh(tmp_path):
    proc = _cli(tmp_path, "--dry-run", env={"SEAMS_GH": str(tmp_path / "no-such-gh")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("--- would open or update the issue marked <!-- xla-seams-news:") == 3
    # the title says what broke and where; the body is harness.report.issue_body's form
    assert "title: [xla-seams] regression: test_a fails on jax 0.7.2, jaxlib 0.7.2 (cpu)" in proc.stdout
    assert "moved since the previous run: jax 0.6.0 -> 0.7.2, jaxlib 0.6.0 -> 0.7.2" in proc.stdout
    assert "### Reproduce" in proc.stdout and "pip install jax==0.7.2 jaxlib==0.7.2 'pytest>=8'" in proc.stdout
    first = proc.stdout.split("--- would open")[1]
    assert first.count("boom") == 1  # the message once


def test_max_bounds_the_items(tmp_path):
    proc = _cli(tmp_path, "--dry-run", "--max", "1")
    assert proc.stdout.count("--- would open") == 1 and proc.stdout.count("not filed (over --max)") == 2


FAKE_GH = r'''#!/usr/bin/env python3
"""A fake gh: records every call, keeps issues in a JSON file."""
import json, os, sys
state_path, log_path = os.environ["FAKE_GH_STATE"], os.environ["FAKE_GH_LOG"]
with open(log_path, "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
issues = json.load(open(state_path)) if os.path.exists(state_path) else []
args = sys.argv[1:]
def opt(name):
    return args[args.index(name) + 1]
if args[:2] == ["issue", "list"]:
    print(json.dumps([{"number": i["number"], "state": i["state"], "body": i["body"]} for i in issues]))
elif args[:2] == ["issue", "create"]:
    n = len(issues) + 1
    issues.append({"number": n, "state": "OPEN", "title": opt("--title"), "body": open(opt("--body-file")).read()})
    print(f"https://github.com/o/r/issues/{n}")
elif args[:2] == ["issue", "edit"]:
    i = issues[int(args[2]) - 1]
    i["title"], i["body"] = opt("--title"), open(opt("--body-file")).read()
elif args[:2] == ["issue", "reopen"]:
    issues[int(args[2]) - 1]["state"] = "OPEN"
json.dump(issues, open(state_path, "w"))
'''


def test_second_run_updates_never_duplicates(tmp_path):
    gh = tmp_path / "bin" / "gh"
    gh.parent.mkdir()
    gh.write_text(FAKE_GH)
    gh.chmod(0o755)
    env = {"PATH": f"{gh.parent}{os.pathsep}{os.environ['PATH']}", "FAKE_GH_STATE": str(tmp_path / "issues.json"),
           "FAKE_GH_LOG": str(tmp_path / "calls.log")}
    first = _cli(tmp_path, "--repo", "o/r", env=env)
    assert first.returncode == 0, first.stderr
    issues = json.loads((tmp_path / "issues.json").read_text())
    assert len(issues) == 3 and all(i["body"].startswith("<!-- xla-seams-news:") for i in issues)
    issues[0]["state"] = "CLOSED"  # a maintainer closed one; the same news again reopens it
    (tmp_path / "issues.json").write_text(json.dumps(issues))
    second = _cli(tmp_path, "--repo", "o/r", env=env)
    assert second.returncode == 0, second.stderr
    after = json.loads((tmp_path / "issues.json").read_text())
    assert len(after) == 3 and after[0]["state"] == "OPEN"
    calls = [json.loads(line) for line in (tmp_path / "calls.log").read_text().splitlines()]
    assert sum(c[:2] == ["issue", "create"] for c in calls) == 3
    assert sum(c[:2] == ["issue", "edit"] for c in calls) == 3
    assert all(c[-1] == "--repo=o/r" for c in calls)  # --opt=VALUE: a value never read as an option
    assert ["issue", "reopen", "1", "--repo=o/r"] in calls


def test_without_gh_it_says_so_in_one_line(tmp_path):
    proc = _cli(tmp_path, env={"SEAMS_GH": str(tmp_path / "no-such-gh")})
    assert proc.returncode == 2 and "gh (the GitHub CLI) is not on PATH" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_bisection_over_budget_is_ended_with_its_children(tmp_path, monkeypatch):
    import time

    import harness.nightly.filing as filing

    pidfile = tmp_path / "child.pid"
    # Stand-in for `harness bisect`: starts a child that would outlive a plain kill, then hangs.
    script = (f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
              f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    monkeypatch.setattr(filing.sys, "executable", sys.executable)
    real_popen = subprocess.Popen
    monkeypatch.setattr(filing.subprocess, "Popen",
                        lambda argv, **kw: real_popen([sys.executable, "-c", script], **kw))
    item = {"case": A, "cell": "jaxlatest-cpu", "kind": "regression"}
    t = time.monotonic()
    text = filing.bisect_item(item, OLD, NEW, budget_s=3, out=tmp_path)
    assert "did not finish within 3 s" in text and time.monotonic() - t < 30
    child = int(pidfile.read_text())
    time.sleep(0.5)
    alive = Path(f"/proc/{child}").exists() and "Z" not in Path(f"/proc/{child}/stat").read_text().split()[2]
    assert not alive, "the bisection's own children are ended with it"


def record_bisect_argvs(monkeypatch) -> list[list[str]]:
    """Stand in for the bisection process news starts: each argv is recorded, nothing runs."""
    import harness.nightly.filing as filing

    seen: list[list[str]] = []

    class Done:
        returncode = 0

        def __init__(self, argv, **kw):
            seen.append(argv)

        def communicate(self, timeout=None):
            return "", ""

    monkeypatch.setattr(filing.subprocess, "Popen", Done)
    return seen


def test_commits_flag_reaches_the_bisection_and_overrides_the_environment(tmp_path, monkeypatch):
    import harness.nightly.filing as filing

    seen = record_bisect_argvs(monkeypatch)
    monkeypatch.setenv("SEAMS_REPO_JAX", "/from/env")
    item = {"case": A, "cell": "jaxlatest-cpu", "kind": "regression"}
    filing.bisect_item(item, OLD, NEW, budget_s=30, out=tmp_path,
                       commits=filing.parse_commits(["jax=https://github.com/jax-ml/jax"]))
    assert seen[-1][-4:] == ["--to-commit", "--repo=https://github.com/jax-ml/jax", "--", A]  # the id after `--`
    filing.bisect_item(item, OLD, NEW, budget_s=30, out=tmp_path)  # no flag: the variable still works
    assert seen[-1][-4:] == ["--to-commit", "--repo=/from/env", "--", A]


def test_commits_values_parse_or_fail_in_one_line():
    from harness.errors import UserError
    from harness.nightly.filing import parse_commits

    assert parse_commits(["jax=../jax", "TORCHAX=https://github.com/pytorch/xla#torchax"]) == {
        "jax": ("../jax", ""), "torchax": ("https://github.com/pytorch/xla", "torchax")}
    for bad in ["jax", "=../jax", "jax=", "jax= ", "torch=../pytorch", "torch_xla=../xla", "jaxlib=../jax",
                "flax=../flax", "torchax=../xla#/abs", "torchax=../xla#../up"]:
        try:
            parse_commits([bad])
        except UserError as exc:
            assert "\n" not in str(exc) and bad.split("=")[0].strip() in str(exc) or "--commits" in str(exc)
        else:
            raise AssertionError(f"accepted {bad!r}")
    try:
        parse_commits(["jax=a", "jax=b"])
    except UserError as exc:
        assert "twice" in str(exc)
    else:
        raise AssertionError("accepted jax twice")


def test_a_bad_commits_value_is_one_line_from_the_cli(tmp_path):
    proc = _cli(tmp_path, "--dry-run", "--commits", "torch=../pytorch")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "commits can be bisected for jax, torchax" in proc.stderr, proc.stderr


def _source_night(day: int, sha: str, results: dict[str, str]) -> dict:
    """A night whose jax was built from a commit of a checkout (pins carry the commit's version)."""
    night = _night(day, f"0.8.2.dev202611{day:02d}+g{sha[:10]}", results)
    night["cells"][0]["pins"]["jaxlib"] = night["cells"][0]["versions"]["jaxlib"] = "0.8.1"
    night["cells"][0]["sources"] = {"jax": {"kind": "git", "location": "/src/jax", "sha": sha, "version": "0.8.2"}}
    return night


def test_a_night_built_from_source_is_bisected_over_its_commits(tmp_path, monkeypatch):
    """Issue 30: a source-built night's jax is no release on the index: news bisects the commits between
    last night's SHA and tonight's (in the configured repository, else the cell's own), pairing
    tonight's jaxlib."""
    import harness.nightly.filing as filing

    seen = record_bisect_argvs(monkeypatch)
    monkeypatch.delenv("SEAMS_REPO_JAX", raising=False)
    old, new = _source_night(1, "a" * 40, {A: "pass"}), _source_night(2, "b" * 40, {A: "fail"})
    assert filing.commit_bounds(old, new, "jaxlatest-cpu")[:3] == ("jax", "a" * 40, "b" * 40)
    item = {"case": A, "cell": "jaxlatest-cpu", "kind": "regression"}
    # issue 31: the repository recorded in the report is data; it is used only where matrices/ declares it
    md = filing.bisect_item(item, old, new, budget_s=30, out=tmp_path)
    assert not seen and md.startswith("Not bisected: the report says which repository jax was built from")
    monkeypatch.setattr(filing, "_declared_location", lambda cell, pkg: "/src/jax" if (cell, pkg) == ("jaxlatest-cpu", "jax") else None)
    filing.bisect_item(item, old, new, budget_s=30, out=tmp_path)
    argv = seen[-1]
    at = argv.index("--commits")
    assert argv[at:at + 4] == ["--commits", "--repo=/src/jax", "--good=" + "a" * 40, "--bad=" + "b" * 40]
    assert argv[-2:] == ["--", A]  # the test id after --: never an option
    assert "--pair=jaxlib==0.8.1" in argv and "--to-commit" not in argv
    filing.bisect_item(item, old, new, budget_s=30, out=tmp_path,
                       commits=filing.parse_commits(["jax=https://github.com/jax-ml/jax"]))
    assert seen[-1][at:at + 2] == ["--commits", "--repo=https://github.com/jax-ml/jax"]
    # the same commit both nights: nothing moved by commit; the release rule decides (here: none moved)
    assert filing.commit_bounds(old, old, "jaxlatest-cpu") is None


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_news_stops_its_bisections_before_saying_so_and_nothing_writes_afterwards(tmp_path, sig):
    """Ctrl-C or SIGTERM while a bisection runs: the bisection, its probes and what they left (here a
    setsid'ed writer with an empty environment, standing in for a probe writing the bisect cache) are
    gone before `news` says it was interrupted; the cache file grows no more after it exits."""
    from tests.test_data_stays_data import base_reports

    old, new = base_reports()
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "new.json").write_text(json.dumps(new))
    cache, started = tmp_path / "cache.log", tmp_path / "started"
    writer = (f"import os, time\nif os.fork() == 0:\n    os.setsid()\n    open({str(started)!r}, 'w').close()\n"
              f"    while True:\n        open({str(cache)!r}, 'a').write('x')\n        time.sleep(0.02)\n"
              "time.sleep(600)\n")
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import subprocess, sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"  # this checkout's harness, not an installed one
        "import harness.nightly.filing as filing\n"
        "real = subprocess.Popen\n"
        f"filing.subprocess.Popen = lambda argv, **kw: real([sys.executable, '-I', '-c', {writer!r}], **{{**kw, 'env': {{}}}})\n"
        "from harness.cli import main\n"
        f"sys.exit(main(['news', {str(tmp_path / 'old.json')!r}, {str(tmp_path / 'new.json')!r}, '--dry-run', "
        f"'--out', {str(tmp_path / 'news')!r}]))\n")
    proc = subprocess.Popen([sys.executable, str(driver)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 60
    while not (started.exists() and cache.exists()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cache.exists(), "the stand-in bisection never started"
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert err.strip().splitlines()[-1].startswith(f"interrupted ({signal.Signals(sig).name}): every child process was stopped")
    size = cache.stat().st_size
    time.sleep(0.5)
    assert cache.stat().st_size == size, "something the bisection started still writes after news said it stopped"
