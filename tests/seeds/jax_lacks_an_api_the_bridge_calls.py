"""Seed a version-skew bug: the cell's jax lacks jax.lax.cumlogsumexp, which torchax's lowering of
aten.logcumsumexp calls (as a jax release that removed or moved it would). torchax still imports
and every path that does not reach that lowering works, so only the census, which reads torchax's
source for every jax API it uses, can see it."""


def pytest_configure(config):
    import jax.lax

    del jax.lax.cumlogsumexp
