"""Property layer for torchax: generated round trips and generated modules under jax.grad.

Round trips torch -> JAX -> torch over generated dtypes (64-bit ones with jax_enable_x64 on, as a
user who needs them has it), shapes (0-d, empty, long, square 2-D where a transpose that ignores
strides keeps the shape and only the values betray it) and non-contiguous views (transpose,
slicing with a step, expand). Grads of an MSE loss through small generated torch modules via
torchax.extract_jax against torch autograd on CPU. Deterministic under the root conftest's profiles.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.incell.compat import require, torch_api
from suites.torchax import cores
# the call_jax family's generated trees and probe, shared so both bridges face the same inputs
from suites.call_jax.test_properties import _dtype_static, _map, _torch_dtype, n_tensors, probe, signatures

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

try:
    import torch
except ImportError:  # collected everywhere; the fixtures skip where the cell has no torch
    torch = None

DTYPES = ["float32", "float64", "int64", "int32", "bool", "bfloat16", "float16", "int8", "uint8"]


@pytest.fixture(scope="module")
def env():
    require("torch")
    return torch_api.torchax_entry("default_env")()


SHAPES = st.one_of(
    st.just(()), st.just((0,)), st.just((0, 3)), st.just((3, 0, 2)),
    st.integers(1, 7).map(lambda n: (n, n)),  # square 2-D
    st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
    st.just((4099,)),  # long: past any small-buffer path
)
VIEWS = ["contiguous", "transpose", "step_slice", "expand", "flip_view"]


@hypothesis.given(dtype=st.sampled_from(DTYPES), shape=SHAPES, how=st.sampled_from(VIEWS),
                  seed=st.integers(0, 3))
def test_generated_round_trips_are_exact(dtype, shape, how, seed, env, observe):
    """torch -> JAX keeps shape, dtype and every value of the (possibly strided) view; back to
    torch gives the same tensor again."""
    cores.generated_round_trip(dtype, shape, how, seed, observe)


LAYERS = st.sampled_from(["linear", "tanh", "sigmoid", "softplus", "layernorm", "linear_nobias"])


@hypothesis.example(kinds=["softplus"], width=[2], batch=4, seed=3)  # found on torchax 0.0.4 (xla27-cpu)
@hypothesis.given(kinds=st.lists(LAYERS, min_size=1, max_size=4), width=st.lists(st.integers(1, 5), min_size=1, max_size=3),
                  batch=st.integers(1, 4), seed=st.integers(0, 3))
def test_generated_module_grads_match_torch_autograd(kinds, width, batch, seed, env, observe):
    """jax.grad of an MSE loss through a generated torch module (extract_jax) equals torch
    autograd: every parameter gets a gradient, with its name, shape and values."""
    cores.generated_module_grads(kinds, width, batch, seed, observe)


@hypothesis.given(data=st.data())
def test_generated_pytrees_through_interop_call_jax(data, env, observe):
    """torchax.interop.call_jax with the call_jax family's generated input trees (torchax tensors,
    every static kind incl. torch dtypes, args and kwargs in any order) equals the same probe
    evaluated directly in JAX: output tree, every leaf's dtype and values."""
    import jax
    import jax.numpy as jnp

    call = torch_api.torchax_entry("interop.call_jax")
    jax_view = torch_api.torchax_entry("interop.jax_view")
    args, kwargs = data.draw(signatures.filter(lambda s: n_tensors(s) >= 1), label="signature")
    keys = data.draw(st.permutations(list(kwargs)), label="kwargs order")
    gen = torch.Generator().manual_seed(2)
    refs = {}

    def leaf(spec, *, for_jax: bool):
        if spec[0] == "jnp":  # jnp scalar types are callables torchax wraps: pinned by test_interop's
            return jnp.dtype(spec[1])  # test_interop_call_jax_jnp_scalar_type_static; dtype instances here
        if spec[0] != "tensor":
            return _dtype_static(spec, for_jax=for_jax)
        _, shape, dtype = spec
        if id(spec) not in refs:
            t = torch.randint(-5, 6, shape, generator=gen) if dtype == "int32" else torch.randn(shape, generator=gen)
            refs[id(spec)] = t.to(_torch_dtype(dtype))
        t = refs[id(spec)]
        if for_jax:
            return jnp.asarray(t.float().numpy()).astype(jnp.bfloat16) if t.dtype == torch.bfloat16 else jnp.asarray(t.numpy())
        return env.to_xla(t)

    tx_args = tuple(_map(a, lambda s: leaf(s, for_jax=False)) for a in args)
    tx_kwargs = {k: _map(kwargs[k], lambda s: leaf(s, for_jax=False)) for k in keys}
    ref_args = tuple(_map(a, lambda s: leaf(s, for_jax=True)) for a in args)
    ref_kwargs = {k: _map(v, lambda s: leaf(s, for_jax=True)) for k, v in kwargs.items()}
    with env:
        out = call(lambda *a, **k: probe(*a, **k), *tx_args, **tx_kwargs)
    got_flat, got_tree = jax.tree_util.tree_flatten_with_path(jax_view(out))
    want_flat, want_tree = jax.tree_util.tree_flatten_with_path(probe(*ref_args, **ref_kwargs))
    assert got_tree == want_tree, f"output tree {got_tree} differs from JAX's {want_tree}"
    low = "float16" in repr((args, kwargs))  # bfloat16 / float16 anywhere: last-bit differences
    for (path, got), (_, ref) in zip(got_flat, want_flat):
        where = jax.tree_util.keystr(path)
        got, ref = np.asarray(got), np.asarray(ref)
        assert got.dtype == ref.dtype, f"{where}: interop.call_jax returned {got.dtype}, JAX returns {ref.dtype}"
        loose = low or "sum" in where
        np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=2e-2 if loose else 1e-5,
                                   atol=1e-2 if loose else 1e-5, err_msg=where)
