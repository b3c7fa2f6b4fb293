"""Fidelity of the standalone reproducers, on real cells (e2e).

Every failing result (fail/error/crash) of the default matrix, restricted to the cases a known
issue names, gets the `repro/CELL__CASE.py` that `harness report` writes. Each script runs in its
cell's env with the project off sys.path (`python -I` from a temporary folder) and must give the
case's verdict: exit 1 (not 0, not 125 = cannot run) and, where the known issue has a `match`
regex, that regex in its output. One process per script, forked from a driver that has imported
the cell's heavy packages once (torch_xla costs 10-20 s of CPU to import); the first script of
each cell also runs as a plain fresh process, to show the driver does not change the verdict.

Fixed known issues: where a known issue's range ends below a later cell in which the same case
passes, the failing cell's script must exit 0 in that cell's env (issue 19 item 2; see
test_fixed_known_issues_pass_on_the_fixing_release for which script and why).

SEAMS_FIDELITY_REPORT=DIR reuses the report of an earlier `harness run` (its report.json and
repro/) instead of running the cells here. SEAMS_FIDELITY=all checks every failing result of
every cell (the docs figure: builds the torch cells, about 25 min on 2 shared cores);
SEAMS_FIDELITY=CELL,CELL the cells it names (some torch cells by hand: in_scope). By default,
within CI's budget, only the jax-only cells of the default matrix run: a torch_xla cell costs GBs
of wheels cold and 5-30 s of CPU per script.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
from packaging.version import InvalidVersion, Version

from harness.cells.envs import ensure_env
from harness.cells.matrix import load_matrix
from harness.judge.expectations import load_expectations
from harness.paths import MATRICES_DIR
from harness.report.repro import safe_name
from harness.report.standalone import HEADER_NAMES, NoStandalone, export_script

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
            import faulthandler
            faulthandler.enable()  # a crash's dump names the script's line it died at (a reduced crash keeps it)
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


_TORCH_PINS = {"torch", "torch_xla", "torch-xla", "torchax"}


def in_scope(cells: dict) -> set[str]:
    """The default matrix's cells these tests check: the jax-only ones (CI's budget), every one with
    SEAMS_FIDELITY=all, or the ones SEAMS_FIDELITY names (`torchax0013-cpu,xla26-cpu`: a hand run over
    some torch cells, where all of them take hours); a name the matrix lacks fails the test."""
    given = os.environ.get("SEAMS_FIDELITY", "")
    if given == "all":
        return set(cells)
    if given:
        names = [n.strip() for n in given.split(",") if n.strip()]
        unknown = [n for n in names if n not in cells]
        assert not unknown, f"SEAMS_FIDELITY names cells the default matrix lacks: {unknown}"
        return set(names)
    return {n for n, c in cells.items() if not set(c.pins) & _TORCH_PINS}


def scope_words() -> str:
    given = os.environ.get("SEAMS_FIDELITY", "")
    return "every cell" if given == "all" else f"cells {given}" if given else "jax-only cells"


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
          f"{failing - len(missing)} with a script; {scope_words()}); "
          f"without a script: {sorted({m[1] for m in missing})}")
    assert not wrong, "\n".join(wrong)
    assert not missing, f"failing cases without a standalone script: {missing}"


def _upper_bounded_below(exp, failing: dict[str, str], passing: dict[str, str]) -> bool:
    """True if a version range of exp ends below the passing cell's release (a `<`/`<=` bound it
    is past) and that release is later than the failing cell's: the fixing release."""
    for pkg, spec in exp.when.items():
        if spec is None or not any(s.operator in ("<", "<=") for s in spec):
            continue
        have, had = passing.get(pkg), failing.get(pkg)
        try:
            if have and had and not spec.contains(Version(have), prereleases=True) and Version(have) > Version(had):
                return True
        except InvalidVersion:
            continue
    return False


def _code(script: str) -> str:
    """A script without its header (comments; the case, cell and install line as literals): its code."""
    return "\n".join(line for line in script.splitlines()
                     if not line.startswith("#") and line.partition(" = ")[0] not in HEADER_NAMES)


