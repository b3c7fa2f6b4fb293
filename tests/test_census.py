"""The dependency API census: the source scan (no jax here), its report table, and its api-drift feed."""

from __future__ import annotations

from pathlib import Path

from packaging.specifiers import SpecifierSet

from harness.judge.apis import ApiRange, census_apis
from harness.judge.verdicts import judge_case
from harness.report.command import report_command
from suites.coexist.scan import scan_file
from tests.results_fixtures import case, cell_file, known_issues

CENSUS_CASE = "suites/coexist/test_census.py::test_bridge_uses_only_jax_apis_the_cell_has[torchax]"

SOURCE = '''
import jax
import jax.numpy as jnp
from jax.experimental.shard_map import shard_map
from jax import lax as L
import torch
aten = torch.ops.aten

try:
    from jax.experimental import pallas
except ImportError:
    pallas = None

def f(x):
    if hasattr(jax.lax, "pvary"):
        x = jax.lax.pvary(x, "i")
    y = jnp.zeros(3).reshape(1, 3)
    return L.psum(x, "i") + jax._src.core.Tracer

OPS = {aten.prod.dim_Dimname: 1, torch.ops.aten.add.Tensor: 2}
'''


def _uses(tmp_path: Path) -> dict[str, set[tuple[int, str]]]:
    path = tmp_path / "bridge.py"
    path.write_text(SOURCE)
    out: dict[str, set[tuple[int, str]]] = {}
    for u in scan_file(path, "pkg/bridge.py"):
        out.setdefault(u.api, set()).add((u.line, u.guard))
    return out


def test_the_scan_follows_import_aliases_and_keeps_only_outermost_chains(tmp_path):
    uses = _uses(tmp_path)
    assert uses["jax.numpy.zeros"] == {(17, "none")}  # jnp.zeros(3).reshape: the call cuts the chain
    assert uses["jax.lax.psum"] == {(18, "none")}  # from jax import lax as L
    assert uses["jax._src.core.Tracer"] == {(18, "none")}
    assert uses["jax.experimental.shard_map.shard_map"] == {(4, "none")}
    assert uses["jax.lax"] == {(5, "none"), (15, "none")}  # the import and hasattr's argument; not `jax.lax.pvary`
    assert "jax._src.core" not in uses  # a prefix of a longer chain is not a use of its own


def test_the_scan_reads_torch_ops_through_an_assigned_alias(tmp_path):
    uses = _uses(tmp_path)
    assert uses["torch.ops.aten.prod.dim_Dimname"] == {(20, "none")}
    assert uses["torch.ops.aten.add.Tensor"] == {(20, "none")}


def test_the_scan_tells_a_try_guard_from_an_asked_first_use(tmp_path):
    uses = _uses(tmp_path)
    assert uses["jax.experimental.pallas"] == {(10, "try")}  # a fallback when it fails
    assert uses["jax.lax.pvary"] == {(16, "conditional")}  # hasattr first: no fallback, the bridge asks


def _census_record(absent: list[dict], present: list[str], version: str = "0.0.13", jax: str = "0.10.2") -> dict:
    return {"bridge": "torchax", "dist": "torchax", "version": version, "kind": "jax",
            "against": {"jax": jax, "jaxlib": jax}, "used": len(absent) + len(present), "sites": 9,
            "present": present, "absent": absent, "unimportable": [], "accelerator_only": [], "deprecated": []}


def _census_cell(tmp_path: Path, name: str, jax: str, raw: str, rec: dict, message: str | None = None) -> Path:
    recs = case(CENSUS_CASE, raw, message)
    recs[1]["user_properties"][0][1]["observations"] = {"census": rec}
    return cell_file(tmp_path, name, jax, [recs])


def test_the_report_shows_the_census_table_and_each_missing_api_with_its_site(tmp_path):
    missing = {"api": "jax.lax.native_layer_norm_backward", "guard": "none", "sites": ["torchax/ops/jaten.py:1558"],
               "n_sites": 1, "detail": "AttributeError"}
    fallback = {"api": "jax.experimental.pallas", "guard": "try", "sites": ["torchax/a.py:3"], "n_sites": 1}
    files = [_census_cell(tmp_path, "old-cpu", "0.7.2", "fail", _census_record([missing, fallback], ["jax.jit"], jax="0.7.2"), "x"),
             _census_cell(tmp_path, "new-cpu", "0.10.2", "pass", _census_record([], ["jax.jit", "jax.lax.psum"], "0.0.14"))]
    out = tmp_path / "out"
    report_command(files, out, known_issues(tmp_path, "  []\n"))
    md = (out / "report.md").read_text()
    assert "## Dependency API census" in md
    assert "| bridge | jax 0.7.2 | jax 0.10.2 |" in md  # columns in version order, not text order
    assert "| torchax 0.0.13 | 3 used; 1 missing, 1 fallback |  |" in md
    assert "| torchax 0.0.14 |  | 2 used; all present |" in md
    assert "jax.lax.native_layer_norm_backward at torchax/ops/jaten.py:1558" in md
    html = (out / "report.html").read_text()
    assert '<details id="census">' in html and "torchax/ops/jaten.py:1558" in html


