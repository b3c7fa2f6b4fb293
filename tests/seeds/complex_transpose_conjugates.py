"""Seed a complex-only transpose bug: jax.linear_transpose returns the conjugate (Hermitian)
transpose instead of the plain one. Real inputs, which every other shard_map case uses, cannot
tell the two apart (the same style as transpose_off_for_matrices: the public entry point)."""


def pytest_configure(config):
    import jax
    import numpy as np

    real = jax.linear_transpose

    def linear_transpose(fun, *primals, **kwargs):
        transposed = real(fun, *primals, **kwargs)
        if not any(np.iscomplexobj(np.empty((), getattr(p, "dtype", np.float32))) for p in primals):
            return transposed

        def conjugated(*cts):
            return jax.tree_util.tree_map(jax.numpy.conj, transposed(*map(jax.numpy.conj, cts)))

        return conjugated

    jax.linear_transpose = linear_transpose
