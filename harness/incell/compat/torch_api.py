"""torch_xla / torchax API moves bridged in one place: call_jax, its cache counter, device, sync.

torch_xla 2.6 has no call_jax (api absent); 2.7 counts cached HLO in
`_jax_to_hlo_cache_num_misses`; 2.8+ route through a bundled torchax and count specialised
computations in `_jax_to_xla_computation_cache_elements`.
"""

from __future__ import annotations

from typing import Any, Callable

from harness.incell.compat import api_absent, found, require

CALL_JAX = "torch_xla.core.xla_builder.call_jax"
CACHE_COUNTERS = ("torch_xla.core.xla_builder._jax_to_xla_computation_cache_elements",  # 2.8+
                  "torch_xla.core.xla_builder._jax_to_hlo_cache_num_misses")  # 2.7


def xla():
    """torch_xla, or skip when the cell does not install it."""
    return require("torch_xla")


def call_jax() -> Callable:
    """torch_xla.core.xla_builder.call_jax, or skip as api absent."""
    torch_xla = xla()
    import torch_xla.core.xla_builder as xb

    fn = getattr(xb, "call_jax", None)
    if fn is None:
        api_absent(CALL_JAX, f"torch_xla {torch_xla.__version__}")
    found(CALL_JAX, True)
    return fn


CALL_JAX_TORCHAX = "torch_xla.core.xla_builder.call_jax(torchax tensors)"


def call_jax_torchax_path() -> Any:
    """call_jax's second dispatch path (2.8+: torchax tensors go to torchax.interop.call_jax),
    or skip as api absent. It ships with xla_builder.maybe_get_torchax, which that branch calls
    (returned, so a standalone script that folds the probe still reads what it imported)."""
    import torch_xla.core.xla_builder as xb

    if not found(CALL_JAX_TORCHAX, hasattr(xb, "maybe_get_torchax")):
        api_absent(CALL_JAX_TORCHAX, "this call_jax takes XLA tensors only")
    return xb.maybe_get_torchax


def cache_entries() -> int | None:
    """How many JAX -> XLA computations call_jax has cached (None where no counter is exposed)."""
    import torch_xla.core.xla_builder as xb

    counters = {name: getattr(xb, name.rsplit(".", 1)[1], None) for name in CACHE_COUNTERS}
    for name, fn in counters.items():  # both probed: each has its own release range
        found(name, fn is not None)
    for fn in counters.values():
        if fn is not None:
            return int(fn())
    return None


def torchax_entry(path: str) -> Any:
    """A torchax entry point by dotted path under torchax ("extract_jax", "interop.call_jax"),
    recorded as the API `torchax.PATH`; skip as api absent where this torchax lacks it."""
    import importlib

    torchax = require("torchax")
    module_name, _, attr = f"torchax.{path}".rpartition(".")
    try:
        obj = getattr(importlib.import_module(module_name), attr, None)
    except ImportError:
        obj = None
    if obj is None:
        api_absent(f"torchax.{path}", f"torchax {getattr(torchax, '__version__', '?')}")
    found(f"torchax.{path}", True)
    return obj


def device() -> Any:
    """The default XLA device."""
    torch_xla = xla()
    if hasattr(torch_xla, "device"):
        return torch_xla.device()
    import torch_xla.core.xla_model as xm

    return xm.xla_device()


def sync() -> None:
    """Cut the lazy graph and materialise pending tensors as device data."""
    torch_xla = xla()
    if hasattr(torch_xla, "sync"):
        torch_xla.sync()
    else:
        import torch_xla.core.xla_model as xm

        xm.mark_step()


def tensors_hlo(tensors: list) -> str:
    """HLO text of the graph that computes `tensors` (what torch_xla would compile)."""
    torch_xla = xla()
    return torch_xla._XLAC._get_xla_tensors_hlo(list(tensors))


def t2j(env: Any, tensor: Any) -> Any:
    """torch tensor -> JAX array: env.t2j_copy (torchax 0.0.5+) or torchax.tensor.t2j (0.0.4)."""
    if hasattr(env, "t2j_copy"):
        return env.t2j_copy(tensor)
    from torchax import tensor as tx_tensor

    return tx_tensor.t2j(tensor)


def j2t(env: Any, array: Any) -> Any:
    """JAX array -> torch tensor: env.j2t_copy (torchax 0.0.5+) or torchax.tensor.j2t (0.0.4)."""
    if hasattr(env, "j2t_copy"):
        return env.j2t_copy(array)
    from torchax import tensor as tx_tensor

    return tx_tensor.j2t(array)
