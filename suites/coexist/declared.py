"""Declared dependencies: what a bridge imports while it is imported and its entry points run,
against what its distribution's metadata declares.

`imports_of(bridge)` runs `import_probe` in a fresh interpreter of this cell (suites/coexist/fresh.py). An import hook records, for every top-level package first imported in that process, the
module that imported it; a ModuleNotFoundError on the way is recorded with the module that raised
it. `undeclared(...)` keeps the imports made by the bridge's own modules (those its distribution
installs: torch_xla and, from 2.8, the torchax it bundles) of packages outside what its metadata
declares: the transitive closure of its Requires-Dist, with each of its own extras this env holds
(`pip install torchax[cpu]` is a declaration too; an extra whose packages are absent was not asked
for). Packages those declared packages import are theirs, not the bridge's. The standard library is
never a dependency. The harness's own packages (pytest, numpy, pyyaml, hypothesis ...:
harness/cells/cell.py RUNTIME_REQUIREMENTS) are in every cell but never count as declared: a bridge
module importing one is reported as undeclared, "installed: yes" (the import worked by luck), like
any package the matrix added.
"""

from __future__ import annotations

import functools
import re
import sys
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from typing import Any

from suites.coexist.fresh import run_fresh


def import_probe(bridge: str) -> None:
    """Import the bridge and call its main entry points, recording who imports what; print JSON."""
    import json as _json
    import sys as _sys
    import traceback

    first: dict[str, str] = {}  # top-level package -> the module that first imported it

    def importer() -> str:
        frame = _sys._getframe(2)
        while frame is not None:
            name = frame.f_globals.get("__name__", "")
            if not (name.startswith("importlib") or frame.f_code.co_filename.startswith("<frozen")):
                return name
            frame = frame.f_back
        return "?"

    class Recorder:
        def find_spec(self, name, path=None, target=None):
            top = name.split(".")[0]
            if top not in first and top not in _sys.modules:
                first[top] = importer()
            return None

    _sys.meta_path.insert(0, Recorder())
    missing: list[dict[str, str]] = []
    steps: dict[str, str] = {}

    def step(what, fn):
        try:
            fn()
            steps[what] = "ok"
        except Exception as exc:  # noqa: BLE001 - recorded: the step's failure is a fact
            steps[what] = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
            chain = [exc]  # a missing package re-raised as another error (torch_xla's call_jax does) still counts
            while (nxt := chain[-1].__cause__ or chain[-1].__context__) is not None and len(chain) < 20:
                chain.append(nxt)
            for err in chain:
                if isinstance(err, ModuleNotFoundError) and err.name:
                    tb = traceback.extract_tb(err.__traceback__)
                    raiser = next((f.filename for f in reversed(tb) if not f.filename.startswith("<frozen")), "?")
                    missing.append({"package": err.name.split(".")[0], "step": what, "file": raiser})
                    break

    def torchax_entry_points():
        import torch
        import torchax
        import torchax.interop

        env = torchax.default_env()
        torchax.extract_jax(torch.nn.Linear(2, 2))
        with env:
            t = torch.ones(2, device="jax")
            import jax.numpy as jnp

            torchax.interop.call_jax(jnp.sin, t)
            torchax.interop.jax_jit(lambda x: x + 1)(t)

    def torch_xla_entry_points():
        import torch
        import torch_xla.core.xla_model as xm

        t = torch.ones(2).to(xm.xla_device())
        xm.mark_step()
        import torch_xla.core.xla_builder as xb

        if hasattr(xb, "call_jax"):  # 2.7+: where torch_xla reaches for jax (and torchax)
            import jax.numpy as jnp

            xb.call_jax(jnp.sin, (t,)).cpu()

    step(f"import {bridge}", lambda: __import__(bridge))
    if steps[f"import {bridge}"] == "ok":
        step("entry points", torchax_entry_points if bridge == "torchax" else torch_xla_entry_points)
    print("SEAMS-ANSWER " + _json.dumps({"first": first, "missing": missing, "steps": steps}))


@functools.lru_cache(maxsize=None)
def imports_of(bridge: str) -> dict[str, Any]:
    """The import probe's record for the bridge, from a fresh interpreter of this cell."""
    return run_fresh(import_probe, bridge, what=f"importing {bridge}")


def _name(text: str) -> str:
    return re.sub(r"[-_.]+", "-", text).lower()


_REQ = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?[^;]*(?:;(.*))?")
_EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")


