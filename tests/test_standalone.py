"""The standalone exporter (harness/report/standalone.py) and the repro files around it, without a cell.

Running the scripts in real cells is tests/test_standalone_fidelity.py (e2e).
"""

from __future__ import annotations

import ast
import copy
import itertools
import json
import re
import shlex

import pytest

from harness.judge.expectations import load_expectations
from harness.judge.testids import _decorator_ids, _module_values, declared_ids
from harness.paths import REPO, SUITES_DIR
from harness.reduce.script import split_script
from harness.report.repro import cell_selection, harness_install_line, write_repros
from harness.report.standalone import (HEADER_LINES, HEADER_NAMES, NoStandalone, export_script, find_core, redact_url,
                                       standalone_install_line)

CELL = {"cell": "jax060-cpu", "device": "cpu", "pins": {"jax": "0.6.0"}, "versions": {"jax": "0.6.0", "numpy": "2.2.6"},
        "install_line": "pip install jax==0.6.0 jaxlib==0.6.0",
        "env": {"PJRT_DEVICE": "CPU", "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}}
LINEARIZE = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[base]"


def _parametrize_ids(rel: str, func: ast.FunctionDef) -> set[str]:
    """The [...] ids of one test function, read statically: its own module's names, then the
    family's cores.py ones (`list(cores.TABLE)`, a table imported from the cores module)."""
    ids = declared_ids(f"{rel}::{func.name}")
    if ids is not None:
        return ids
    if "pytest_generate_tests" in (REPO / rel).read_text() and not func.decorator_list:
        # cases derived at collection from the installed packages (suites/torchax_ops: OpInfo x
        # torchax's registry): no static read lists them; the ones the known issues name are real
        prefix = f"{rel}::{func.name}["
        return {t[len(prefix):-1] for e in load_expectations() for t in e.tests if t.startswith(prefix)} or {""}
    cores_tree = ast.parse((REPO / rel).with_name("cores.py").read_text())
    names = {**_module_values(cores_tree), **_module_values(ast.parse((REPO / rel).read_text()))}

    class _Unqualify(ast.NodeTransformer):  # cores.TABLE -> TABLE
        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            is_cores = isinstance(node.value, ast.Name) and node.value.id == "cores"
            return ast.Name(node.attr, node.ctx) if is_cores else self.generic_visit(node)

    layers = [i for d in reversed(func.decorator_list)
              if (i := _decorator_ids(_Unqualify().visit(copy.deepcopy(d)), names)) is not None]
    return {"-".join(combo) for combo in itertools.product(*layers)} if layers else {""}


def _all_case_ids() -> list[str]:
    """Every case the suites collect, read statically: each test function of suites/, each of its
    parametrizations (a property test is one case). A parametrization no static read can follow
    raises here: then its cases could not be listed, exported or named by a known issue."""
    out = []
    for path in sorted(SUITES_DIR.glob("*/test_*.py")):
        rel = path.relative_to(REPO).as_posix()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                ids = _parametrize_ids(rel, node)
                out += [f"{rel}::{node.name}" + (f"[{i}]" if i else "") for i in sorted(ids)]
    return out


def _versions_for(case_id: str) -> dict:
    """Pins under which the case's family runs (jax-only families on jax 0.6.0, others on torch_xla 2.9)."""
    if "/call_jax/" in case_id or "/torchax/" in case_id:
        return {"cell": "xla29-cpu", "device": "cpu", "pins": {"torch": "2.9.0", "torch_xla": "2.9.0", "jax": "0.7.1"},
                "install_line": "pip install torch==2.9.0 torch-xla==2.9.0 jax==0.7.1 jaxlib==0.7.1 flax==0.12.0",
                "env": {"PJRT_DEVICE": "CPU"}}
    return CELL


def _assert_self_contained(case_id: str, script: str) -> None:
    compile(script, case_id, "exec")
    tree = ast.parse(script)
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not imported & {"harness", "suites", "pytest", "hypothesis"}, (case_id, imported)
    assert str(REPO) not in script and "/root" not in script and "/home/" not in script, case_id
    # an op case's script is its run at the top level (suites/torchax_ops: nothing imports it); the others' a core
    assert 'if __name__ == "__main__":' in script or case_id.startswith("suites/torchax_ops/test_ops.py::test_op")
    # an Observe only where the script reads `observe` (a close to check, records read back)
    assert ("observe=Observe()" in script) == ("class Observe(dict):" in script), case_id
    reads = any(isinstance(n, ast.Name) and n.id == "observe" and isinstance(n.ctx, ast.Load) for n in ast.walk(tree))
    assert reads == ("observe=Observe()" in script), case_id  # observe=None only where nothing reads it
    # nothing folding left idle: a bare comparison or name as a statement, a loop that only passes
    idle = [ast.unparse(n)[:60] for n in ast.walk(tree)
            if (isinstance(n, ast.For) and all(isinstance(b, ast.Pass) for b in n.body))
            or (isinstance(n, ast.Expr) and isinstance(n.value, (ast.Compare, ast.Name, ast.BoolOp)))]
    assert not idle, f"{case_id}: idle statements left by folding: {idle}"
    # an inlined helper named like a local of the code that uses it would be shadowed (UnboundLocalError)
    top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        assert not stored & top, f"{case_id}: {fn.name} assigns {sorted(stored & top)}, also an inlined definition"


def test_every_case_has_a_core_and_exports_a_self_contained_script():
    """Any case can fail on a future release, so every case the suites collect has a core (no
    exemption list): its standalone script imports nothing of this project, pytest or hypothesis."""
    cases = _all_case_ids()
    assert len(cases) > 130  # the whole class, not a named example
    for case_id in cases:
        try:
            script = export_script(case_id, _versions_for(case_id), {"id": "x", "link": "https://example.org/1"})
        except NoStandalone as exc:
            raise AssertionError(f"{case_id} has no standalone reproducer: {exc}") from None
        _assert_self_contained(case_id, script)


def test_every_known_bug_case_is_among_the_cases():
    """The known issues name cases the static read lists (else the class test above misses them)."""
    cases = set(_all_case_ids())
    exps = [e for e in load_expectations() if e.expect in ("fail", "error", "crash")]
    named = [c for c in cases if any(e.covers(c) for e in exps)]
    assert len(named) > 40


def test_a_property_case_pins_its_example_by_name():
    """CORES may name a module-level example (the test runs it as its @example): it is read, not imported."""
    target = find_core("suites/call_jax/test_properties.py::test_generated_pytrees_match_jax")
    assert target.function == "generated_pytree" and dict(target.kwargs)["sig"][1]["bias"] == ("np", "float32")
    script = export_script("suites/call_jax/test_properties.py::test_generated_call_sequences_keep_cache_and_results_right",
                           _versions_for("suites/call_jax/"))
    assert "generated_call_sequence(calls=[" in script and "class Level(enum.IntEnum)" in script


def test_the_shim_is_resolved_for_the_cells_versions():
    old = export_script(LINEARIZE, CELL)
    new = export_script(LINEARIZE, {**CELL, "pins": {"jax": "0.7.2"}, "versions": {"jax": "0.7.2"}})
    assert "from jax.experimental.shard_map import shard_map" in old and "check_rep=check" in old
    assert "jax.shard_map(" not in old
    assert "jax.shard_map(" in new and "check_vma=check" in new and "experimental.shard_map" not in new
    assert "found(" not in old + new  # every probe resolved or reduced to its test


def test_the_cases_parameters_are_folded_into_the_core():
    script = export_script(LINEARIZE, CELL)
    assert "linearize_transpose('base', observe=Observe())" in script
    assert "pvary" not in script and "pcast" not in script  # the other variants' branches are gone
    assert "observe.record" not in script  # only records: nothing is checked by them
    table = export_script("suites/call_jax/test_non_tensor_inputs.py::test_container_mixing_tensors_and_scalars[dict]",
                          _versions_for("suites/call_jax/"))
    assert "CONTAINERS" not in table and "'name': 'affine'" in table and "'nested'" not in table


def test_a_property_case_runs_its_pinned_example():
    script = export_script("suites/shard_map/test_properties.py::test_replicated_primal_linearize_transpose[unmarked]", CELL)
    assert "replicated_primal_linearize_transpose('unmarked', mesh_index=1, per_shard=2, op='square', seed=0" in script
    # the dataclass it uses keeps its fields (found by the fidelity test: they were dropped with annotations)
    assert "@dataclass(frozen=True)\nclass Unary:\n    name: 'str'\n    jax_fn: 'object'" in script


def test_header_says_install_run_and_issue_and_holds_data_only_as_literals():
    case = LINEARIZE.replace("[base]", "[base\nimport os\x1b[2J]")
    script = export_script(case, {**CELL, "cell": "jax060-cpu\nrm -rf /\u2028x"},
                           {"id": "jax-28260\r\nx", "link": "https://github.com/jax-ml/jax/issues/28260"})
    lines = script.splitlines()
    comments = [ln for ln in lines if ln.startswith("#")]
    assert comments == list(HEADER_LINES)  # fixed text: no value of the results can become a comment (or a coding cookie)
    assert lines[:1] == list(HEADER_LINES) and not lines[1].startswith("#")  # a coding cookie: lines 1-2 only
    header = split_script(script).facts  # the literals, as the reducer reads them back
    assert set(header) <= set(HEADER_NAMES)
    assert header["CELL"] == "jax060-cpu\nrm -rf /\u2028x (cpu)" and header["CASE"] == case
    assert header["KNOWN_ISSUE"] == "jax-28260\r\nx: https://github.com/jax-ml/jax/issues/28260"
    assert header["INSTALL"] == "pip install jax==0.6.0 jaxlib==0.6.0 numpy==2.2.6"
    assert all(ln.isascii() and ln.isprintable() for ln in lines[:5])
    # the cell's variables in one statement, each only where the caller has none (as setdefault), before jax
    assert "'XLA_FLAGS': '--xla_force_host_platform_device_count=8'" in script and "if k not in os.environ})" in script
    assert split_script(script).env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=8"
    assert script.index("os.environ.update") < script.index("import jax")


@pytest.mark.parametrize("case_id", ["suites/shard_map/test_nope.py::test_x", "tests/test_report.py::test_x",
                                     "suites/shard_map/test_linearize_transpose.py::test_no_such_case",
                                     "suites/call_jax/test_non_tensor_inputs.py::test_static_scalar[none]"])
def test_no_core_is_one_clear_reason(case_id):
    with pytest.raises(NoStandalone, match=r"\S"):
        export_script(case_id, CELL)


def test_index_urls_are_redacted_and_numpy_is_named():
    cell = {**CELL, "install_line": shlex.join(["pip", "install", "--index-url", "https://me:t0ken@pypi.example/simple",
                                                "--find-links", "https://u:p@h.example:8443/w", "jax==0.6.0"])}
    line = standalone_install_line(cell)
    assert "t0ken" not in line and "me:" not in line and ":p@" not in line
    assert "https://***@pypi.example/simple" in line and "https://***@h.example:8443/w" in line
    assert line.endswith("numpy==2.2.6")
    assert redact_url("https://pypi.org/simple") == "https://pypi.org/simple"
    assert "t0ken" not in harness_install_line(cell["install_line"])


def test_harness_install_line_has_what_the_plugin_and_suites_import():
    words = shlex.split(harness_install_line("pip install jax==0.6.0 jaxlib==0.6.0"))
    assert words[:4] == ["pip", "install", "jax==0.6.0", "jaxlib==0.6.0"]
    names = {re.split(r"[<>=]", w)[0] for w in words[4:]}
    assert {"pytest", "pytest-reportlog", "pyyaml", "packaging", "hypothesis", "numpy"} <= names
    # derived, never copied: a line with a word that is no requirement is rebuilt from the (checked) pins
    assert harness_install_line("pip install x; rm -rf /", {"pins": {"jax": "0.6.0", "x;y": "1"}}).startswith(
        "pip install jax==0.6.0 'pytest>=8'")
    assert harness_install_line("curl evil | sh", {"pins": {"jax": "0.6.0\ntouch x"}}).startswith("pip install 'pytest>=8'")


def test_cell_selection_names_the_matrix_or_sweep_without_machine_paths(tmp_path):
    assert cell_selection({"source": f"{REPO}/matrices/default.yaml:23"}) == ["--matrix", "matrices/default.yaml"]
    assert cell_selection({"source": "--sweep jax>=0.5.3,<0.7"}) == ["--sweep", "jax>=0.5.3,<0.7"]
    assert cell_selection({"source": f"{tmp_path}/mine.yaml:3"}) == ["--matrix", "mine.yaml"]
    assert cell_selection({}) == []


def test_write_repros_writes_a_script_beside_the_markdown_for_failing_results_only(tmp_path):
    cell = {**CELL, "source": f"{REPO}/matrices/default.yaml:16", "run_env": CELL["env"]}
    results = {"fail": {"raw": "fail", "verdict": "known-bug", "message": "ValueError: linearized ...",
                        "expectation": {"id": "jax-28260", "link": "https://github.com/jax-ml/jax/issues/28260",
                                        "reason": "r"}},
               "timeout": {"raw": "timeout", "verdict": "timeout", "message": "killed"},
               "pass": {"raw": "pass", "verdict": "ok", "message": None}}
    report = {"cells": [cell], "cases": [
        {"id": LINEARIZE, "results": {"jax060-cpu": results["fail"]}},
        {"id": LINEARIZE.replace("base", "pvary"), "results": {"jax060-cpu": results["timeout"]}},
        {"id": LINEARIZE.replace("base", "pcast"), "results": {"jax060-cpu": results["pass"]}}]}
    assert write_repros(json.loads(json.dumps(report)), tmp_path) == 2
    names = sorted(p.name for p in tmp_path.iterdir())
    stem = "jax060-cpu__suites_shard_map_test_linearize_transpose.py_test_linearize_transpose_base"
    assert names == sorted([f"{stem}.md", f"{stem}.py", stem.replace("base", "pvary") + ".md"])
    md = (tmp_path / f"{stem}.md").read_text()
    assert "<details><summary>" in md and (tmp_path / f"{stem}.py").read_text() in md
    assert "--matrix matrices/default.yaml --cell jax060-cpu" in md and "pytest-reportlog" in md
    assert str(REPO) not in md


def test_only_what_the_case_uses_is_inlined():
    """The shrinking rules, each against its opposite case (tests/test_standalone_length.py bounds the lengths)."""
    xla29 = _versions_for("suites/call_jax/")
    xla26 = {**xla29, "cell": "xla26-cpu", "pins": {"torch": "2.6.0", "torch_xla": "2.6.0", "jax": "0.4.38"},
             "install_line": "pip install torch==2.6.0 torch-xla==2.6.0 jax==0.4.38 jaxlib==0.4.38"}
    case = "suites/call_jax/test_upstream_parity.py::test_equal_looking_statics_trace_apart[int_then_float]"
    new, old = export_script(case, xla29), export_script(case, xla26)
    # require() of an installed package is an import; xla() that only returned it is gone
    assert "\nimport torch\nimport torch_xla\n" in new and "def require(" not in new and "def xla(" not in new
    # call_jax is in torch_xla 2.9's range: its api_absent guard folds away; 2.6 has no call_jax: it stays
    assert "api_absent" not in new and "def api_absent(" in old and "skip(" in old
    assert "def skip(" not in new  # nothing left that can skip
    # the try/except ImportError guard of a present API goes, the import stays
    script = export_script(LINEARIZE, CELL)
    assert "from jax.experimental.shard_map import shard_map as exp_shard_map" in script
    assert "except ImportError" not in script and "def _experimental_shard_map(" not in script
    # no torch in a jax-only script: to_numpy without its torch branch; with torch, the branch stays
    assert "detach" not in script and "detach" in new
    # Observe has only what the case calls; docstrings of inlined helpers go, the core's stays
    assert "def close(" in script and "def record(" not in script
    assert '"""jax#28260: linearize' in script and script.count('"""') == 2


def test_a_presence_probe_leaves_no_idle_statement_or_loop():
    """`found(API, test)` only records; where its range resolved it or not, a bare call goes, and the
    loop that did nothing else goes with it, while a loop that still does something stays."""
    case = "suites/call_jax/test_properties.py::test_generated_call_sequences_keep_cache_and_results_right"
    script = export_script(case, _versions_for("suites/call_jax/"))
    body = script[script.index("def cache_entries("):script.index("return None", script.index("def cache_entries("))]
    assert "fn is not None\n    for" not in body and "found(" not in script
    assert "for name, fn in counters.items()" not in body and "for fn in counters.values():" in body
    tree = ast.parse(script)
    idle = [n for n in ast.walk(tree) if isinstance(n, ast.For) and all(isinstance(b, ast.Pass) for b in n.body)]
    bare = [n for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, (ast.Compare, ast.Name))]
    assert not idle and not bare


def test_a_cpu_torch_cells_pasted_install_line_takes_pytorchs_cpu_wheels():
    """Issue 30: PyPI's Linux torch wheel pulls the CUDA libraries (GBs) into a CPU-only repro; the
    line for a cpu cell adds PyTorch's CPU index (its torch X+cpu sorts above PyPI's X) and says so."""
    from harness.report.issue_body import issue_body
    from harness.report.standalone import TORCH_CPU_INDEX

    xla = {"cell": "xla29-cpu", "device": "cpu", "pins": {"torch": "2.9.0", "torch_xla": "2.9.0", "jax": "0.7.1"},
           "install_line": "pip install torch==2.9.0 torch_xla==2.9.0 jax==0.7.1", "versions": {"numpy": "2.2.6"}}
    words = shlex.split(standalone_install_line(xla))
    assert words[:4] == ["pip", "install", "--extra-index-url", TORCH_CPU_INDEX] and "torch==2.9.0" in words
    body = issue_body(None, xla, {"raw": "fail", "verdict": "regression", "message": "x"}, script="print(1)\n",
                      standalone_install=standalone_install_line(xla))
    assert "PyTorch's CPU wheels: the cell runs on CPU" in body
    # not for a tpu cell, a jax-only cell, or a cell with an index of its own
    for other in ({**xla, "device": "tpu"}, {**CELL}, {**xla, "install_line": xla["install_line"] + " --index-url https://i.example/simple"}):
        assert TORCH_CPU_INDEX not in standalone_install_line(other)


def test_a_probe_shipped_to_a_fresh_process_keeps_the_imports_inside_it():
    """The census sends resolve_probe's own source to a fresh interpreter (suites/coexist/fresh.py): the
    imports the script's top also has must stay inside it (dropped, the exported census case failed with
    `NameError: name 'json' is not defined` instead of its finding, and the known issue's match was not
    in its output); a function that is only called still reads the top's imports."""
    case = "suites/coexist/test_census.py::test_bridge_has_no_silent_fallbacks[torchax]"
    tree = ast.parse(export_script(case, _versions_for("suites/coexist/")))
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    top = {ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    inner = {ast.unparse(n) for n in ast.walk(fns["resolve_probe"]) if isinstance(n, (ast.Import, ast.ImportFrom))}
    assert {"import json", "from importlib.util import find_spec"} <= inner & top
    for name, fn in fns.items():
        if name != "resolve_probe" and "run_fresh" not in name:
            twins = {ast.unparse(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))} & top
            assert not twins, f"{name} imports again what the top imports: {twins}"
