"""Root conftest: every pytest run in this repo (suites inside cell envs, or tests/) sees the harness plugin.

The conformance suites need only what a cell env has (pytest, pytest-reportlog, pyyaml, packaging,
numpy, hypothesis); the rootdir is on sys.path, so `harness` imports without being installed there.
"""

import os

# Multi-device on CPU needs the flag before jax is imported anywhere; a cell's env sets it, and
# this default keeps a bare `pytest suites/...` run in a hand-made venv meaningful too.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("PJRT_DEVICE", "CPU")

pytest_plugins = ["harness.incell.plugin"]

try:
    from hypothesis import HealthCheck, Phase, settings
except ImportError:  # a hand-made env without hypothesis: the property layers skip themselves
    pass
else:
    # Property layers are deterministic everywhere (derandomize: the same examples on every run,
    # so a verdict never flips on luck) and bounded per cell; `nightly` searches wider.
    # SEAMS_HYPOTHESIS_PROFILE picks one; the default is `ci`.
    _common = dict(derandomize=True, deadline=None, database=None, print_blob=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                          HealthCheck.differing_executors])
    # `ci` does not shrink: a property failing on a release would spend minutes shrinking and hit the
    # cell's timeout; the failing example is still named. `nightly` and `dev` shrink, and their
    # shrunk examples become explicit scenarios.
    settings.register_profile("ci", max_examples=12, phases=[p for p in Phase if p != Phase.shrink], **_common)
    settings.register_profile("nightly", max_examples=100, **_common)
    settings.register_profile("dev", max_examples=5, **_common)
    settings.load_profile(os.environ.get("SEAMS_HYPOTHESIS_PROFILE", "ci"))
