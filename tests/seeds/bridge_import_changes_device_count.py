"""Seed a living-together bug: `import torch_xla` makes torch.cuda.device_count() report 8 on a
machine with no GPU (as a bridge that registers its devices under torch's CUDA queries would).
torch_xla's own features and call_jax are untouched, so only the fresh-process comparison of
torch's device queries can see it."""

from tests.seeds._after_import import after_import


def pytest_configure(config):
    after_import("torch_xla", "import torch as _t\n_t.cuda.device_count = lambda: 8")
