"""call_jax behaviours upstream's own test/test_jax_interop.py checks (torch_xla 2.7-2.9), rewritten
with numerics against an independent reference and the trace-cache invariant made explicit.

The trace cache must be keyed by everything that changes the traced program: the function, the
tensors' shapes and dtypes, the input tree structure, the static values (by type as well as value:
1, 1.0 and True compare equal but trace differently) and the jax config (x64, matmul precision).
A key that misses one of them serves a stale computation: wrong numbers or a wrong dtype, silently.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from harness.incell.compat import api_absent, torch_api
from harness.incell.numerics import to_numpy
from suites.call_jax.conftest import record_hlo


def _counter_or_skip() -> int:
    n = torch_api.cache_entries()
    if n is None:
        api_absent(torch_api.CACHE_COUNTERS[0], "no call_jax cache counter in this torch_xla")
    return n


def _steps(calls) -> list[int]:
    """Run each thunk; return how many cache entries each added."""
    counts = [_counter_or_skip()]
    for call in calls:
        call()
        counts.append(torch_api.cache_entries())
    return [b - a for a, b in zip(counts, counts[1:])]


@contextlib.contextmanager
def jax_config(name: str, value):
    """Set a jax config option for the block and restore it (other cases must not see it)."""
    old = getattr(jax.config, name)
    jax.config.update(name, value)
    try:
        yield
    finally:
        jax.config.update(name, old)


def test_call_jax_with_name(xla_inputs, observe):
    """Upstream test_call_jax: the optional `name` argument; numerics vs torch on CPU."""
    cpu, (a, b) = xla_inputs((3, 3), (3, 3), seed=4)
    out = torch_api.call_jax()(lambda a, b: a + jnp.sin(b), (a, b), {}, "seams_named")
    record_hlo(observe, [out], tensors_passed=2)
    observe.close(out, cpu[0] + cpu[1].sin(), rtol=1e-6, atol=1e-6)


OUTPUT_TREES = {
    "dict": lambda a: {"b": a + 1.0, "c": a + 2.0},
    "tuple": lambda a: (a * 2.0, a - 1.0, a * a),
    "nested": lambda a: {"z": [a + 1.0, (a * 3.0,)], "a": {"deep": a - 2.0}},
    "single_in_list": lambda a: [a * 5.0],
}


@pytest.mark.parametrize("kind", list(OUTPUT_TREES))
def test_output_pytree_comes_back_complete(kind, xla_inputs, observe):
    """Upstream test_call_jax_output_pytree: every output leaf, at its path, with its value."""
    cpu, (a,) = xla_inputs((2, 3), seed=5)
    fn = OUTPUT_TREES[kind]
    out = torch_api.call_jax()(fn, (a,))
    got = jax.tree_util.tree_flatten_with_path(out)
    want = jax.tree_util.tree_flatten_with_path(fn(cpu[0]))
    got_paths = [jax.tree_util.keystr(p) for p, _ in got[0]]
    want_paths = [jax.tree_util.keystr(p) for p, _ in want[0]]
    observe.record(output_paths=got_paths, output_type=type(out).__name__)
    assert type(out) is type(fn(cpu[0])), f"output container {type(out).__name__}, expected {type(fn(cpu[0])).__name__}"
    assert got[1] == want[1], f"output tree {got[1]} differs from the function's {want[1]}"
    record_hlo(observe, [leaf for _, leaf in got[0]], tensors_passed=1)
    for (path, leaf), (_, ref) in zip(got[0], want[0]):
        observe.close(leaf, ref, rtol=1e-6, atol=1e-6, name=jax.tree_util.keystr(path))


def test_upstream_non_tensor_args(xla_inputs, observe):
    """Upstream test_call_jax_non_tensor_args: float, numeric str, a dict holding a 0-d tensor, None kwarg."""
    torch = pytest.importorskip("torch")
    cpu, (a,) = xla_inputs((3, 3), seed=6)
    quarter = torch.tensor(0.25).to(torch_api.device())

    def f(a, num, string, dictionary, none):
        assert isinstance(string, str) and none is None
        return a + jnp.sin(num) + int(string) + dictionary["x"]

    out = torch_api.call_jax()(f, (a, 1.0, "10", {"x": quarter}), {"none": None})
    observe.close(out, cpu[0] + np.sin(1.0) + 10 + 0.25, rtol=1e-6, atol=1e-6)


def test_cache_per_function(xla_inputs, observe):
    """Upstream test_call_jax_cache_hlo: two functions called twice each -> two entries."""
    _cpu, (a,) = xla_inputs((3, 3))
    call = torch_api.call_jax()

    def f(a, b):
        return a + jnp.sin(b)

    def g(a, b):
        return a + jnp.cos(b)

    steps = _steps([lambda: call(f, (a, a)), lambda: call(f, (a, a)), lambda: call(g, (a, a)), lambda: call(g, (a, a))])
    observe.record(cache_steps=steps)
    assert steps == [1, 0, 1, 0], f"cache entries added by f, f, g, g: {steps}"


def test_cache_by_shape(xla_inputs, observe):
    """Upstream test_call_jax_cache_by_shape, extended: back to the first shape hits the cache,
    and every call's numbers are those of its own shape (a stale entry would not fit)."""
    cpu, (a33, a22, a23, a32) = xla_inputs((3, 3), (2, 2), (2, 3), (3, 2), seed=7)
    call = torch_api.call_jax()
    outs = []

    def f(a, b):
        return a + jnp.sin(b)

    steps = _steps([lambda t=t: outs.append(call(f, (t, t))) for t in (a33, a22, a23, a32, a33)])
    observe.record(cache_steps=steps)
    assert steps == [1, 1, 1, 1, 0], f"cache entries added by shapes 3x3, 2x2, 2x3, 3x2, 3x3: {steps}"
    for i, (out, ref) in enumerate(zip(outs, [cpu[0], cpu[1], cpu[2], cpu[3], cpu[0]])):
        observe.close(out, ref + ref.sin(), rtol=1e-6, atol=1e-6, name=f"call{i}")


