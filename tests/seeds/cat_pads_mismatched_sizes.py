"""Seed a missing error: torchax's aten.cat zero-pads tensors whose sizes differ outside the
concatenated dimension (torch.cat([a[5, 5, 20, 20], b[5, 0, 19, 20]], dim=1)) and returns a value
where torch raises "Sizes of tensors must match except in dimension 1". Valid inputs are untouched,
so only a case that feeds cat an invalid input sees it: OpInfo's error inputs for cat
(test_ops.py::test_op_error) have such pairs."""


def pytest_configure(config):
    import jax.numpy as jnp
    import torch
    from torchax.ops import jaten, ops_registry  # noqa: F401 - importing jaten fills the registry

    op = ops_registry.all_aten_ops[torch.ops.aten.cat]
    real = op.func

    def zero_padded(tensors, dims=0):
        if len(tensors) > 1 and len({t.ndim for t in tensors}) == 1 and tensors[0].ndim > 0:
            axis = dims % tensors[0].ndim
            big = [max(t.shape[d] for t in tensors) for d in range(tensors[0].ndim)]
            tensors = [jnp.pad(t, [(0, 0 if d == axis else big[d] - t.shape[d]) for d in range(t.ndim)])
                       for t in tensors]
        return real(tensors, dims)

    op.func = zero_padded
