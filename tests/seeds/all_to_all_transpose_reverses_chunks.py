"""Seed a transpose bug in a collective no hand-written case uses: all_to_all's transpose rule puts
the cotangent's chunks back in reverse order along split_axis when split_axis != concat_axis (the
forward, jvp and linearize stay right; vjp, grad and linear_transpose go wrong). Planted in jax's
own transpose table, so every entry point that transposes sees it."""


def pytest_configure(config):
    import jax.numpy as jnp
    from jax._src.interpreters import ad
    from jax._src.lax import parallel

    real = ad.primitive_transposes[parallel.all_to_all_p]

    def transpose(ct, *args, **params):
        out = real(ct, *args, **params)
        if params.get("split_axis") == params.get("concat_axis"):
            return out
        return [o if o is None or isinstance(o, ad.Zero) else jnp.flip(o, axis=params["split_axis"]) for o in out]

    ad.primitive_transposes[parallel.all_to_all_p] = transpose
