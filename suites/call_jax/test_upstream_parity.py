"""call_jax behaviours upstream's own test/test_jax_interop.py checks (torch_xla 2.7-2.9), rewritten
with numerics against an independent reference and the trace-cache invariant made explicit.

The trace cache must be keyed by everything that changes the traced program: the function, the
tensors' shapes and dtypes, the input tree structure, the static values (by type as well as value:
1, 1.0 and True compare equal but trace differently) and the jax config (x64, matmul precision).
A key that misses one of them serves a stale computation: wrong numbers or a wrong dtype, silently.
"""

from __future__ import annotations

import pytest

from suites.call_jax import cores


def test_call_jax_with_name(observe):
    """Upstream test_call_jax: the optional `name` argument; numerics vs torch on CPU."""
    cores.call_jax_with_name(observe)


@pytest.mark.parametrize("kind", ["dict", "tuple", "nested", "single_in_list"])
def test_output_pytree_comes_back_complete(kind, observe):
    """Upstream test_call_jax_output_pytree: every output leaf, at its path, with its value."""
    cores.output_pytree_comes_back_complete(kind, observe)


def test_upstream_non_tensor_args(observe):
    """Upstream test_call_jax_non_tensor_args: float, numeric str, a dict holding a 0-d tensor, None kwarg."""
    cores.upstream_non_tensor_args(observe)


def test_cache_per_function(observe):
    """Upstream test_call_jax_cache_hlo: two functions called twice each -> two entries."""
    cores.cache_per_function(observe)


def test_cache_by_shape(observe):
    """Upstream test_call_jax_cache_by_shape, extended: back to the first shape hits the cache,
    and every call's numbers are those of its own shape (a stale entry would not fit)."""
    cores.cache_by_shape(observe)


def test_cache_by_dtype(observe):
    """The same shapes in another dtype trace again; the result keeps the input's dtype."""
    cores.cache_by_dtype(observe)


def test_cache_by_tree_structure(observe):
    """Upstream test_call_jax_cache_by_tree_spec, with the shapes held equal so only the tree
    changes: tuple vs list vs dict keys; each call computes from the right leaves."""
    cores.cache_by_tree_structure(observe)


def test_cache_by_static_value(observe):
    """Upstream test_call_jax_cache_by_static_args: each new float static traces again."""
    cores.cache_by_static_value(observe)


@pytest.mark.parametrize("case", ["int_then_float", "float_then_int", "int_then_bool", "bool_then_int", "zero_then_false"])
def test_equal_looking_statics_trace_apart(case, observe):
    """1, 1.0 and True hash and compare equal, but JAX types them apart (int32 + 1 is int32,
    int32 + 1.0 is float32, jnp.asarray(True) is bool): a cache keyed by == alone serves the first
    one's program to the second. Each call is compared with the function evaluated directly in JAX."""
    cores.equal_looking_statics_trace_apart(case, observe)


def test_cache_by_jax_config_matmul_precision(observe):
    """Upstream test_call_jax_with_different_jax_config (2.8+): a config change traces again."""
    cores.cache_by_jax_config_matmul_precision(observe)


def test_cache_by_jax_config_x64(observe):
    """Turning jax_enable_x64 on changes what a JAX function computes (int64, float64 defaults):
    call_jax must trace again and return what JAX returns under the same config."""
    cores.cache_by_jax_config_x64(observe)


@pytest.mark.parametrize("kind", ["jnp_float16", "np_dtype_int32", "torch_bfloat16", "torch_float16", "torch_int32"])
def test_dtype_as_static(kind, observe):
    """A dtype passed as a static (jnp / NumPy / torch dtype objects): the JAX function casts to it
    and the result has that dtype (torch_xla 2.8+ maps torch dtypes to JAX ones on the way in)."""
    cores.dtype_as_static(kind, observe)


def test_float64_tensors(observe):
    """float64 XLA tensors in and out, with x64 on as a float64 user would have it."""
    cores.float64_tensors(observe)
