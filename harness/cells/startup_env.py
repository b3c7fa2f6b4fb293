"""Environment variables that change which code a cell runs or how its Python starts.

A cell runs what its matrix says and nothing the caller's shell happens to hold: these are never
passed from the caller's environment into a cell's pytest (each one dropped is recorded in the
cell's results and shown in its reason), and a matrix may not set them in a cell's `env` (exit 2):
an option that should change a run belongs after `--`, where it is seen and recorded.
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


def is_startup_var(name: str) -> bool:
    """True for a variable that alters pytest's or Python's start-up (PYTEST_ADDOPTS, LD_PRELOAD, ...)."""
    return name in STARTUP_VARS


def drop_startup_vars(env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(env without the start-up variables, the ones dropped with their values, credentials masked)."""
    kept = {k: v for k, v in env.items() if k not in STARTUP_VARS}
    dropped = {k: redact(v)[:300] for k, v in env.items() if k in STARTUP_VARS}
    return kept, dropped
