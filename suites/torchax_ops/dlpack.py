"""Conversions between torch and JAX across layouts and dtypes: torchax's (its config's
`use_dlpack_for_data_conversion` on and off) and the plain DLPack path (`jax.dlpack.from_dlpack`,
`torch.from_dlpack`). Values, dtype and shape must survive both ways; whether the two sides share
memory is recorded as a fact (per version: a change is news in the report's history, not a failure).
"""

from __future__ import annotations

from typing import Any

from harness.incell.compat import api_absent, found, torch_api

DLPACK_OPTION = "torchax.config.use_dlpack_for_data_conversion"  # its release range: matrices/apis/torchax.yaml

def make(layout: str, dtype: str) -> Any:
    """A torch tensor of this layout and dtype; a view where the layout is one."""
    import torch

    base = torch.arange(-12, 24, dtype=torch.float32).reshape(6, 6) / 4  # exact in every dtype here but bool
    base = base.to(getattr(torch, dtype)) if dtype != "bool" else base > 0
    if layout == "contiguous":
        return base
    if layout == "transposed":
        return base.t()
    if layout == "offset_slice":
        view = base[2:, 1:4]
        assert view.storage_offset() > 0
        return view
    if layout == "size1_strides":  # size-1 dims with strides no contiguous tensor would have
        return torch.as_strided(base, (3, 1, 2), (6, 97, 1), 6)
    return base[1, 2]  # zero_d: a 0-d view into the middle of the storage


def _shares(torch_tensor: Any, jax_array: Any) -> bool | None:
    """Whether the two sides are one buffer (None where JAX cannot say)."""
    try:
        return int(jax_array.unsafe_buffer_pointer()) == int(torch_tensor.data_ptr())
    except Exception:  # a deleted or non-CPU buffer: the fact is unknown, not False
        return None


def conversion_case(layout: str, dtype: str, path: str, observe) -> None:
    """torch -> JAX -> torch keeps values, dtype and shape; memory sharing recorded each way."""
    import jax
    import numpy as np
    import torch


    t = make(layout, dtype)
    expected = t.float().numpy() if dtype == "bfloat16" else t.numpy()
    if path == "plain_dlpack":
        try:
            j = jax.dlpack.from_dlpack(t)
        except Exception as exc:  # JAX may refuse a layout it cannot alias: a fact, never a wrong value
            observe.record(to_jax="refused", to_jax_error=f"{type(exc).__name__}: {str(exc)[:200]}")
            j = jax.dlpack.from_dlpack(t.contiguous())
        shared_to_jax = _shares(t, j)
        back = torch.from_dlpack(j)
    else:
        env = torch_api.torchax_entry("default_env")()
        if not found(DLPACK_OPTION, hasattr(env.config, "use_dlpack_for_data_conversion")):
            api_absent(DLPACK_OPTION)
        old = env.config.use_dlpack_for_data_conversion
        env.config.use_dlpack_for_data_conversion = path == "torchax_dlpack"
        try:
            j = torch_api.t2j(env, t)
            shared_to_jax = _shares(t, j)
            back = torch_api.j2t(env, j)
        finally:
            env.config.use_dlpack_for_data_conversion = old
    shared_back = _shares(back, j)
    observe.record(layout=layout, shape=list(t.shape), strides=list(t.stride()), storage_offset=t.storage_offset(),
                   jax_dtype=str(j.dtype), shares_memory_to_jax=shared_to_jax, shares_memory_back=shared_back)
    assert tuple(j.shape) == tuple(t.shape), f"to JAX: shape {tuple(j.shape)} where torch has {tuple(t.shape)}"
    assert str(j.dtype) == dtype, f"to JAX: dtype {j.dtype} where torch has {dtype}"
    got = np.asarray(j)  # read back by the host: no XLA computation yet
    np.testing.assert_array_equal(got.astype(np.float32) if dtype == "bfloat16" else got, expected,
                                  err_msg=f"{path}: values changed on the way to JAX")
    # ... and computed on: an array imported with a layout XLA did not pick can read back right and still
    # fail in the first jit that takes it (jax-ml/jax#25066: jax 0.4.38, transposed, every dtype)
    try:
        computed = np.asarray(jax.jit(lambda x: x.reshape(-1))(j))
    except Exception as exc:
        raise AssertionError(f"{path}: the imported array cannot be computed on: "
                             f"{type(exc).__name__}: {str(exc)[:300]}") from None
    np.testing.assert_array_equal(computed.astype(np.float32) if dtype == "bfloat16" else computed,
                                  expected.reshape(-1), err_msg=f"{path}: values changed in a jit of the imported array")
    assert back.dtype == t.dtype and tuple(back.shape) == tuple(t.shape), \
        f"back to torch: {back.dtype}{tuple(back.shape)} where it was {t.dtype}{tuple(t.shape)}"
    assert torch.equal(back, t), f"{path}: values changed on the round trip"
