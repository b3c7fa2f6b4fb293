"""Property layer for torchax: generated round trips and generated modules under jax.grad.

Round trips torch -> JAX -> torch over generated dtypes (64-bit ones with jax_enable_x64 on, as a
user who needs them has it), shapes (0-d, empty, long, square 2-D where a transpose that ignores
strides keeps the shape and only the values betray it) and non-contiguous views (transpose,
slicing with a step, expand). Grads of an MSE loss through small generated torch modules via
torchax.extract_jax against torch autograd on CPU. Deterministic under the root conftest's profiles.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest

from harness.compat import require, torch_api

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

# The `ci` profile bounds a cell's time: no shrinking there (a failing release would spend up to
# 5 min shrinking and hit the cell timeout); `nightly` and `dev` shrink, and their shrunk
# examples become explicit scenarios.
bounded = hypothesis.settings(
    hypothesis.settings.default,
    phases=[p for p in hypothesis.Phase if p != hypothesis.Phase.shrink]
    if os.environ.get("SEAMS_HYPOTHESIS_PROFILE", "ci") == "ci" else hypothesis.settings.default.phases)

try:
    import torch
except ImportError:  # collected everywhere; the fixtures skip where the cell has no torch
    torch = None

DTYPES = ["float32", "float64", "int64", "int32", "bool", "bfloat16", "float16", "int8", "uint8"]
WIDE = {"float64", "int64"}


@pytest.fixture(scope="module")
def env():
    require("torch")
    return torch_api.torchax_entry("default_env")()


@contextlib.contextmanager
def x64(on: bool):
    """jax_enable_x64 for the block, restored after (other cases must not see it)."""
    import jax

    old = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", on)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", old)


def _host(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def _make(dtype: str, shape: tuple, seed: int):
    gen = torch.Generator().manual_seed(seed)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype in ("int8", "uint8", "int32", "int64"):
        lo, hi = {"int8": (-128, 128), "uint8": (0, 256), "int32": (-2**31, 2**31 - 1),
                  "int64": (-2**62, 2**62)}[dtype]
        return torch.randint(lo, hi, shape, generator=gen, dtype=getattr(torch, dtype))
    return (torch.randn(shape, generator=gen, dtype=torch.float64) * 1e3).to(getattr(torch, dtype))


SHAPES = st.one_of(
    st.just(()), st.just((0,)), st.just((0, 3)), st.just((3, 0, 2)),
    st.integers(1, 7).map(lambda n: (n, n)),  # square 2-D
    st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
    st.just((4099,)),  # long: past any small-buffer path
)
VIEWS = ["contiguous", "transpose", "step_slice", "expand", "flip_view"]


def _view(t, how: str):
    """A view of t that shares its storage with other strides (or t itself where none applies)."""
    if how == "transpose" and t.dim() >= 2:
        return t.transpose(0, 1)
    if how == "step_slice" and t.dim() >= 1 and t.shape[0] > 1:
        return t[::2]
    if how == "expand":
        return t.unsqueeze(0).expand(3, *t.shape)
    if how == "flip_view" and t.dim() >= 2:
        return t.t() if t.dim() == 2 else t.permute(*reversed(range(t.dim())))
    return t


@bounded
@hypothesis.given(dtype=st.sampled_from(DTYPES), shape=SHAPES, how=st.sampled_from(VIEWS),
                  seed=st.integers(0, 3))
def test_generated_round_trips_are_exact(dtype, shape, how, seed, env, observe):
    """torch -> JAX keeps shape, dtype and every value of the (possibly strided) view; back to
    torch gives the same tensor again."""
    import jax
    import jax.numpy as jnp

    t = _view(_make(dtype, shape, seed), how)
    with x64(dtype in WIDE):
        j = torch_api.t2j(env, t)
        label = f"{dtype}{tuple(t.shape)} strides={t.stride()} ({how})"
        assert isinstance(j, jax.Array), f"{label}: t2j returned {type(j).__name__}"
        assert tuple(j.shape) == tuple(t.shape), f"{label}: shape became {tuple(j.shape)}"
        assert j.dtype == jnp.dtype(dtype), f"{label}: dtype became {j.dtype}"
        np.testing.assert_array_equal(np.asarray(j.astype(jnp.float32) if dtype == "bfloat16" else j),
                                      _host(t), err_msg=f"{label}: to JAX")
        back = torch_api.j2t(env, j)
        assert back.dtype == t.dtype and tuple(back.shape) == tuple(t.shape), \
            f"{label}: came back as {back.dtype}{tuple(back.shape)}"
        np.testing.assert_array_equal(_host(back), _host(t), err_msg=f"{label}: back to torch")


LAYERS = st.sampled_from(["linear", "tanh", "sigmoid", "softplus", "layernorm", "linear_nobias"])


def _module(kinds: list, width: list, seed: int):
    torch.manual_seed(seed)
    layers, n = [], width[0]
    for i, kind in enumerate(kinds):
        if kind.startswith("linear"):
            out = width[(i + 1) % len(width)]
            layers.append(torch.nn.Linear(n, out, bias=kind == "linear"))
            n = out
        elif kind == "layernorm":
            layers.append(torch.nn.LayerNorm(n))
        else:
            layers.append({"tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid, "softplus": torch.nn.Softplus}[kind]())
    layers.append(torch.nn.Linear(n, 2))
    return torch.nn.Sequential(*layers)


@bounded
@hypothesis.example(kinds=["softplus"], width=[2], batch=4, seed=3)  # found on torchax 0.0.4 (xla27-cpu)
@hypothesis.given(kinds=st.lists(LAYERS, min_size=1, max_size=4), width=st.lists(st.integers(1, 5), min_size=1, max_size=3),
                  batch=st.integers(1, 4), seed=st.integers(0, 3))
def test_generated_module_grads_match_torch_autograd(kinds, width, batch, seed, env, observe):
    """jax.grad of an MSE loss through a generated torch module (extract_jax) equals torch
    autograd: every parameter gets a gradient, with its name, shape and values."""
    import jax
    import jax.numpy as jnp

    model = _module(kinds, width, seed)
    gen = torch.Generator().manual_seed(seed + 10)
    x, y = torch.randn(batch, width[0], generator=gen), torch.randn(batch, 2, generator=gen)
    states, jfn = torch_api.torchax_entry("extract_jax")(model)
    jx, jy = torch_api.t2j(env, x), torch_api.t2j(env, y)

    def loss(states, x, y):
        return jnp.mean((jfn(states, (x,)) - y) ** 2)

    value, grads = jax.value_and_grad(loss)(states, jx, jy)
    tloss = torch.mean((model(x) - y) ** 2)
    tloss.backward()
    np.testing.assert_allclose(float(value), float(tloss), rtol=1e-5, atol=1e-6, err_msg="loss")
    ref = dict(model.named_parameters())
    assert sorted(grads) == sorted(ref), f"parameter names differ: {sorted(grads)} vs {sorted(ref)}"
    for name, p in ref.items():
        g = np.asarray(grads[name])
        assert g.shape == tuple(p.shape), f"grad.{name}: shape {g.shape}, parameter {tuple(p.shape)}"
        np.testing.assert_allclose(g, _host(p.grad), rtol=1e-4, atol=1e-6, err_msg=f"grad.{name}")
