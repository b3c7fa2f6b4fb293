"""A cell: one point of the matrix, with exact pins, a device type and its environment."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.cells.devices import JAX_PLATFORMS, PJRT, device_extra
from harness.redact import redact, redact_all

PYTHON = "3.11"
# What the harness plugin needs inside every cell, besides the pins.
# hypothesis: the property-based layers; pytest-xdist: parallel cases where a cell has cores to
# spare; regex: known-issue `match` patterns with a time bound (the plugin judges in-run).
RUNTIME_REQUIREMENTS = ("pytest>=8", "pytest-reportlog>=0.4", "pyyaml>=6", "packaging>=23", "numpy",
                        "hypothesis>=6.100", "pytest-xdist>=3.5", "regex>=2024.4")
# Packages whose pinned version must import and report exactly that version.
# Pins resolved at build time (harness.cells.floating): the newest release, the newest nightly build.
FLOATING = ("latest", "nightly")
IMPORT_NAMES = {"jax": "jax", "jaxlib": "jaxlib", "torch": "torch", "torch-xla": "torch_xla",
                "torchax": "torchax", "flax": "flax", "optax": "optax", "libtpu": "libtpu"}


@dataclass(frozen=True)
class Cell:
    """One exact version set on one device type; its name is what users type (`tox -e NAME`)."""

    name: str
    device: str
    pins: dict[str, str]
    extras: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: int = 300
    index_url: str | None = None
    find_links: tuple[str, ...] = ()
    runs_on: str | None = None
    source: str = ""
    floating: dict[str, str] = field(default_factory=dict)  # pins that were `latest`/`nightly`, before resolving
    extra_index_urls: tuple[str, ...] = ()  # e.g. the nightly index a `nightly` pin resolved on
    unresolved: str = ""  # why a floating pin could not be resolved: building the env is then an env-error
    # Packages from a wheel file, a source tree or a git ref (harness.cells.sources): package -> the
    # source, resolved (SHA or content hash, declared version) before the env is built.
    sources: dict[str, dict] = field(default_factory=dict)
    # Pinned packages whose import may fail in this cell: the env check reads their version from the
    # installed metadata and leaves the failing import to the tests, where it is the finding (torchax
    # 0.0.13 with torch 2.13; torchax installed with only what its metadata declares).
    import_may_fail: tuple[str, ...] = ()
    cuda: str = "12"  # a gpu cell's CUDA major: jax[cuda12] or jax[cuda13] (harness.cells.devices.CUDA_MAJORS)

    def requirements(self) -> list[str]:
        """Requirement strings for uv: pins (with the device's extras), extras, runtime deps."""
        reqs = []
        for pkg, ver in {**self.pins, **{k: self.pins.get(k, "") for k in self.sources}}.items():
            if pkg in self.sources:
                reqs.append(requirement(pkg, self.sources[pkg]))
                continue
            extra = device_extra(self.device, pkg, list(self.pins), self.cuda)
            reqs.append(f"{pkg}[{extra}]=={ver}" if extra else f"{pkg}=={ver}")
        return reqs + list(self.extras) + list(RUNTIME_REQUIREMENTS)

    def run_env(self) -> dict[str, str]:
        """Environment variables the cell's processes run under."""
        env = {"PJRT_DEVICE": PJRT[self.device]}
        if self.device in JAX_PLATFORMS:  # never a silent fallback to the host (harness.cells.devices)
            env["JAX_PLATFORMS"] = JAX_PLATFORMS[self.device]
        env.update(self.env)
        return env

    def key(self) -> str:
        """Stable hash of everything that decides the env's contents (the env cache key)."""
        parts = {"python": PYTHON, "reqs": self.requirements(), "index_url": self.index_url,
                 "find_links": list(self.find_links)}
        if self.extra_index_urls:  # only when set, so the keys of existing envs stay as they were
            parts["extra_index_urls"] = list(self.extra_index_urls)
        if self.sources:  # the commit or content hash of each source (a dirty tree's edits included)
            parts["sources"] = {pkg: [s.get("sha"), s.get("content_hash"), s.get("subdir")]
                                for pkg, s in self.sources.items()}
        if self.import_may_fail:  # only when set: an env checked without the import is never reused as one checked with it
            parts["import_may_fail"] = sorted(self.import_may_fail)
        blob = json.dumps(parts, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def install_line(self) -> str:
        """The exact pip line that reproduces this cell's packages (for repros and reports)."""
        args = ["pip", "install"]
        if self.index_url:
            args += ["--index-url", self.index_url]
        for url in self.extra_index_urls:
            args += ["--extra-index-url", url]
        for link in self.find_links:
            args += ["--find-links", link]
        pinned = [r for r in self.requirements() if r not in RUNTIME_REQUIREMENTS]
        return redact(shlex.join(args + pinned))  # shown and written: an index token stays with uv

    def with_pins(self, name: str, pins: dict[str, str]) -> "Cell":
        """A probe cell: the same cell with some pins replaced (bisection)."""
        merged = dict(self.pins)
        merged.update(pins)
        return Cell(name=name, device=self.device, pins=merged, extras=self.extras, env=dict(self.env),
                    timeout_s=self.timeout_s, index_url=self.index_url, find_links=self.find_links,
                    runs_on=self.runs_on, source=self.source, floating=dict(self.floating),
                    extra_index_urls=self.extra_index_urls, import_may_fail=self.import_may_fail,
                    sources={k: v for k, v in self.sources.items() if k not in pins})

    def describe(self) -> dict:
        """JSON-friendly description (CellStart record, `harness matrix` output)."""
        return {"cell": self.name, "device": self.device, "pins": self.pins, "extras": list(self.extras),
                "env": redact_all(self.run_env()), "timeout_s": self.timeout_s, "install_line": self.install_line(),
                "runs_on": self.runs_on, "source": self.source,
                **({"floating": self.floating} if self.floating else {}),
                **({"import_may_fail": list(self.import_may_fail)} if self.import_may_fail else {}),
                **({"sources": redact_all(self.sources)} if self.sources else {})}

def is_url(text: str) -> bool:
    """A repository URL (scheme://... or scp-like user@host:path), not a local path."""
    return "://" in text or re.match(r"[\w.-]+@[\w.-]+:", text) is not None


def requirement(package: str, src: dict[str, Any]) -> str:
    """A PEP 508 requirement naming the source (env key, install line): pip can install it as written
    on the machine that has the source."""
    if src["kind"] == "git":
        url = src["location"] if is_url(src["location"]) else Path(src["location"]).as_uri()
        sub = f"#subdirectory={src['subdir']}" if src.get("subdir") else ""
        return f"{package} @ git+{url}@{src.get('sha', src.get('ref', 'HEAD'))}{sub}"
    loc = Path(src["location"], src.get("subdir", "")) if src["kind"] == "path" else Path(src["location"])
    return f"{package} @ {loc.as_uri()}"
