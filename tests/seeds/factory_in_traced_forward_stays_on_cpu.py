"""Seed a tracing bug: while JAX traces (jax.jit of extract_jax's function, interop.jax_jit), a
tensor constructor asked for the jax device (torch.arange / zeros / full / eye ..., device=x.device)
returns a plain CPU torch tensor instead of a torchax Tensor. Eagerly nothing changes, so only a
case that creates tensors inside a traced forward and looks at what comes out can see it."""


def pytest_configure(config):
    import torch
    from jax._src import core
    from torch.utils import _mode_utils
    from torchax import tensor

    real = tensor.Environment._handle_tensor_constructor

    def constructor(self, func, args, kwargs):
        if not core.trace_state_clean() and self._should_use_torchax_tensor(kwargs.get("device")):
            kwargs = {k: v for k, v in kwargs.items() if k != "device"}
            with _mode_utils.no_dispatch(), torch._C.DisableTorchFunction():  # as torchax does for a CPU request
                return func(*args, **kwargs)
        return real(self, func, args, kwargs)

    tensor.Environment._handle_tensor_constructor = constructor
