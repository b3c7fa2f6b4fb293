"""`python -m harness bench`: measure the harness against its floor (not part of the tests).

Sections (each repeated --repeat times; medians and spread are reported, and ratios are taken
within the same run, since this machine's noise moves absolute numbers):
  env     warm cell-env creation (uv, cached wheels, fresh env folder) vs `python -m venv` + pip
  floor   a cell's suite through the harness vs the floor: one process importing jax (+ torch,
          torch_xla) once plus the time its scenarios themselves took (pytest's call durations)
  matrix  the default CPU matrix, cold (empty env and uv caches) and warm
  bisect  the shard_map bisection over jax 0.4.38..0.10.2, cold (no probe cache) and warm
  report  render time and HTML size for a synthetic 10,000-result report
  sweep   the jax release sweep (--sweep-spec, default every release 0.4.38..0.10.2) over the
          jax-only families, cold (empty env and uv caches) once, then warm
  parallel  warm `run -j 1` vs the default -j, alternated in one run: the default matrix, and
          the jax sweep (--sweep-spec) over the jax-only families once
  reduce  `harness report --reduce` over a run's results (--reduce-results DIR, else a fresh run of the
          default matrix's jax-only cells): how many reduce, lines before/after, seconds per script;
          then again with the reductions the first run kept (harness.reduce.memo): the warm wall time
  xdist   one cell (--cell) running the generated (hypothesis) families of the jax-only suites
          with --xdist 0 vs --xdist 2, alternated, under the `ci` and the `nightly` profile
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from harness.paths import REPO
from harness.errors import UserError
from harness.safeio import atomic_write, refuse_special

SECTIONS = ("startup", "env", "floor", "matrix", "bisect", "report", "sweep", "parallel", "xdist", "xdist-load", "reduce")
JAX_ONLY_CELLS = ("jax053-cpu", "jax060-cpu", "jax072-cpu", "jax0102-cpu")
JAX_SWEEP = "jax>=0.4.38,<=0.10.2"
JAX_ONLY_SUITES = ("suites/shard_map", "suites/compute_on")
GENERATED = ("suites/shard_map/test_properties.py", "suites/compute_on/test_properties.py")
SHARD_MAP_BASE = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[base]"


def add_bench_parser(sub: argparse._SubParsersAction) -> None:
    """Register the bench subcommand."""
    p = sub.add_parser("bench", help="measure env setup, suite vs floor, matrix, bisect and report times",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sections", nargs="*", metavar="SECTION",
                   help=f"which to run (default: all): {', '.join(SECTIONS)}")
    p.add_argument("--repeat", type=int, default=3, help="runs per measurement (default 3; cold matrix runs once)")
    p.add_argument("--cell", default="jax060-cpu", help="cell for the env, floor and xdist sections")
    p.add_argument("--sweep-spec", default=JAX_SWEEP, metavar="SPEC",
                   help=f"the sweep the sweep section runs (default {JAX_SWEEP!r}; a small range to try it out)")
    p.add_argument("--reduce-results", type=Path, metavar="DIR",
                   help="the reduce section's results folder (a `harness run`'s results/; default: run the jax-only cells)")
    p.add_argument("--json", type=Path, default=Path("reports/bench.json"), help="where to write the figures")
    p.set_defaults(handler=cmd_bench)


def _timed(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _stats(samples: list[float]) -> dict:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "n": len(samples),
            "samples": [round(s, 3) for s in samples]}


def _run(argv: list[str], env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check and proc.returncode not in (0, 1):
        raise RuntimeError(f"{argv[:4]} exited {proc.returncode}: {proc.stderr[-800:]}")
    return proc


def bench_env(cell_name: str, repeat: int) -> dict:
    """Warm uv env creation vs python -m venv + pip install of the same pins."""
    from harness.cells.envs import ensure_env
    from harness.cells.matrix import catalogue

    cell = catalogue().cell(cell_name)
    pins = [r for r in cell.requirements()]
    uv_s, pip_s = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            os.environ["SEAMS_ENVS_DIR"] = d
            try:
                uv_s.append(_timed(lambda: ensure_env(cell)))
            finally:
                os.environ.pop("SEAMS_ENVS_DIR")
        with tempfile.TemporaryDirectory() as d:
            venv = Path(d) / "v"

            def pip_build() -> None:
                _run([sys.executable, "-m", "venv", str(venv)])
                _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *pins])
            pip_s.append(_timed(pip_build))
    u, p = _stats(uv_s), _stats(pip_s)
    return {"uv_warm_s": u, "pip_s": p, "speedup": p["median"] / u["median"],
            "targets": {"warm <= 3 s": u["median"] <= 3.0, ">= 10x faster than pip": p["median"] / u["median"] >= 10}}


_IMPORT_FLOOR = r"""
import time, importlib, importlib.util, sys
t = time.perf_counter()
for m in ("jax", "torch", "torch_xla", "torchax"):
    if importlib.util.find_spec(m):
        importlib.import_module(m)
