"""`harness reduce -j N` / `report --reduce -j N`: the batch shared out to N processes comes back whole,
in the batch's order, each script reduced once; a part never mixes cells or import sets (each part
starts its own fork servers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import main
from harness.reduce.batch import Job, parts_for_workers, reduce_jobs, sorted_jobs
from harness.reduce.server import heavy_imports
from harness.reduce.shared import _key

_IMPORTS = ("import jax\n", "import torch\nimport jax\n", "import numpy\n")


def _jobs(tmp: Path, spec: list[tuple[int, int]]) -> list[Job]:
    """One script per (cell number, import set number), in cells that do not exist (no env is built)."""
    jobs = []
    for i, (cell, imports) in enumerate(spec):
        script = tmp / f"s{i}.py"
        script.write_text(_IMPORTS[imports] + f"assert {i} < 0\n")
        jobs.append(Job(script, f"nocell{cell}-cpu"))
    return jobs


@settings(max_examples=60, deadline=None)
@given(spec=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=30), workers=st.integers(1, 6))
def test_parts_cover_the_batch_once_in_order_and_never_mix_cells_or_imports(tmp_path_factory, spec, workers):
    ordered = sorted_jobs(_jobs(tmp_path_factory.mktemp("w"), spec))
    parts = parts_for_workers(ordered, workers)
    flat = [j for p in parts for j in p]
    assert sorted(map(id, flat)) == sorted(map(id, ordered))  # every job exactly once
    position = {id(j): i for i, j in enumerate(ordered)}
    most = -(-len(ordered) // workers) if ordered else 0
    for part in parts:
        assert part and [position[id(j)] for j in part] == sorted(position[id(j)] for j in part)
        if workers > 1:
            assert len({(j.cell, tuple(heavy_imports(j.script.read_text()))) for j in part}) == 1
            assert len(part) <= most
    assert [len(p) for p in parts] == sorted((len(p) for p in parts), reverse=True)  # largest first
    if workers == 1:
        assert parts == ([ordered] if ordered else [])


def test_one_cell_of_many_scripts_is_shared_out():
    """A default run's op scripts are hundreds in one cell: -j 2 must give both processes some."""
    jobs = [Job(Path(f"/nonexistent/s{i}.py"), "one-cpu") for i in range(9)]
    assert [len(p) for p in parts_for_workers(sorted_jobs(jobs), 2)] == [5, 4]


def test_workers_give_the_same_outcomes_in_the_same_order(tmp_path):
    """Real processes (spawned): scripts of cells that do not exist are each refused as 'cannot run in
    CELL', the same with two workers as with one, in sorted_jobs order."""
    jobs = _jobs(tmp_path, [(0, 0), (1, 1), (0, 0), (2, 2), (1, 1)])
    one = reduce_jobs(jobs, 5, say=lambda m: None)
    two = reduce_jobs(jobs, 5, say=lambda m: None, workers=2)
    assert [o.script for o in one] == [j.script.name for j in sorted_jobs(jobs)]
    assert [(o.script, o.cell, o.refused) for o in two] == [(o.script, o.cell, o.refused) for o in one]
    assert all(o.refused and "cannot run in nocell" in o.refused for o in two)


@pytest.mark.parametrize("argv", [["reduce", "x.py", "-j", "0"], ["reduce", "x.py", "-j", "65"],
                                  ["reduce", "x.py", "-j", "٣"], ["reduce", "x.py", "-j", "9" * 5000],
                                  ["report", "r", "-j", "2"]])
