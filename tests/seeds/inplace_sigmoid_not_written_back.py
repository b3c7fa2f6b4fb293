"""Seed an in-place bug: torchax's `x.sigmoid_()` computes sigmoid(x) and returns it as a new tensor,
but never writes it into x (the update of the caller's tensor is lost, eagerly and traced). The
functional op is untouched, so only a case that calls the in-place variant and reads the tensor
afterwards sees it: test_ops.py::test_op_inplace does."""


def pytest_configure(config):
    import torch
    from torchax.ops import jaten, ops_registry  # noqa: F401 - importing jaten fills the registry

    op = ops_registry.all_aten_ops[torch.ops.aten.sigmoid_]

    def not_written_back(self, *args, **kwargs):
        return torch.ops.aten.sigmoid(self)  # the right value, in a fresh tensor; self stays as it was

    op.func = not_written_back
