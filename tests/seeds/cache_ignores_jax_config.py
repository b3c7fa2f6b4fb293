"""Seed a call_jax trace cache blind to the jax config (torch_xla 2.7's key, put back into 2.9)."""

import sys


def pytest_configure(config):
    from jax._src import config as jax_config

    real = jax_config.trace_context

    def trace_context():
        if sys._getframe(1).f_globals.get("__name__", "").startswith("torch_xla"):
            return ()  # every config looks the same to call_jax's cache
        return real()

    jax_config.trace_context = trace_context
