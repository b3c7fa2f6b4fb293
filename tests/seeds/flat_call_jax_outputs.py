"""Seed call_jax returning its outputs as a flat list (torch_xla 2.7's behaviour, put back into 2.9)."""


def pytest_configure(config):
    import torch_xla.core.xla_builder as xb

    def postprocess(self, res_flattened):
        return list(res_flattened)

    xb.FlattenedInputFunc.postprocess = postprocess
