"""Root conftest: every pytest run in this repo (suites inside cell envs, or tests/) sees the harness plugin.

The conformance suites need only what a cell env has (pytest, pytest-reportlog, pyyaml, packaging,
numpy); the rootdir is on sys.path, so `harness` imports without being installed there.
"""

import os

# Multi-device on CPU needs the flag before jax is imported anywhere; a cell's env sets it, and
# this default keeps a bare `pytest suites/...` run in a hand-made venv meaningful too.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("PJRT_DEVICE", "CPU")

pytest_plugins = ["harness.plugin"]
