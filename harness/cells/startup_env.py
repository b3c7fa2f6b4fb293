"""What of the caller's environment a cell sees: an allow-list, and the variables that change which code runs.

A cell runs what its matrix says and nothing the caller's shell happens to hold. The caller's variables
reach a cell only through CALLER_ALLOWED (what any process needs on this machine: where things are, the
locale, temporary folders, proxies and certificates, which accelerators it may use, and the harness's own
SEAMS_* settings); the names passed are recorded in the cell's RunInfo (SEAMS_RECORD_ENV) and so shown in
the report. Everything else is dropped: every dropped name is recorded in the cell's CellStart, and the
ones that can change the code under test (JAX_*, XLA_*, TORCH_*, PYTHON*, LD_*, ... - `is_telling`) are
named in the cell's reason. STARTUP_VARS change how Python or pytest starts: a matrix may not set them in
a cell's `env` (exit 2): an option that should change a run belongs after `--`, where it is seen and recorded.
"""

from __future__ import annotations

from harness.redact import redact

STARTUP_VARS = frozenset({
    "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_XDIST_AUTO_NUM_WORKERS",
    "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONOPTIMIZE", "PYTHONUSERBASE",
    "PYTHONNOUSERSITE", "PYTHONSAFEPATH", "PYTHONBREAKPOINT", "PYTHONWARNINGS", "PYTHONDEVMODE",
    "PYTHONEXECUTABLE", "PYTHONPLATLIBDIR", "PYTHONMALLOC", "PYTHONPYCACHEPREFIX",
    "LD_PRELOAD", "LD_AUDIT", "COV_CORE_SOURCE", "COV_CORE_CONFIG", "COV_CORE_DATAFILE",
})


# The caller's variables a cell may see (issue 31). Anything that changes what the tested code does
# (JAX_PLATFORMS, XLA_FLAGS, ...) comes from the matrix's `env`, never from the caller's shell.
CALLER_ALLOWED = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "TMP", "TEMP",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "TPU_VISIBLE_CHIPS", "LD_LIBRARY_PATH",
})
CALLER_ALLOWED_PREFIXES = ("LC_", "SEAMS_")
# Prefixes of variables that can change what the code under test does: dropped ones are named in the reason.
_TELLING_PREFIXES = ("JAX_", "XLA_", "PJRT_", "TPU_", "LIBTPU_", "TF_CPP_", "TF_XLA_", "CUDA_", "NCCL_", "NVIDIA_TF32",
                     "TORCH_", "TORCHAX_", "PYTORCH_", "PYTEST_", "HYPOTHESIS_", "OMP_", "MKL_", "OPENBLAS_", "KMP_",
                     "NUMPY_", "FLAX_", "OPTAX_")
# An outer pytest's own bookkeeping (the harness run from a test): dropped and recorded, not news.
_OUTER_PYTEST = frozenset({"PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
                           "PYTEST_XDIST_TESTRUNUID", "PYTEST_VERSION"})


# The harness's own hand-offs to the processes it starts (which cgroup to join, which pipe is the lifeline):
# set by the harness for each child, never taken from the caller's shell.
HARNESS_HANDOFFS = frozenset({"SEAMS_CGROUP", "SEAMS_LIFELINE_FD"})


def is_allowed(name: str) -> bool:
    """True for a caller's variable a cell may see (CALLER_ALLOWED, LC_*, SEAMS_* but the hand-offs)."""
    return (name in CALLER_ALLOWED or name.startswith(CALLER_ALLOWED_PREFIXES)) and name not in HARNESS_HANDOFFS


def is_telling(name: str) -> bool:
    """True for a dropped variable worth naming in a cell's reason: it could change the code under test."""
    return (name in STARTUP_VARS or name.startswith(_TELLING_PREFIXES)) and name not in _OUTER_PYTEST


def caller_env(env: dict[str, str]) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(the allowed variables, the telling ones dropped with their values credentials masked, every name dropped)."""
    kept = {k: v for k, v in env.items() if is_allowed(k)}
    gone = sorted(k for k in env if not is_allowed(k))
    named = {k: redact(env[k])[:300] for k in gone if is_telling(k)}
    return kept, named, gone


def is_startup_var(name: str) -> bool:
    """True for a variable that alters pytest's or Python's start-up (PYTEST_ADDOPTS, LD_PRELOAD, ...)."""
    return name in STARTUP_VARS


def drop_startup_vars(env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the caller's variables a cell may see, the telling ones dropped with their values, credentials masked)."""
    kept, named, _gone = caller_env(env)
    return kept, named
