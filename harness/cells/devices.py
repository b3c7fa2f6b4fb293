"""Device types: what each needs installed, which env it runs under, and whether this machine has one."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

DEVICE_TYPES = ("cpu", "gpu", "tpu")

# Extras that turn a CPU pin into the accelerator build (the real upstream install recipes).
EXTRAS = {
    "cpu": {},
    "gpu": {"jax": "cuda{cuda}"},  # the cell's CUDA major (CUDA_MAJORS)
    "tpu": {"jax": "tpu", "torch-xla": "tpu"},
}
# CUDA majors a gpu cell may ask for (the matrix key `cuda:`): jax publishes `jax[cudaN]` with its
# plugin and kernels as jax-cudaN-pjrt / jax-cudaN-plugin. 12 unless a cell says 13 (a CUDA 13
# driver, and jax 0.11's own images, take cuda13).
CUDA_MAJORS = ("12", "13")


def device_extra(device: str, pkg: str, pinned: list[str], cuda: str = "12") -> str | None:
    """The extra that gives `pkg` its build for `device`, for a cell pinning `pinned` (gpu: for CUDA `cuda`).

    A torch_xla cell on TPU takes libtpu from torch_xla's `tpu` extra, and jax plain (as torch_xla's
    own `pallas` extra pins it): jax's `tpu` extra pins another libtpu (jax[tpu] 0.7.1 wants libtpu
    0.0.20.*, torch-xla[tpu] 2.9.0 libtpu 0.0.21), so asking for both does not resolve.
    """
    names = {p.replace("_", "-").lower() for p in pinned}
    key = pkg.replace("_", "-").lower()
    if device == "tpu" and key == "jax" and "torch-xla" in names:
        return None
    extra = EXTRAS.get(device, {}).get(key)
    return extra.format(cuda=cuda) if extra else None


# The runtime each accelerator recipe must bring in beside the pins (dist -> module to import): the
# env check proves these installed and importable. Importing them loads no device: libtpu is a
# Python wrapper around libtpu.so; jax's CUDA plugin is the PJRT plugin (jax_plugins.xla_cuda12,
# from jax-cuda12-pjrt) plus the kernels package jax_cuda12_plugin (CUDA libraries from nvidia-* wheels).
RUNTIME_PACKAGES = {
    "cpu": {},
    "gpu": {"jax": {"jax-cuda{cuda}-pjrt": "jax_plugins.xla_cuda{cuda}", "jax-cuda{cuda}-plugin": "jax_cuda{cuda}_plugin"}},
    "tpu": {"jax": {"libtpu": "libtpu"}, "torch-xla": {"libtpu": "libtpu"}},
}
# GitHub Actions runner labels per device type, unless a cell names its own (`runs_on`).
RUNNERS = {"cpu": "ubuntu-latest", "gpu": ["self-hosted", "gpu"], "tpu": ["self-hosted", "tpu"]}
# PJRT_DEVICE selects torch_xla's backend; JAX picks its platform itself.
PJRT = {"cpu": "CPU", "gpu": "CUDA", "tpu": "TPU"}
# JAX left to pick its platform falls back to the CPU, quietly, when the accelerator's backend fails
# to start: a gpu cell (or one xdist worker of it) would then pass its tests on the host. Naming the
# platform makes that failure an error; cpu stays listed for the cases that ask for the host.
JAX_PLATFORMS = {"gpu": "cuda,cpu", "tpu": "tpu,cpu"}


def available(device: str) -> tuple[bool, str]:
    """(present, reason): whether this machine has the device type, and why not if not."""
    if device == "cpu":
        return True, ""
    if os.environ.get("SEAMS_ASSUME_DEVICE") == device:  # e.g. a TPU VM whose probe below misses
        return True, ""
    if device == "gpu":
        if glob.glob("/dev/nvidia[0-9]*") or _nvidia_smi_ok():
            return True, ""
        return False, "no gpu device on this machine (no /dev/nvidia*, nvidia-smi absent or failing)"
    if device == "tpu":
        if glob.glob("/dev/accel[0-9]*") or glob.glob("/dev/vfio/[0-9]*") or os.environ.get("TPU_ACCELERATOR_TYPE"):
            return True, ""
        return False, "no tpu device on this machine (no /dev/accel*, /dev/vfio/*, TPU_ACCELERATOR_TYPE)"
    return False, f"unknown device type {device!r}"


def runtime_packages(device: str, pinned: list[str], cuda: str = "12") -> dict[str, str]:
    """The runtime dists (-> import name) a cell on `device` with these pinned packages must have
    (gpu: the plugin of CUDA `cuda`)."""
    out: dict[str, str] = {}
    for pkg in pinned:
        for dist, module in RUNTIME_PACKAGES.get(device, {}).get(pkg.replace("_", "-").lower(), {}).items():
            out[dist.format(cuda=cuda)] = module.format(cuda=cuda)
    return out


def not_run_reason(device: str, why_absent: str) -> str:
    """Why a built env did not run its tests: the missing device, or the build-only choice."""
    return f"no {device} device" if why_absent else "--build-only"


def _nvidia_smi_ok() -> bool:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return False
    try:
        return subprocess.run([exe, "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
