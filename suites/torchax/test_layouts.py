"""Dtype and layout coverage through torchax: views that start inside their storage, float16 and
bfloat16 at the edges of their range, and tied parameters (one Parameter under two names).

The generated round trips cover transposed, stepped and expanded views, all starting at storage
offset 0, and values of magnitude ~1e3; a conversion that read from the start of the storage, or
that clamped, flushed subnormals or lost the sign of zero, would pass them.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.incell import numerics
from harness.incell.compat import require, torch_api
from suites.torchax import cores
from suites.torchax.test_tight_numerics import forward_bound

VIEWS = {  # name -> view of a 5 x 6 float32 tensor holding 0..29, every one at a non-zero offset
    "tail_slice": lambda t: t[1:],
    "inner_block": lambda t: t[2:, 1:4],
    "column": lambda t: t[:, 2],
    "offset_step": lambda t: t[1::2, 1::3],
    "narrow_then_transpose": lambda t: t.narrow(1, 2, 3).t(),
    "one_element": lambda t: t[3, 4],
}


@pytest.fixture(scope="module")
def env():
    return cores.torchax_env()


@pytest.mark.parametrize("how", list(VIEWS))
def test_round_trip_of_a_view_starting_inside_its_storage(how, env, observe):
    torch = require("torch")
    base = torch.arange(30, dtype=torch.float32).reshape(5, 6)
    t = VIEWS[how](base)
    observe.record(storage_offset=t.storage_offset(), strides=list(t.stride()), shape=list(t.shape))
    assert t.storage_offset() > 0, "the case must exercise a non-zero storage offset"
    j = torch_api.t2j(env, t)
    assert tuple(j.shape) == tuple(t.shape), f"shape became {tuple(j.shape)}"
    np.testing.assert_array_equal(np.asarray(j), t.numpy(), err_msg=f"{how}: to JAX (small integers: exact)")
    back = torch_api.j2t(env, j)
    assert back.dtype == t.dtype and tuple(back.shape) == tuple(t.shape)
    np.testing.assert_array_equal(back.numpy(), t.numpy(), err_msg=f"{how}: back to torch")


def _edges(torch, dtype):
    fi = torch.finfo(dtype)
    return torch.tensor([fi.max, -fi.max, fi.tiny, -fi.tiny, fi.smallest_normal / 4, 0.0, -0.0, 1.0 + fi.eps,
                         float("inf"), float("-inf"), float("nan")], dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_round_trip_keeps_dtype_and_range(dtype, env, observe):
    """max, -max, smallest normal, a subnormal, +-0, 1 + eps, +-inf and NaN, bit for bit."""
    torch = require("torch")
    import jax.numpy as jnp

    t = _edges(torch, getattr(torch, dtype))
    j = torch_api.t2j(env, t)
    observe.record(jax_dtype=str(j.dtype))
    assert j.dtype == jnp.dtype(dtype), f"{dtype} became {j.dtype}"
    back = torch_api.j2t(env, j)
    assert back.dtype == t.dtype, f"round trip changed dtype {t.dtype} -> {back.dtype}"
    # Bit for bit (so -0.0 and subnormals count), except NaN: only NaN-ness is promised (XLA may
    # canonicalise its sign and payload; torch_xla 2.9's bfloat16 path does).
    want = t.view(torch.int16).numpy()
    finite = ~np.isnan(t.float().numpy())
    for where, got in (("to JAX", np.asarray(j)), ("back to torch", back)):
        got_bits = got.view(torch.int16).numpy() if hasattr(got, "numpy") else got.view(np.int16)
        np.testing.assert_array_equal(got_bits[finite], want[finite], err_msg=f"{dtype}: {where}, bit patterns")
        as_float = got.float().numpy() if hasattr(got, "numpy") else got.astype(np.float32)
        assert np.isnan(as_float[~finite]).all(), f"{dtype}: {where}: NaN did not stay NaN"



def test_tied_parameters_through_extract_jax(env, observe):
    torch = require("torch")
    import jax
    import jax.numpy as jnp

    torch.manual_seed(4)
    lin = torch.nn.Linear(4, 4)
    model = torch.nn.Sequential(lin, torch.nn.Tanh(), lin)
    all_names = [n for n, _ in model.named_parameters(remove_duplicate=False)]
    assert all_names == ["0.weight", "0.bias", "2.weight", "2.bias"], all_names
    x = torch.from_numpy(np.random.default_rng(9).normal(size=(6, 4)).astype(np.float32))
    states, jfn = torch_api.torchax_entry("extract_jax")(model)
    observe.record(state_keys=sorted(states))
    jx = torch_api.t2j(env, x)
    y = np.asarray(jfn(states, (jx,)))
    w, b = lin.weight.detach().numpy().astype(np.float64), lin.bias.detach().numpy().astype(np.float64)
    x64 = x.numpy().astype(np.float64)
    bound, _ = forward_bound(w, b, w, b, x64)
    observe.record(forward=numerics.assert_within_bound(
        y, np.tanh(x64 @ w.T + b) @ w.T + b, bound.T, why="float32 rounding: gamma_5 per dot, tanh 4 ulp"))

    grads = jax.grad(lambda s: jnp.sum(jfn(s, (jx,)) ** 2))(states)
    torch.sum(model(x) ** 2).backward()
    # However torchax names the shared tensor (once, or once per name), the gradient that reaches
    # it must be torch's: the sum over every state key that holds it.
    for pname, p in (("weight", lin.weight), ("bias", lin.bias)):
        keys = [k for k in states if k.endswith(pname)]
        got = sum(np.asarray(grads[k], dtype=np.float64) for k in keys)
        ref = p.grad.numpy().astype(np.float64)
        # float32 backward through two 4-term layers: relative 2e-6 of the largest gradient is 16 ulps
        # at 1.0 (measured 1.6e-7, 1.4 ulps, on the torchax bundled in torch_xla 2.9)
        scale = np.abs(ref).max()
        err = float(np.abs(got - ref).max() / scale)
        observe.record(**{f"grad.{pname}": {"keys": keys, "max_err_over_scale": err}})
        assert err <= 2e-6, f"gradient of the tied {pname} (keys {keys}) is off by {err:.3g} of its scale"
