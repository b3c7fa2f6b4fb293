"""Seed jax-ml/jax#28260's trigger: jax.lax.pvary becomes the identity, as if the user never marked p."""


def pytest_configure(config):
    import jax

    if hasattr(jax.lax, "pvary"):
        jax.lax.pvary = lambda x, axis_name: x
