"""A suite module's collection error (a result whose id is the module's path) exports a standalone script:
the cell's packages the module reaches, imported in its modules' order (harness/report/standalone_module.py)."""

from __future__ import annotations

import ast
import sys

import pytest

from harness.paths import SUITES_DIR
from harness.reduce.script import split_script
from harness.report.repro import script_for
from harness.report.standalone import HEADER_LINES, NoStandalone, export_script
from harness.report.standalone_module import is_module_id, module_imports

CELL = {"cell": "torchax0013torch213-cpu", "device": "cpu", "pins": {"torchax": "0.0.13", "torch": "2.13.0"},
        "versions": {"torchax": "0.0.13", "torch": "2.13.0", "numpy": "2.4.6"},
        "env": {"PJRT_DEVICE": "CPU", "JAX_PLATFORMS": "cpu"}}
OPS = "suites/torchax_ops/test_ops.py"


def _names(script: str) -> list[str]:
    loop = next(n for n in ast.parse(script).body if isinstance(n, ast.For))
    return ast.literal_eval(loop.iter)


def test_every_suite_module_names_the_cells_packages_it_reaches_in_order():
    """Every test module of every family: dotted names only, none of the project's, the test tools' or the
    standard library's; test_ops reaches torchax through its cores before its op registry."""
    for path in sorted(SUITES_DIR.glob("*/test_*.py")):
        names = module_imports(path)
        assert names, path
        assert all(n.split(".")[0] not in {"harness", "suites", "pytest", "hypothesis", "__future__"}
                   and n.split(".")[0] not in sys.stdlib_module_names for n in names), (path, names)
        assert len(names) == len(set(names)), path
    names = module_imports(SUITES_DIR / "torchax_ops/test_ops.py")
    assert names[0] == "torch" and names.index("torchax.tensor") < names.index("torchax.ops.jaten")
    assert "torch.testing._internal.common_methods_invocations" in names  # what its parametrization imports


def test_a_module_error_exports_its_imports_and_the_messages_text_stays_out():
    evil = {"raw": "error", "message": "ImportError: x'); __import__('os').system('y'); ('",
            "expectation": {"id": "torchax-0.0.13-torch-2.13-import", "link": "https://github.com/google/torchax/issues/101"}}
    script = script_for(OPS, CELL, evil)
    assert script is not None and "system" not in script
    compile(script, "module", "exec")
    assert script.splitlines()[0] == HEADER_LINES[0]
    facts = split_script(script).facts
    assert facts["CASE"] == OPS and facts["KNOWN_ISSUE"].startswith("torchax-0.0.13-torch-2.13-import: ")
    assert _names(script) == module_imports(SUITES_DIR / "torchax_ops/test_ops.py")
    assert "importlib.import_module(name)" in script and script.count("\nimport os\n") == 1


@pytest.mark.parametrize("case_id", ["suites/torchax_ops/test_nope.py", "harness/cli.py", "suites/../harness/cli.py",
                                     "suites/torchax_ops/cores.py", "/etc/passwd.py"])
def test_not_a_suite_test_module_is_one_clear_reason(case_id):
    assert is_module_id(case_id) is (case_id == "suites/torchax_ops/test_nope.py")
    with pytest.raises(NoStandalone, match=r"\S"):
        export_script(case_id, CELL)
