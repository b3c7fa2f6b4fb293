"""A report set is replaced as a whole (issue 31): rendered into a fresh folder, then switched in by one
step; repros of an earlier report are gone; a failure while rendering leaves the previous set untouched; a
kill at any step leaves the old set or the new one, never a mix; a symlink or a special file where the set
goes is refused in one line and never followed."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness import faults, safeio
from harness.cli import main
from harness.report.command import SET_DIR, SET_ENTRIES
from tests.results_fixtures import PVARY, SHARD, case, cell_file, known_issues

SET = ("report.json", "report.html", "report.md", "junit.xml")


def _inputs(tmp_path: Path, name: str, raw: str) -> list[str]:
    """`harness report` arguments (less --out) of one cell whose two cases all end `raw` (fail: two repros)."""
    inputs = tmp_path / name
    inputs.mkdir(exist_ok=True)
    results = cell_file(inputs, "jax060-cpu", "0.6.0", [case(SHARD, raw, "boom"), case(PVARY, raw, "boom")])
    return ["report", str(results), "--expectations", str(known_issues(inputs, ""))]


def _report(tmp_path: Path, name: str, raw: str, out: Path) -> int:
    return main([*_inputs(tmp_path, name, raw), "--out", str(out)])


def _snapshot(out: Path) -> dict[str, bytes]:
    """Every file under out as stored (symlinks as their targets, never followed)."""
    snap = {}
    for p in sorted(out.rglob("*")):
        rel = str(p.relative_to(out))
        if p.is_symlink():
            snap[rel] = b"-> " + os.fsencode(os.readlink(p))
        elif p.is_file():
            snap[rel] = p.read_bytes()
    return snap


def _visible(out: Path, entries: dict[str, bool] = SET_ENTRIES) -> dict[str, bytes]:
    """What a reader sees through the names it uses (out/report.json, out/repro/...), symlinks followed."""
    seen = {}
    for name in entries:
        path = out / name
        if path.is_dir():
            seen.update({f"{name}/{p.relative_to(path)}": p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()})
        elif path.is_file():
            seen[name] = path.read_bytes()
    return seen


_STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")


def _norm(seen: dict[str, bytes]) -> dict[str, bytes]:
    return {k: _STAMP.sub(b"T", v) for k, v in seen.items()}


def test_repros_of_an_earlier_report_are_gone_and_nothing_is_left_staged(tmp_path):
    out = tmp_path / "out"
    assert _report(tmp_path, "a", "fail", out) == 1
    assert len(list((out / "repro").glob("*.md"))) == 2
    (out / SET_DIR / "repro" / "mine.txt").write_text("an earlier run's file")
    assert _report(tmp_path, "b", "pass", out) == 0
    assert list((out / "repro").iterdir()) == []  # the old set went as a whole
    assert sorted(p.name for p in out.iterdir()) == sorted([*SET, "repro", SET_DIR])  # no staging folder left
    for name in SET_ENTRIES:  # the names readers use are relative links into the set: a copied folder works
        assert os.readlink(out / name) == f"{SET_DIR}/{name}"


def test_a_set_written_before_sets_had_a_folder_is_adopted_and_replaced_whole(tmp_path):
    """The layout of earlier versions (regular files at out/report.json, a real out/repro/): replaced by the
    new set whole, its repros gone, nothing of it left beside."""
    out = tmp_path / "out"
    assert _report(tmp_path, "a", "fail", out) == 1
    legacy = tmp_path / "legacy"
    shutil.copytree(out / SET_DIR, legacy)  # what an earlier version left: the set's files at the top
    shutil.rmtree(out)
    shutil.copytree(legacy, out)
    (out / "repro" / "mine.txt").write_text("an earlier run's file")
    assert _report(tmp_path, "b", "pass", out) == 0
    assert list((out / "repro").iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == sorted([*SET, "repro", SET_DIR])
    assert all((out / n).is_symlink() for n in SET_ENTRIES)


@pytest.mark.parametrize("op", ["write", "rename", "fsync", "mkdir"])
def test_a_failure_while_rendering_leaves_the_previous_set_as_it_was(tmp_path, op, capsys):
    out = tmp_path / "out"
    assert _report(tmp_path, "a", "fail", out) == 1
    before = _snapshot(out)
    faults.arm(f"{op}:1")
    try:
        rc = _report(tmp_path, "b", "pass", out)
    finally:
        faults.arm(None)
    assert rc == 2 and capsys.readouterr().err.count("error:") >= 1
    assert _snapshot(out) == before, "a failed report changed the previous set"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def _killed_at(n: int, argv: list[str] | Callable[[], int], exchange: bool) -> int | None:
    """Run `harness argv` (or the function argv) in a forked child that SIGKILLs itself just before its n-th
    call that can change a file system (an audit event: open for writing, rename, unlink, mkdir, symlink,
    link, rmtree, a ctypes call such as renameat2); None if it got that far, else the exit status it
    finished with."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            mutating = {"os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod",
                        "os.truncate", "shutil.rmtree", "ctypes.call_function", "tempfile.mkstemp",
                        "tempfile.mkdtemp"}
            writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC
            seen = [0]

            def hook(event: str, args: tuple) -> None:
                if event == "open":
                    mode, flags = args[1], args[2]
                    if not ((isinstance(mode, str) and set(mode) & set("wax+")) or (isinstance(flags, int) and flags & writes)):
                        return
                elif event not in mutating:
                    return
                seen[0] += 1
                if seen[0] == n:
                    os.kill(os.getpid(), signal.SIGKILL)

            os.fsync = lambda fd: None  # durability is not what is tested here; fsyncs cost most of the time
            if not exchange:
                safeio._exchange = lambda a, b: False  # a kernel or file system without RENAME_EXCHANGE
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            sys.addaudithook(hook)
            rc = argv() if callable(argv) else main(argv)
        except BaseException:  # noqa: BLE001 - a forked child must never unwind into pytest
            rc = 99
        os._exit(rc)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return None
    return os.WEXITSTATUS(status)


