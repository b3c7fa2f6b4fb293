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


# --- Tight bounds: ulps and rounding-error analysis against a float64 (or exact) reference. ---
# A fixed rtol of 1e-5 is 84 float32 ulps: it lets a primal output that is wrong by 80 ulps
# through. These helpers derive each bound from the format and the op instead, and every bound
# carries its reason (recorded beside the measured error).

# Significand bits (with the implicit one) per format the suites compare in.
_PRECISION = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}
_MIN_EXP = {"float64": -1022, "float32": -126, "float16": -14, "bfloat16": -126}


def dtype_name(x: Any) -> str:
    """'float32', 'bfloat16', ... of a jax/NumPy array or torch tensor."""
    return str(getattr(x, "dtype", np.asarray(x).dtype)).removeprefix("torch.")


def unit_roundoff(dtype: str) -> float:
    """u = 2**-p: the largest relative error of one correctly rounded operation in `dtype`."""
    return 2.0 ** -_PRECISION[dtype]


def gamma(n: int, dtype: str) -> float:
    """Higham's gamma_n = n u / (1 - n u): the relative bound of n successive roundings (a sum or
    dot product of n + 1 terms in any order, with or without FMA, is within gamma_n of sum |terms|)."""
    nu = n * unit_roundoff(dtype)
    return nu / (1 - nu)


def ulp(reference: Any, dtype: str) -> np.ndarray:
    """The spacing of `dtype` at each |reference| value (subnormal spacing below the normal range)."""
    r = np.abs(to_numpy(reference).astype(np.float64))
    exp = np.floor(np.log2(np.maximum(r, np.finfo(np.float64).tiny)))
    return 2.0 ** (np.maximum(exp, _MIN_EXP[dtype]) - (_PRECISION[dtype] - 1))


def ulp_errors(actual: Any, reference: Any) -> np.ndarray:
    """|actual - reference| in ulps of actual's format at the reference (reference in float64)."""
    a, r = to_numpy(actual), to_numpy(reference).astype(np.float64)
    if a.shape != r.shape:
        raise AssertionError(f"shape mismatch: got {a.shape}, reference {r.shape}")
    return np.abs(a.astype(np.float64) - r) / ulp(r, dtype_name(actual))


def assert_within_ulps(actual: Any, reference: Any, *, max_ulps: float, why: str) -> dict[str, Any]:
    """Assert every element is within max_ulps of the float64 reference; returns what was measured."""
    errs = ulp_errors(actual, reference)
    worst = float(errs.max()) if errs.size else 0.0
    out = {"max_ulp_err": worst, "max_ulps": max_ulps, "dtype": dtype_name(actual), "why": why}
    if not worst <= max_ulps:  # NaN fails too
        i = np.unravel_index(int(np.nanargmax(errs)) if np.isfinite(errs).any() else 0, errs.shape)
        a, r = to_numpy(actual), to_numpy(reference)
        raise AssertionError(f"{worst:.3g} ulps from the float64 reference > {max_ulps} allowed ({why}); "
                             f"worst at {tuple(int(k) for k in i)}: got {a[i]!r}, reference {r[i]!r}")
    return out


def assert_within_bound(actual: Any, reference: Any, bound: Any, *, why: str) -> dict[str, Any]:
    """Assert |actual - reference| <= bound elementwise (a bound from error analysis, same shape)."""
    a, r = to_numpy(actual).astype(np.float64), to_numpy(reference).astype(np.float64)
    b = np.broadcast_to(np.asarray(bound, dtype=np.float64), r.shape)
    if a.shape != r.shape:
        raise AssertionError(f"shape mismatch: got {a.shape}, reference {r.shape}")
    err = np.abs(a - r)
    ratio = err / np.maximum(b, np.finfo(np.float64).tiny)
    worst = float(ratio.max()) if ratio.size else 0.0
    out = {"max_err_over_bound": worst, "max_abs_err": float(err.max()) if err.size else 0.0, "why": why}
    if not worst <= 1.0:
        i = np.unravel_index(int(np.nanargmax(ratio)) if np.isfinite(ratio).any() else 0, ratio.shape)
        raise AssertionError(f"error {err[i]:.3g} is {worst:.3g}x its bound {b[i]:.3g} ({why}); "
                             f"worst at {tuple(int(k) for k in i)}: got {a[i]!r}, reference {r[i]!r}")
    return out


# Per-op bounds for float32 elementwise ops on XLA's CPU backend, in ulps of the result. IEEE 754
# requires the basic ops and sqrt to be correctly rounded (0.5 ulp); the transcendental ones are
# XLA's own polynomial / rational approximations, with no documented bound: the figure is the
# measured maximum over 4096 points (x in [-4, 4], log/sqrt on [0.01, 8]) on jax 0.5.3, 0.7.1 and
# 0.10.2 (identical in all three), rounded up to the next whole ulp.
OP_ULPS: dict[str, tuple[float, str]] = {
    "mul": (0.5, "IEEE 754: correctly rounded"),
    "add": (0.5, "IEEE 754: correctly rounded"),
    "sqrt": (0.5, "IEEE 754: correctly rounded"),
    "sin": (1.0, "XLA CPU sin: 0.55 ulp measured on [-4, 4]"),
    "cos": (1.0, "XLA CPU cos: 0.55 ulp measured on [-4, 4]"),
    "exp": (1.0, "XLA CPU exp: 0.88 ulp measured on [-4, 4]"),
    "log": (1.0, "XLA CPU log: 0.97 ulp measured on [0.01, 8]"),
    "logistic": (2.0, "XLA CPU logistic: 1.73 ulp measured on [-4, 4]"),
    "tanh": (4.0, "XLA CPU tanh (a rational approximation): 3.01 ulp measured on [-4, 4]"),
}
