"""Seed a version-skew bug: the cell's jax lacks jax.lax.cumlogsumexp, which torchax's lowering of
aten.logcumsumexp calls (as a jax release that removed or moved it would), here and in every fresh
process (the census checks names in one). torchax still imports and every path that does not reach
that lowering works, so only the census, which reads torchax's source for every jax API it uses,
can see it."""

from tests.seeds._after_import import after_import


def pytest_configure(config):
    after_import("jax.lax", "del cumlogsumexp")