@pytest.mark.parametrize("start,exchange", [("set", True), ("set", False), ("legacy", True), ("none", True)])
def test_a_kill_at_any_step_of_report_leaves_the_old_set_or_the_new_one_never_a_mix(tmp_path, start, exchange):
    """Kill `harness report` before each of its calls that can change a file system, in turn (every one
    until it finishes): what a reader sees through out/report.json, out/repro/... is exactly the previous
    set or exactly the new one (with no RENAME_EXCHANGE, also possibly no set at all, the old kept aside),
    and the next report leaves the new set and no leftover of the killed one."""
    template = tmp_path / "template"
    if start != "none":
        assert _report(tmp_path, "a", "fail", template) == 1
    if start == "legacy":  # an earlier version's layout: the set's files at the top
        shutil.copytree(template / SET_DIR, tmp_path / "legacy")
        shutil.rmtree(template)
        shutil.copytree(tmp_path / "legacy", template)
    if start == "none":
        template.mkdir()
    argv = _inputs(tmp_path, "b", "pass")

    states = _kill_at_every_step(tmp_path, template, lambda out: [*argv, "--out", str(out)], SET_ENTRIES, exchange)
    new = states.pop()
    assert not any(k.startswith("repro/") for k in new)
    print(f"{start}, exchange={exchange}: killed at {len(states)} steps: {states}")


def _kill_at_every_step(tmp_path: Path, template: Path, command: Callable[[Path], list[str] | Callable[[], int]],
                        entries: dict[str, bool], exchange: bool, rc_done: int = 0) -> list:
    """Kill `command(out)` (harness argv, or a function) on a copy of template before each of its calls that
    can change a file system, in turn, every one until it finishes: what a reader sees through the names of
    `entries` is exactly the previous set or exactly the new one (with no RENAME_EXCHANGE, also possibly
    none, the old kept aside), and the next run leaves the new set and no leftover of the killed one.
    Returns the state after each kill ("old", "new", "none"), then what the new set holds."""
    old = _visible(template, entries)
    reference = tmp_path / "reference"
    shutil.copytree(template, reference, symlinks=True)
    assert _killed_at(10**9, command(reference), exchange) == rc_done
    new = _norm(_visible(reference, entries))
    assert new and new != _norm(old)

    allowed = {"old": _norm(old), "new": new, **({} if exchange else {"none": {}})}
    states = []
    for n in range(1, 400):
        out = tmp_path / f"k{n}"
        shutil.copytree(template, out, symlinks=True)
        rc = _killed_at(n, command(out), exchange)
        if rc is not None:  # it finished before its n-th call: every step has been killed once
            assert rc == rc_done and _norm(_visible(out, entries)) == new
            break
        seen = _norm(_visible(out, entries))
        state = next((k for k, v in allowed.items() if v == seen), None)
        assert state is not None, f"killed at step {n}: a mix of sets: {sorted(seen)}"
        if n % 3 == 0 or not states or state != states[-1]:  # the next run recovers (a third of the steps:
            # CI time; every step where the state changed)
            assert _killed_at(10**9, command(out), exchange) == rc_done, f"the run after a kill at step {n}"
            assert _norm(_visible(out, entries)) == new
            assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")], f"left over after a kill at step {n}"
        states.append(state)
        shutil.rmtree(out)
    else:
        pytest.fail("the command never finished")
    # The kills covered both sides of the switch: the old set until it, the new one after.
    assert states[0] in ("old", "none") and states[-1] == "new", states
    assert states.count("new") >= 1 and sorted(set(states)) == sorted(set(states) & set(allowed))
    return [*states, new]


