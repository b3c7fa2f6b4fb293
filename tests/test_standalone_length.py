"""How long the standalone reproducers are: every case with a core, on every default-matrix cell
its family runs in (issue 19: short enough to paste into an upstream issue, aim under 60 lines).

The scripts are exported for each cell's pins (what `harness report` does, without the installed
versions a run adds), so the figure is the whole class, not one example. Cores are the scenarios'
own code, kept word for word: the bound below is what the exporter reaches, and docs/repros.md
("Standalone reproducers") gives the distribution.
"""

from __future__ import annotations

import functools
import statistics

from harness.cells.matrix import load_matrix
from harness.judge.apis import default_api_ranges
from harness.paths import MATRICES_DIR
from harness.report.standalone import NoStandalone, export_script, find_core
from tests.test_standalone import _all_case_ids

AIM = 60
# The longest script may have (lines). Exporting drops everything a case does not reach; what is
# left over AIM is the scenarios' own code: the linearize_transpose core alone is 40 lines, the
# call_jax ones carry the HLO-parameter helpers and torch_xla's device/sync shims, and its property
# cases (cored since) also the input-spec helpers and the probe they compare against (up to 226).
BOUND = 230
# The generated shard_map space case carries the float64 model of every collective it draws (the
# reference itself: the per-device semantics of 13 collectives, the out-spec join, the Jacobian
# the vjp is checked against): about 320 lines on every cell, the price of a script that reruns any
# falsifying program the space finds (its refusal checks written as try/except: a script imports no pytest).
CASE_BOUNDS = {"suites/shard_map/test_space.py::test_generated_collective_programs_match_the_float64_model": 340}
# Cases of this round's derived families, by id prefix, each over BOUND for a reason not yet met:
# - the census cases carry the AST scanner and resolver they check the bridge's source with (367);
# - the generated module forwards carry the grammar that builds them (232);
# - the declared-dependency cases carry the import probe and the Requires-Dist closure, with the
#   bridge's extras the env holds and the extras that name a missing package (252).
PREFIX_BOUNDS = {"suites/coexist/test_census.py::": 370, "suites/torchax_ops/test_modules.py::": 235,
                 "suites/coexist/test_declared.py::": 255}
# An OpInfo op case (and its in-place / out= / error-input forms) exports through
# harness/report/standalone_op.py: the op, the sample, the two results (issue 27), not the family's
# core (398 lines before). The header and the cell's env are 11 of these lines; a script exported
# without a run (as here) also works out the OpInfo's tolerance and whether values compare (a failing
# run's op script has them as literals: 43 to 50 lines); an out= script builds its out tensors too.
OP_CASE, OP_BOUND = "suites/torchax_ops/test_ops.py::test_op", 62


def bound_for(case_id: str) -> int:
    """The longest script case_id may export."""
    if case_id.startswith((OP_CASE + "[", OP_CASE + "_")):
        return OP_BOUND
    return next((b for p, b in PREFIX_BOUNDS.items() if case_id.startswith(p)),
                CASE_BOUNDS.get(case_id.split("[")[0], BOUND))
# What each family needs in a cell to run at all (the others skip as "not in cell"): torchax_ops
# needs torch beside torchax (torchax0013declared-cpu pins torchax alone).
FAMILY_NEEDS = {"call_jax": ("torch-xla",), "torchax": ("torch",), "torchax_ops": ("torchax", "torch"),
                "shard_map": ("jax",), "compute_on": ("jax",)}


@functools.lru_cache(maxsize=1)
def exported_scripts() -> tuple[tuple[str, str, str], ...]:
    """(case, cell, script) for every exportable case on every default-matrix cell of its family
    (shared with tests/test_standalone_lint.py: exported once per session)."""
    cells = [c.describe() for c in load_matrix(MATRICES_DIR / "default.yaml").cells]
    ranges = default_api_ranges()
    out = []
    for case_id in _all_case_ids():
        family = case_id.split("/")[1]
        for cell in cells:
            if not all(p in cell["pins"] for p in FAMILY_NEEDS.get(family, ("jax",))):
                continue
            try:
                script = export_script(case_id, cell, {"id": "known-issue", "link": "https://example.org/1"}, ranges)
            except NoStandalone:
                break  # no core: the same on every cell
            out.append((case_id, cell["cell"], script))
    return tuple(out)


def _lengths() -> list[tuple[int, str, str]]:
    """(lines, case, cell) for every exportable case on every default cell of its family."""
    return sorted((len(script.splitlines()), case_id, cell) for case_id, cell, script in exported_scripts())


def test_every_exported_script_is_within_the_bound():
    lengths = _lengths()
    cored = set()
    for case_id in _all_case_ids():
        try:
            find_core(case_id)
            cored.add(case_id)
        except NoStandalone:
            pass
    assert len(cored) > 80 and {case for _n, case, _c in lengths} == cored  # every case with a core
    counts = [n for n, _case, _cell in lengths]
    over = [f"{n} {case} ({cell})" for n, case, cell in lengths if n > bound_for(case)]
    summary = (f"{len(counts)} scripts: min {counts[0]}, median {statistics.median(counts)}, max {counts[-1]}, "
               f"{sum(n <= AIM for n in counts)} within {AIM} lines")
    print("\n" + summary)
    longest = "\n".join(f"{n} {case} ({cell})" for n, case, cell in lengths[-10:])
    assert not over, f"{summary}; over {BOUND}:\n" + "\n".join(over) + f"\nlongest:\n{longest}"


def test_an_op_cases_script_is_the_op_the_sample_and_the_two_results():
    """Every OpInfo op case a known issue names, on every default cell of the family: within OP_BOUND,
    and nothing of the family's core in it (no inlined helper of suites/torchax_ops)."""
    ops = [(case, cell, script) for case, cell, script in exported_scripts() if case.startswith((OP_CASE + "[", OP_CASE + "_"))]
    assert len(ops) > 200, "the known issues name fewer op cases than expected: the export path is not exercised"
    lengths = sorted(len(script.splitlines()) for _case, _cell, script in ops)
    print(f"\n{len(ops)} op scripts: min {lengths[0]}, median {statistics.median(lengths)}, max {lengths[-1]} lines")
    assert lengths[-1] <= OP_BOUND
    assert not [case for case, _cell, script in ops if "def op_case(" in script or "def _compare(" in script]
