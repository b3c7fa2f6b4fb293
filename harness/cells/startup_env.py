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


# What of the caller's environment building an env sees (uv, git, a source package's build backend): an
# allow-list too, decided per family of variables, so that a stray variable in the operator's shell cannot
# change what a cell installs without it being recorded (issue 31).
#   passed - where things are and who runs: PATH (uv, git, a compiler), HOME (uv's default cache, git's
#            own config and credential helpers), USER, LOGNAME; the locale and TZ (messages only); TMPDIR,
#            TMP, TEMP (scratch space);
#          - how the network is reached, never which index: the proxy variables, SSL_CERT_FILE,
#            SSL_CERT_DIR, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, UV_NATIVE_TLS (trust the system's store);
#          - where uv keeps its cache: UV_CACHE_DIR, XDG_CACHE_HOME (a cache holds what an index served;
#            the installed versions are checked against the pins afterwards);
#          - how git authenticates to a private repository: SSH_AUTH_SOCK, GIT_SSH, GIT_SSH_COMMAND,
#            GIT_ASKPASS, SSH_ASKPASS, GIT_TERMINAL_PROMPT (the commit is named by its sha, whoever serves it).
#   dropped - every other UV_* (UV_INDEX_URL, UV_EXTRA_INDEX_URL, UV_CONSTRAINT, UV_OVERRIDE, UV_PYTHON,
#            UV_PRERELEASE, UV_RESOLUTION, UV_EXCLUDE_NEWER, UV_NO_BUILD_ISOLATION, UV_CONFIG_FILE...: each
#            changes what is resolved; the cell's index and find-links come from the matrix) and UV_* names
#            with no meaning yet; PIP_* (a build backend that calls pip reads them); PYTHON* and LD_PRELOAD /
#            LD_LIBRARY_PATH / LD_AUDIT (what Python or a loaded library runs); VIRTUAL_ENV and CONDA_* (which
#            env uv writes into: the harness names it); CC, CXX, CFLAGS, CXXFLAGS, LDFLAGS, CPPFLAGS, MAKEFLAGS,
#            CMAKE_*, BAZEL*, and a package's own build switches (JAX_*, WHEEL_VERSION_SUFFIX, TORCH_*,
#            XLA_*, BUILD_*, USE_*: what a build backend compiles or how it names the version; the harness
#            sets WHEEL_VERSION_SUFFIX and JAX_GIT_HASH itself); GIT_DIR, GIT_WORK_TREE, GIT_CONFIG_*,
#            GIT_CONFIG_PARAMETERS, GIT_ALTERNATE_OBJECT_DIRECTORIES (which repository git reads, or its
#            config: `url.X.insteadOf` would fetch another repository); SEAMS_* but the containment mark (the harness's, not the tools').
# What passes is recorded in the cell's CellStart (`build_env`, credentials masked) and shown in the report.
BUILD_ALLOWED = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TMP", "TEMP",
    "http_proxy", "https_proxy", "no_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "UV_NATIVE_TLS",
    "UV_CACHE_DIR", "XDG_CACHE_HOME",
    "SSH_AUTH_SOCK", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_TERMINAL_PROMPT",
    "SEAMS_OWNER",  # containment's mark (harness.lifeline), nothing a tool reads
})
BUILD_ALLOWED_PREFIXES = ("LC_",)


def build_passed(env: dict[str, str]) -> dict[str, str]:
    """The caller's variables an env build sees (BUILD_ALLOWED, LC_*), as they are."""
    return {k: v for k, v in env.items() if k in BUILD_ALLOWED or k.startswith(BUILD_ALLOWED_PREFIXES)}


def build_env(env: dict[str, str], own: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of uv, git or a build backend: the caller's allowed variables and the harness's own."""
    return {**build_passed(env), **(own or {})}


def build_env_record(env: dict[str, str]) -> dict[str, str]:
    """What CellStart records of an env build's environment: each passed variable, credentials masked."""
    return {k: redact(v)[:300] for k, v in sorted(build_passed(env).items())}
