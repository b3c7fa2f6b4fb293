"""Numeric comparison against an independent reference, recording the error it measured."""

from __future__ import annotations

from typing import Any

import numpy as np


def to_numpy(x: Any) -> np.ndarray:
    """Convert a jax array, torch tensor (any device) or array-like to a float64/int NumPy array."""
    if hasattr(x, "detach"):  # torch.Tensor, possibly on an XLA device or bfloat16
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        x = x.numpy()
    arr = np.asarray(x)
    if arr.dtype.kind == "f" or arr.dtype.name == "bfloat16":
        arr = arr.astype(np.float64)
    return arr


def errors(actual: Any, expected: Any) -> dict[str, float]:
    """Max absolute and relative error of actual versus expected (shapes must match)."""
    a, e = to_numpy(actual), to_numpy(expected)
    if a.shape != e.shape:
        raise AssertionError(f"shape mismatch: got {a.shape}, reference {e.shape}")
    if a.size == 0:
        return {"max_abs_err": 0.0, "max_rel_err": 0.0}
    diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
    scale = np.maximum(np.abs(e.astype(np.float64)), np.finfo(np.float64).tiny)
    return {"max_abs_err": float(diff.max()), "max_rel_err": float((diff / scale).max())}


def assert_close(actual: Any, expected: Any, *, rtol: float, atol: float) -> dict[str, float]:
    """Assert allclose(actual, expected) and return the measured errors and tolerances."""
    err = errors(actual, expected)
    err.update(rtol=rtol, atol=atol)
    np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), rtol=rtol, atol=atol)
    return err