def test_cache_by_dtype(xla_inputs, observe):
    """The same shapes in another dtype trace again; the result keeps the input's dtype."""
    torch = pytest.importorskip("torch")
    cpu, (a,) = xla_inputs((3, 3), seed=8)
    call = torch_api.call_jax()
    dev = torch_api.device()
    variants = [a, a.to(torch.bfloat16), a.to(torch.int32), a]
    outs = []

    def f(a):
        return a * 2 + 1

    steps = _steps([lambda t=t: outs.append(call(f, (t,))) for t in variants])
    observe.record(cache_steps=steps, out_dtypes=[str(o.dtype) for o in outs])
    assert steps == [1, 1, 1, 0], f"cache entries added by float32, bfloat16, int32, float32: {steps}"
    for out, t in zip(outs, variants):
        assert out.dtype == t.dtype, f"{t.dtype} input came back as {out.dtype}"
        observe.close(out, t.cpu() * 2 + 1, rtol=1e-2 if t.dtype == torch.bfloat16 else 1e-6, atol=1e-6)
    del dev


def test_cache_by_tree_structure(xla_inputs, observe):
    """Upstream test_call_jax_cache_by_tree_spec, with the shapes held equal so only the tree
    changes: tuple vs list vs dict keys; each call computes from the right leaves."""
    cpu, (a, b) = xla_inputs((3, 3), (3, 3), seed=9)
    call = torch_api.call_jax()
    outs = []

    def f(tree):
        leaves = jax.tree_util.tree_leaves(tree)
        return leaves[0] * 2.0 - leaves[1] + (10.0 if isinstance(tree, list) else 0.0)

    trees = [(a, b), [a, b], {"p": a, "q": b}, {"p": b, "q": a}, (a, b)]
    steps = _steps([lambda t=t: outs.append(call(f, (t,))) for t in trees])
    observe.record(cache_steps=steps)
    assert steps == [1, 1, 1, 0, 0], f"cache entries added by tuple, list, dict, dict (swapped leaves), tuple: {steps}"
    refs = [cpu[0] * 2 - cpu[1], cpu[0] * 2 - cpu[1] + 10, cpu[0] * 2 - cpu[1], cpu[1] * 2 - cpu[0], cpu[0] * 2 - cpu[1]]
    for i, (out, ref) in enumerate(zip(outs, refs)):
        observe.close(out, ref, rtol=1e-6, atol=1e-6, name=f"call{i}")


