"""Fidelity of the standalone reproducers, on real cells (e2e).

Every failing result (fail/error/crash) of the default matrix, restricted to the cases a known
issue names, gets the `repro/CELL__CASE.py` that `harness report` writes. Each script runs in its
cell's env with the project off sys.path (`python -I` from a temporary folder) and must give the
case's verdict: exit 1 (not 0, not 125 = cannot run) and, where the known issue has a `match`
regex, that regex in its output. One process per script, forked from a driver that has imported
the cell's heavy packages once (torch_xla costs 10-20 s of CPU to import); the first script of
each cell also runs as a plain fresh process, to show the driver does not change the verdict.

SEAMS_FIDELITY_REPORT=DIR reuses the report of an earlier `harness run` (its report.json and
repro/) instead of running the cells here. SEAMS_FIDELITY=all checks every failing result of
every cell (the README figure: builds the torch cells, about 25 min on 2 shared cores). By default,
within CI's budget, only the jax-only cells of the default matrix run: a torch_xla cell costs GBs
of wheels cold and 5-30 s of CPU per script.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.cells.envs import ensure_env
from harness.cells.matrix import load_matrix
from harness.judge.expectations import load_expectations
from harness.paths import MATRICES_DIR, REPO
from harness.report.repro import safe_name

pytestmark = pytest.mark.e2e

FAILING_RAW = {"fail", "error", "crash"}
SCRIPT_TIMEOUT_S = 300
_DRIVER = textwrap.dedent('''
    import json, os, runpy, signal, sys, traceback
    for name in sys.argv[1].split(","):
        try:
            __import__(name)
        except Exception:
            pass  # the script's own import fails the same way and says why
    codes = {}
    for script in sys.argv[2:]:
        pid = os.fork()
        if pid == 0:
            fd = os.open(script + ".out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            signal.alarm(int(os.environ["FIDELITY_TIMEOUT_S"]))
            code = 0
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        codes[script] = os.waitstatus_to_exitcode(status)
    print(json.dumps(codes))
''')


def _known_issue_ids() -> list[str]:
    """Every case id (or file, or folder) a known issue names: what the fidelity run selects.
    `suites/` itself (a cell that cannot be built) selects nothing a script could reproduce."""
    ids: set[str] = set()
    for exp in load_expectations():
        ids.update(t.removesuffix("::") for t in exp.tests if t.rstrip("/") != "suites")
    return sorted(ids)


@pytest.fixture(scope="module")
def fidelity_report(tmp_path_factory) -> Path:
    given = os.environ.get("SEAMS_FIDELITY_REPORT")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("fidelity")
    cells = [] if _everything() else [a for c in load_matrix(MATRICES_DIR / "default.yaml").cells
                                     if not set(c.pins) & {"torch", "torch_xla", "torch-xla", "torchax"}
                                     for a in ("--cell", c.name)]
    cmd = [sys.executable, "-m", "harness", "run", *cells, "--out", str(out / "results"),
           "--report-dir", str(out / "report"), "--", *_known_issue_ids()]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=3000)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    return out / "report"


def _everything() -> bool:
    return os.environ.get("SEAMS_FIDELITY") == "all"


def _run_cell(python: Path, env: dict[str, str], scripts: list[Path], tmp: Path, preload: str) -> dict[str, int]:
    driver = tmp / "driver.py"
    driver.write_text(_DRIVER)
    run_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), **env,
               "FIDELITY_TIMEOUT_S": str(SCRIPT_TIMEOUT_S)}
    proc = subprocess.run([str(python), "-I", str(driver), preload, *map(str, scripts)], cwd=tmp, env=run_env,
                          capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S * (len(scripts) + 1))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_failing_case_reproduces_standalone(fidelity_report, tmp_path):
    report = json.loads((fidelity_report / "report.json").read_text())
    cells = {c.name: c for c in load_matrix(MATRICES_DIR / "default.yaml").cells}
    expectations = {e.id: e for e in load_expectations()}
    repro_dir = fidelity_report / "repro"
    by_cell: dict[str, list[tuple[str, dict, Path]]] = {}
    missing, failing = [], 0
    for case in report["cases"]:
        for cell, r in case["results"].items():
            if r["raw"] not in FAILING_RAW or cell not in cells:
                continue
            failing += 1
            script = repro_dir / f"{safe_name(cell)}__{safe_name(case['id'])}.py"
            if not script.is_file():
                missing.append((cell, case["id"]))
                continue
            by_cell.setdefault(cell, []).append((case["id"], r, script))
    assert failing, "the fidelity run produced no failing result: nothing was checked"
    wrong, reproduced = [], 0
    for cell, items in sorted(by_cell.items()):
        python = ensure_env(cells[cell]).python  # cached: built by the run, or now for a given report
        work = tmp_path / cell
        work.mkdir()
        copies = []
        for i, (_case, _r, script) in enumerate(items):  # copied: the report folder may be read-only
            copies.append(work / f"s{i}.py")
            copies[-1].write_text(script.read_text())
        pins = cells[cell].pins
        preload = ",".join(m for m in ("numpy", "jax", "torch", "torch_xla") if m in pins or m == "numpy"
                           or (m == "jax" and "jax" in pins))
        codes = _run_cell(python, cells[cell].run_env(), copies, work, preload)
        fresh = subprocess.run([str(python), "-I", str(copies[0])], cwd=work, capture_output=True, text=True,
                               env={"PATH": os.environ.get("PATH", ""), "HOME": str(work)}, timeout=SCRIPT_TIMEOUT_S)
        assert (fresh.returncode != 0) == (codes[str(copies[0])] != 0), \
            f"{cell}: {items[0][0]} exits {fresh.returncode} alone but {codes[str(copies[0])]} under the driver"
        for (case_id, r, _script), copy in zip(items, copies):
            rc = codes[str(copy)]
            output = Path(str(copy) + ".out").read_text(errors="replace")
            exp = expectations.get((r.get("expectation") or {}).get("id", ""))
            ok = rc == 1 or (r["raw"] == "crash" and rc < 0)
            if ok and exp is not None and exp.match and not re.search(exp.match, output):
                ok = False
            if ok:
                reproduced += 1
            else:
                wrong.append(f"{cell} {case_id}: exit {rc}; last output: {output.strip().splitlines()[-1:]} "
                             f"(expected {exp.match if exp else r['raw']!r})")
    checked = sum(len(v) for v in by_cell.values())
    print(f"\nstandalone fidelity: {reproduced} of {checked} scripts checked reproduce ({failing} failing results, "
          f"{failing - len(missing)} with a script; {'every cell' if _everything() else 'jax-only cells'}); "
          f"without a script: {sorted({m[1] for m in missing})}")
    assert not wrong, "\n".join(wrong)
    assert not missing, f"failing cases without a standalone script: {missing}"