def test_bad_worker_counts_are_one_line_and_exit_2(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own refusal
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "-j" in err


def test_harness_reduce_checks_an_op_script_its_run_made_short_once_as_report_reduce_does(tmp_path, monkeypatch):
    """`harness reduce repro/CELL__OP.py` on a short op script of a report takes the record's check
    (minimal by construction: one signature run), not a search of minutes; so does report --reduce."""
    import json

    import harness.reduce.batch as batch
    from harness.report.command import report_command
    from tests.results_fixtures import case, cell_file, known_issues

    op = "suites/torchax_ops/test_ops.py::test_op[aten.sort-float32-eager]"
    records = case(op, "fail", "1 of 1 samples differ from torch eager; sample 3 (float32[5]): output 1: "
                               "dtype torch.int32 where torch gives torch.int64")
    records[1]["user_properties"][0][1]["observations"] = {
        "falsifying_example": "Falsifying example: sample(index=3, ties=False, values=True, rtol=None, atol=None)"}
    results = cell_file(tmp_path, "torchax0013-cpu", "0.7.2", [records])
    report_command([results], tmp_path / "out", known_issues(tmp_path, ""))
    script = next((tmp_path / "out" / "repro").glob("*test_op*.py"))
    seen: list[list] = []

    def capture(jobs, *a, **k):
        seen.append(jobs)
        return []
    monkeypatch.setattr(batch, "reduce_jobs", capture)
    main(["reduce", str(script)])
    assert [(j.case_id, j.minimal) for j in seen[0]] == [(op, "dtype")]
    assert json.loads((tmp_path / "out" / "report.json").read_text())["cases"][0]["id"] == op


def _report_with_scripts(tmp_path: Path, n: int) -> list[Path]:
    """A report set (report_command, the real writer) with n failing results, each with repro/CASE.py."""
    from harness.report.command import report_command
    from tests.results_fixtures import case, cell_file, known_issues

    cases = [case(f"suites/compute_on/test_eager_vs_aot.py::test_eager_vs_aot[{i}]", "fail", "boom") for i in range(n)]
    report_command([cell_file(tmp_path, "jax060-cpu", "0.6.0", cases)], tmp_path / "out", known_issues(tmp_path, ""),
                   repro_limit=None)
    scripts = sorted((tmp_path / "out" / "repro").glob("*.py"))
    assert len(scripts) == n
    return scripts


def test_a_batch_killed_half_way_keeps_what_its_checkpoints_wrote(tmp_path, monkeypatch):
    """Nothing finished is lost: a reduction of hours writes what it has as it goes (every CHECKPOINT_S);
    a kill after that leaves those CASE.min.py files in the report set, each CASE.md showing its own."""
    import harness.reduce.batch as batch
    from harness.reduce.batch import Outcome, write_reductions

    scripts = _report_with_scripts(tmp_path, 3)
    jobs = [Job(s, "jax060-cpu") for s in scripts]
    calls: list[int] = []

    def fake_one(job, server, budget_s, say, seeds=None, memo_dir=None):
        if len(calls) == 2:
            raise KeyboardInterrupt  # the operator's Ctrl-C, or a kill, during the third script
        calls.append(1)
        source = job.script.read_text()
        return Outcome(job.script.name, job.cell, len(source.splitlines()), lines_after=2, source=source,
                       text=f"# reduced\nraise SystemExit({len(calls)})\n")
    monkeypatch.setattr(batch, "_one", fake_one)
    monkeypatch.setattr(batch, "CHECKPOINT_S", 0.0)
    with pytest.raises(KeyboardInterrupt):
        batch.reduce_jobs(jobs, 5, say=lambda m: None,
                          checkpoint=lambda done, outs: write_reductions(done, outs, merge=False, say=lambda m: None))
    repro = tmp_path / "out" / "repro"
    kept = sorted(p.name for p in repro.glob("*.min.py"))
    assert kept == [j.script.name.removesuffix(".py") + ".min.py" for j in sorted_jobs(jobs)[:2]]
    for name in kept:
        md = (repro / name.replace(".min.py", ".md")).read_text()
        assert (repro / name).read_text().splitlines()[-1] in md  # CASE.md shows the reduced script


def test_case_md_shows_the_reduced_script_past_the_repro_cap(tmp_path, monkeypatch):
    """report --reduce writes every failing result's files; the CASE.md rewrite after reducing must reach
    those past the cap too (it read only the first MAX_REPROS results)."""
    import harness.report.repro as repro_mod
    from harness.reduce.batch import Outcome, write_reductions

    scripts = _report_with_scripts(tmp_path, 4)
    capped = repro_mod.repro_files
    monkeypatch.setattr(repro_mod, "repro_files", lambda report, limit=1: capped(report, limit))  # a cap of 1
    jobs = [Job(s, "jax060-cpu") for s in scripts]
    outs = [Outcome(j.script.name, j.cell, 9, lines_after=1, source=j.script.read_text(), text=f"raise SystemExit({i})\n")
            for i, j in enumerate(sorted_jobs(jobs))]
    write_reductions(jobs, outs, merge=False, say=lambda m: None)
    for i, j in enumerate(sorted_jobs(jobs)):
        assert f"raise SystemExit({i})" in j.script.with_suffix(".md").read_text()


def _reduction(body: str, message: str):
    from harness.reduce.reducer import Reduction
    from harness.reduce.signature import Signature

    return Reduction({"CASE": "suites/x.py::t", "CELL": "a-cpu"}, {"XLA_FLAGS": "--x"}, body,
                     Signature(1, "builtins.ValueError", message, "f(x)"), env_dropped=["JAX_PLATFORMS"])


def test_a_reduction_published_by_one_process_is_a_seed_in_another(tmp_path):
    """-j N: each part is one cell, so the same case failing the same way in another cell is seeded only
    through the shared folder; a seed read back equals the one written (its signature compares equal)."""
    from harness.reduce.shared import publish_seed, take_seeds

    red = _reduction("f(0)", "boom N")
    name = publish_seed(tmp_path, red)
    (tmp_path / "seed-junk.json").write_text('{"facts": 1}')  # not a reduction: skipped, never raised
    (tmp_path / "seed-half.json").write_text('{"facts": {')
    seeds: list = []
    taken: set[str] = set()
    take_seeds(tmp_path, seeds, taken)
    assert len(seeds) == 1 and seeds[0].signature == red.signature and seeds[0].body == "f(0)"
    assert seeds[0].env_dropped == ["JAX_PLATFORMS"] and name in taken
    take_seeds(tmp_path, seeds, taken)  # read once
    assert len(seeds) == 1
    publish_seed(tmp_path, red)  # the same reduction again (another process reached it too): no duplicate
    take_seeds(tmp_path, seeds, taken)
    assert len(seeds) == 1


def test_each_part_takes_the_other_parts_reductions_before_each_script(tmp_path, monkeypatch):
    """_reduce_in_order with a shared folder: a reduction another process published is among the seeds the
    next script gets, and this process's own reductions are published for the others."""
    import harness.reduce.batch as batch
    from harness.reduce.batch import Outcome
    from harness.reduce.shared import publish_seed

    given: list[list[str]] = []

    def fake_one(job, server, budget_s, say, seeds=None, memo_dir=None):
        given.append([s.body for s in seeds])
        seeds.insert(0, _reduction(f"mine({len(given)})", "own N"))
        return Outcome(job.script.name, job.cell, 3)
    monkeypatch.setattr(batch, "_one", fake_one)
    jobs = _jobs(tmp_path, [(0, 0), (0, 0)])
    publish_seed(tmp_path, _reduction("theirs()", "other N"))
    batch._reduce_in_order(sorted_jobs(jobs), 5, lambda m: None, None, tmp_path)
    assert given == [["theirs()"], ["mine(1)", "theirs()"]]
    assert len(list(tmp_path.glob("seed-*.json"))) == 3  # theirs, and this part's two, for the others
    assert len(list(tmp_path.glob("outcome-*.json"))) == 2  # each script's outcome, for the harness's checkpoints


def test_a_case_another_process_is_reducing_waits_for_its_seed_at_the_end_of_the_part(tmp_path, monkeypatch):
    """Two processes started together reduce their cells in the same order (by known issue), so the same
    case in two cells was searched twice at once, neither seeding the other: a case another process has
    claimed is put off once, to the end of the part (when that reduction is among the seeds)."""
    import harness.reduce.batch as batch
    from harness.reduce.batch import Outcome

    order: list[str] = []

    def fake_one(job, server, budget_s, say, seeds=None, memo_dir=None):
        order.append(job.script.name)
        assert [p.name for p in tmp_path.glob(f"claim-*-{os.getpid()}")] == [f"claim-{_key(job.case_id)}-{os.getpid()}"]
        return Outcome(job.script.name, job.cell, 3)
    monkeypatch.setattr(batch, "_one", fake_one)
    jobs = sorted_jobs(_jobs(tmp_path, [(0, 0), (0, 0), (0, 0)]))
    for j, case in zip(jobs, ("a", "b", "c")):
        j.case_id = f"suites/x.py::t[{case}]"
    (tmp_path / f"claim-{_key(jobs[0].case_id)}-1").touch()  # process 1 reduces case a in another cell
    outs = batch._reduce_in_order(jobs, 5, lambda m: None, None, tmp_path)
    assert order == [jobs[1].script.name, jobs[2].script.name, jobs[0].script.name]
    assert [o.script for o in outs] == [j.script.name for j in jobs]  # the outcomes in the part's order
    assert [p.name for p in tmp_path.glob("claim-*")] == [f"claim-{_key(jobs[0].case_id)}-1"]  # its own, gone


def test_each_scripts_first_line_says_how_far_its_part_is(tmp_path, monkeypatch):
    """A default run's reduction is hours: each script's first line names its cell and its place in the part."""
    import harness.reduce.batch as batch
    from harness.reduce.batch import Outcome

    def fake_one(job, server, budget_s, say, seeds=None, memo_dir=None):
        say(f"reduce {job.script.name}")
        say("  detail")
        return Outcome(job.script.name, job.cell, 3)
    monkeypatch.setattr(batch, "_one", fake_one)
    lines: list[str] = []
    batch._reduce_in_order(sorted_jobs(_jobs(tmp_path, [(0, 0), (0, 0)])), 5, lines.append)
    assert lines == ["[nocell0-cpu 1/2] reduce s0.py", "  detail", "[nocell0-cpu 2/2] reduce s1.py", "  detail"]


def test_a_workers_finished_scripts_reach_the_harness_before_its_part_ends(tmp_path):
    """Under -j a part is a whole cell (an hour of a default run): each finished script's outcome is published
    at once, read back whole, once, and a file that is not one is skipped."""
    from dataclasses import asdict

    from harness.reduce.batch import Outcome
    from harness.reduce.shared import publish_outcome, take_outcomes

    out = Outcome("a.py", "c-cpu", 9, lines_after=3, text="raise SystemExit(1)\n", source="x")
    publish_outcome(tmp_path, tmp_path / "a.py", asdict(out))
    (tmp_path / "outcome-junk.json").write_text('{"path": 1')
    read: set[str] = set()
    got = take_outcomes(tmp_path, read)
    assert [(p, Outcome(**r)) for p, r in got] == [(str(tmp_path / "a.py"), out)]
    assert take_outcomes(tmp_path, read) == []  # read once


def test_checkpoints_write_each_reduction_once_and_end_where_one_write_would(tmp_path, monkeypatch):
    """report --reduce's writer: a checkpoint after each script, then the end; every CASE.min.py and
    CASE.md is written once (a default run's checkpoints had rewritten all done so far, about 29 times),
    an earlier batch's reduction is cleared (its CASE.md written again without it), and the set ends as
    one write of the whole batch leaves it."""
    import shutil
    from collections import Counter

    import harness.reduce.batch as batch
    import harness.safeio as safeio
    from harness.reduce.batch import Outcome, ReductionWriter, min_path, write_reductions

    (tmp_path / "a").mkdir()
    scripts = _report_with_scripts(tmp_path / "a", 4)
    jobs = [Job(s, "jax060-cpu") for s in scripts]
    stale = sorted_jobs(jobs)[1].script
    min_path(stale).write_text("# an earlier batch's reduction\n")
    shutil.copytree(tmp_path / "a", tmp_path / "b", symlinks=True)

    def outcome(job):
        source = job.script.read_text()
        refused = job.script.name == stale.name  # reduced again and refused: its earlier reduction goes
        return Outcome(job.script.name, job.cell, len(source.splitlines()), lines_after=None if refused else 1,
                       source=source, refused="flaky signature" if refused else None,
                       text=None if refused else f"raise SystemExit({job.script.name.count('1')})\n")

    monkeypatch.setattr(batch, "_one", lambda job, server, budget_s, say, seeds=None, memo_dir=None: outcome(job))
    monkeypatch.setattr(batch, "CHECKPOINT_S", 0.0)
    written: Counter = Counter()
    real = safeio.atomic_write
    monkeypatch.setattr(safeio, "atomic_write", lambda path, *a, **k: (written.update([Path(path).name]), real(path, *a, **k))[1])
    write = ReductionWriter(merge=False, say=lambda m: None)
    outcomes = batch.reduce_jobs(jobs, 5, say=lambda m: None, checkpoint=write)
    write(jobs, outcomes)
    assert write.calls >= 3  # the checkpoints did write as the batch went
    per_file = {n: c for n, c in written.items() if n != "reduce.json"}
    # the cleared one's CASE.md twice: at the first write (without the earlier reduction, were the batch
    # killed then) and with its own outcome
    assert per_file.pop(stale.with_suffix(".md").name) == 2
    assert per_file and set(per_file.values()) == {1}, per_file
    assert {n for n in per_file if n.endswith(".md")} | {stale.with_suffix(".md").name} == {
        j.script.with_suffix(".md").name for j in jobs}
    monkeypatch.setattr(safeio, "atomic_write", real)
    once = [Job(tmp_path / "b" / s.relative_to(tmp_path / "a"), "jax060-cpu") for s in scripts]
    write_reductions(once, [outcome(j) for j in sorted_jobs(once)], merge=False, say=lambda m: None)
    a, b = (sorted((p.name, p.read_bytes()) for p in (tmp_path / d / "out" / "repro").iterdir()) for d in "ab")
    assert a == b
    assert not min_path(stale).exists() and "earlier batch" not in stale.with_suffix(".md").read_text()
