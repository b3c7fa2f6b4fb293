"""Seed pytorch/xla#8794: call_jax lowers with keep_unused=False again (the pre-#8830 behaviour)."""

import sys


def pytest_configure(config):
    import jax

    real_jit = jax.jit

    def jit(fun=None, *args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith("torch_xla"):
            kwargs["keep_unused"] = False
        return real_jit(fun, *args, **kwargs) if fun is not None else real_jit(*args, **kwargs)

    jax.jit = jit
