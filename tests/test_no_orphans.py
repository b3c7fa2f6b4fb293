"""No orphans: however `harness run` ends, its pytest child and that child's children end within ~2 s.

Real processes and real signals: the harness runs a real jax cell whose test starts a grandchild
and waits; the harness is then stopped each way a user or CI stops it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.judge.results import read_results

REPO = Path(__file__).resolve().parent.parent
CELL = "jax060-cpu"
pytestmark = pytest.mark.e2e


def _alive(pid: int) -> bool:
    """True while pid exists and is not a zombie (a zombie has ended; only its exit status is left)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    pids = tmp_path / "pids"
    env = {**os.environ, "SEAMS_DRILL_PIDS": str(pids)}
    # Its own session, so the test can signal only the harness (never the harness's child directly).
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--cell", CELL, "--out", str(tmp_path),
                             "--no-report", *args, "--", "tests/drills/test_spawns_and_waits.py"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not (pids.exists() and pids.read_text().endswith("\n")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the drill test never started"
        time.sleep(0.1)
    return proc, pids


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_stopping_the_harness_ends_its_pytest_child_and_grandchildren(tmp_path, sig):
    proc, pidfile = _start(tmp_path)
    child, grandchild = map(int, pidfile.read_text().split())
    assert _alive(child) and _alive(grandchild)
    proc.send_signal(sig)
    left = _gone_within([child, grandchild], 2.0)
    try:
        assert not left, f"still running 2 s after {sig.name} to the harness: {left}"
    finally:
        for p in left:
            os.kill(p, signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    if sig != signal.SIGKILL:  # the harness itself unwinds: one line, exit 128+N, a closed results file
        assert proc.returncode == 128 + sig, err
        assert "Traceback" not in err and "interrupted" in err
        res = read_results(tmp_path / "results" / f"{CELL}.jsonl")
        assert res.status == "incomplete" and sig.name in res.reason
    else:
        assert read_results(tmp_path / "results" / f"{CELL}.jsonl").status == "incomplete"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_under_xdist_stopping_the_harness_ends_the_controller_its_workers_and_theirs(tmp_path, sig):
    proc, pidfile = _start(tmp_path, "--xdist", "2")
    worker, grandchild = map(int, pidfile.read_text().split())
    controller = _parent(worker)
    assert _alive(controller) and _alive(worker) and _alive(grandchild) and controller != proc.pid
    proc.send_signal(sig)
    left = _gone_within([controller, worker, grandchild], 2.0)
    try:
        assert not left, f"still running 2 s after {sig.name} to the harness: {left}"
    finally:
        for p in left:
            os.kill(p, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert read_results(tmp_path / "results" / f"{CELL}.jsonl").status == "incomplete"


@pytest.mark.parametrize("xdist", ["0", "2"])
def test_a_hung_test_killed_by_the_watchdog_takes_its_grandchildren_along(tmp_path, xdist):
    proc, pidfile = _start(tmp_path, "--timeout", "2", "--xdist", xdist)
    child, grandchild = map(int, pidfile.read_text().split())
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert not _gone_within([child, grandchild], 2.0)
    cases = read_results(tmp_path / "results" / f"{CELL}.jsonl").cases
    assert [c.raw for c in cases.values()] == ["timeout"]


def test_a_harness_killed_while_building_an_env_leaves_no_uv_behind_and_the_next_build_cleans_up(tmp_path):
    envs = tmp_path / "envs"
    code = ("from harness.cells.matrix import catalogue; from harness.cells.envs import ensure_env; "
            "ensure_env(catalogue().cell('jax053-cpu'))")
    env = {**os.environ, "SEAMS_ENVS_DIR": str(envs)}
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while not list(envs.glob(".tmp-*")) and time.monotonic() < deadline:
        time.sleep(0.02)
    tmp = list(envs.glob(".tmp-*"))
    assert tmp, "the build never started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    def builders() -> list[int]:
        out = []
        for d in Path("/proc").iterdir():
            try:
                if d.name.isdigit() and str(envs).encode() in (d / "cmdline").read_bytes() and _alive(int(d.name)):
                    out.append(int(d.name))
            except OSError:
                pass
        return out

    deadline = time.monotonic() + 2
    while builders() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not builders(), "uv or the version check outlived the SIGKILLed harness"
    done = subprocess.run([sys.executable, "-c", code + "; import json; print('ok')"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr
    assert not list(envs.glob(".tmp-*")), "the half-built folder of the killed build is removed"
    assert json.loads(next(envs.glob("jax053-cpu-*/xla-seams-env.json")).read_text())["versions"]["jax"] == "0.5.3"


def test_a_normal_run_leaves_nothing_behind_either(tmp_path):
    pids = tmp_path / "pids"
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--cell", CELL, "--out", str(tmp_path),
                           "--no-report", "--", "tests/drills/test_leaks_a_process.py"], cwd=REPO,
                          env={**os.environ, "SEAMS_DRILL_PIDS": str(pids)}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    child, leaked = map(int, pids.read_text().split())
    assert not _gone_within([child, leaked], 2.0), "the process a test leaked ends with its pytest"


# --- Containment by cgroup where one is delegated, by the subreaper elsewhere (issue 31) ---------------------

from harness import lifeline  # noqa: E402


def _cgroup_here() -> str | None:
    """Why a cgroup cannot contain a cell on this machine, or None when it can."""
    probe = lifeline.Cgroup.create("probe-" + str(os.getpid()))
    if probe is None:
        base = lifeline._cgroup2_dir_of_self()
        return ("no cgroup v2 hierarchy is mounted for this process" if base is None
                else f"{base} is not writable by this process (not delegated)")
    probe.remove()
    return None


def _host_cell_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, list[int]]:
    from harness.run.cellrun import run_cell
    from tests.host_cell import CELL as HOST, host_env

    pids = tmp_path / "pids"
    monkeypatch.setenv("SEAMS_DRILL_PIDS", str(pids))
    run = run_cell(HOST, tmp_path / "results" / "host-cpu.jsonl", ["tests/drills/test_daemons.py"],
                   env_provider=host_env)
    return run, [int(p) for p in pids.read_text().split()]


def test_where_a_cgroup_is_delegated_it_alone_kills_what_a_test_left(tmp_path, monkeypatch):
    """The subreaper's scan turned off (no marked process, no adopted descendant found): the setsid child,
    the double-forked daemon and the one started with an empty environment still end with the cell,
    because they never left its cgroup; they are named in its reason; no cgroup of ours is left."""
    why = _cgroup_here()
    if why:
        pytest.skip(f"cgroup containment is not available here: {why}")
    monkeypatch.setattr(lifeline, "owned_by", lambda token: [])
    monkeypatch.setattr(lifeline, "descendants", lambda root=None: set())
    # This run's own cgroups, not every seams-* one: under xdist another worker's cell has its own
    # cgroup at the same time.
    made: list[Path] = []
    create = lifeline.Cgroup.create.__func__

    def recording_create(cls, token):
        cgroup = create(cls, token)
        if cgroup is not None:
            made.append(cgroup.path)
        return cgroup

    monkeypatch.setattr(lifeline.Cgroup, "create", classmethod(recording_create))
    run, left = _host_cell_left(tmp_path, monkeypatch)
    assert len(left) == 3
    assert not _gone_within(left, 2.0), "a process a test left outlived its cell's cgroup"
    assert "a test left 3 processes running" in run.reason, run.reason
    assert made, "the cell ran in a cgroup of its own"
    assert not [p for p in made if p.exists()], "the cell's cgroup is removed"


def test_without_a_cgroup_the_subreaper_kills_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAMS_NO_CGROUP", "1")
    run, left = _host_cell_left(tmp_path, monkeypatch)
    assert len(left) == 3 and not _gone_within(left, 2.0)
    assert "a test left 3 processes running" in run.reason, run.reason


def test_a_sigkilled_harness_takes_the_cells_whole_cgroup_along(tmp_path):
    """SIGKILL leaves the harness no time to sweep: the pipe guard kills the cell's cgroup, so even a
    daemon that left pytest's group with an empty environment ends (without a cgroup it would be init's)."""
    why = _cgroup_here()
    if why:
        pytest.skip(f"cgroup containment is not available here: {why}")
    pids = tmp_path / "pids"
    code = ("from tests.host_cell import CELL, host_env; from harness.run.cellrun import run_cell; "
            f"run_cell(CELL, {str(tmp_path / 'results' / 'host-cpu.jsonl')!r}, "
            "['tests/drills/test_escapes_and_waits.py'], env_provider=host_env)")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, "SEAMS_DRILL_PIDS": str(pids)},
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not (pids.exists() and pids.read_text().endswith("\n")):
        assert proc.poll() is None and time.monotonic() < deadline, "the drill never started"
        time.sleep(0.05)
    daemon = int(pids.read_text())
    assert _alive(daemon)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left = _gone_within([daemon], 2.0)
    try:
        assert not left, "the escaped daemon outlived the SIGKILLed harness"
    finally:
        for p in left:
            os.kill(p, signal.SIGKILL)


def test_a_harness_process_started_with_a_cgroup_joins_it_before_it_starts_anything(tmp_path):
    """news's bisection (`python -m harness bisect`) is started with SEAMS_CGROUP, not through the launcher (its
    argv stays the harness's): its main joins first, so its probes and what they start are inside."""
    why = _cgroup_here()
    if why:
        pytest.skip(f"cgroup containment is not available here: {why}")
    cg = lifeline.Cgroup.create(f"join-{os.getpid()}")
    code = ("from harness import lifeline; lifeline.join_cgroup_from_env(); import os, subprocess, sys, time; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True, env={}); "
            "print(os.getpid(), p.pid, flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env={**os.environ, **cg.env()},
                            stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert sorted(cg.members()) == sorted(pids)
        killed = cg.kill()
        assert len(killed) == 2 and not _gone_within(pids, 2.0)
    finally:
        proc.kill()
        proc.wait()
        cg.remove()
    assert not cg.path.exists()


def test_a_stale_seams_cgroup_in_the_callers_shell_makes_or_overwrites_no_file(tmp_path):
    """SEAMS_CGROUP and SEAMS_LIFELINE_FD are the harness's hand-offs to its own children (issue 31): one in
    the caller's shell never reaches a cell (not allow-listed), and neither the harness nor the launcher
    creates or writes a file for one that is not an existing cgroup the harness made (`seams-TOKEN`)."""
    from harness import lifeline
    from harness.cells.startup_env import is_allowed

    assert not is_allowed("SEAMS_CGROUP") and not is_allowed("SEAMS_LIFELINE_FD") and is_allowed("SEAMS_TIMEOUT")
    plain, named = tmp_path / "somewhere", tmp_path / "seams-stale"
    plain.mkdir()
    named.mkdir()
    (named / "cgroup.kill").write_text("")  # an ordinary file where a cgroup's would be: not a cgroup
    for where in (plain, named, "relative"):
        env = {**os.environ, "SEAMS_CGROUP": str(where), "SEAMS_NO_CGROUP": "1", "PYTHONPATH": str(REPO)}
        subprocess.run([sys.executable, "-m", "harness", "matrix", "--format", "names"], cwd=tmp_path, env=env,
                       capture_output=True, timeout=120, check=True)
        subprocess.run(lifeline.wrap([sys.executable, "-c", "pass"]), cwd=tmp_path, env=env, capture_output=True,
                       timeout=60, check=True)
    assert sorted(p.name for p in plain.iterdir()) == [] and sorted(p.name for p in named.iterdir()) == ["cgroup.kill"]
    assert not (tmp_path / "relative").exists()


def _descendants(root: int) -> set[int]:
    """Every live process whose chain of parents reaches root."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = _parent(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier and p not in found}
        found |= frontier
    return {p for p in found if _alive(p)}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_stopping_reduce_j2_ends_its_workers_and_their_fork_servers_and_starts_no_other_part(tmp_path, sig):
    """`harness reduce -j 2` (and report --reduce -j 2) runs its parts in worker processes, each with fork
    servers of its own in sessions of their own. A signal to the harness alone (kill PID, a CI's timeout)
    stopped nothing: the pool's shutdown waited for every queued part (hours on a default run), and the
    workers went on to the next part. Now the workers and their servers end within seconds, no part starts
    after, and the harness exits 128+N."""
    proc = _reduce_two_parts_of_three(tmp_path)
    tree = _descendants(proc.pid)
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    out = _tail_of(proc)
    left = _gone_within(sorted(tree), 5.0)
    try:
        assert not left, f"still running 5 s after {sig.name} to the harness: {[_command(p) for p in left]}"
    finally:
        for p in left:
            os.kill(p, signal.SIGKILL)
    assert proc.returncode == 128 + sig, out[-2000:]
    started = [ln.split("] reduce ")[1].split()[0] for ln in out.splitlines() if "] reduce " in ln]
    assert sorted(started) == ["jax053-cpu__s_numpy.py", "jax060-cpu__s_jax.py"], out[-2000:]  # the third never
    assert "Traceback" not in out, out[-2000:]


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _reduce_two_parts_of_three(tmp_path: Path, also: list[Path] = ()) -> subprocess.Popen:
    """`harness reduce -j 2` on three scripts that sleep (three parts: two cells, two import sets) and the
    scripts `also`, once both workers have started their first part's fork servers; its output goes to
    tmp_path/out.log."""
    scripts = list(also)
    for cell, imports in ((CELL, "jax"), (CELL, "numpy"), ("jax053-cpu", "numpy")):
        s = tmp_path / f"{cell}__s_{imports}.py"
        s.write_text(f"import {imports}\nimport time\ntime.sleep(120)\nraise ValueError('never reached')\n")
        scripts.append(s)
    log = open(tmp_path / "out.log", "w")  # noqa: SIM115 (the child holds it)
    proc = subprocess.Popen([sys.executable, "-m", "harness", "reduce", "-j", "2", *map(str, scripts)], cwd=REPO,
                            stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    proc.log = tmp_path / "out.log"  # type: ignore[attr-defined]
    deadline = time.monotonic() + 240
    while len([p for p in _descendants(proc.pid) if "forkserver.py" in _command(p)]) < 2:
        assert proc.poll() is None, _tail_of(proc)
        assert time.monotonic() < deadline, "the parts never started their fork servers"
        time.sleep(0.2)
    time.sleep(2)
    return proc


def test_a_reduce_worker_killed_from_outside_is_a_recorded_fault_not_a_hang(tmp_path):
    """A -j worker SIGKILLed (the OOM killer) broke the pool: an 'internal error' naming a harness bug. Now
    the batch stops at once, says so in one line, records the scripts not done as not reduced (exit 1),
    and leaves no process behind."""
    proc = _reduce_two_parts_of_three(tmp_path)
    tree = _descendants(proc.pid)
    worker = next(p for p in tree if "spawn_main" in _command(p))
    os.kill(worker, signal.SIGKILL)
    proc.communicate(timeout=60)
    out = _tail_of(proc)
    left = _gone_within(sorted(tree), 5.0)
    try:
        assert not left, f"still running 5 s after a worker was killed: {[_command(p) for p in left]}"
    finally:
        for p in left:
            os.kill(p, signal.SIGKILL)
    assert proc.returncode == 1, out[-2000:]
    assert "a worker process died" in out and "internal error" not in out and "Traceback" not in out, out[-2000:]
    assert "0 of 3 scripts reduced" in out, out[-2000:]


def test_stopping_reduce_j2_writes_what_its_running_parts_finished(tmp_path):
    """Nothing finished is lost: a part is a whole cell under -j, and a stop used to lose every script its
    running parts had finished. The quick script of a part still running is written (CASE.min.py) when the
    harness is stopped."""
    quick = tmp_path / f"{CELL}__a_quick.py"  # sorted first in its part, before the sleeper
    quick.write_text("import numpy\nraise ValueError('boom')\n")
    proc = _reduce_two_parts_of_three(tmp_path, also=[quick])
    deadline = time.monotonic() + 120
    out = ""
    while "a_quick.min.py" not in out:  # the worker's line for it: reduced
        assert time.monotonic() < deadline, "the quick script was never reduced"
        time.sleep(0.5)
        out = _tail_of(proc)
    tree = _descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    for p in _gone_within(sorted(tree), 5.0):
        os.kill(p, signal.SIGKILL)
    assert (tmp_path / f"{CELL}__a_quick.min.py").is_file(), out[-2000:]


def _tail_of(proc: subprocess.Popen) -> str:
    return proc.log.read_text(errors="replace")  # type: ignore[attr-defined]