def test_a_report_without_census_cases_has_no_census_section(tmp_path):
    out = tmp_path / "out"
    report_command([cell_file(tmp_path, "a-cpu", "0.6.0", [case(CENSUS_CASE, "pass")])], out, known_issues(tmp_path, "  []\n"))
    assert "Dependency API census" not in (out / "report.md").read_text()
    assert 'id="census"' not in (out / "report.html").read_text()


def _range(api: str, shipped: str) -> ApiRange:
    return ApiRange(api=api, package="jax", shipped=SpecifierSet(shipped), evidence="", link="none filed")


def test_only_census_apis_with_a_recorded_range_feed_api_drift():
    ranges = {"jax.experimental.shard_map": _range("jax.experimental.shard_map", "<0.8.0"),
              "jax.lax.pvary": _range("jax.lax.pvary", ">=0.6.0,<0.10.0")}
    rec = _census_record([{"api": "jax.lax.pvary", "guard": "conditional", "sites": [], "n_sites": 1},
                          {"api": "jax.lax.never_ranged", "guard": "none", "sites": [], "n_sites": 1}],
                         ["jax.experimental.shard_map.shard_map", "jax.jit"])
    # the module of a present chain counts as present; an unranged absence is the census case's own finding
    assert census_apis({"census": rec}, ranges) == {"jax.experimental.shard_map": True, "jax.lax.pvary": False}


def test_a_census_that_sees_an_api_outside_its_range_is_api_drift():
    ranges = {"jax.experimental.shard_map": _range("jax.experimental.shard_map", "<0.8.0")}
    rec = _census_record([], ["jax.experimental.shard_map.shard_map"])
    verdict, basis = judge_case("pass", [], None, {"census": rec}, {"jax": "0.10.2"}, ranges)
    assert verdict == "api-drift" and basis.api == "jax.experimental.shard_map"
    assert judge_case("pass", [], None, {"census": rec}, {"jax": "0.7.2"}, ranges)[0] == "ok"
    assert judge_case("pass", [], None, {"census": "not a record"}, {"jax": "0.10.2"}, ranges)[0] == "ok"


def _site(tmp_path: Path, dists: dict[str, list[str]]) -> Path:
    """Installed distributions (name -> its Requires-Dist lines), each with a package of its name."""
    site = tmp_path / "site"
    for name, requires in dists.items():
        info = site / f"{name}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
                                       + "".join(f"Requires-Dist: {r}\n" for r in requires))
        (info / "top_level.txt").write_text(name + "\n")
    return site


BRIDGE_REQUIRES = ["jaxy[cpu]; extra == 'cpu'", "jaxy[gpu]; extra == 'cuda'", "gpuonly; extra == 'cuda'"]


def test_an_extra_counts_as_declared_only_where_the_env_holds_what_it_requires(tmp_path, monkeypatch):
    """`pip install bridge` cannot be told from `pip install bridge[cpu]` minus jaxy: an extra whose packages
    are absent was not asked for, so a package only it declares is undeclared for this install."""
    from suites.coexist.declared import chosen_extras, declared_closure, undeclared

    monkeypatch.syspath_prepend(str(_site(tmp_path, {"bridgex": BRIDGE_REQUIRES, "jaxy": ["numpyx", "cpuonly; extra == 'cpu'"],
                                                      "numpyx": [], "cpuonly": []})))
    assert chosen_extras("bridgex") == {"cpu"}  # gpuonly is not installed: the cuda extra was not chosen
    assert declared_closure("bridgex") == {"bridgex", "jaxy", "numpyx", "cpuonly"}  # jaxy's cpu extra followed
    record = {"first": {"jaxy": "bridgex", "numpyx": "bridgex.core"}, "missing": []}
    assert undeclared("bridgex", record) == []


def test_a_bridge_installed_without_its_extras_names_the_package_only_an_extra_declares(tmp_path, monkeypatch):
    from suites.coexist.declared import chosen_extras, declared_closure, undeclared

    site = _site(tmp_path, {"bridgex": BRIDGE_REQUIRES, "numpyx": []})
    monkeypatch.syspath_prepend(str(site))
    assert chosen_extras("bridgex") == set() and declared_closure("bridgex") == {"bridgex"}
    # `import bridgex` fails on `import jaxy` in bridgex/__init__.py; numpyx (the harness's, say) imported by luck
    record = {"first": {"jaxy": "bridgex", "numpyx": "bridgex.core"},
              "missing": [{"package": "jaxy", "step": "import bridgex", "file": str(site / "bridgex" / "__init__.py")}]}
    assert undeclared("bridgex", record) == [
        {"package": "jaxy", "module": "bridgex", "installed": "no (import bridgex)", "only_in_extras": "cpu, cuda"},
        {"package": "numpyx", "module": "bridgex.core", "installed": "yes"}]
