"""Seed a bug one step beside the hand-written shard_map case: linear_transpose goes wrong for
matrices (2-D primals), while the hand-written scenario only transposes vectors."""


def pytest_configure(config):
    import jax

    real = jax.linear_transpose

    def linear_transpose(fun, *primals, **kwargs):
        transposed = real(fun, *primals, **kwargs)
        if not any(getattr(p, "ndim", 0) >= 2 for p in primals):
            return transposed

        def wrong(*cts):
            return jax.tree_util.tree_map(lambda c: c * 1.01, transposed(*cts))

        return wrong

    jax.linear_transpose = linear_transpose
