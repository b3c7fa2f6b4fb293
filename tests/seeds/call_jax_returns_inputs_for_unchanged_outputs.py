"""Seed an aliasing bug: call_jax hands back the caller's own input tensor for an output that JAX
returns unchanged (an output variable of the traced function that is one of its inputs), as a
release that skipped the copy would. The values are right, so every case that compares values is
blind; writing such an output in place now writes the input too."""


def pytest_configure(config):
    import jax
    import jax.numpy as jnp
    import torch
    import torch_xla.core.xla_builder as xb
    from torch.utils import _pytree as pytree

    real = xb.call_jax

    def call_jax(jax_func, args, kwargs=None, *rest, **more):
        out = real(jax_func, args, kwargs, *rest, **more)
        leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs or {})))
        where = [k for k, t in enumerate(leaves) if isinstance(t, torch.Tensor)]
        if not where or not isinstance(out, (list, tuple)):
            return out

        def flat(*tensors):
            filled = list(leaves)
            for k, t in zip(where, tensors):
                filled[k] = t
            a, kw = pytree.tree_unflatten(filled, spec)
            return jax.tree_util.tree_leaves(jax_func(*a, **kw))

        shapes = [jax.ShapeDtypeStruct(tuple(leaves[k].shape), jnp.dtype(str(leaves[k].dtype).removeprefix("torch.")))
                  for k in where]
        closed = jax.make_jaxpr(flat)(*shapes)
        invars, outvars = list(closed.jaxpr.invars), list(closed.jaxpr.outvars)
        out_leaves, out_spec = pytree.tree_flatten(out)
        if len(out_leaves) != len(outvars):
            return out
        aliased = [leaves[where[invars.index(v)]] if v in invars else o for o, v in zip(out_leaves, outvars)]
        return pytree.tree_unflatten(aliased, out_spec)

    xb.call_jax = call_jax
