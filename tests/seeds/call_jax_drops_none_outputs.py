"""Seed a structure bug: call_jax drops optional (None) entries from the dicts it returns, as a
release that filtered "empty" leaves while unflattening would. Every leaf that is a tensor still
comes back right, so the cases whose outputs hold no None cannot see it."""


def pytest_configure(config):
    import torch_xla.core.xla_builder as xb

    real = xb.FlattenedInputFunc.postprocess

    def without_none(tree):
        if isinstance(tree, dict):
            return {k: without_none(v) for k, v in tree.items() if v is not None}
        if isinstance(tree, list):
            return [without_none(v) for v in tree]
        return tree

    def postprocess(self, res_flattened):
        return without_none(real(self, res_flattened))

    xb.FlattenedInputFunc.postprocess = postprocess