def _fixing_pairs(report: dict, allowed: set[str]) -> list[tuple[str, str, str, str]]:
    """(known issue id, case, failing cell, fixing cell) for every known issue that fails a case in
    one cell and whose range ends below a later cell where the same case runs and passes."""
    expectations = {e.id: e for e in load_expectations()}
    cells = {c["cell"]: c for c in report["cells"]}
    out = []
    for case in report["cases"]:
        for bad, r in case["results"].items():
            exp = expectations.get((r.get("expectation") or {}).get("id", ""))
            if r["raw"] not in FAILING_RAW or exp is None or bad not in allowed:
                continue
            bad_v = cells[bad].get("versions") or cells[bad].get("pins") or {}
            for good, g in case["results"].items():
                good_v = cells[good].get("versions") or cells[good].get("pins") or {}
                if (g["raw"] == "pass" and good in allowed and not exp.applies(good_v, cells[good].get("device", "cpu"))
                        and _upper_bounded_below(exp, bad_v, good_v)):
                    out.append((exp.id, case["id"], bad, good))
    return sorted(set(out))


def test_fixed_known_issues_pass_on_the_fixing_release(fidelity_report, tmp_path):
    """Issue 19: a standalone script exits 0 once the bug is fixed. For every known issue whose range
    ends below a later default-matrix cell where the same case runs and passes (jax-only cells by
    default, every cell with SEAMS_FIDELITY=all), the script runs in that fixing cell's env and must
    exit 0.

    Which script: the failing cell's own file (repro/BAD__CASE.py, as `harness report` wrote it), the
    one a maintainer has and `bisect --script` carries across releases. An export folds the compat
    shim for its cell's versions, so that file could be wrong on a later release for a reason that
    is not the bug (an API the later release moved or removed: jax.experimental.shard_map with
    check_rep is gone in 0.10). Where the fixing cell's own export has different code (a compat
    branch folded the other way), that export runs instead, and the figure says how many did.
    """
    report = json.loads((fidelity_report / "report.json").read_text())
    matrix = {c.name: c for c in load_matrix(MATRICES_DIR / "default.yaml").cells}
    allowed = in_scope(matrix)
    pairs = _fixing_pairs(report, allowed)
    expectations = {e.id: e for e in load_expectations()}
    cells = {c["cell"]: c for c in report["cells"]}
    by_cell: dict[str, list[tuple[str, str, str, Path]]] = {}
    no_core = []
    refolded = 0
    for exp_id, case_id, bad, good in pairs:
        exp = expectations[exp_id]
        own = fidelity_report / "repro" / f"{safe_name(bad)}__{safe_name(case_id)}.py"
        try:
            fixed = export_script(case_id, cells[good], {"id": exp.id, "link": exp.link})
        except NoStandalone:
            no_core.append((exp_id, case_id))
            continue
        assert own.is_file(), f"{bad}: no repro/{own.name} for a failing case with a core"
        script = own.read_text()
        if _code(script) != _code(fixed):
            script, refolded = fixed, refolded + 1
        work = tmp_path / good
        work.mkdir(exist_ok=True)
        path = work / f"s{len(by_cell.get(good, []))}.py"
        path.write_text(script)
        by_cell.setdefault(good, []).append((exp_id, case_id, bad, path))
    assert pairs, "no known issue has a fixing release among the cells run: nothing was checked"
    wrong, passed = [], 0
    for good, items in sorted(by_cell.items()):
        python = ensure_env(matrix[good]).python
        codes = _run_cell(python, matrix[good].run_env(), [p for *_x, p in items], tmp_path / good, "numpy,jax")
        for exp_id, case_id, bad, path in items:
            rc = codes[str(path)]
            if rc == 0:
                passed += 1
            else:
                out = Path(str(path) + ".out").read_text(errors="replace").strip().splitlines()[-3:]
                wrong.append(f"{exp_id}: {case_id} fails in {bad}, passes in {good}, its script exits {rc} there: {out}")
    checked = sum(len(v) for v in by_cell.values())
    print(f"\nfixing release: {passed} of {checked} scripts pass on the release that fixed their known issue "
          f"({checked - refolded} the failing cell's own file, {refolded} the fixing cell's export; "
          f"{len({p[0] for p in pairs})} known issues, {len(pairs)} failing/fixing cell pairs; "
          f"{scope_words()}); without a script: {sorted(set(no_core))}")
    assert not wrong, "\n".join(wrong)
    assert not no_core, f"fixed known-issue cases without a standalone script: {sorted(c for _e, c in no_core)}"