def _nights(tmp_path: Path) -> list[str]:
    """Four past report.json files (tests/test_history.py's nights)."""
    import json

    from tests.test_history import NIGHTS

    paths = []
    for i, night in enumerate(NIGHTS):
        path = tmp_path / f"night{i}.json"
        path.write_text(json.dumps(night))
        paths.append(str(path))
    return paths


@pytest.mark.parametrize("start,exchange", [("set", True), ("set", False), ("legacy", True)])
def test_a_kill_at_any_step_of_history_leaves_the_old_page_set_or_the_new_one(tmp_path, start, exchange):
    """`harness history` switches its page folder (history.json, history.md, report.html) in whole, like
    the report set: killed before any of its file system calls, the pages a reader sees are all the old
    ones or all the new ones; an earlier version's pages (regular files) are adopted, then replaced."""
    from harness.report.history import HISTORY_ENTRIES, HISTORY_SET

    nights = _nights(tmp_path)
    template = tmp_path / "template"
    assert main(["history", *nights[:2], "--out", str(template)]) == 0
    if start == "legacy":  # an earlier version wrote the pages in place, as regular files
        for name in HISTORY_ENTRIES:
            target = (template / name).resolve()
            (template / name).unlink()
            shutil.copy(target, template / name)
        shutil.rmtree(template / HISTORY_SET)
    states = _kill_at_every_step(tmp_path, template, lambda out: ["history", *nights, "--out", str(out)],
                                 HISTORY_ENTRIES, exchange)
    print(f"history from {start}, exchange={exchange}: killed at {len(states) - 1} steps: {states[:-1]}")


def _reduced_set(tmp_path: Path, out: Path, reduced: dict[str, str | None], merge: bool = True) -> Callable[[], int]:
    """What `harness reduce` does once its scripts are reduced: write_reductions for the report set in out,
    `reduced` saying, per repro script (by its index in name order), the reduced text or None (refused)."""
    from harness.reduce.batch import Job, Outcome, recover_set, sorted_jobs, write_reductions

    def run() -> int:
        recover_set(out / "repro" / "any.py")  # what `harness reduce` does first
        scripts = [p for p in sorted((out / "repro").glob("*.py")) if not p.name.endswith(".min.py")]
        jobs = sorted_jobs([Job(out / "repro" / p.name, "jax060-cpu") for p in scripts])
        order = [p.name for p in scripts]
        outcomes = []
        for job in jobs:
            text = reduced.get(str(order.index(job.script.name)))
            source = job.script.read_text()
            outcomes.append(Outcome(job.script.name, job.cell, len(source.splitlines()), text=text, source=source,
                                    lines_after=None if text is None else len(text.splitlines()),
                                    refused=None if text is not None else "does not fail"))
        write_reductions(jobs, outcomes, merge=merge, say=lambda _m: None)
        return 0
    return run


