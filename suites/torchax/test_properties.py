"""Property layer for torchax: generated round trips and generated modules under jax.grad.

Round trips torch -> JAX -> torch over generated dtypes (64-bit ones with jax_enable_x64 on, as a
user who needs them has it), shapes (0-d, empty, long, square 2-D where a transpose that ignores
strides keeps the shape and only the values betray it) and non-contiguous views (transpose,
slicing with a step, expand). Grads of an MSE loss through small generated torch modules via
torchax.extract_jax against torch autograd on CPU. Deterministic under the root conftest's profiles.
"""

from __future__ import annotations

import pytest

from harness.incell.compat import require, torch_api
from suites.torchax import cores
# the call_jax family's generated input trees, shared so both bridges face the same inputs
from suites.call_jax.test_properties import single_calls

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

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


@hypothesis.example(**cores.INTEROP_PYTREE_EXAMPLE)  # the example `harness report` exports
@hypothesis.given(sig=single_calls())
def test_generated_pytrees_through_interop_call_jax(sig, env, observe):
    """torchax.interop.call_jax with the call_jax family's generated input trees (torchax tensors,
    every static kind incl. torch dtypes, args and kwargs in any order; all drawn up front, so the
    falsifying example is the case) equals the same probe evaluated directly in JAX."""
    cores.interop_generated_pytree(sig, observe)
