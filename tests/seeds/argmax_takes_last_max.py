"""Seed an op-semantics bug: torchax's aten.argmax returns the index of the *last* of equal
maxima where torch returns the first. Distinct values agree, so only samples with ties see it
(OpInfo's integer samples have them)."""


def pytest_configure(config):
    import jax.numpy as jnp
    import torch
    from torchax.ops import jaten, ops_registry  # noqa: F401 - importing jaten fills the registry

    op = ops_registry.all_aten_ops[torch.ops.aten.argmax]
    real = op.func

    def last_max(self, dim=None, keepdim=False):
        res = real(self, dim, keepdim)  # shape and dtype as torchax gives them
        if self.ndim == 0:
            return res
        if dim is None:
            flat = jnp.ravel(self)
            return (flat.size - 1 - jnp.argmax(flat[::-1])).astype(res.dtype).reshape(res.shape)
        axis = dim % self.ndim
        n = self.shape[axis]
        return (n - 1 - jnp.argmax(jnp.flip(self, axis), axis=axis, keepdims=keepdim)).astype(res.dtype)

    op.func = last_max
