"""What shaped a run: package versions, interpreter, platform, devices and the relevant env vars."""

from __future__ import annotations

import os
import platform
import re
import sys
from importlib import metadata
from typing import Any, Mapping

# Packages whose versions decide the behaviour under test.
PACKAGES = (
    "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "libtpu", "libtpu-nightly",
    "torch", "torch-xla", "torchax", "flax", "optax", "numpy", "ml-dtypes",
    "absl-py",  # undeclared by jax.export 0.4.30 - 0.6.1: known issues condition on it
)
_ENV_PREFIXES = ("JAX_", "XLA_", "PJRT_", "TPU_", "CUDA_VISIBLE", "TF_CPP")
_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")  # user:token@ in a URL (a proxy's), masked as the host side does


def recorded_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that shaped the run: the runtimes' own (JAX_*, XLA_*, ...) and every one the harness
    passed into the cell (its SEAMS_RECORD_ENV: the caller's allow-listed variables and the matrix's env)."""
    names = {n for n in environ.get("SEAMS_RECORD_ENV", "").split(",") if n}
    return {k: _CREDENTIALS.sub("***@", v) for k, v in sorted(environ.items()) if k.startswith(_ENV_PREFIXES) or k in names}


def installed_versions() -> dict[str, str | None]:
    """Installed distribution versions of PACKAGES (None where absent)."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def direct_sources() -> dict[str, dict[str, str]]:
    """Packages installed from a wheel file, a folder or a git ref rather than an index (PEP 610
    direct_url.json): name -> url and version. The harness exports a source to a folder named
    after its commit or content hash, so the url names which build this was."""
    import json

    out: dict[str, dict[str, str]] = {}
    for dist in metadata.distributions():
        try:
            raw = dist.read_text("direct_url.json")
            url = json.loads(raw).get("url") if raw else None
        except (OSError, ValueError, AttributeError):
            continue
        name = dist.metadata["Name"] if dist.metadata else None
        if url and name and "editable" not in raw:
            out[name] = {"url": str(url), "version": str(dist.version)}
    return out


def device_info() -> dict[str, Any]:
    """JAX's view of the devices (kind, count, platform); an error string if jax cannot start."""
    try:
        import jax

        devs = jax.devices()
        return {"platform": devs[0].platform, "device_kind": devs[0].device_kind, "device_count": len(devs)}
    except Exception as exc:  # a broken backend is a fact to record, not a reason to lose the run
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}


def collect_run_info(with_devices: bool = True) -> dict[str, Any]:
    """run_info for the results header (devices only when asked: it starts the JAX backend)."""
    info: dict[str, Any] = {
        "versions": {k: v for k, v in installed_versions().items() if v},
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
        "env": recorded_env(os.environ),
    }
    sources = direct_sources()
    if sources:
        info["sources"] = sources
    if with_devices:
        info["devices"] = device_info() if info["versions"].get("jax") else {}
    return info