def test_cache_by_static_value(xla_inputs, observe):
    """Upstream test_call_jax_cache_by_static_args: each new float static traces again."""
    cpu, (a,) = xla_inputs((3, 3))
    call = torch_api.call_jax()
    outs = []

    def f(a, num):
        return a + jnp.sin(num)

    steps = _steps([lambda n=n: outs.append(call(f, (a, n))) for n in (1.0, 2.0, 3.0, 2.0)])
    observe.record(cache_steps=steps)
    assert steps == [1, 1, 1, 0], f"cache entries added by statics 1.0, 2.0, 3.0, 2.0: {steps}"
    for n, out in zip((1.0, 2.0, 3.0, 2.0), outs):
        observe.close(out, cpu[0] + np.sin(n), rtol=1e-6, atol=1e-6, name=f"num={n}")


EQUAL_LOOKING = {"int_then_float": (1, 1.0), "float_then_int": (1.0, 1), "int_then_bool": (1, True),
                 "bool_then_int": (True, 1), "zero_then_false": (0, False)}


@pytest.mark.parametrize("case", list(EQUAL_LOOKING))
def test_equal_looking_statics_trace_apart(case, xla_inputs, observe):
    """1, 1.0 and True hash and compare equal, but JAX types them apart (int32 + 1 is int32,
    int32 + 1.0 is float32, jnp.asarray(True) is bool): a cache keyed by == alone serves the first
    one's program to the second. Each call is compared with the function evaluated directly in JAX."""
    torch = pytest.importorskip("torch")
    _cpu, (x,) = xla_inputs((4,))
    x = x.to(torch.int32)
    call = torch_api.call_jax()

    def f(x, s):
        return x + s, jnp.asarray(s)

    outs = [call(f, (x, s)) for s in EQUAL_LOOKING[case]]
    host = x.cpu().numpy()
    observe.record(out_dtypes=[[str(leaf.dtype) for leaf in o] for o in outs])
    for s, out in zip(EQUAL_LOOKING[case], outs):
        for i, (leaf, ref) in enumerate(zip(out, f(jnp.asarray(host), s))):  # JAX directly: no cache
            ref = np.asarray(ref)
            assert str(leaf.dtype).endswith(str(ref.dtype)), \
                f"static {s!r} ({type(s).__name__}), output {i}: call_jax returned {leaf.dtype}, JAX returns {ref.dtype}"
            observe.close(leaf, ref, rtol=0, atol=0, name=f"{type(s).__name__}.{i}")


def test_cache_by_jax_config_matmul_precision(xla_inputs, observe):
    """Upstream test_call_jax_with_different_jax_config (2.8+): a config change traces again."""
    _cpu, (a,) = xla_inputs((3, 3))
    call = torch_api.call_jax()

    def f(a, b):
        return a + jnp.sin(b)

    with jax_config("jax_default_matmul_precision", "highest"):
        first = _steps([lambda: call(f, (a, a))])
    rest = _steps([lambda: call(f, (a, a)), lambda: call(f, (a, a))])
    observe.record(cache_steps=first + rest)
    assert first + rest == [1, 1, 0], f"cache entries added under precision highest, default, default: {first + rest}"