@pytest.mark.parametrize("start,exchange", [("set", True), ("set", False), ("legacy", True)])
def test_a_kill_at_any_step_of_reduce_leaves_the_old_repro_set_or_the_new_one(tmp_path, start, exchange):
    """`harness reduce` adds CASE.min.py, reduce.json and the CASE.md showing it as a new report set, switched
    in whole: killed before any of its file system calls, a reader sees the old set or the new one; a script
    reduced again and refused loses its earlier CASE.min.py (and its CASE.md the reduced script)."""
    template = tmp_path / "template"
    assert _report(tmp_path, "a", "fail", template) == 1
    assert _reduced_set(tmp_path, template, {"0": "raise SystemExit('first, reduced')\n"})() == 0
    first = sorted(p.name for p in (template / "repro").iterdir())
    assert len([n for n in first if n.endswith(".min.py")]) == 1 and "reduce.json" in first
    if start == "legacy":
        shutil.copytree(template / SET_DIR, tmp_path / "legacy")
        shutil.rmtree(template)
        shutil.copytree(tmp_path / "legacy", template)
    states = _kill_at_every_step(tmp_path, template, lambda out: _reduced_set(
        tmp_path, out, {"0": None, "1": "raise SystemExit('second, reduced')\n"}), SET_ENTRIES, exchange)
    new = states.pop()
    mins = [k for k in new if k.endswith(".min.py")]
    assert len(mins) == 1 and new[mins[0]] == b"raise SystemExit('second, reduced')\n", "the first one's is gone"
    md = {k: v for k, v in new.items() if k.endswith(".md")}
    assert sum(b"second, reduced" in v for v in md.values()) == 1 and not any(b"first, reduced" in v for v in md.values())
    print(f"reduce from {start}, exchange={exchange}: killed at {len(states)} steps: {states}")


def test_reduce_writes_into_the_set_never_through_a_symlink_and_not_over_a_newer_report(tmp_path, capsys):
    """A symlink where CASE.min.py goes is replaced in the new set, not followed; a report that replaced
    the set while reduce ran is kept, reduce saying so in one line."""
    from harness.errors import UserError

    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere.py"
    assert _report(tmp_path, "a", "fail", out) == 1
    elsewhere.write_text("not the harness's")
    name = sorted(p.name for p in (out / "repro").glob("*.py"))[0]
    small = name.removesuffix(".py") + ".min.py"
    (out / SET_DIR / "repro" / small).symlink_to(elsewhere)
    assert _reduced_set(tmp_path, out, {"0": "raise SystemExit(1)\n"})() == 0
    assert elsewhere.read_text() == "not the harness's"
    assert (out / "repro" / small).read_text() == "raise SystemExit(1)\n"
    assert not (out / SET_DIR / "repro" / small).is_symlink()

    run = _reduced_set(tmp_path, out, {"0": "raise SystemExit(2)\n"})
    from harness import safeio as s

    real = s.copy_visible

    def a_report_lands_meanwhile(*args, **kwargs):
        real(*args, **kwargs)
        assert _report(tmp_path, "b", "pass", out) == 0
    s.copy_visible = a_report_lands_meanwhile
    try:
        with pytest.raises(UserError, match="replaced the outputs there"):
            run()
    finally:
        s.copy_visible = real
    assert list((out / "repro").iterdir()) == [], "the newer report is kept"


@pytest.mark.parametrize("what", ["symlink-dir", "symlink-file", "file", "fifo", "symlink-set", "file-set",
                                  "foreign-link"])
def test_a_symlink_or_special_file_in_the_set_is_refused_never_followed(tmp_path, what, capsys):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "keep.md").write_text("not the harness's")
    if what == "symlink-dir":
        (out / "repro").symlink_to(elsewhere)
    elif what == "symlink-file":
        (out / "report.md").symlink_to(elsewhere / "keep.md")
    elif what == "file":
        (out / "repro").write_text("a file where repro/ goes")
    elif what == "fifo":
        os.mkfifo(out / "report.html")
    elif what == "symlink-set":  # the set folder itself a symlink elsewhere: never written through
        (out / SET_DIR).symlink_to(elsewhere)
    elif what == "file-set":
        (out / SET_DIR).write_text("a file where the set goes")
    else:  # a link that looks like ours but is not: relative, elsewhere
        (out / "report.json").symlink_to(os.path.relpath(elsewhere / "keep.md", out))
    before = _snapshot(out)
    assert _report(tmp_path, "a", "fail", out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:"), err
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.md"]
    assert (elsewhere / "keep.md").read_text() == "not the harness's"
    assert _snapshot(out) == before, "left as it was"
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_a_leftover_of_a_live_report_is_kept_and_of_a_dead_one_removed(tmp_path):
    """Two reports into one folder at once each keep their staging folder; a killed one's goes."""
    out = tmp_path / "out"
    out.mkdir()
    live = out / f".{SET_DIR}.{os.getpid()}.abc.tmp"
    live.mkdir()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)  # a pid that is gone now
    dead = out / f".{SET_DIR}.{pid}.abc.tmp"
    dead.mkdir()
    (dead / "link").symlink_to(tmp_path)  # removed without following
    assert _report(tmp_path, "a", "fail", out) == 1
    assert live.is_dir() and not dead.exists() and tmp_path.is_dir()