def _requirements(name: str) -> list[tuple[str, list[str], str | None]]:
    """(package, its extras asked for, the extra of `name` this requirement belongs to, or None)
    for each Requires-Dist of an installed distribution; empty where it is not installed."""
    try:
        requires = distribution(name).requires or []
    except PackageNotFoundError:
        return []
    out = []
    for req in requires:
        m = _REQ.match(req)
        if m:
            wanted = _EXTRA.search(m.group(3) or "")
            out.append((_name(m.group(1)), [_name(x) for x in (m.group(2) or "").split(",") if x.strip()],
                        _name(wanted.group(1)) if wanted else None))
    return out


def _installed(name: str) -> bool:
    try:
        distribution(name)
    except PackageNotFoundError:
        return False
    return True


def chosen_extras(dist: str) -> set[str]:
    """The bridge's own extras this env holds: those whose every requirement is installed. An env
    does not record which extras pip was asked for, and `pip install torchax[cpu]` cannot be told
    from jax installed by hand; an extra whose packages are absent was not chosen (a plain
    `pip install torchax`), so what only it declares is not declared for this install."""
    by_extra: dict[str, list[str]] = {}
    for pkg, _asked, extra in _requirements(_name(dist)):
        if extra is not None:
            by_extra.setdefault(extra, []).append(pkg)
    return {extra for extra, pkgs in by_extra.items() if all(_installed(p) for p in pkgs)}


def extras_declaring(dist: str, package: str) -> list[str]:
    """The bridge's own extras that require `package` (what `pip install BRIDGE[EXTRA]` would bring)."""
    return sorted({extra for pkg, _asked, extra in _requirements(_name(dist))
                   if extra is not None and pkg == _name(package)})


def declared_closure(dist: str) -> set[str]:
    """The distribution and everything its Requires-Dist reaches among installed dists: its base
    requirements and those of its own extras this env holds (chosen_extras: `pip install
    torchax[cpu]` is a declaration too), then for each package reached its base requirements and
    only the extras it was asked for (jax[cpu] brings jax's cpu extra, not its test one).
    Markers other than `extra` are taken as true: over-including only ever hides a finding."""
    root = _name(dist)
    chosen = chosen_extras(root)
    seen: set[tuple[str, str]] = set()
    todo: list[tuple[str, str]] = [(root, "")]  # "": base requirements
    names: set[str] = set()
    while todo:
        name, extra = todo.pop()
        if (name, extra) in seen:
            continue
        seen.add((name, extra))
        names.add(name)
        for pkg, asked, of_extra in _requirements(name):
            if extra:  # an extra asked for: its own requirements (the base ones come with (name, ""))
                wanted = of_extra == extra
            else:  # the base requirements, and for the bridge those of the extras this env holds
                wanted = of_extra is None or (name == root and of_extra in chosen)
            if not wanted:
                continue
            todo.append((pkg, ""))
            todo += [(pkg, x) for x in asked]
    return names


def owner(top: str) -> list[str]:
    """The distributions that install a top-level package (empty for the standard library)."""
    return [_name(d) for d in packages_distributions().get(top, [])]


def _module_of(path: str, own: set[str]) -> str | None:
    """torchax/train.py -> torchax.train when the file belongs to one of the bridge's own packages."""
    parts = path.replace("\\", "/").split("/")
    for i, part in enumerate(parts):
        if part in own and i + 1 < len(parts):
            return ".".join(parts[i:]).removesuffix(".py").removesuffix(".__init__")
    return None


def undeclared(bridge_dist: str, record: dict[str, Any]) -> list[dict[str, str]]:
    """Packages the bridge's own modules import (or fail to find) that its metadata does not declare."""
    declared = declared_closure(bridge_dist)
    own = {top for top, dists in packages_distributions().items() if _name(bridge_dist) in map(_name, dists)}
    out: dict[str, dict[str, str]] = {}
    for top, by in sorted(record["first"].items()):
        if top in sys.stdlib_module_names or top in own or by.split(".")[0] not in own:
            continue
        dists = owner(top)
        if dists and not set(dists) & declared:
            out[dists[0]] = {"package": dists[0], "module": by, "installed": "yes"}
    for miss in record["missing"]:
        top, module = miss["package"], _module_of(miss["file"], own)
        if top in sys.stdlib_module_names or top in own or module is None:
            continue  # a package some other distribution's module failed to find is that one's business
        name = _name(top)
        if name not in declared and name not in out:
            out[name] = {"package": name, "module": module, "installed": f"no ({miss['step']})"}
    for entry in out.values():  # declared, but only by an extra this env does not hold
        extras = extras_declaring(bridge_dist, entry["package"])
        if extras:
            entry["only_in_extras"] = ", ".join(extras)
    return sorted(out.values(), key=lambda e: e["package"])