import jax; jax.devices()
print(time.perf_counter() - t)
"""


def bench_floor(cell_name: str, repeat: int) -> dict:
    """The cell's suite through the harness vs import-once + the scenarios' own call time."""
    from harness.cells.envs import ensure_env
    from harness.cells.matrix import catalogue

    cell = catalogue().cell(cell_name)
    env = ensure_env(cell)
    harness_s, floor_s, parts = [], [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            # --xdist 0: the floor is one process importing once and running the calls one after another
            wall = _timed(lambda: _run([sys.executable, "-m", "harness", "run", "--cell", cell.name, "--out", d,
                                        "--no-report", "--xdist", "0"]))
            calls = 0.0
            for line in (Path(d) / "results" / f"{cell.name}.jsonl").read_text().splitlines():
                rec = json.loads(line)
                if rec.get("$report_type") == "TestReport":
                    calls += rec.get("duration", 0.0)
        imp = float(_run([str(env.python), "-c", _IMPORT_FLOOR], env=cell.run_env()).stdout.strip().splitlines()[-1])
        harness_s.append(wall)
        floor_s.append(imp + calls)
        parts.append({"import_s": round(imp, 3), "scenario_s": round(calls, 3)})
    h, f = _stats(harness_s), _stats(floor_s)
    ratio = h["median"] / f["median"]
    return {"cell": cell.name, "harness_s": h, "floor_s": f, "floor_parts": parts, "ratio": ratio,
            "targets": {"ratio <= 1.3": ratio <= 1.3}}


def bench_matrix(repeat: int) -> dict:
    """Default CPU matrix wall time: cold (empty env + uv caches) once, then warm."""
    out: dict = {}
    with tempfile.TemporaryDirectory() as envs, tempfile.TemporaryDirectory() as uvc, \
            tempfile.TemporaryDirectory() as d:
        cold_env = {"SEAMS_ENVS_DIR": envs, "UV_CACHE_DIR": uvc}
        out["cold_s"] = _stats([_timed(lambda: _run([sys.executable, "-m", "harness", "run", "--out", d],
                                                     env=cold_env))])
    warm = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            warm.append(_timed(lambda: _run([sys.executable, "-m", "harness", "run", "--out", d])))
    out["warm_s"] = _stats(warm)
    return out


def bench_parallel(repeat: int, cells: tuple[str, ...] = (), sweep_spec: str | None = None) -> dict:
    """Warm wall time with -j 1 and with the default -j, side by side: the default matrix (or `cells`),
    and the jax sweep over the jax-only families once each (it is long)."""
    def side_by_side(base: list[str], tail: list[str], n: int) -> dict:
        with tempfile.TemporaryDirectory() as d:
            _run([*base, "--out", d, "--no-report", "-j", "1", *tail])  # warm every env first
        serial, par = [], []
        for _ in range(n):  # alternate, so drift on a shared machine hits both alike
            for jobs, samples in ((["-j", "1"], serial), ([], par)):
                with tempfile.TemporaryDirectory() as d:
                    samples.append(_timed(lambda: _run([*base, "--out", d, *jobs, *tail])))
        s, p = _stats(serial), _stats(par)
        return {"serial_s": s, "parallel_s": p, "ratio": p["median"] / s["median"]}

    run = [sys.executable, "-m", "harness", "run", "--xdist", "0"]  # cells side by side, nothing else
    out = side_by_side([*run, *[a for c in cells for a in ("--cell", c)]], [], repeat)
    out["targets"] = {"ratio <= 0.6": out["ratio"] <= 0.6}
    if sweep_spec:
        sw = side_by_side([*run, "--sweep", sweep_spec], ["--", *JAX_ONLY_SUITES], 1)
        out["sweep"] = {"spec": sweep_spec, **sw, "targets": {"ratio <= 0.55": sw["ratio"] <= 0.55}}
    return out


def bench_sweep(spec: str, repeat: int) -> dict:
    """A release sweep over the jax-only families: cold (empty env + uv caches) once, then warm."""
    from harness.cells.sweep import from_spec

    n_cells = len(from_spec(spec).cells)

    def argv(out: str) -> list[str]:
        return [sys.executable, "-m", "harness", "run", "--sweep", spec, "--out", out, "--no-report", "--",
                *JAX_ONLY_SUITES]

    out: dict = {"spec": spec, "cells": n_cells, "suites": list(JAX_ONLY_SUITES)}
    with tempfile.TemporaryDirectory() as envs, tempfile.TemporaryDirectory() as uvc, \
            tempfile.TemporaryDirectory() as d:
        out["cold_s"] = _stats([_timed(lambda: _run(argv(d), env={"SEAMS_ENVS_DIR": envs, "UV_CACHE_DIR": uvc}))])
    with tempfile.TemporaryDirectory() as d:
        _run(argv(d))  # untimed: builds the sweep's envs in the shared folder if they are not there yet
    warm = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            warm.append(_timed(lambda: _run(argv(d))))
    out["warm_s"] = _stats(warm)
    out["warm_per_cell_s"] = out["warm_s"]["median"] / max(1, n_cells)
    return out


def bench_xdist(cell_name: str, repeat: int) -> dict:
    """The generated families in one cell, without and with two xdist workers, per hypothesis profile."""
    out: dict = {"cell": cell_name, "suites": list(GENERATED)}
    with tempfile.TemporaryDirectory() as d:  # untimed: the env exists before anything is timed
        _run([sys.executable, "-m", "harness", "run", "--cell", cell_name, "--out", d, "--no-report", "--",
              GENERATED[0], "-k", "nothing-matches-this"], check=False)
    for profile in ("ci", "nightly"):
        samples: dict[str, list[float]] = {"0": [], "2": []}
        for _ in range(repeat):
            for n, runs in samples.items():  # alternated, so drift hits both alike
                with tempfile.TemporaryDirectory() as d:
                    argv = [sys.executable, "-m", "harness", "run", "--cell", cell_name, "--out", d, "--no-report",
                            "--xdist", n, "--", *GENERATED]
                    runs.append(_timed(lambda: _run(argv, env={"SEAMS_HYPOTHESIS_PROFILE": profile})))
        serial, par = _stats(samples["0"]), _stats(samples["2"])
        out[profile] = {"xdist0_s": serial, "xdist2_s": par, "ratio": par["median"] / serial["median"]}
    return out


def bench_xdist_load(cell_name: str, repeat: int) -> dict:
    """`--xdist auto` vs `--xdist 0` (and a forced `--xdist 2`) on a loaded machine: busy loops on
    every core, plus whatever else runs. auto must never be slower than serial there."""
    out: dict = {"cell": cell_name, "suites": list(GENERATED), "busy_loops": _cores()}
    with tempfile.TemporaryDirectory() as d:  # untimed: the env exists before anything is timed
        _run([sys.executable, "-m", "harness", "run", "--cell", cell_name, "--out", d, "--no-report", "--",
              GENERATED[0], "-k", "nothing-matches-this"], check=False)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(_cores())]
    try:
        time.sleep(5)  # let the 1-minute load average see the hogs
        out["loadavg_at_start"] = os.getloadavg()[0]
        samples: dict[str, list[float]] = {"0": [], "auto": [], "2": []}
        exits: dict[str, list[int]] = {n: [] for n in samples}
        for _ in range(repeat):
            for n, runs in samples.items():  # alternated, so drift hits all alike
                with tempfile.TemporaryDirectory() as d:
                    argv = [sys.executable, "-m", "harness", "run", "--cell", cell_name, "--out", d, "--no-report",
                            "--xdist", n, "--", *GENERATED]
                    t = time.perf_counter()
                    exits[n].append(_run(argv, check=False).returncode)
                    runs.append(round(time.perf_counter() - t, 3))
        out["exits"] = exits
        if any(rc not in (0, 1) for codes in exits.values() for rc in codes):
            raise RuntimeError(f"a timed run failed (exit statuses {exits}): its time means nothing")
        out["loadavg_at_end"] = os.getloadavg()[0]
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    stats = {n: _stats(v) for n, v in samples.items()}
    out.update({f"xdist_{n}_s": v for n, v in stats.items()})
    out["auto_over_serial"] = stats["auto"]["median"] / stats["0"]["median"]
    out["forced2_over_serial"] = stats["2"]["median"] / stats["0"]["median"]
    out["targets"] = {"auto <= serial * 1.05": out["auto_over_serial"] <= 1.05}
    return out


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def bench_bisect(repeat: int) -> dict:
    """Probes and wall time of the shard_map bisection over jax 0.4.38..0.10.2."""
    argv = [sys.executable, "-m", "harness", "bisect", SHARD_MAP_BASE, "--package", "jax",
            "--good", "0.4.38", "--bad", "0.10.2"]
    out: dict = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {"SEAMS_BISECT_CACHE": cache}
        t = time.perf_counter()
        proc = _run(argv, env=env, check=False)
        out["cold_probe_cache_s"] = round(time.perf_counter() - t, 3)
        out["stdout_tail"] = proc.stdout[-1500:]
        out["exit"] = proc.returncode
        warm = [_timed(lambda: _run(argv, env=env, check=False)) for _ in range(repeat)]
    out["warm_s"] = _stats(warm)
    probes = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith(("probes", "Probes"))]
    out["probes_line"] = probes[0] if probes else None
    return out


def bench_startup(repeat: int) -> dict:
    """What a command costs before it works: the interpreter alone, `--help`, and each command's
    `--help` (which imports what building its parser needs, nothing of the stages)."""
    argvs = {"python -c pass": [sys.executable, "-c", "pass"],
             "harness --help": [sys.executable, "-m", "harness", "--help"],
             **{f"harness {c} --help": [sys.executable, "-m", "harness", c, "--help"]
                for c in ("run", "report", "bisect", "news")}}
    out = {name: _stats([_timed(lambda a=argv: _run(a)) for _ in range(max(repeat, 5))]) for name, argv in argvs.items()}
    out["targets"] = {"--help <= 0.3 s": out["harness --help"]["median"] <= 0.3}
    return out


def bench_report(repeat: int) -> dict:
    """Render time and HTML size of a synthetic 10,000-result report."""
    from harness.report.synthetic import write_synthetic_results  # provided by the report package

    times, size = [], 0
    with tempfile.TemporaryDirectory() as d:
        files = write_synthetic_results(Path(d) / "in", results=10_000)
        for _ in range(repeat):
            out = Path(d) / "out"
            shutil.rmtree(out, ignore_errors=True)
            times.append(_timed(lambda: _run([sys.executable, "-m", "harness", "report", *map(str, files),
                                              "--out", str(out)], check=False)))
            size = (out / "report.html").stat().st_size
    t = _stats(times)
    return {"render_s": t, "html_bytes": size,
            "targets": {"<= 2 s": t["median"] <= 2.0, "<= 1 MB": size <= 1_000_000}}


def bench_reduce(results: Path | None) -> dict:
    """`harness report --reduce` over a run's failing results: counts, lengths and seconds per script."""
    with tempfile.TemporaryDirectory() as d:
        if results is None:
            cells = [a for c in JAX_ONLY_CELLS for a in ("--cell", c)]
            _run([sys.executable, "-m", "harness", "run", *cells, "--out", f"{d}/run", "--no-report"])
            results = Path(d) / "run" / "results"
        # cold: no earlier batch's reductions (an empty SEAMS_REDUCE_CACHE); warm: again, taking what the
        # cold run kept (harness.reduce.memo), as a nightly does where the scripts and envs did not change
        memo = {"SEAMS_REDUCE_CACHE": f"{d}/reductions"}
        t = time.perf_counter()
        proc = _run([sys.executable, "-m", "harness", "report", str(results), "--out", f"{d}/report", "--reduce"], memo)
        wall = time.perf_counter() - t
        t = time.perf_counter()
        _run([sys.executable, "-m", "harness", "report", str(results), "--out", f"{d}/again", "--reduce"], memo)
        warm = time.perf_counter() - t
        figures = json.loads((Path(d) / "report/repro/reduce.json").read_text())
        reused = sum(o.get("reused") is True for o in json.loads((Path(d) / "again/repro/reduce.json").read_text()))
    done = [o for o in figures if o["lines_after"] is not None]
    after = sorted(o["lines_after"] for o in done)
    before = sorted(o["lines_before"] for o in done)
    torch = [o for o in done if not o["cell"].startswith("jax")]
    jax = [o for o in done if o["cell"].startswith("jax")]
    return {"wall_s": round(wall, 1), "warm_wall_s": round(warm, 1), "reused_when_warm": reused,
            "scripts": len(figures), "reduced": len(done),
            "refused": {o["script"]: o["refused"] for o in figures if o["refused"]},
            "lines_before": before, "lines_after": after,
            "median_before": statistics.median(before) if before else None,
            "median_after": statistics.median(after) if after else None,
            "seconds": sorted(o["seconds"] for o in done), "budget_hit": sum(o["budget_hit"] for o in done),
            "summary": proc.stdout.strip().splitlines()[-1:],
            "targets": {"every reduced <= 30 lines": bool(after) and after[-1] <= 30,
                        "median <= 15 lines": bool(after) and statistics.median(after) <= 15,
                        "jax-only <= 60 s each": all(o["seconds"] <= 60 for o in jax),
                        "torch <= 300 s each": all(o["seconds"] <= 300 for o in torch)}}


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the chosen sections, print a table, write JSON."""
    # A symlink, FIFO or folder where --json goes: refused in one line before the first section (they take
    # minutes), never written through (it used to be, after every section had run).
    refuse_special(args.json)
    sections = args.sections or list(SECTIONS)
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        raise UserError(f"unknown bench section {unknown[0]!r}; choose from {', '.join(SECTIONS)}")
    results: dict = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "platform": sys.platform},
                     "command": "python -m harness bench " + " ".join(sys.argv[2:])}
    runners = {"startup": lambda: bench_startup(args.repeat), "env": lambda: bench_env(args.cell, args.repeat), "floor": lambda: bench_floor(args.cell, args.repeat),
               "matrix": lambda: bench_matrix(args.repeat), "bisect": lambda: bench_bisect(args.repeat),
               "report": lambda: bench_report(args.repeat),
               "sweep": lambda: bench_sweep(args.sweep_spec, args.repeat),
               "parallel": lambda: bench_parallel(args.repeat, sweep_spec=args.sweep_spec),
               "xdist": lambda: bench_xdist(args.cell, args.repeat),
               "xdist-load": lambda: bench_xdist_load(args.cell, args.repeat),
               "reduce": lambda: bench_reduce(args.reduce_results)}
    for name in sections:
        print(f"bench {name} ...", file=sys.stderr, flush=True)
        try:
            results[name] = runners[name]()
        except Exception as exc:  # a section that cannot run is reported, the others still run
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps({name: results[name]}, indent=1, default=str), file=sys.stderr, flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    refuse_special(args.json)
    atomic_write(args.json, json.dumps(results, indent=1, default=str))  # one rename, never through a symlink
    _print_table(results)
    return 0


def _print_table(r: dict) -> None:
    def med(d: dict | None, key: str) -> str:
        try:
            return f"{d[key]['median']:.2f}"
        except (KeyError, TypeError):
            return "-"

    rows = []
    if "env" in r and "error" not in r["env"]:
        e = r["env"]
        rows.append(("env: uv warm (s)", med(e, "uv_warm_s"), f"pip {med(e, 'pip_s')} s, {e['speedup']:.1f}x"))
    if "floor" in r and "error" not in r["floor"]:
        f = r["floor"]
        rows.append((f"suite via harness, {f['cell']} (s)", med(f, "harness_s"),
                     f"floor {med(f, 'floor_s')} s, ratio {f['ratio']:.2f}"))
    if "matrix" in r and "error" not in r["matrix"]:
        rows.append(("default matrix (s)", med(r["matrix"], "warm_s"), f"cold {med(r['matrix'], 'cold_s')} s"))
    if "bisect" in r and "error" not in r["bisect"]:
        b = r["bisect"]
        rows.append(("bisect shard_map (s)", med(b, "warm_s"), f"cold {b['cold_probe_cache_s']} s; {b.get('probes_line')}"))
    if "report" in r and "error" not in r["report"]:
        rows.append(("report 10k results (s)", med(r["report"], "render_s"), f"{r['report']['html_bytes']} bytes"))
    if "sweep" in r and "error" not in r["sweep"]:
        sw = r["sweep"]
        rows.append((f"sweep {sw['spec']}, {sw['cells']} cells (s)", med(sw, "warm_s"), f"cold {med(sw, 'cold_s')} s"))
    if "parallel" in r and "error" not in r["parallel"]:
        pr = r["parallel"]
        rows.append(("default matrix, default -j (s)", med(pr, "parallel_s"),
                     f"-j 1 {med(pr, 'serial_s')} s, ratio {pr['ratio']:.2f}"))
        if "sweep" in pr:
            sp = pr["sweep"]
            rows.append((f"sweep {sp['spec']}, default -j (s)", med(sp, "parallel_s"),
                         f"-j 1 {med(sp, 'serial_s')} s, ratio {sp['ratio']:.2f}"))
    if "xdist" in r and "error" not in r["xdist"]:
        x = r["xdist"]
        for profile in ("ci", "nightly"):
            rows.append((f"generated families, {x['cell']}, {profile}, --xdist 2 (s)", med(x[profile], "xdist2_s"),
                         f"--xdist 0 {med(x[profile], 'xdist0_s')} s, ratio {x[profile]['ratio']:.2f}"))
    if "reduce" in r and "error" not in r["reduce"]:
        rd = r["reduce"]
        rows.append((f"report --reduce, {rd['scripts']} scripts (s)", f"{rd['wall_s']:.0f}",
                     f"{rd['reduced']} reduced; median lines {rd['median_before']} -> {rd['median_after']}"))
        rows.append(("report --reduce again, earlier reductions kept (s)", f"{rd['warm_wall_s']:.0f}",
                     f"{rd['reused_when_warm']} taken again after one run each"))
    for name in SECTIONS:
        if name in r and "error" in r[name]:
            rows.append((name, "error", r[name]["error"][:100]))
    width = max((len(a) for a, _, _ in rows), default=10)
    print(f"{'measure':<{width}}  {'median':>8}  notes")
    for a, b, c in rows:
        print(f"{a:<{width}}  {b:>8}  {c}")
