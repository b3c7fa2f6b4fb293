"""Seed a primal error of 80 float32 ulps (relative 80 * 2**-23 = 9.5e-6) on every output of a
shard_map'd function, as a lowering that lost precision would. Tangents and cotangents carry the
same relative error, so every check at rtol/atol 2e-5 passes."""

import functools


def _off(shard_map):
    @functools.wraps(shard_map)
    def wrapped(f=None, *args, **kwargs):
        import jax

        if f is None:  # jax.shard_map(out_specs=...) as a decorator factory
            return lambda g: wrapped(g, *args, **kwargs)

        def body(*xs):
            return jax.tree_util.tree_map(lambda y: y * (1.0 + 80 * 2.0**-23), f(*xs))

        return shard_map(body, *args, **kwargs)

    return wrapped


def pytest_configure(config):
    import jax

    if hasattr(jax, "shard_map"):
        jax.shard_map = _off(jax.shard_map)
    import jax.experimental.shard_map as experimental

    experimental.shard_map = _off(experimental.shard_map)
