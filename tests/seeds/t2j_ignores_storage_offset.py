"""Seed a DLPack-style layout bug: torchax's torch -> JAX conversion reads a contiguous view from
the start of its storage, ignoring the storage offset (a byte_offset dropped on export). Views at
offset 0 (every generated round trip: transposes, steps, expands) convert right."""


def pytest_configure(config):
    import torch
    from torchax.ops import mappings

    real = mappings.t2j

    def t2j(t, *args, **kwargs):
        if isinstance(t, torch.Tensor) and t.storage_offset() and t.is_contiguous():
            t = torch.as_strided(t, t.size(), t.stride(), 0)
        return real(t, *args, **kwargs)

    mappings.t2j = t2j
