"""Seed a flipped default: shard_map's replication check (check_vma, check_rep before 0.6.1) is
off unless asked for. Every hand-written case passes the check explicitly and cannot see it."""

import functools
import inspect


def _default_off(fn, param):
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def shard_map(*args, **kwargs):
        kwargs.setdefault(param, False)
        return fn(*args, **kwargs)

    shard_map.__signature__ = sig.replace(parameters=[p.replace(default=False) if name == param else p
                                                      for name, p in sig.parameters.items()])
    return shard_map


def pytest_configure(config):
    import jax

    if hasattr(jax, "shard_map"):
        jax.shard_map = _default_off(jax.shard_map, "check_vma")
    else:
        import jax.experimental.shard_map as experimental

        experimental.shard_map = _default_off(experimental.shard_map, "check_rep")
