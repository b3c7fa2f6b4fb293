"""The coexist family can see each bug it claims to: put one into the real installed bridge or jax
(a pytest plugin from tests/seeds/), run the family's case and an older case beside it in a real
cell, and check the new case turns news while the older one stays blind.

The clean run is part of each test: the coexist cases already fail there on known upstream issues
(matrices/known_issues/coexist.yaml), so "caught" means judged news (a regression the known issue
does not cover), not merely a failing raw outcome.

Two cells exist for this family and are checked here as they are defined: torchax0013declared-cpu
(torchax with only what its metadata declares) and torchax0013torch213-cpu (built although torchax
cannot import there, matrices/default.yaml `import_may_fail`).
"""

from __future__ import annotations

import pytest

from harness.cells.matrix import catalogue
from harness.judge.apis import default_api_ranges
from harness.judge.expectations import applicable_expectations, load_expectations
from harness.judge.results import read_results
from harness.judge.verdicts import judge_case
from harness.run.cellrun import run_cell

pytestmark = pytest.mark.e2e

DECLARED = "suites/coexist/test_declared.py::test_bridge_imports_only_what_it_declares[torchax]"
JAX_JIT = "suites/torchax/test_entry_points.py::test_interop_jax_jit_of_a_torch_function"
DEVICES = "suites/coexist/test_living_together.py::test_torch_feature_is_unchanged_by_importing[torch_xla-devices]"
ORDER = "suites/coexist/test_living_together.py::test_import_order_gives_the_same_results[torch_xla]"
UNUSED = "suites/call_jax/test_unused_args.py::test_unused_arguments[unused_first]"
CENSUS = "suites/coexist/test_census.py::test_bridge_uses_only_jax_apis_the_cell_has[torchax]"
ROUND_TRIP = "suites/torchax/test_interop.py::test_round_trip[float32]"


TORCH_OPS = "suites/coexist/test_census.py::test_torchax_registers_only_torch_ops_the_cell_has"
TORCHAX_DEVICES = "suites/coexist/test_living_together.py::test_torch_feature_is_unchanged_by_importing[torchax-devices]"


def _run(tmp_path, cell_name: str, seed: str | None, test_ids: list[str]):
    """The cases of one cell in one run, with the seed's plugin or without: the CellResults."""
    out = tmp_path / f"{cell_name}-{seed or 'clean'}.jsonl"
    run_cell(catalogue().cell(cell_name), out, (["-p", f"tests.seeds.{seed}"] if seed else []) + test_ids,
             timeout_s=600)
    res = read_results(out)
    assert res.status == "complete", res.reason
    return res


def _verdict(res, test_id: str) -> str:
    """What the harness judges the case (known issues and API ranges applied)."""
    case = res.cases[test_id]
    found = applicable_expectations(load_expectations(), test_id, res.versions(), res.device)
    return judge_case(case.raw, found, case.message, case.observations, res.versions(), default_api_ranges())[0]


def test_an_undeclared_import_is_caught_by_the_declared_dependency_case_only(tmp_path):
    ids = [DECLARED, JAX_JIT]
    clean = _run(tmp_path, "torchax0013-cpu", None, ids)
    assert _verdict(clean, DECLARED) == "known-bug"  # torch, undeclared upstream: the known issue
    assert "sortedcontainers" not in (clean.cases[DECLARED].message or "")
    seeded = _run(tmp_path, "torchax0013-cpu", "bridge_imports_undeclared_module", ids)
    assert "sortedcontainers (imported by torchax; installed: yes)" in (seeded.cases[DECLARED].message or ""), seeded.cases[DECLARED]
    assert _verdict(seeded, DECLARED) == "regression"
    assert seeded.cases[JAX_JIT].raw == "pass", "the entry-point case imports the same torchax and is blind to it"


