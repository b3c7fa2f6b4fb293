"""The dependency API census: every jax API and torch operator a bridge's source uses, checked
against this cell's jax and torch.

The bridge is found with importlib.util.find_spec (which does not import a top-level package)
and read with suites.coexist.scan; the names are checked by suites.coexist.resolve in a fresh
interpreter. What a case records (the `census` observation, rendered by harness/report/census.py):

    {"bridge": "torchax", "dist": "torch-xla", "version": "2.9.0", "kind": "jax" | "torch-ops",
     "against": {"jax": "0.7.1"}, "used": 333, "sites": 1402,
     "present": [names], "absent": [{"api", "guard", "sites": ["torchax/x.py:12", ...], "detail"}],
     "unimportable": [...], "accelerator_only": [...], "other_package": [...], "deprecated": [{"api", "sites", "detail"}]}
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, packages_distributions
from importlib.metadata import version as dist_version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from suites.coexist.resolve import resolve_all
from suites.coexist.scan import GUARDS, Use, scan_package

BRIDGES = ("torchax", "torch_xla")
KINDS = {"jax": ("jax",), "torch-ops": ("torch.ops.",)}  # census kind -> the name prefixes it covers
MAX_SITES = 5  # file:line sites kept per API (the count says how many more)
# jaxlib's gpu_* / cuda modules are stubs without the CUDA plugin: what they lack on a CPU cell is
# there once the plugin is installed, so it is recorded as accelerator-only, not as absent.
_ACCELERATOR_PART = re.compile(r"(gpu|cuda|rocm|triton|mosaic_gpu)", re.IGNORECASE)


@dataclass(frozen=True)
class Bridge:
    """An installed bridge package, located without importing it."""

    module: str
    root: Path  # the folder holding the package (site-packages)
    package_dir: Path
    dist: str  # the distribution that installed it (torchax, or torch-xla for the bundled copy)
    version: str

    @property
    def label(self) -> str:
        """`torchax 0.0.13`, or `torchax bundled in torch-xla 2.9.0`."""
        if self.dist.replace("-", "_").lower() == self.module.lower():
            return f"{self.module} {self.version}"
        return f"{self.module} bundled in {self.dist} {self.version}"


def locate(module: str) -> Bridge | None:
    """The installed bridge, or None where this cell has no such package."""
    spec = find_spec(module)  # a top-level name: finds, does not import
    if spec is None or not spec.submodule_search_locations:
        return None
    package_dir = Path(list(spec.submodule_search_locations)[0])
    dists = packages_distributions().get(module) or [module]
    dist = dists[0]
    return Bridge(module, package_dir.parent, package_dir, dist, dist_version(dist))


def _gpu_platform() -> bool:
    """Whether this cell runs jax on a GPU (its JAX_PLATFORMS names one)."""
    return any(p in os.environ.get("JAX_PLATFORMS", "") for p in ("cuda", "rocm", "gpu"))


def _status(verdict: dict[str, Any]) -> str:
    parts = verdict["api"].split(".")[:-1]  # the modules on the way, not the missing name itself
    if verdict["status"] == "absent" and not _gpu_platform() and any(_ACCELERATOR_PART.search(p) for p in parts):
        return "accelerator-only"
    return verdict["status"]


def _versions() -> dict[str, str]:
    out = {}
    for pkg in ("jax", "jaxlib", "torch"):
        try:
            out[pkg] = dist_version(pkg)
        except PackageNotFoundError:
            pass
    return out


@functools.lru_cache(maxsize=None)
def uses(module: str) -> tuple[Use, ...]:
    """Every jax / torch.ops use in the bridge's installed source (parsed once per process)."""
    bridge = locate(module)
    assert bridge is not None
    return tuple(u for u in scan_package(bridge.root, bridge.package_dir)
                 if u.api == "jax" or u.api.startswith("jax.") or u.api.startswith("torch.ops."))


@functools.lru_cache(maxsize=None)
def _verdicts(module: str) -> dict[str, dict[str, Any]]:
    return resolve_all(sorted({u.api for u in uses(module)}))


def take_census(module: str, kind: str) -> dict[str, Any]:
    """The census observation of one bridge and one kind of use (see the module docstring)."""
    bridge = locate(module)
    assert bridge is not None
    verdicts = _verdicts(module)
    grouped: dict[str, dict[str, Any]] = {}
    for use in uses(module):
        if not use.api.startswith(KINDS[kind]) and not (kind == "jax" and use.api == "jax"):
            continue
        v = verdicts[use.api]
        entry = grouped.setdefault(v["api"], {"api": v["api"], "status": _status(v), "guard": use.guard,
                                              "sites": [], "n_sites": 0, "detail": v.get("detail") or v.get("deprecated")})
        if v.get("deprecated"):
            entry["deprecated"] = v["deprecated"]
        if GUARDS.index(use.guard) < GUARDS.index(entry["guard"]):
            entry["guard"] = use.guard  # one unguarded use is enough for the API to be needed
        entry["n_sites"] += 1
        site = f"{use.file}:{use.line}"
        if len(entry["sites"]) < MAX_SITES and site not in entry["sites"]:
            entry["sites"].append(site)
    entries = sorted(grouped.values(), key=lambda e: e["api"])
    versions = _versions()
    against = {k: versions[k] for k in (("jax", "jaxlib") if kind == "jax" else ("torch",)) if k in versions}

    def keep(e: dict[str, Any], *fields: str) -> dict[str, Any]:
        return {k: e[k] for k in ("api", "guard", "sites", "n_sites", *fields) if e.get(k) is not None}

    return {"bridge": module, "dist": bridge.dist, "version": bridge.version, "kind": kind, "against": against,
            "used": len(entries), "sites": sum(e["n_sites"] for e in entries),
            "present": [e["api"] for e in entries if e["status"] == "present"],
            "absent": [keep(e, "detail") for e in entries if e["status"] == "absent"],
            "unimportable": [keep(e, "detail") for e in entries if e["status"] == "unimportable"],
            "accelerator_only": [keep(e, "detail") for e in entries if e["status"] == "accelerator-only"],
            "other_package": [keep(e) for e in entries if e["status"] == "other-package"],
            "deprecated": [keep(e, "deprecated") for e in entries if e.get("deprecated")]}


def describe(entries: list[dict[str, Any]]) -> str:
    """`api (file:line, +N more)` per entry, joined by `; ` on one line: the plugin keeps a
    message's first six lines, and every API must survive (all sites are in the observation); the
    error only where it says more than "module X has no attribute Y"."""
    lines = []
    for e in entries:
        more = e["n_sites"] - 1
        detail = str(e.get("detail") or "")
        said = "" if not detail or detail.startswith("AttributeError: module") else f": {detail[:120]}"
        lines.append(f"{e['api']} ({e['sites'][0]}{f', +{more} more' if more > 0 else ''}){said}")
    return "; ".join(lines)
