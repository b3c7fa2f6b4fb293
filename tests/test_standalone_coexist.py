"""The coexist family's short scripts (harness/report/standalone_coexist.py), without a cell: what a failing
run's message picks, that everything from it is a checked literal, that each fact is the probe's own, and
the scripts' lengths. Running them in cells beside the full scripts: docs/reduce.md ("Coexist scripts
minimal by construction") and the e2e test at the end."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from harness.report.standalone import export_script
from harness.report.standalone_coexist import (
    FACTS,
    ORDER_GROUPS,
    Short,
    export_coexist_script,
    line_bound,
    short_form,
)

CELL = {"cell": "torchax0013-cpu", "device": "cpu", "pins": {"torchax": "0.0.13", "torch": "2.9.0", "jax": "0.7.2"},
        "versions": {"jax": "0.7.2", "torch": "2.9.0"}, "install_line": "pip install torchax==0.0.13",
        "env": {"PJRT_DEVICE": "CPU", "JAX_PLATFORMS": "cpu"}}
LIVING = "suites/coexist/test_living_together.py::"
FEATURE = LIVING + "test_torch_feature_is_unchanged_by_importing[torchax-{}]"
ORDER = LIVING + "test_import_order_gives_the_same_results[torchax]"
CENSUS = "suites/coexist/test_census.py::test_bridge_uses_only_jax_apis_the_cell_has[{}]"
FALLBACKS = "suites/coexist/test_census.py::test_bridge_has_no_silent_fallbacks[torchax]"
OPS = "suites/coexist/test_census.py::test_torchax_registers_only_torch_ops_the_cell_has"

DECLARED = "suites/coexist/test_declared.py::test_bridge_imports_only_what_it_declares[{}]"
# messages as the default run recorded them (/tmp/r32b/report.json; the stderr tail cut short)
COMPILE = ("after `import torchax` (torchax 0.0.13), torch's compile differs from a fresh process without it:\n"
           "  function without tensor inputs: [2.0, 2.0, 2.0] -> 'error: RuntimeError: PyTorch is not linked with support for jax devices'")
DEVICES = ("after `import torchax` (torchax bundled in torch-xla 2.9.0), torch's devices differs from a fresh process without it:\n"
           "  privateuse1 backend name: 'privateuseone' -> 'jax'\n"
           "  torch.accelerator.current_accelerator(): 'cuda' -> 'jax'\n"
           "  torch.accelerator.is_available(): False -> True")
NO_FLAX = ("a fresh process importing torchax, jax exited 1 without its answer: ModuleNotFoundError: No module named 'flax'\n"
           "Traceback (most recent call last):\n  File \"<string>\", line 148, in <module>")
PALLAS = ("torch_xla 2.8.1 uses 2 jax API(s) that jax 0.10.2 lacks:\n  jax._src.dtypes.bit_width "
          "(torch_xla/experimental/pallas_kernels/ragged_paged_attention_v2.py:1533); jax.experimental.pallas.store "
          "(torch_xla/experimental/pallas_kernels/ragged_paged_attention_kernel.py:466, +3 more)")
DLPACK = ("torchax bundled in torch-xla 2.9.0 uses 1 API(s) this cell lacks inside try/except, so it falls back without "
          "saying so:\n  jax.dlpack.to_dlpack (torchax/ops/mappings.py:58): AttributeError: jax.dlpack.to_dlpack was "
          "deprecated in JAX v0.6.0 and removed in JAX v0.7.0. Please use the newer DLPack")
UNDECLARED = ("torchax 0.0.13: importing it and calling its entry points needs 1 package(s) its metadata does not declare:\n"
              "  torch (imported by torchax; installed: yes)")
XLA27 = ("torch_xla 2.7.0: importing it and calling its entry points needs 2 package(s) its metadata does not declare:\n"
         "  torch (imported by torch_xla; installed: yes)\n  torchax (imported by torch_xla.core.xla_builder; installed: yes)")
# the two declared-dependency findings of the default run with a package not installed (/tmp/cx32/rep/report.json)
NOFLAX = ("torchax bundled in torch-xla 2.9.0: importing it and calling its entry points needs 2 package(s) its metadata "
          "does not declare:\n  flax (imported by torchax.checkpoint; installed: no (import torchax))\n"
          "  torch (imported by torchax; installed: yes)")
NOJAX = ("torchax 0.0.13: importing it and calling its entry points needs 1 package(s) its metadata does not declare:\n"
         "  jax (imported by torchax; installed: no (import torchax); declared only by its extra(s) cpu, cuda, odml, tpu)")
# no cell of the matrix differs in rng or between import orders: messages in the suite's words (cores.py)
RNG = ("after `import torchax` (torchax 0.0.13), torch's rng differs from a fresh process without it:\n"
       "  randn(3): [0.1, 0.2, 0.3] -> [0.4, 0.5, 0.6]")
ORDERED = ("torchax 0.0.13: importing jax first, then torchax, differs from torchax first (jax first -> torchax first):\n"
           "  jax: default_backend(): 'cpu' -> 'jax'\n  rng: randperm(5): [1, 0, 2, 3, 4] -> [0, 1, 2, 3, 4]\n"
           "  scenario: torchax: jax.grad through extract_jax(nn.Linear): 'error: TypeError: x' -> {'bias': [2.0, 2.0]}")
XLA_ORDER = LIVING + "test_import_order_gives_the_same_results[torch_xla]"
XLA_ORDERED = ("torch_xla 2.9.0: importing jax first, then torch_xla, differs from torch_xla first (jax first -> torch_xla "
               "first):\n  defaults: torch.get_default_device(): 'cpu' -> 'xla:0'")
DIMNAME = ("torchax 0.0.13 names 2 torch operator(s) that torch 2.13.0 lacks:\n  torch.ops.aten.all.dimname "
           "(torchax/decompositions.py:357): aten::all has no overload 'dimname' (it has all_out, bool); "
           "torch.ops.aten.prod.dim_Dimname (torchax/amp.py:118): aten::prod has no overload 'dim_Dimname' (it has default)")


@pytest.mark.parametrize("case, message, short", [
    (FEATURE.format("compile"), COMPILE,
     Short("feature", "torchax", feature="compile", keys=("function without tensor inputs",), errors=True)),
    (FEATURE.format("devices"), DEVICES,
     Short("feature", "torchax", feature="devices", bundled=True, keys=(
         "privateuse1 backend name", "torch.accelerator.current_accelerator()", "torch.accelerator.is_available()"))),
    (FEATURE.format("rng"), NO_FLAX, Short("import", "torchax", order=("torchax", "jax"))),
    (ORDER, NO_FLAX.replace("torchax, jax", "jax, torchax"), Short("import", "torchax", order=("jax", "torchax"))),
    (CENSUS.format("torch_xla"), PALLAS, Short("jax", "torch_xla", uses=(
        ("jax._src.dtypes.bit_width", "torch_xla/experimental/pallas_kernels/ragged_paged_attention_v2.py:1533"),
        ("jax.experimental.pallas.store", "torch_xla/experimental/pallas_kernels/ragged_paged_attention_kernel.py:466, +3 more")))),
    (FALLBACKS, DLPACK, Short("fallbacks", "torchax", bundled=True, uses=(("jax.dlpack.to_dlpack", "torchax/ops/mappings.py:58"),))),
    (DECLARED.format("torchax"), UNDECLARED, Short("declared", "torchax")),
    (DECLARED.format("torch_xla"), XLA27, Short("declared", "torch_xla")),
    (DECLARED.format("torchax"), NOFLAX, Short("declared", "torchax", bundled=True, missing=True)),
    (DECLARED.format("torchax"), NOJAX, Short("declared", "torchax", missing=True)),
    (DECLARED.format("torchax"), UNDECLARED.replace("yes)", "yes; declared only by its extra(s) cpu)"),
     Short("declared", "torchax", missing=True)),
    (FEATURE.format("rng"), RNG, Short("feature", "torchax", feature="rng", keys=("randn(3)",))),
    (ORDER, ORDERED, Short("order", "torchax", errors=True, keys=(
        "jax: default_backend()", "rng: randperm(5)", "scenario: torchax: jax.grad through extract_jax(nn.Linear)"))),
    (XLA_ORDER, XLA_ORDERED, Short("order", "torch_xla", keys=("defaults: torch.get_default_device()",))),
    (OPS, DIMNAME, Short("torch-ops", "torchax", uses=(("torch.ops.aten.all.dimname", "torchax/decompositions.py:357"),
                                                      ("torch.ops.aten.prod.dim_Dimname", "torchax/amp.py:118")))),
])
def test_a_failing_runs_message_picks_what_the_short_script_checks(case, message, short):
    assert short_form(case, message) == short


@pytest.mark.parametrize("case, message", [
    (FEATURE.format("rng"), RNG.replace("randn(3)", "randn(3); import os")),                 # no such fact
    (FEATURE.format("jax"), RNG.replace("rng", "jax").replace("randn(3)", "default_backend()")),  # not a torch feature
    (FEATURE.format("compile"), COMPILE.replace("function without", "function with'); import os; ('")),  # no such fact
    (FEATURE.format("compile"), COMPILE.replace("compile differs", "devices differs")),   # another feature than the id's
    (FEATURE.format("compile"), COMPILE.replace("torchax 0.0.13", "torchax 0.0.13'); import os; ('")),  # label grammar
    (FEATURE.format("devices"), NO_FLAX.replace("torchax, jax", "jax, torchax")),        # an order this case never starts
    (FEATURE.format("devices"), NO_FLAX.replace("torchax, jax", "os, torchax")),
    (ORDER, "torchax 0.0.13: importing jax first, then torchax, differs from torchax first"),  # its facts cut away
    (ORDER, ORDERED.replace("scenario: torchax: jax.grad", "scenario: torch_xla: jax.grad")),  # not this bridge's scenario
    (ORDER, XLA_ORDERED.replace("defaults", "scenario: torch_xla: call_jax(jnp.sin) on an XLA tensor")),  # another bridge's
    (ORDER, ORDERED.replace("then torchax, differs from torchax", "then torch_xla, differs from torch_xla")),  # the id's bridge
    (ORDER, ORDERED.replace("'cpu' -> 'jax'", "'cpu' -> '<not recorded>'")),             # a fact one side lacks
    (ORDER, ORDERED.replace("jax: default_backend()", "compile: module")),               # compile is the other case's
    (ORDER, ORDERED + "\n  jax: device_count(): 1 -> 8\n  jax: jax_enable_x64: False -> True"),  # 5 shown: cut short
    (CENSUS.format("torch_xla"), PALLAS.replace("uses 2", "uses 3")),                   # the count disagrees
    (CENSUS.format("torch_xla"), PALLAS.replace("torch_xla/experimental", "torch_xla/../../etc")),  # a site off the bridge
    (CENSUS.format("torch_xla"), PALLAS.replace("jax._src.dtypes.bit_width", "os.system")),  # not a jax API
    (CENSUS.format("torchax"), PALLAS),                                                  # another bridge than the id's
    (OPS, DIMNAME.replace("torch.ops.aten.all.dimname", "torch.ops.aten.all")),         # no overload named
    (DECLARED.format("torchax"), UNDECLARED.replace("installed: yes", "installed: no (import torch_xla)")),  # not its step
    (DECLARED.format("torchax"), UNDECLARED.replace("installed: yes", "installed: no (entry points); import os")),
    (DECLARED.format("torchax"), NOJAX.replace("cpu, cuda", "cpu'); import os; ('")),      # not an extra's name
    (DECLARED.format("torchax"), UNDECLARED.replace("torchax;", "torchax'); import os; ('x;")),   # not a module name
    (DECLARED.format("torch_xla"), UNDECLARED),                                          # another bridge than the id's
    (DECLARED.format("torchax"), UNDECLARED.replace("needs 1", "needs 2")),              # the count disagrees
    (FEATURE.format("compile"), None),
    (FEATURE.format("devices"), DEVICES + "\n  torch.cuda.is_available(): False -> True\n  torch.xpu.is_available(): False -> True"),
])                                                    # 5 facts of 7 shown: the run cut its message, more may differ
def test_what_the_patterns_do_not_read_keeps_the_full_script(case, message):
    assert short_form(case, message) is None
    assert export_script(case, CELL, message=message) == export_script(case, CELL)


def _literals_only(script: str, values: list[str]) -> None:
    """Each value from the message is inside a string literal of the script, never code."""
    tree = ast.parse(script)
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    for v in values:
        assert any(v in s for s in strings), v


@pytest.mark.parametrize("case, message", [
    (FEATURE.format("compile"), COMPILE), (FEATURE.format("devices"), DEVICES), (FEATURE.format("dlpack"), NO_FLAX),
    (ORDER, NO_FLAX.replace("torchax, jax", "jax, torchax")), (CENSUS.format("torch_xla"), PALLAS), (FALLBACKS, DLPACK),
    (OPS, DIMNAME), (DECLARED.format("torchax"), UNDECLARED), (DECLARED.format("torch_xla"), XLA27),
    (DECLARED.format("torchax"), NOFLAX), (DECLARED.format("torchax"), NOJAX), (FEATURE.format("rng"), RNG),
    (ORDER, ORDERED), (XLA_ORDER, XLA_ORDERED),
])
def test_the_short_script_is_self_contained_lint_clean_and_short(case, message, tmp_path):
    script = export_script(case, CELL, {"id": "x\nimport os", "link": "https://e/1"}, message=message)
    short = short_form(case, message)
    assert short is not None
    tree = ast.parse(script)
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & {"harness", "pytest", "suites"}, imported
    _literals_only(script, [*short.keys, *(x for use in short.uses for x in use), *short.order])
    assert "import os\n" not in script.split("KNOWN_ISSUE")[0]  # the known issue's id is a literal too
    lines = len(script.splitlines())
    assert lines <= line_bound(short), (lines, script)
    path = tmp_path / "s.py"
    path.write_text(script)
    ruff = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F", str(path)],
                          capture_output=True, text=True, check=False)
    assert ruff.returncode == 0, ruff.stdout


def test_each_fact_is_the_probes_own():
    """FACTS' keys and expressions are those of suites/coexist/living.py's probe (torch.compile's through
    its `compiled(fn, *args)` there; a scenario's function whole, as the probe defines it), so a short
    script computes what the case compared."""
    from suites.coexist import living

    tree = ast.parse(inspect.getsource(living.probe))
    src = ast.unparse(tree)
    functions = {n.name: ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    compiled = {"function of a tensor": "compiled(lambda x: torch.sin(x) + 1, torch.arange(4.0))",
                "function without tensor inputs": "compiled(no_tensor_inputs)", "module": "compiled(module, torch.ones(3))"}
    for feature, table in FACTS.items():
        assert f"'{feature}'" in src
        for key, (setup, expr) in table.items():
            assert f"'{key}'" in src, key
            if feature == "compile":
                assert compiled[key] in src, key
            elif feature == "scenario":  # the probe's attempt(FUNCTION)
                assert f"attempt({expr.removesuffix('()')})" in src, key
            else:
                inner = expr[4:-1] if expr.startswith("str(") else expr
                assert inner.removesuffix("()") in src, (key, expr)
            defs = [i for i, line in enumerate(setup) if line.startswith("def ")]
            for i, line in enumerate(setup):
                if not line.startswith(" ") and not line.startswith("def "):
                    assert ast.unparse(ast.parse(line + ("\n    pass" if line.endswith(":") else ""))).splitlines()[0] in src, line
            for i in defs:  # a function of the probe's, whole: its statements as the probe's
                end = next((j for j in range(i + 1, len(setup)) if not setup[j].startswith(" ")), len(setup))
                block = ast.parse("\n".join(setup[i:end])).body[0]
                assert isinstance(block, ast.FunctionDef) and ast.unparse(block) == functions[block.name], block.name
    assert set(FACTS) == set(living_features()) | {"jax", "scenario"}
    assert set(ORDER_GROUPS) == set(FACTS) - {"compile"}


def test_the_rng_facts_are_the_probes_sequence():
    """The rng group is draws in sequence after the probe's seed: FACTS["rng"] is the probe's dict, in its
    order, seeded as it is, and a script computes it whole wherever one of its facts is named."""
    from suites.coexist import living

    tree = ast.parse(inspect.getsource(living.probe))
    rng = next(n for n in ast.walk(tree) if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "found['rng']")
    assert [ast.literal_eval(k) for k in rng.value.keys] == list(FACTS["rng"])
    assert [ast.unparse(v) for v in rng.value.values] == [e for _, e in FACTS["rng"].values()]
    body = [ast.unparse(n) for n in tree.body[0].body]
    assert body[body.index(ast.unparse(rng)) - 1] == FACTS["rng"]["rand(4)"][0][0]  # the seed, right before
    script = export_script(FEATURE.format("rng"), CELL, message=RNG)
    assert all(f"{k!r}: {e}" in script for k, (_, e) in FACTS["rng"].items())
    ordered = export_script(ORDER, CELL, message=ORDERED)
    assert all(f"'rng: {k}': lambda: {e}" in ordered for k, (_, e) in FACTS["rng"].items())


def living_features() -> tuple[str, ...]:
    from suites.coexist.test_living_together import FEATURES

    return FEATURES


# torchax0013-cpu's failing runs as the default run recorded them (/tmp/r32b/report.json)
RECORDED = {
    FEATURE.format("devices"): ("torchax-registers-jax-as-a-torch-accelerator", DEVICES.replace(
        "torchax bundled in torch-xla 2.9.0", "torchax 0.0.13")),
    CENSUS.format("torchax"): ("torchax-native-layer-norm-backward-calls-a-jax-api-that-never-existed",
                               ("torchax 0.0.13 uses 1 jax API(s) that jax 0.7.2 lacks:\n"
                               "  jax.lax.native_layer_norm_backward (torchax/ops/jaten.py:1746)")),
    FALLBACKS: ("torchax-j2t-falls-back-to-a-host-copy-since-jax-0.7", DLPACK.replace(
        "torchax bundled in torch-xla 2.9.0", "torchax 0.0.13").replace("mappings.py:58", "mappings.py:73")),
}


@pytest.mark.e2e
def test_a_short_coexist_script_fails_as_the_full_one_does(tmp_path):
    """In torchax0013-cpu, for three recorded failing messages (a torch feature after import, the jax census,
    a silent fallback): the short script and the full one, run in the cell's interpreter by the reducer's
    fork server, give the same signature (harness/reduce/signature.py: exit status, exception type, message
    up to numbers and the known issue's match, the statement that raised). About 40 s."""
    from harness.cells.envs import ensure_env
    from harness.cells.matrix import catalogue
    from harness.judge.expectations import load_expectations
    from harness.reduce.batch import known_match
    from harness.reduce.server import ForkServer
    from harness.reduce.signature import signature

    cell = catalogue().cell("torchax0013-cpu")
    issues = {e.id: e for e in load_expectations()}
    wrong = []
    with ForkServer(ensure_env(cell).python, cell.run_env(), [], tmp_path / "s", cell.name) as s:
        for case_id, (issue, message) in RECORDED.items():
            known = {"id": issue, "link": issues[issue].link}
            short = export_script(case_id, cell.describe(), known, message=message)
            full = export_script(case_id, cell.describe(), known)
            assert short != full and len(short.splitlines()) <= 30
            sigs = [signature(s.run(src, 300), src, known_match(src)) for src in (full, short)]
            if sigs[0] != sigs[1] or sigs[0].status != 1 or not str(sigs[0].failure).startswith("match: "):
                wrong.append(f"{case_id}: full {sigs[0].describe()} / short {sigs[1].describe()}")
    assert not wrong, "\n".join(wrong)


def test_the_declared_scripts_missing_module_is_the_suites():
    """Where a package was not installed, the script names the bridge module whose file raised the
    ModuleNotFoundError as suites/coexist/declared.py's _module_of does (None: another distribution's file,
    not the bridge's finding)."""
    from suites.coexist.declared import _module_of

    script = export_script(DECLARED.format("torchax"), CELL, message=NOFLAX)
    loop = next(n for n in ast.parse(script).body if isinstance(n, ast.For) and ast.unparse(n.target) == "(top, step, path)")
    parts, module = (compile(ast.Expression(n.value), "script", "eval") for n in loop.body[:2])
    own = {"torchax", "torch_xla"}
    for path in ("/env/lib/python3.11/site-packages/torchax/checkpoint.py", "/env/site-packages/torchax/__init__.py",
                 "/env/site-packages/torch_xla/core/xla_builder.py", "/env/site-packages/flax/__init__.py", "torchax",
                 "<frozen importlib._bootstrap>", "?", "C:\\env\\torchax\\ops\\jaten.py"):
        found = eval(module, {"parts": eval(parts, {"path": path}), "own": own})  # the exported script's own expression
        assert found == _module_of(path, own), path


# the declared-dependency findings with a package not installed, as the default run recorded them (/tmp/cx32/rep/report.json)
RECORDED_MISSING = {
    "xla29noflax-cpu": ("torch-xla-bundled-torchax-imports-undeclared-flax", NOFLAX),
    "torchax0013declared-cpu": ("torchax-declares-jax-only-in-extras", NOJAX),
}


@pytest.mark.e2e
def test_a_short_declared_script_with_a_missing_package_fails_as_the_full_one_does(tmp_path):
    """In the two cells where a declared-dependency finding names a package that is not installed (flax in
    xla29noflax-cpu, jax in torchax0013declared-cpu, which only torchax's extras declare): the short script
    (the suite's steps, the missing module's file, the extras) and the full one give the same signature, exit 1
    with the known issue's match. About 30 s."""
    from harness.cells.envs import ensure_env
    from harness.cells.matrix import catalogue
    from harness.judge.expectations import load_expectations
    from harness.reduce.batch import known_match
    from harness.reduce.server import ForkServer
    from harness.reduce.signature import signature

    issues = {e.id: e for e in load_expectations()}
    wrong = []
    for name, (issue, message) in RECORDED_MISSING.items():
        cell = catalogue().cell(name)
        known = {"id": issue, "link": issues[issue].link}
        short = export_script(DECLARED.format("torchax"), cell.describe(), known, message=message)
        full = export_script(DECLARED.format("torchax"), cell.describe(), known)
        assert short != full and len(short.splitlines()) <= line_bound(short_form(DECLARED.format("torchax"), message))
        with ForkServer(ensure_env(cell).python, cell.run_env(), [], tmp_path / name, name) as s:
            sigs = [signature(s.run(src, 300), src, known_match(src)) for src in (full, short)]
        if sigs[0] != sigs[1] or sigs[0].status != 1 or not str(sigs[0].failure).startswith("match: "):
            wrong.append(f"{name}: full {sigs[0].describe()} / short {sigs[1].describe()}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.e2e
@pytest.mark.parametrize("cell_name, bridge", [("torchax0013-cpu", "torchax"), ("xla29-cpu", "torch_xla")])
def test_the_rng_and_order_scripts_compute_the_probes_facts(cell_name, bridge, tmp_path):
    """No cell of the matrix differs in rng or between import orders, so no run recorded such a failure to
    compare signatures on. What stands for it, per bridge: the probe of an import-order script that
    computes every fact it can (each group, the bridge's scenarios; the form that records errors) and of an
    rng script give, in each process the case starts, what suites/coexist/living.py's probe records there
    (with the suite's compile_too: its bridge-first process compiles first, the short one does not), fact
    for fact; and both short scripts exit 0 there, as the cases pass. A fact the short probe computes
    otherwise, or an rng draw out of sequence, fails this (swapping two rng draws in FACTS did). About 1 min
    in torchax0013-cpu, 75 s in xla29-cpu (a torch_xla process is 15-25 s of CPU)."""
    import json
    import os

    from harness.cells.envs import ensure_env
    from harness.cells.matrix import catalogue
    from suites.coexist import living

    cell = catalogue().cell(cell_name)
    python, env = str(ensure_env(cell).python), {**os.environ, **cell.run_env(), **living.COMPILE_ENV}

    def run(source: str) -> subprocess.CompletedProcess:  # from a file, as a maintainer runs it (inspect reads the probe there)
        path = tmp_path / f"s{len(list(tmp_path.iterdir()))}.py"
        path.write_text(source)
        return subprocess.run([python, str(path)], capture_output=True, text=True, env=env, cwd="/", timeout=600, check=False)

    def answer(source: str) -> dict:
        proc = run(source)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout.splitlines()[-1].removeprefix("SEAMS-ANSWER "))

    every = tuple(f"{g}: {k}" for g in ORDER_GROUPS for k in FACTS[g] if g != "scenario" or k.startswith(f"{bridge}: "))
    cases = [  # (case, short, [(the order a process imports, the suite's compile_too there)])
        (ORDER.replace("torchax", bridge), Short("order", bridge, keys=every, errors=True),
         [(("jax", bridge), False), ((bridge, "jax"), True)]),
        (FEATURE.format("rng").replace("torchax", bridge), Short("feature", bridge, feature="rng", keys=("randperm(5)",)),
         [((bridge, "jax"), True), (("torch",), True)]),
    ]
    wrong = []
    for case, short, orders in cases:
        script = export_coexist_script(case, cell.describe(), None, short)
        probe = next(ast.get_source_segment(script, n) for n in ast.parse(script).body
                     if isinstance(n, ast.FunctionDef) and n.name == "probe")
        for order, compile_too in orders:
            mine = answer(f"{probe}\nprobe({','.join(order)!r})\n")
            recorded = answer(f"{inspect.getsource(living.probe)}\nprobe({','.join(order)!r}, {compile_too})\n")
            theirs = ({f"{g}: {k}": v for g, group in recorded.items() for k, v in group.items()} if short.kind == "order"
                      else recorded["rng"])
            expected = every if short.kind == "order" else tuple(FACTS["rng"])
            if list(mine) != list(expected):
                wrong.append(f"{case} {order}: computes {list(mine)}")
            wrong += [f"{case} {order}: {k}: {mine[k]!r}, the probe's {theirs.get(k)!r}" for k in mine if mine[k] != theirs.get(k)]
        done = run(script)
        if done.returncode != 0:
            wrong.append(f"{case}: exit {done.returncode}: {done.stderr[-1500:]}")
    assert not wrong, "\n".join(wrong)


def test_the_message_lines_a_run_keeps_are_the_plugins():
    from harness.incell.plugin import _MESSAGE_LINES
    from harness.report.standalone_coexist import MESSAGE_LINES

    assert MESSAGE_LINES == _MESSAGE_LINES


def test_the_declared_scripts_closure_is_the_suites(monkeypatch):
    """The declared-dependency script's Requires-Dist closure (its own extras held whole, extras asked for)
    gives what suites/coexist/declared.py's declared_closure gives, for every distribution of this host.
    (No cell of the default matrix passes the case: this is what stands for "exits 0 where declared".)"""
    from importlib.metadata import distributions

    from suites.coexist.declared import declared_closure

    script = export_script(DECLARED.format("torchax"), CELL, message=UNDECLARED)
    tree = ast.parse(script)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("norm", "requires", "declared")]
    assert len(defs) == 3
    space: dict = {}
    exec("import re, sys\nfrom importlib.metadata import PackageNotFoundError, distribution\n"  # noqa: S102 - the exported script's own functions
         + "\n".join(ast.unparse(d) for d in defs), space)
    names = sorted({d.metadata["Name"] for d in distributions() if d.metadata["Name"]})
    assert len(names) > 20
    for name in names:
        assert space["declared"](space["norm"](name)) == declared_closure(name), name


@pytest.mark.e2e
def test_every_failing_coexist_results_short_script_keeps_the_signature(tmp_path):
    """On a report's failing coexist results (SEAMS_COEXIST_REPORT=REPORT.json; SEAMS_COEXIST_CELLS=a,b to
    pick cells): each short script and the full one, exported from the same result and run in the cell's
    interpreter by the reducer's fork server, give the same signature; in each contrast cell (where the
    case passes, two at most, as report --reduce picks them) the short one exits 0. The figures of
    docs/reduce.md ("Coexist scripts minimal by construction") were taken this way. Skipped without a report."""
    import json
    import os

    from harness.cells.envs import ensure_env
    from harness.reduce.batch import (
        MAX_CONTRAST,
        cell_named,
        contrast_cells,
        known_match,
    )
    from harness.reduce.server import ForkServer
    from harness.reduce.signature import signature
    from harness.report.model import iter_results

    given = os.environ.get("SEAMS_COEXIST_REPORT")
    if not given:
        pytest.skip("SEAMS_COEXIST_REPORT names no report.json")
    report = json.loads(Path(given).read_text(encoding="utf-8"))
    wanted = set(filter(None, os.environ.get("SEAMS_COEXIST_CELLS", "").split(",")))
    cells = {c["cell"]: c for c in report["cells"]}
    servers: dict[str, ForkServer] = {}

    def server(name: str) -> ForkServer:
        if name not in servers:
            cell = cell_named(name)
            servers[name] = ForkServer(ensure_env(cell).python, cell.run_env(), [], tmp_path / name, name)
            servers[name].start()
        return servers[name]

    wrong, checked, contrasted = [], 0, 0
    try:
        for case_id, cell, r in iter_results(report):
            if not (case_id or "").startswith("suites/coexist/") or r.get("raw") != "fail" or (wanted and cell not in wanted):
                continue
            short = export_script(case_id, cells[cell], r.get("expectation"), message=r.get("message"))
            full = export_script(case_id, cells[cell], r.get("expectation"))
            if short == full:
                continue
            sigs = [signature(server(cell).run(src, 600), src, known_match(src)) for src in (full, short)]
            checked += 1
            if sigs[0] != sigs[1] or sigs[0].status != 1:
                wrong.append(f"{cell} {case_id}: full {sigs[0].describe()} / short {sigs[1].describe()}")
            for other in contrast_cells(report, case_id, cell)[:MAX_CONTRAST]:
                contrasted += 1
                status = server(other).run(short, 600).status
                if status != 0:
                    wrong.append(f"{cell} {case_id}: the short script exits {status} in {other}, where the case passes")
    finally:
        for s in servers.values():
            s.close()
    print(f"\n{checked - len([w for w in wrong if ': full ' in w])} of {checked} short coexist scripts keep the full "
          f"script's signature; {contrasted} contrast runs", file=sys.stderr)
    assert checked, "no failing coexist result with a short script in that report"
    assert not wrong, "\n".join(wrong)