def test_an_import_that_changes_a_device_query_is_caught_by_the_fresh_process_comparison_only(tmp_path):
    ids = [DEVICES, ORDER, UNUSED]
    clean = _run(tmp_path, "xla29-cpu", None, ids)
    assert [clean.cases[i].raw for i in ids] == ["pass"] * 3
    seeded = _run(tmp_path, "xla29-cpu", "bridge_import_changes_device_count", ids)
    assert seeded.cases[DEVICES].raw == "fail", seeded.cases[DEVICES]
    assert "torch.cuda.device_count(): 0 -> 8" in (seeded.cases[DEVICES].message or "")
    assert _verdict(seeded, DEVICES) == "regression"
    # both import orders import torch_xla, so they agree with each other; call_jax does not look at CUDA
    assert seeded.cases[ORDER].raw == "pass" and seeded.cases[UNUSED].raw == "pass"


def test_a_jax_api_the_bridge_calls_missing_from_the_cell_is_caught_by_the_census_only(tmp_path):
    ids = [CENSUS, ROUND_TRIP, JAX_JIT]
    clean = _run(tmp_path, "torchax0013-cpu", None, ids)
    assert _verdict(clean, CENSUS) == "known-bug"  # native_layer_norm_backward, which no jax has
    seeded = _run(tmp_path, "torchax0013-cpu", "jax_lacks_an_api_the_bridge_calls", ids)
    message = seeded.cases[CENSUS].message or ""
    assert "uses 2 jax API(s)" in message and "jax.lax.cumlogsumexp (torchax/ops/jaten.py:" in message, message
    assert _verdict(seeded, CENSUS) == "regression"
    absent = [e["api"] for e in seeded.cases[CENSUS].observations["census"]["absent"]]
    assert "jax.lax.cumlogsumexp" in absent
    assert seeded.cases[ROUND_TRIP].raw == "pass" and seeded.cases[JAX_JIT].raw == "pass", "no older case reaches it"


def test_torchax_with_only_what_it_declares_names_the_missing_package_and_nothing_else_breaks(tmp_path):
    """The whole suite in the declared-only cell: the declared case names jax (declared only by
    torchax's extras) with the module importing it; every other case skips `not in cell` (the jax
    families at collection) or passes; no error, no env-error."""
    res = _run(tmp_path, "torchax0013declared-cpu", None, ["suites/"])
    declared = res.cases[DECLARED]
    assert "jax (imported by torchax; installed: no (import torchax); declared only by its extra(s) cpu, cuda, odml, tpu)" \
        in (declared.message or ""), declared
    assert _verdict(res, DECLARED) == "known-bug"
    others = {n: c for n, c in res.cases.items() if n != DECLARED}
    assert others and {c.raw for c in others.values()} <= {"skip", "pass"}, \
        {n: (c.raw, c.message) for n, c in others.items() if c.raw not in ("skip", "pass")}
    assert all((c.message or "").startswith("not in cell: ") for c in others.values() if c.raw == "skip")


def test_where_torchax_cannot_import_the_census_still_names_each_operator_with_its_file_and_line(tmp_path):
    ids = [TORCH_OPS, TORCHAX_DEVICES, ROUND_TRIP]
    res = _run(tmp_path, "torchax0013torch213-cpu", None, ids)  # built and run: not an env-error
    census = res.cases[TORCH_OPS]
    assert "torch.ops.aten.prod.dim_Dimname (torchax/amp.py:118)" in (census.message or ""), census
    assert {"api": "torch.ops.aten.prod.dim_Dimname", "guard": "none", "sites": ["torchax/amp.py:118"], "n_sites": 1} \
        == {k: v for k, v in next(e for e in census.observations["census"]["absent"]
                                  if e["api"].endswith("dim_Dimname")).items() if k != "detail"}
    # the import failure itself, in a fresh process and in the torchax family: the known issues, not news
    assert "no overload name 'dim_Dimname'" in (res.cases[TORCHAX_DEVICES].message or "")
    assert res.cases[ROUND_TRIP].raw == "error"
    assert [_verdict(res, i) for i in ids] == ["known-bug"] * 3