def test_reduce_refuses_a_symlink_where_its_outputs_go_before_reducing_anything(tmp_path, capsys, monkeypatch):
    """A symlink in the set's place (here OUT/report.md pointing elsewhere), or where CASE.min.py goes beside a
    script outside any report: one line, exit 2, before the first candidate runs (reductions take hours)."""
    import harness.reduce.batch as batch

    def never(*_a, **_k):
        raise AssertionError("reduced before the outputs were checked")
    monkeypatch.setattr(batch, "reduce_jobs", never)
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere.md"
    assert _report(tmp_path, "a", "fail", out) == 1
    elsewhere.write_text("not the harness's")
    script = sorted((out / "repro").glob("*.py"))[0]
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(elsewhere)
    loose = tmp_path / "loose" / script.name
    loose.parent.mkdir()
    loose.write_text(script.read_text())
    (loose.parent / (script.name.removesuffix(".py") + ".min.py")).symlink_to(elsewhere)
    for target, says in ((script, "report.md: is a symlink"), (loose, ".min.py: is a symlink")):
        capsys.readouterr()
        assert main(["reduce", str(target), "--passes-in", "jax053-cpu"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and says in err[0], err
    assert elsewhere.read_text() == "not the harness's"


def _news_nights(tmp_path: Path, items: int) -> tuple[str, str]:
    """An old and a new report.json with `items` news items (tests/test_filing.py's nights)."""
    import json

    from tests.test_filing import _night

    cases = [f"suites/a.py::test_{i}" for i in range(items)]
    old, new = tmp_path / f"old{items}.json", tmp_path / f"new{items}.json"
    old.write_text(json.dumps(_night(1, "0.6.0", {c: "pass" for c in cases})))
    new.write_text(json.dumps(_night(2, "0.7.2", {c: "fail" for c in cases})))
    return str(old), str(new)


def test_news_replaces_its_items_as_a_whole_and_removes_the_folders_earlier_versions_left(tmp_path):
    """`news --out` writes the night's items (itemN/issue.md) as one set, OUT/news-set/: a night with fewer
    items leaves no item of the last one; the per-night `news-XXXXXXXX` folders earlier versions made (one
    more each night, never removed) are gone, anything else in --out stays."""
    from harness.nightly.filing import NEWS_SET

    out = tmp_path / "news"
    (out / "news-abc_1234" / "item1").mkdir(parents=True)  # an earlier version's night
    (out / "news-abc_1234" / "item1" / "issue.md").write_text("old")
    (out / "news-notmine").mkdir()  # not the shape mkdtemp gave: not news's
    (out / "mine.txt").write_text("kept")
    assert main(["news", *_news_nights(tmp_path, 3), "--no-bisect", "--dry-run", "--out", str(out)]) == 0
    assert sorted(p.name for p in (out / NEWS_SET).iterdir()) == ["item1", "item2", "item3"]
    assert main(["news", *_news_nights(tmp_path, 2), "--no-bisect", "--dry-run", "--out", str(out)]) == 0
    assert sorted(p.name for p in (out / NEWS_SET).iterdir()) == ["item1", "item2"]
    assert sorted(p.name for p in out.iterdir()) == sorted([NEWS_SET, "news-notmine", "mine.txt"])


@pytest.mark.parametrize("exchange", [True, False])
def test_a_kill_at_any_step_of_news_leaves_the_old_item_set_or_the_new_one(tmp_path, exchange):
    """news killed before each of its file system calls: OUT/news-set/ is the previous night's items or
    tonight's, never a mix (without RENAME_EXCHANGE, also none, put back by the next run)."""
    from harness.nightly.filing import NEWS_SET

    template = tmp_path / "template"
    assert main(["news", *_news_nights(tmp_path, 3), "--no-bisect", "--dry-run", "--out", str(template)]) == 0
    night = _news_nights(tmp_path, 2)
    states = _kill_at_every_step(tmp_path, template,
                                 lambda out: ["news", *night, "--no-bisect", "--dry-run", "--out", str(out)],
                                 {NEWS_SET: True}, exchange)
    print(f"news, exchange={exchange}: killed at {len(states) - 1} steps: {states[:-1]}")