def test_cache_by_jax_config_x64(xla_inputs, observe):
    """Turning jax_enable_x64 on changes what a JAX function computes (int64, float64 defaults):
    call_jax must trace again and return what JAX returns under the same config."""
    _cpu, (a,) = xla_inputs((3,))
    call = torch_api.call_jax()

    def f(a):
        return a.astype(jnp.float32) + jnp.arange(3)  # arange is int32 without x64, int64 with

    host = a.cpu().numpy()
    counts = [_counter_or_skip()]
    out32 = call(f, (a,))
    counts.append(torch_api.cache_entries())
    with jax_config("jax_enable_x64", True):
        out64 = call(f, (a,))
        counts.append(torch_api.cache_entries())
        ref64 = np.asarray(f(jnp.asarray(host)))
    ref32 = np.asarray(f(jnp.asarray(host)))
    steps = [b - c for c, b in zip(counts, counts[1:])]
    observe.record(cache_steps=steps, out_dtypes=[str(out32.dtype), str(out64.dtype)],
                   jax_dtypes=[str(ref32.dtype), str(ref64.dtype)])
    assert steps == [1, 1], f"cache entries added without x64, then with x64: {steps}"
    for out, ref, name in ((out32, ref32, "x64_off"), (out64, ref64, "x64_on")):
        assert str(out.dtype).endswith(str(ref.dtype)), f"{name}: call_jax returned {out.dtype}, JAX returns {ref.dtype}"
        observe.close(out, ref, rtol=1e-6, atol=1e-6, name=name)


DTYPE_STATICS = {
    "jnp_float16": lambda torch: (jnp.float16, torch.float16),
    "np_dtype_int32": lambda torch: (np.dtype("int32"), torch.int32),
    "torch_bfloat16": lambda torch: (torch.bfloat16, torch.bfloat16),
    "torch_float16": lambda torch: (torch.float16, torch.float16),
    "torch_int32": lambda torch: (torch.int32, torch.int32),
}


@pytest.mark.parametrize("kind", list(DTYPE_STATICS))
def test_dtype_as_static(kind, xla_inputs, observe):
    """A dtype passed as a static (jnp / NumPy / torch dtype objects): the JAX function casts to it
    and the result has that dtype (torch_xla 2.8+ maps torch dtypes to JAX ones on the way in)."""
    torch = pytest.importorskip("torch")
    cpu, (x,) = xla_inputs((2, 3), seed=10)
    static, torch_dtype = DTYPE_STATICS[kind](torch)
    out = torch_api.call_jax()(lambda x, dtype: (x * 3.0).astype(dtype), (x, static))
    observe.record(out_dtype=str(out.dtype))
    assert out.dtype == torch_dtype, f"cast to {static!r} came back as {out.dtype}"
    record_hlo(observe, [out], tensors_passed=1)
    ref = (cpu[0] * 3.0).to(torch_dtype)
    observe.close(out, ref, rtol=1e-2 if torch_dtype in (torch.float16, torch.bfloat16) else 0, atol=1e-6)


def test_float64_tensors(xla_inputs, observe):
    """float64 XLA tensors in and out, with x64 on as a float64 user would have it."""
    torch = pytest.importorskip("torch")
    cpu, (x,) = xla_inputs((3, 3), seed=11)
    x64 = x.to(torch.float64)
    with jax_config("jax_enable_x64", True):
        out = torch_api.call_jax()(lambda a: a * (1.0 + 2.0 ** -40) + 1e-12, (x64,))
        observe.record(out_dtype=str(out.dtype))
        assert out.dtype == torch.float64, f"float64 input came back as {out.dtype}"
        ref = cpu[0].to(torch.float64) * (1.0 + 2.0 ** -40) + 1e-12
        observe.close(out, ref, rtol=1e-15, atol=0)  # a float32 round trip would miss by ~1e-7
