"""call_jax scenario cores: plain functions over their inputs, called by the tests and inlined by
`harness report` into standalone reproducers (see suites/compute_on/cores.py for the rules).

`CORES` maps each test to its core; the test's parameter ids are the core's leading arguments.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from harness.incell.compat import api_absent, require, torch_api
from harness.incell.defaults import check_defaults
from harness.incell.ir import called_computation_parameter_counts, count_entry_parameters
from harness.incell.numerics import assert_within_bound, gamma, to_numpy


def xla_inputs(*shapes, seed: int = 0):
    """(cpu tensors, the same as XLA device data): every input is an HLO parameter."""
    torch = require("torch")
    torch_api.call_jax()  # api absent / not in cell skip before anything is built
    gen = torch.Generator().manual_seed(seed)
    cpu = [torch.randn(*s, generator=gen) for s in shapes]
    dev = torch_api.device()
    on_xla = [t.to(dev) for t in cpu]
    torch_api.sync()  # device data, not pending IR: one ENTRY parameter per tensor
    return cpu, on_xla


def record_hlo(observe, outputs: list, tensors_passed: int) -> str:
    """Record and check the parameter invariant of the output graph's HLO; returns the HLO text."""
    hlo = torch_api.tensors_hlo(outputs)
    entry = count_entry_parameters(hlo)
    called = called_computation_parameter_counts(hlo)
    observe.record(tensors_passed=tensors_passed, hlo_entry_parameters=entry,
                   hlo_called_parameters=called, hlo=hlo[:6000])
    assert entry == tensors_passed, f"ENTRY has {entry} parameters for {tensors_passed} tensors passed"
    assert called and all(c == tensors_passed for c in called), \
        f"the JAX computation takes {called} parameters for {tensors_passed} tensors passed"
    return hlo


# --- test_unused_args.py (pytorch/xla#8794) ---

# id -> (jax function, how many tensors as args, kwarg names that get tensors, torch reference)
UNUSED = {
    "uses_two_of_four": (lambda a, b, c, d: a + b * 2.0, 4, (), lambda a, b, c, d: a + b * 2.0),
    "unused_first": (lambda a, b: b * 3.0, 2, (), lambda a, b: b * 3.0),
    "unused_middle_of_three": (lambda a, b, c: a - c, 3, (), lambda a, b, c: a - c),
    "none_used": (lambda a, b: jnp.full((3,), 7.0), 2, (), None),
    # kwargs given in sorted order here: test_non_tensor_inputs checks the unsorted order separately
    "unused_kwarg": (lambda a, *, extra, scale: a * scale, 1, ("extra", "scale"), lambda a, *, extra, scale: a * scale),
}


def unused_arguments(case: str, observe) -> None:
    fn, n_args, kw_names, ref = UNUSED[case]
    cpu, on_xla = xla_inputs(*([(3,)] * (n_args + len(kw_names))))
    args, kwargs = tuple(on_xla[:n_args]), dict(zip(kw_names, on_xla[n_args:]))
    out = torch_api.call_jax()(fn, args, kwargs)  # pre-fix: the process aborts here
    record_hlo(observe, [out], tensors_passed=len(on_xla))
    torch = require("torch")
    expected = ref(*cpu[:n_args], **dict(zip(kw_names, cpu[n_args:]))) if ref else torch.full((3,), 7.0)
    observe.close(out, expected, rtol=1e-6, atol=1e-6)  # vs torch CPU float32: XLA may fuse a*b+c into one FMA and its sin is a few ulps from torch's; 1e-6 is ~8 ulps at 1


def call_jax_grad(observe) -> None:
    """Upstream test_call_jax_grad: jax.grad folds both gradients to constants, so the traced
    gradient function uses none of its inputs; compare with torch autograd on CPU."""
    torch = require("torch")
    cpu, on_xla = xla_inputs((4,), (4,), seed=1)

    def loss(a, b):
        return jnp.sum(a * 3.0 + b)

    ga, gb = torch_api.call_jax()(jax.grad(loss, argnums=(0, 1)), tuple(on_xla))
    record_hlo(observe, [ga, gb], tensors_passed=2)

    a, b = (t.clone().requires_grad_(True) for t in cpu)
    torch.sum(a * 3.0 + b).backward()
    observe.close(ga, a.grad, rtol=0, atol=0, name="grad_a")  # jax.grad folds both gradients to constants (3 and 1): exact
    observe.close(gb, b.grad, rtol=0, atol=0, name="grad_b")  # the constant 1: exact


# --- test_non_tensor_inputs.py (pytorch/xla#8795) ---

def scaled(x, s):
    """How the static is used decides the numbers; run on JAX arrays (via call_jax) and on torch
    CPU tensors (the reference), so only the numeric backend differs."""
    if s is None:
        return x + 1.0
    if isinstance(s, bool):
        return x * (2.0 if s else -1.0)
    if isinstance(s, str):
        return x * {"double": 2.0, "half": 0.5}[s]
    return x * s


STATICS = {"none": None, "bool": True, "int": 3, "float": 2.5, "str": "half"}


def static_scalar(kind: str, how: str, observe) -> None:
    cpu, (x,) = xla_inputs((4,))
    s = STATICS[kind]
    call = torch_api.call_jax()
    out = call(scaled, (x, s)) if how == "arg" else call(lambda x, *, s: scaled(x, s), (x,), {"s": s})
    record_hlo(observe, [out], tensors_passed=1)  # the static is baked in, not a parameter
    observe.close(out, scaled(cpu[0], s), rtol=1e-6, atol=1e-6)  # vs torch CPU float32: XLA may fuse a*b+c into one FMA and its sin is a few ulps from torch's; 1e-6 is ~8 ulps at 1


CONTAINERS = {
    "tuple": lambda t: ((t[0], 2.0),),
    "list": lambda t: ([t[0], t[1], 3],),
    "dict": lambda t: ({"w": t[0], "b": 1.5, "name": "affine"},),
    "nested": lambda t: ({"pair": (t[0], None), "items": [t[1], True]},),
}


def jax_container(tree):
    if isinstance(tree, tuple):
        return tree[0] * tree[1]
    if isinstance(tree, list):
        return (tree[0] + tree[1]) * tree[2]
    if "w" in tree:
        return tree["w"] * 2.0 + tree["b"]
    return tree["pair"][0] - tree["items"][0] * (1.0 if tree["items"][1] else 0.0)


def leaves(tree):
    if isinstance(tree, (list, tuple)):
        for t in tree:
            yield from leaves(t)
    elif isinstance(tree, dict):
        for t in tree.values():
            yield from leaves(t)
    else:
        yield tree


def container_mixing_tensors_and_scalars(kind: str, observe) -> None:
    cpu, on_xla = xla_inputs((4,), (4,), seed=2)
    args = CONTAINERS[kind](on_xla)
    out = torch_api.call_jax()(jax_container, args)
    n_tensors = sum(1 for leaf in leaves(args) if hasattr(leaf, "device"))
    record_hlo(observe, [out], tensors_passed=n_tensors)
    observe.close(out, jax_container(*CONTAINERS[kind](cpu)), rtol=1e-6, atol=1e-6)  # vs torch CPU float32: XLA may fuse a*b+c into one FMA and its sin is a few ulps from torch's; 1e-6 is ~8 ulps at 1


def tensor_kwargs_keep_their_names(observe) -> None:
    """Tensor kwargs given in non-sorted order must reach the parameters they are named for."""
    cpu, (a, scale, shift) = xla_inputs((3,), (3,), (3,), seed=3)
    out = torch_api.call_jax()(lambda a, *, shift, scale: a * scale + shift, (a,), {"shift": shift, "scale": scale})
    record_hlo(observe, [out], tensors_passed=3)
    observe.close(out, cpu[0] * cpu[1] + cpu[2], rtol=1e-6, atol=1e-6)  # vs torch CPU float32: XLA may fuse a*b+c into one FMA and its sin is a few ulps from torch's; 1e-6 is ~8 ulps at 1


def static_value_change_retraces_and_same_value_hits_cache(observe) -> None:
    _cpu, (x,) = xla_inputs((4,))
    call = torch_api.call_jax()
    if torch_api.cache_entries() is None:
        api_absent(torch_api.CACHE_COUNTERS[0], "no call_jax cache counter in this torch_xla")

    def fn(x, s):  # a fresh function object: its own cache entries
        return x * s

    counts = [torch_api.cache_entries()]
    for s in (2.0, 2.0, 3.0, 3.0):
        call(fn, (x, s))
        counts.append(torch_api.cache_entries())
    observe.record(cache_entries=counts)
    steps = [b - a for a, b in zip(counts, counts[1:])]
    assert steps == [1, 0, 1, 0], f"cache entries after calls with s=2,2,3,3: {counts} (expected +1, +0, +1, +0)"


def unhashable_static_error_names_the_problem(observe) -> None:
    """A NumPy array as a static is unsupported; the error must say which value and why."""
    _cpu, (x,) = xla_inputs((4,))
    try:
        torch_api.call_jax()(lambda x, m: x * jnp.sum(m), (x, np.ones(2)))
    except Exception as exc:  # noqa: BLE001 - the message is what is under test
        message = f"{type(exc).__name__}: {exc}"
    else:
        raise AssertionError("DID NOT RAISE <class 'Exception'>")
    observe.record(error=message)
    assert "ndarray" in message, f"the error does not name the offending type: {message}"
    assert any(w in message.lower() for w in ("static", "non-tensor", "argument", "arg ")), \
        f"the error does not say the value is a non-tensor argument that must be hashable: {message}"


def cpu_tensor_error_names_the_device(observe) -> None:
    """A CPU tensor passed to call_jax: the error must name the device problem."""
    torch = require("torch")
    call = torch_api.call_jax()
    try:
        call(lambda x: x * 2.0, (torch.ones(4),))
    except Exception as exc:  # noqa: BLE001 - the message is what is under test
        message = f"{type(exc).__name__}: {exc}"
    else:
        raise AssertionError("DID NOT RAISE <class 'Exception'>")
    observe.record(error=message)
    assert "xla" in message.lower() and ("cpu" in message.lower() or "FloatTensor" in message), \
        f"the error does not say the tensor is not on the XLA device: {message}"


def missing_dependency_error_names_it(observe) -> None:
    """In a cell without one of call_jax's Python dependencies, the error must name the missing module."""
    missing = [m for m in ("flax", "torchax") if importlib.util.find_spec(m) is None]
    observe.record(missing_modules=missing)
    if not missing:
        pytest.skip("not applicable: every module call_jax may import is installed in this cell")
    _cpu, (x,) = xla_inputs((4,))
    try:
        torch_api.call_jax()(lambda x: x * 2.0, (x,))
    except Exception as exc:  # noqa: BLE001 - the message is what is under test
        message = f"{type(exc).__name__}: {exc}"
        observe.record(error=message)
        assert any(m in message for m in missing), f"call_jax failed without naming {missing}: {message!r}"
    else:
        pytest.skip(f"call_jax works without {missing}: they are optional for this version")


# --- test_upstream_parity.py (upstream test/test_jax_interop.py) ---

def counter_or_skip() -> int:
    n = torch_api.cache_entries()
    if n is None:
        api_absent(torch_api.CACHE_COUNTERS[0], "no call_jax cache counter in this torch_xla")
    return n


def cache_steps(calls) -> list[int]:
    """Run each thunk; return how many cache entries each added."""
    counts = [counter_or_skip()]
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


def call_jax_with_name(observe) -> None:
    """Upstream test_call_jax: the optional `name` argument; numerics vs torch on CPU."""
    cpu, (a, b) = xla_inputs((3, 3), (3, 3), seed=4)
    out = torch_api.call_jax()(lambda a, b: a + jnp.sin(b), (a, b), {}, "seams_named")
    record_hlo(observe, [out], tensors_passed=2)
    observe.close(out, cpu[0] + cpu[1].sin(), rtol=1e-6, atol=1e-6)  # vs torch CPU float32: XLA may fuse a*b+c into one FMA and its sin is a few ulps from torch's; 1e-6 is ~8 ulps at 1


OUTPUT_TREES = {
    "dict": lambda a: {"b": a + 1.0, "c": a + 2.0},
    "tuple": lambda a: (a * 2.0, a - 1.0, a * a),
    "nested": lambda a: {"z": [a + 1.0, (a * 3.0,)], "a": {"deep": a - 2.0}},
    "single_in_list": lambda a: [a * 5.0],
}


def output_pytree_comes_back_complete(kind: str, observe) -> None:
    """Upstream test_call_jax_output_pytree: every output leaf, at its path, with its value."""
    cpu, (a,) = xla_inputs((2, 3), seed=5)
    fn = OUTPUT_TREES[kind]
    out = torch_api.call_jax()(fn, (a,))
    got = jax.tree_util.tree_flatten_with_path(out)
    want = jax.tree_util.tree_flatten_with_path(fn(cpu[0]))
    got_paths = [jax.tree_util.keystr(p) for p, _ in got[0]]
    observe.record(output_paths=got_paths, output_type=type(out).__name__)
    assert type(out) is type(fn(cpu[0])), f"output container {type(out).__name__}, expected {type(fn(cpu[0])).__name__}"
    assert got[1] == want[1], f"output tree {got[1]} differs from the function's {want[1]}"
    record_hlo(observe, [leaf for _, leaf in got[0]], tensors_passed=1)
    for (path, leaf), (_, ref) in zip(got[0], want[0]):
        observe.close(leaf, ref, rtol=1e-6, atol=1e-6, name=jax.tree_util.keystr(path))  # vs torch CPU float32: XLA may fuse a*b+c into one FMA and its sin is a few ulps from torch's; 1e-6 is ~8 ulps at 1


def upstream_non_tensor_args(observe) -> None:
    """Upstream test_call_jax_non_tensor_args: float, numeric str, a dict holding a 0-d tensor, None kwarg."""
    torch = require("torch")
    cpu, (a,) = xla_inputs((3, 3), seed=6)
    quarter = torch.tensor(0.25).to(torch_api.device())

    def f(a, num, string, dictionary, none):
        assert isinstance(string, str) and none is None
        return a + jnp.sin(num) + int(string) + dictionary["x"]

    out = torch_api.call_jax()(f, (a, 1.0, "10", {"x": quarter}), {"none": None})
    observe.close(out, cpu[0] + np.sin(1.0) + 10 + 0.25, rtol=1e-6, atol=1e-6)  # torch sums a + sin(1) + 10 + 0.25 in another order than XLA; 1e-6 is ~8 ulps at 1


def cache_per_function(observe) -> None:
    """Upstream test_call_jax_cache_hlo: two functions called twice each -> two entries."""
    _cpu, (a,) = xla_inputs((3, 3))
    call = torch_api.call_jax()

    def f(a, b):
        return a + jnp.sin(b)

    def g(a, b):
        return a + jnp.cos(b)

    steps = cache_steps([lambda: call(f, (a, a)), lambda: call(f, (a, a)), lambda: call(g, (a, a)), lambda: call(g, (a, a))])
    observe.record(cache_steps=steps)
    assert steps == [1, 0, 1, 0], f"cache entries added by f, f, g, g: {steps}"


def cache_by_shape(observe) -> None:
    """Upstream test_call_jax_cache_by_shape, extended: back to the first shape hits the cache,
    and every call's numbers are those of its own shape (a stale entry would not fit)."""
    cpu, (a33, a22, a23, a32) = xla_inputs((3, 3), (2, 2), (2, 3), (3, 2), seed=7)
    call = torch_api.call_jax()
    outs = []

    def f(a, b):
        return a + jnp.sin(b)

    steps = cache_steps([lambda t=t: outs.append(call(f, (t, t))) for t in (a33, a22, a23, a32, a33)])
    observe.record(cache_steps=steps)
    assert steps == [1, 1, 1, 1, 0], f"cache entries added by shapes 3x3, 2x2, 2x3, 3x2, 3x3: {steps}"
    for i, (out, ref) in enumerate(zip(outs, [cpu[0], cpu[1], cpu[2], cpu[3], cpu[0]])):
        observe.close(out, ref + ref.sin(), rtol=1e-6, atol=1e-6, name=f"call{i}")  # vs torch CPU float32: XLA may fuse a*b+c into one FMA and its sin is a few ulps from torch's; 1e-6 is ~8 ulps at 1


def cache_by_dtype(observe) -> None:
    """The same shapes in another dtype trace again; the result keeps the input's dtype."""
    torch = require("torch")
    cpu, (a,) = xla_inputs((3, 3), seed=8)
    call = torch_api.call_jax()
    variants = [a, a.to(torch.bfloat16), a.to(torch.int32), a]
    outs = []

    def f(a):
        return a * 2 + 1

    steps = cache_steps([lambda t=t: outs.append(call(f, (t,))) for t in variants])
    observe.record(cache_steps=steps, out_dtypes=[str(o.dtype) for o in outs])
    assert steps == [1, 1, 1, 0], f"cache entries added by float32, bfloat16, int32, float32: {steps}"
    for out, t in zip(outs, variants):
        assert out.dtype == t.dtype, f"{t.dtype} input came back as {out.dtype}"
        observe.close(out, t.cpu() * 2 + 1, rtol=1e-2 if t.dtype == torch.bfloat16 else 1e-6, atol=1e-6)  # bfloat16: one side may round a*2 before +1, the other after: 1 bf16 ulp (2**-7); float32 as above


def cache_by_tree_structure(observe) -> None:
    """Upstream test_call_jax_cache_by_tree_spec, with the shapes held equal so only the tree
    changes: tuple vs list vs dict keys; each call computes from the right leaves."""
    cpu, (a, b) = xla_inputs((3, 3), (3, 3), seed=9)
    call = torch_api.call_jax()
    outs = []

    def f(tree):
        leaves = jax.tree_util.tree_leaves(tree)
        return leaves[0] * 2.0 - leaves[1] + (10.0 if isinstance(tree, list) else 0.0)

    trees = [(a, b), [a, b], {"p": a, "q": b}, {"p": b, "q": a}, (a, b)]
    steps = cache_steps([lambda t=t: outs.append(call(f, (t,))) for t in trees])
    observe.record(cache_steps=steps)
    assert steps == [1, 1, 1, 0, 0], f"cache entries added by tuple, list, dict, dict (swapped leaves), tuple: {steps}"
    refs = [cpu[0] * 2 - cpu[1], cpu[0] * 2 - cpu[1] + 10, cpu[0] * 2 - cpu[1], cpu[1] * 2 - cpu[0], cpu[0] * 2 - cpu[1]]
    for i, (out, ref) in enumerate(zip(outs, refs)):
        observe.close(out, ref, rtol=1e-6, atol=1e-6, name=f"call{i}")  # vs torch CPU float32: XLA may fuse a*b+c into one FMA and its sin is a few ulps from torch's; 1e-6 is ~8 ulps at 1


def cache_by_static_value(observe) -> None:
    """Upstream test_call_jax_cache_by_static_args: each new float static traces again."""
    cpu, (a,) = xla_inputs((3, 3))
    call = torch_api.call_jax()
    outs = []

    def f(a, num):
        return a + jnp.sin(num)

    steps = cache_steps([lambda n=n: outs.append(call(f, (a, n))) for n in (1.0, 2.0, 3.0, 2.0)])
    observe.record(cache_steps=steps)
    assert steps == [1, 1, 1, 0], f"cache entries added by statics 1.0, 2.0, 3.0, 2.0: {steps}"
    for n, out in zip((1.0, 2.0, 3.0, 2.0), outs):
        observe.close(out, cpu[0] + np.sin(n), rtol=1e-6, atol=1e-6, name=f"num={n}")  # vs torch CPU float32: XLA may fuse a*b+c into one FMA and its sin is a few ulps from torch's; 1e-6 is ~8 ulps at 1


EQUAL_LOOKING = {"int_then_float": (1, 1.0), "float_then_int": (1.0, 1), "int_then_bool": (1, True),
                 "bool_then_int": (True, 1), "zero_then_false": (0, False)}


def equal_looking_statics_trace_apart(case: str, observe) -> None:
    """1, 1.0 and True hash and compare equal, but JAX types them apart (int32 + 1 is int32,
    int32 + 1.0 is float32, jnp.asarray(True) is bool): a cache keyed by == alone serves the first
    one's program to the second. Each call is compared with the function evaluated directly in JAX."""
    torch = require("torch")
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


def cache_by_jax_config_matmul_precision(observe) -> None:
    """Upstream test_call_jax_with_different_jax_config (2.8+): a config change traces again."""
    _cpu, (a,) = xla_inputs((3, 3))
    call = torch_api.call_jax()

    def f(a, b):
        return a + jnp.sin(b)

    with jax_config("jax_default_matmul_precision", "highest"):
        first = cache_steps([lambda: call(f, (a, a))])
    rest = cache_steps([lambda: call(f, (a, a)), lambda: call(f, (a, a))])
    observe.record(cache_steps=first + rest)
    assert first + rest == [1, 1, 0], f"cache entries added under precision highest, default, default: {first + rest}"


def cache_by_jax_config_x64(observe) -> None:
    """Turning jax_enable_x64 on changes what a JAX function computes (int64, float64 defaults):
    call_jax must trace again and return what JAX returns under the same config."""
    _cpu, (a,) = xla_inputs((3,))
    call = torch_api.call_jax()

    def f(a):
        return a.astype(jnp.float32) + jnp.arange(3)  # arange is int32 without x64, int64 with

    host = a.cpu().numpy()
    counts = [counter_or_skip()]
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
        observe.close(out, ref, rtol=1e-6, atol=1e-6, name=name)  # vs JAX's own jaxlib: torch_xla's XLA build may fuse differently; 1e-6 is ~8 ulps at 1


DTYPE_STATICS = {
    "jnp_float16": lambda torch: (jnp.float16, torch.float16),
    "np_dtype_int32": lambda torch: (np.dtype("int32"), torch.int32),
    "torch_bfloat16": lambda torch: (torch.bfloat16, torch.bfloat16),
    "torch_float16": lambda torch: (torch.float16, torch.float16),
    "torch_int32": lambda torch: (torch.int32, torch.int32),
}


def dtype_as_static(kind: str, observe) -> None:
    """A dtype passed as a static (jnp / NumPy / torch dtype objects): the JAX function casts to it
    and the result has that dtype (torch_xla 2.8+ maps torch dtypes to JAX ones on the way in)."""
    torch = require("torch")
    cpu, (x,) = xla_inputs((2, 3), seed=10)
    static, torch_dtype = DTYPE_STATICS[kind](torch)
    out = torch_api.call_jax()(lambda x, dtype: (x * 3.0).astype(dtype), (x, static))
    observe.record(out_dtype=str(out.dtype))
    assert out.dtype == torch_dtype, f"cast to {static!r} came back as {out.dtype}"
    record_hlo(observe, [out], tensors_passed=1)
    ref = (cpu[0] * 3.0).to(torch_dtype)
    observe.close(out, ref, rtol=1e-2 if torch_dtype in (torch.float16, torch.bfloat16) else 0, atol=1e-6)  # f16/bf16: x*3 rounded to f32 then cast, or cast differently: 1 ulp of the narrow type (2**-10 / 2**-7); ints exact


def float64_tensors(observe) -> None:
    """float64 XLA tensors in and out, with x64 on as a float64 user would have it."""
    torch = require("torch")
    cpu, (x,) = xla_inputs((3, 3), seed=11)
    x64 = x.to(torch.float64)
    with jax_config("jax_enable_x64", True):
        out = torch_api.call_jax()(lambda a: a * (1.0 + 2.0 ** -40) + 1e-12, (x64,))
        observe.record(out_dtype=str(out.dtype))
        assert out.dtype == torch.float64, f"float64 input came back as {out.dtype}"
        ref = cpu[0].to(torch.float64) * (1.0 + 2.0 ** -40) + 1e-12
        observe.close(out, ref, rtol=1e-15, atol=0)  # a float32 round trip would miss by ~1e-7


# --- test_defaults.py (jax.jit's keep_unused default, call_jax called bare) ---

def jit_drops_unused_arguments_by_default(observe) -> None:
    """The default call_jax overrides, checked where it lives (no torch needed: every cell)."""
    check_defaults(observe, "jax.jit", jax.jit, {"keep_unused": False})
    x, unused = np.ones(3, np.float32), np.zeros(3, np.float32)
    bare = count_entry_parameters(jax.jit(lambda x, y: x * 2.0).lower(x, unused).compile().as_text())
    kept = count_entry_parameters(jax.jit(lambda x, y: x * 2.0, keep_unused=True).lower(x, unused).compile().as_text())
    observe.record(entry_parameters_default=bare, entry_parameters_keep_unused=kept)
    assert (bare, kept) == (1, 2), f"jit(f)(x, unused) has {bare} parameters by default and {kept} with keep_unused=True"


def call_jax_with_its_defaults(observe) -> None:
    """call_jax(f, args): no kwargs, no name; f ignores its second tensor and returns a tuple."""
    call = torch_api.call_jax()
    check_defaults(observe, torch_api.CALL_JAX, call, {"kwargs": None, "name": None, "override_hash": None})
    cpu, on_xla = xla_inputs((3,), (3,), seed=2)
    out = call(lambda a, b: (a * 2.0, jnp.sin(a)), tuple(on_xla))
    assert isinstance(out, tuple) and len(out) == 2, \
        f"output structure {type(out).__name__} of {len(out)} differs from JAX's: a tuple of 2"
    record_hlo(observe, list(out), tensors_passed=2)
    torch = require("torch")
    # a * 2 is exact; sin in float32 on XLA's CPU within 2 ulp of torch's (both round to float32).
    observe.close(out[0], cpu[0] * 2.0, rtol=0, atol=0, name="double")
    observe.close(out[1], torch.sin(cpu[0]), rtol=2 * float(np.finfo(np.float32).eps), atol=0, name="sin")


# --- test_structure.py (output trees with None, nested and mixed containers) ---

Pair = collections.namedtuple("Pair", ["first", "second"])


def _tensor_leaf(t) -> bool:
    return isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str) and not isinstance(t, Pair)


def build(template, a, b):
    """The output tree a JAX function returns for a template: ("a", k) -> a * k, ("b", k) -> b + k."""
    if template is None:
        return None
    if _tensor_leaf(template):
        name, k = template
        return a * float(k) if name == "a" else b + float(k)
    if isinstance(template, Pair):
        return Pair(build(template.first, a, b), build(template.second, a, b))
    if isinstance(template, dict):
        return {key: build(v, a, b) for key, v in template.items()}
    return type(template)(build(v, a, b) for v in template)


def template_tensors(template) -> int:
    """How many tensor leaves a template's output tree has."""
    if template is None:
        return 0
    if _tensor_leaf(template):
        return 1
    return sum(template_tensors(v) for v in (template.values() if isinstance(template, dict) else template))


def structure(tree):
    """Container types, dict keys (sorted: JAX orders them), None, and each leaf's dtype/shape."""
    if tree is None:
        return None
    if isinstance(tree, Pair):
        return ("Pair", structure(tree.first), structure(tree.second))
    if isinstance(tree, dict):
        return ("dict", tuple((k, structure(tree[k])) for k in sorted(tree)))
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__, tuple(structure(v) for v in tree))
    return ("leaf", str(tree.dtype).removeprefix("torch."), tuple(tree.shape))


def leaves_at_paths(tree, path=""):
    if tree is None:
        return []
    if isinstance(tree, dict):
        return [x for k in sorted(tree) for x in leaves_at_paths(tree[k], f"{path}[{k!r}]")]
    if isinstance(tree, (tuple, list)):
        return [x for i, v in enumerate(tree) for x in leaves_at_paths(v, f"{path}[{i}]")]
    return [(path, tree)]


def output_tree(template, observe, label: str = "call") -> None:
    """call_jax of a function returning build(template): JAX's structure and bit-equal leaves."""
    cpu, on_xla = xla_inputs((3,), (2, 3), seed=3)
    out = torch_api.call_jax()(lambda a, b: build(template, a, b), tuple(on_xla))
    want = jax.jit(lambda a, b: build(template, a, b))(*(jnp.asarray(t.numpy()) for t in cpu))
    got_s, want_s = structure(out), structure(want)
    assert got_s == want_s, f"{label}: output structure {got_s} differs from JAX's {want_s}"
    for (path, got), (_, ref) in zip(leaves_at_paths(out), leaves_at_paths(want)):
        # a * k and b + k on small integers and randn floats: one rounding each side, the same
        # float32 operation: bit for bit.
        np.testing.assert_array_equal(to_numpy(got), to_numpy(ref), err_msg=f"{label} {path}")


# Frozen shapes the generator reaches rarely at the ci profile's 12 examples.
FROZEN = {
    "none_in_dict": {"w": ("a", 2), "opt": None},
    "none_in_tuple_and_list": (("a", 1), None, [None, ("b", 0)]),
    "namedtuple_with_none": Pair(("b", 1), None),
    "empty_containers": {"a": ("a", 1), "b": (), "z": [], "w": {}},
    "mixed_nesting": [{"w": (("a", -1), Pair(None, ("b", 2)))}, ()],
}


def frozen_output_structure(shape: str, observe) -> None:
    output_tree(FROZEN[shape], observe, label=shape)


def generated_output_tree(template, observe) -> None:
    """The structure property's core: one generated template (a pinned example when exported)."""
    output_tree(template, observe)


# the structure property's pinned example: a dict, a list, a tuple and None around two tensors
STRUCTURE_EXAMPLE = {"template": {"w": [("a", 2), None], "b": (("b", -1),)}}


# --- test_properties.py (generated input pytrees and call sequences) ---

class Mode(enum.Enum):
    """A plain enum static."""

    FAST = 1
    SLOW = 2


class Level(enum.IntEnum):
    """An IntEnum static: Level.ONE == 1 == 1.0 == True, hash-equal too."""

    ONE = 1
    TWO = 2


def _is_tensor_spec(x) -> bool:
    return isinstance(x, tuple) and len(x) == 3 and x[0] == "tensor"


def _is_dtype_spec(x) -> bool:
    return isinstance(x, tuple) and len(x) == 2 and x[0] in ("jnp", "np", "torch")


def _map(spec, leaf_fn):
    """Rebuild a spec tree with leaf_fn applied to tensor specs and dtype specs."""
    if _is_tensor_spec(spec) or _is_dtype_spec(spec):
        return leaf_fn(spec)
    if isinstance(spec, tuple):
        return tuple(_map(s, leaf_fn) for s in spec)
    if isinstance(spec, list):
        return [_map(s, leaf_fn) for s in spec]
    if isinstance(spec, dict):
        return {k: _map(v, leaf_fn) for k, v in spec.items()}
    return spec


def _torch_dtype(name: str):
    return getattr(require("torch"), name)


def _dtype_static(spec, *, for_jax: bool):
    """The dtype object a user passes; the direct-JAX reference gets torch dtypes as JAX ones."""
    kind, name = spec
    if kind == "jnp":
        return getattr(jnp, name)
    if kind == "np":
        return np.dtype(name)
    return jnp.dtype(name) if for_jax else _torch_dtype(name)


def static_code(s) -> float:
    """What a static contributes to the probe's result: depends on its type *and* value, as
    user code can (isinstance branches, dtype promotion)."""
    if isinstance(s, bool):
        return 10.0 + s
    if isinstance(s, Level):
        return 20.0 + s.value
    if isinstance(s, Mode):
        return 30.0 + s.value
    if isinstance(s, int):
        return 2.0 * s
    if isinstance(s, float):
        return 3.0 * s + 0.5
    if isinstance(s, str):
        return 40.0 + len(s)
    d = np.dtype(s)  # jnp / NumPy dtypes (torch_xla hands torch dtypes over as JAX ones)
    return 50.0 + 2 * d.itemsize + (0.5 if d.kind == "f" else 0.0) + (0.25 if d.name == "bfloat16" else 0.0)


def probe(*args, **kwargs):
    """Any input tree -> {"leaves": {path: tensor + code}, "sum": [total]}; cast by the first dtype static."""
    flat, _ = jax.tree_util.tree_flatten_with_path((args, kwargs))
    arrays = [(jax.tree_util.keystr(p), x) for p, x in flat if isinstance(x, jax.Array)]
    others = [x for _, x in flat if not isinstance(x, jax.Array)]
    shift = sum(static_code(s) * (i + 1) for i, s in enumerate(others))
    cast = next((s for s in others if not isinstance(s, (bool, int, float, str, enum.Enum))), None)
    out = {}
    for i, (path, x) in enumerate(arrays):
        y = x * (i + 2) + shift
        out[path] = y.astype(cast) if cast is not None else y
    total = sum(jnp.sum(v.astype(jnp.float32)) for v in out.values())
    return {"leaves": out, "sum": [total]}


def make_probe():
    """A fresh function object per example: its own trace-cache entries."""
    def fresh(*args, **kwargs):
        return probe(*args, **kwargs)
    return fresh


def build_inputs(sig, seed: int):
    """Spec -> (args, kwargs) with XLA tensors, and the same with JAX arrays for the reference."""
    torch = require("torch")
    gen = torch.Generator().manual_seed(seed)
    dev = torch_api.device()
    host = {}

    def xla_leaf(spec):
        if _is_dtype_spec(spec):
            return _dtype_static(spec, for_jax=False)
        _, shape, dtype = spec
        t = (torch.randint(-5, 6, shape, generator=gen) if dtype == "int32" else torch.randn(shape, generator=gen))
        t = t.to(_torch_dtype(dtype))
        on_xla = t.to(dev)
        host[id(on_xla)] = t
        return on_xla

    args, kwargs = sig
    xla_args = tuple(_map(a, xla_leaf) for a in args)
    xla_kwargs = {k: _map(v, xla_leaf) for k, v in kwargs.items()}

    def to_ref(value):
        if isinstance(value, torch.Tensor):
            t = host[id(value)]
            return jnp.asarray(t.float().numpy()).astype(jnp.bfloat16) if t.dtype == torch.bfloat16 \
                else jnp.asarray(t.numpy())
        if isinstance(value, torch.dtype):
            return jnp.dtype(str(value).removeprefix("torch."))
        return value

    ref_args, ref_kwargs = jax.tree_util.tree_map(to_ref, (xla_args, xla_kwargs))
    torch_api.sync()  # device data: one HLO parameter per tensor
    return (xla_args, xla_kwargs), (ref_args, ref_kwargs)


def meaning_key(sig):
    """What the traced program depends on: tree, tensor shapes/dtypes, statics by type and value.
    Equal-looking statics of different types (1, 1.0, True, Level.ONE) are different keys; dtype
    objects that name the same dtype (jnp.float32, np.dtype, torch.float32) are one."""
    def leaf(spec):
        if _is_tensor_spec(spec):
            return spec
        if _is_dtype_spec(spec):
            return ("dtype", spec[1])
        return (type(spec).__name__, repr(spec))

    def walk(spec):
        if _is_tensor_spec(spec) or _is_dtype_spec(spec) or not isinstance(spec, (tuple, list, dict)):
            return leaf(spec)
        if isinstance(spec, dict):
            return ("dict", tuple(sorted((k, walk(v)) for k, v in spec.items())))
        return (type(spec).__name__, tuple(walk(s) for s in spec))

    args, kwargs = sig
    return walk(tuple(args)), walk(dict(kwargs))


def equality_key(sig):
    """The key a cache that compares statics by == and hash would use: 1, 1.0, True, Level.ONE
    are one key here. Known to be torch_xla's key (test_equal_looking_statics_trace_apart)."""
    def walk(spec):
        if _is_tensor_spec(spec):
            return spec
        if _is_dtype_spec(spec):
            return ("dtype", spec[1])
        if isinstance(spec, dict):
            return ("dict", tuple(sorted((k, walk(v)) for k, v in spec.items())))
        if isinstance(spec, (tuple, list)):
            return (type(spec).__name__, tuple(walk(s) for s in spec))
        return ("static", spec)

    args, kwargs = sig
    return walk(tuple(args)), walk(dict(kwargs))


def exact_key(sig):
    """Identical calls (same specs, same static objects; kwargs order does not count)."""
    args, kwargs = sig
    return repr(args), repr(sorted(kwargs.items(), key=lambda kv: kv[0]))


def n_tensors(sig) -> int:
    """How many tensor specs a signature (args, kwargs) holds."""
    count = 0

    def leaf(spec):
        nonlocal count
        count += _is_tensor_spec(spec)
        return spec

    _map(sig[0], leaf)
    _map(sig[1], leaf)
    return count


def check_call(fn, sig, seed: int, observe, label: str) -> None:
    """One call through call_jax vs the probe evaluated directly in JAX: tree, dtypes, values."""
    (args, kwargs), (ref_args, ref_kwargs) = build_inputs(sig, seed)
    out = torch_api.call_jax()(fn, args, kwargs)
    want = probe(*ref_args, **ref_kwargs)
    low_precision = "bfloat16" in repr(sig) or "float16" in repr(sig)
    got_flat, got_tree = jax.tree_util.tree_flatten_with_path(out)
    want_flat, want_tree = jax.tree_util.tree_flatten_with_path(want)
    assert got_tree == want_tree, f"{label}: output tree {got_tree} differs from JAX's {want_tree}"
    for (path, got), (_, ref) in zip(got_flat, want_flat):
        where = f"{label} {jax.tree_util.keystr(path)}"
        ref = np.asarray(ref)
        assert str(got.dtype).removeprefix("torch.") == str(ref.dtype), \
            f"{where}: call_jax returned {got.dtype}, JAX returns {ref.dtype}"
        # bf16/f16 anywhere in the call: XLA may compute in f32 inside a fusion where JAX's
        # eager path rounds each op, so the last bf16 bit can differ
        loose = low_precision or ref.dtype.name in ("bfloat16", "float16") or "sum" in where
        # 1e-5: the same float32 ops compiled on two paths (fusion may reorder a reduction of a few
        # dozen terms: n * eps ~ 4e-6); 2e-2 / 1e-2: bfloat16 rounds at 2**-8 ~ 4e-3, a few times
        np.testing.assert_allclose(to_numpy(got), to_numpy(ref), rtol=2e-2 if loose else 1e-5,
                                   atol=1e-2 if loose else 1e-5, err_msg=where)


def generated_pytree(sig, observe) -> None:
    """One call with a generated input tree (args, kwargs in the order given) equals JAX directly."""
    torch_api.call_jax()  # api absent / not in cell: skip before anything is built
    check_call(make_probe(), sig, seed=1, observe=observe, label="call")


def generated_call_sequence(calls, observe) -> None:
    """A sequence of calls reusing one function: each result equals JAX directly, and the cache
    grows by one exactly for inputs whose meaning is new, by none on an exact repeat."""
    torch_api.call_jax()
    if torch_api.cache_entries() is None:
        api_absent(torch_api.CACHE_COUNTERS[0], "no call_jax cache counter in this torch_xla")
    fn = make_probe()
    seen_meaning, seen_exact = set(), set()
    for step, sig in enumerate(calls):
        meaning, exact = meaning_key(sig), exact_key(sig)
        before = torch_api.cache_entries()
        check_call(fn, sig, seed=step, observe=observe, label=f"call {step}")
        grew = torch_api.cache_entries() - before
        if meaning not in seen_meaning:
            assert grew == 1, f"call {step}: inputs new in meaning, but the cache grew by {grew} (expected 1)"
        elif exact in seen_exact:
            assert grew == 0, f"call {step}: an exact repeat, but the cache grew by {grew} (expected 0)"
        seen_meaning.add(meaning)
        seen_exact.add(exact)


# The properties' pinned examples (what `harness report` exports; the tests run them as @example).
# Nested args of two dtypes, str / int / float / bool / NumPy dtype statics; dict keys and kwargs in
# sorted order, and no enums (not literals), torch dtypes or None: torch_xla 2.7 mishandles those
# before its flat-output bug shows (other cases pin them), so the example fails the same way as
# the property on every release.
PYTREE_EXAMPLE = {"sig": ([("tensor", (2, 3), "float32"), {"cfg": ["mode", 2], "w": ("tensor", (3,), "int32")}],
                          {"alpha": True, "bias": ("np", "float32"), "scale": 0.5})}
# a new call, its exact repeat, then a new static value: the cache grows by 1, 0, 1
SEQUENCE_EXAMPLE = {"calls": [([("tensor", (3,), "float32"), 2], {"b": ("np", "float32")}),
                              ([("tensor", (3,), "float32"), 2], {"b": ("np", "float32")}),
                              ([("tensor", (3,), "float32"), 3], {"b": ("np", "float32")})]}


# --- test_space.py: call_jax over input kinds, output kinds, both dispatch paths ---
#
# An input is (dtype, shape kind, layout, passed as): every dtype torch and jax share that call_jax
# is documented for, 0-d / one element / empty / a 2-D shape, contiguous / transposed / strided /
# starting inside its storage, positional or keyword. An output is (kind, input index): the input
# returned unchanged, returned twice, a constant, a 0-d reduction, an elementwise op. The
# reference is jax.jit of the same function on the same values as NumPy arrays.

SPACE_DTYPES = ("float32", "float16", "bfloat16", "int8", "int32", "bool", "complex64")
SHAPE_KINDS = {"scalar": (), "one": (1,), "empty": (0, 3), "matrix": (3, 4)}
LAYOUTS = ("contiguous", "transposed", "strided", "offset")
OUTPUT_KINDS = ("same", "twice", "constant", "reduced", "elementwise")
PATHS = ("xla", "torchax")


def _space_base(dtype: str, shape_kind: str, layout: str, seed: int):
    """The CPU tensor a view of this kind is taken from (larger where the layout is a view)."""
    torch = require("torch")
    shape = SHAPE_KINDS[shape_kind]
    if layout == "transposed" and len(shape) == 2:
        base_shape = shape[::-1]
    elif layout == "strided" and shape:
        base_shape = (shape[0] * 2,) + shape[1:]
    elif layout == "offset":
        base_shape = (int(np.prod(shape)) + 3,)
    else:
        base_shape = shape
    rng = np.random.RandomState(seed)
    values = rng.uniform(-4, 4, size=base_shape)
    if dtype == "complex64":
        values = values + 1j * rng.uniform(-4, 4, size=base_shape)
    if dtype == "bool":
        values = values > 0
    elif dtype in ("int8", "int32"):
        values = np.round(values * 10)
    if dtype == "bfloat16":
        return torch.from_numpy(np.asarray(values, np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.asarray(values).astype(dtype))


def _space_view(base, shape_kind: str, layout: str):
    """The input itself: the base, or a transposed / strided / offset view of it (same ops on
    the CPU tensor and on the device tensor)."""
    shape = SHAPE_KINDS[shape_kind]
    if layout == "transposed" and len(shape) == 2:
        return base.t()
    if layout == "strided" and shape:
        return base[::2]
    if layout == "offset":
        return base[3:].reshape(shape)
    return base


def _as_numpy(t) -> np.ndarray:
    """A CPU torch tensor's values as NumPy (bfloat16 as jax's own bfloat16 dtype)."""
    torch = require("torch")
    if t.dtype == torch.bfloat16:
        return np.asarray(jnp.asarray(t.float().numpy(), jnp.bfloat16))
    return t.detach().clone().resolve_conj().numpy()


def _space_fn(outputs, names):
    """The JAX function: positional inputs first, then the keyword ones (`names`)."""

    def out_of(kind, v):
        if kind == "same":
            return v
        if kind == "twice":
            return (v, v)
        if kind == "constant":
            return jnp.arange(3, dtype=jnp.float32)
        if kind == "reduced":
            return jnp.sum(jnp.real(v).astype(jnp.float32))  # 0-d
        if v.dtype == jnp.bool_:
            return jnp.logical_not(v)
        return v * 2 + 1 if not jnp.issubdtype(v.dtype, jnp.complexfloating) else v * (1 + 1j)

    def fn(*args, **kwargs):
        values = list(args) + [kwargs[n] for n in names]
        return [out_of(kind, values[i]) for kind, i in outputs]

    return fn


def _bits(a: np.ndarray) -> np.ndarray:
    """The bytes of an array's values (bit-for-bit comparison, NaN and -0.0 included; 0-d too)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _space_leaves(tree) -> list:
    out = []
    for x in (tree if isinstance(tree, (list, tuple)) else [tree]):
        out += _space_leaves(x) if isinstance(x, (list, tuple)) else [x]
    return out


def _to_cpu(path: str, t, env):
    if path == "torchax":
        return torch_api.j2t(env, t.jax() if hasattr(t, "jax") else t._elem)
    return t.cpu()


def generated_call(path: str, inputs, outputs, seed: int, observe) -> None:
    """call_jax on generated inputs and outputs: results equal jax.jit's (dtype, shape, bits), the
    inputs' values unchanged, and an output written in place leaves every input alone."""
    require("torch")  # a cell without torch skips here
    call_jax = torch_api.call_jax()
    if path == "torchax":
        torch_api.call_jax_torchax_path()
    env = torch_api.torchax_entry("default_env")() if path == "torchax" else None
    bases = [_space_base(d, s, lay, seed + k) for k, (d, s, lay, _how) in enumerate(inputs)]
    cpu = [_space_view(b, s, lay) for b, (_d, s, lay, _how) in zip(bases, inputs)]
    before = [_as_numpy(t) for t in cpu]
    if path == "torchax":
        moved = [env.to_xla(t) for t in cpu]
    else:
        # the view is taken on the device too: call_jax gets an XLA view, not a contiguous copy
        on_dev = [b.to(torch_api.device()) for b in bases]
        torch_api.sync()
        moved = [_space_view(b, s, lay) for b, (_d, s, lay, _how) in zip(on_dev, inputs)]
    names = [f"k{k}" for k, spec in enumerate(inputs) if spec[3] == "kwarg"]
    positional = [m for m, spec in zip(moved, inputs) if spec[3] == "positional"]
    keyword = {f"k{k}": m for k, (m, spec) in enumerate(zip(moved, inputs)) if spec[3] == "kwarg"}
    order = [k for k, spec in enumerate(inputs) if spec[3] == "positional"] + \
            [k for k, spec in enumerate(inputs) if spec[3] == "kwarg"]
    fn = _space_fn([(kind, order.index(i)) for kind, i in outputs], names)
    want = jax.jit(fn)(*[before[k] for k in order if inputs[k][3] == "positional"],
                       **{f"k{k}": before[k] for k in order if inputs[k][3] == "kwarg"})
    n_before = torch_api.cache_entries() if path == "xla" else None
    observe.record(cache_before=n_before)  # the trace cache's size before the first call (None: not counted)
    got = call_jax(fn, tuple(positional), keyword)
    got_leaves, want_leaves = _space_leaves(got), _space_leaves(want)
    observe.record(inputs=[list(s) for s in inputs], outputs=[list(o) for o in outputs], path=path)
    assert len(got_leaves) == len(want_leaves), f"{len(got_leaves)} outputs, jax returns {len(want_leaves)}"
    leaf_sources = [(kind, i) for kind, i in outputs for _ in range(2 if kind == "twice" else 1)]
    for k, (g, w, (kind, source)) in enumerate(zip(got_leaves, want_leaves, leaf_sources)):
        g_np = _as_numpy(_to_cpu(path, g, env))
        w_np = np.asarray(w)
        assert g_np.dtype == w_np.dtype and g_np.shape == w_np.shape, \
            f"output {k}: {g_np.dtype}{list(g_np.shape)}, jax gives {w_np.dtype}{list(w_np.shape)}"
        if kind == "reduced":
            # a float32 sum of n terms in whatever order each program's layout gives: within
            # gamma_n of sum |terms| of jax's (Higham 3.1), the two orders each that far from exact
            terms = before[source]
            bound = 2 * gamma(max(terms.size, 1), "float32") * float(np.sum(np.abs(np.real(terms).astype(np.float64))))
            observe.record(**{f"reduced_{k}": assert_within_bound(g_np, w_np, bound, why="float32 sum in another order")})
        else:  # data movement, a constant, or one correctly rounded op: bit for bit
            assert np.array_equal(_bits(g_np), _bits(w_np)), f"output {k}: {g_np} != jax's {w_np}"
    # inputs untouched by the call
    for k, m in enumerate(moved):
        assert np.array_equal(_bits(_as_numpy(_to_cpu(path, m, env))), _bits(before[k])), f"input {k} changed by the call"
    if path == "xla":
        # the same call again adds no cache entry (counters where this torch_xla has one)
        if n_before is not None:
            n_after = torch_api.cache_entries()
            call_jax(fn, tuple(positional), keyword)
            observe.record(cache_added=[n_after - n_before, torch_api.cache_entries() - n_after])
            assert torch_api.cache_entries() == n_after, "the same call traced again"
        # JAX never aliases an output to an input without donation: writing each output in place
        # must leave every input as it was
        for g in got_leaves:
            if g.numel():
                g.zero_()
        torch_api.sync()
        for k, m in enumerate(moved):
            assert np.array_equal(_bits(_as_numpy(m.cpu())), _bits(before[k])), \
                f"input {k} changed when an output was written: they share memory"


SPACE_CALL_EXAMPLE = {"inputs": (("bfloat16", "matrix", "transposed", "kwarg"), ("int8", "scalar", "contiguous", "positional")),
                      "outputs": (("same", 0), ("reduced", 1), ("constant", 0)), "seed": 3}


CORES = {
    "test_unused_args.py::test_unused_arguments": unused_arguments,
    "test_unused_args.py::test_call_jax_grad": call_jax_grad,
    "test_non_tensor_inputs.py::test_static_scalar": static_scalar,
    "test_non_tensor_inputs.py::test_container_mixing_tensors_and_scalars": container_mixing_tensors_and_scalars,
    "test_non_tensor_inputs.py::test_tensor_kwargs_keep_their_names": tensor_kwargs_keep_their_names,
    "test_non_tensor_inputs.py::test_static_value_change_retraces_and_same_value_hits_cache":
        static_value_change_retraces_and_same_value_hits_cache,
    "test_non_tensor_inputs.py::test_unhashable_static_error_names_the_problem": unhashable_static_error_names_the_problem,
    "test_non_tensor_inputs.py::test_cpu_tensor_error_names_the_device": cpu_tensor_error_names_the_device,
    "test_non_tensor_inputs.py::test_missing_dependency_error_names_it": missing_dependency_error_names_it,
    "test_upstream_parity.py::test_call_jax_with_name": call_jax_with_name,
    "test_upstream_parity.py::test_output_pytree_comes_back_complete": output_pytree_comes_back_complete,
    "test_upstream_parity.py::test_upstream_non_tensor_args": upstream_non_tensor_args,
    "test_upstream_parity.py::test_cache_per_function": cache_per_function,
    "test_upstream_parity.py::test_cache_by_shape": cache_by_shape,
    "test_upstream_parity.py::test_cache_by_dtype": cache_by_dtype,
    "test_upstream_parity.py::test_cache_by_tree_structure": cache_by_tree_structure,
    "test_upstream_parity.py::test_cache_by_static_value": cache_by_static_value,
    "test_upstream_parity.py::test_equal_looking_statics_trace_apart": equal_looking_statics_trace_apart,
    "test_upstream_parity.py::test_cache_by_jax_config_matmul_precision": cache_by_jax_config_matmul_precision,
    "test_upstream_parity.py::test_cache_by_jax_config_x64": cache_by_jax_config_x64,
    "test_upstream_parity.py::test_dtype_as_static": dtype_as_static,
    "test_upstream_parity.py::test_float64_tensors": float64_tensors,
    "test_defaults.py::test_jit_drops_unused_arguments_by_default": jit_drops_unused_arguments_by_default,
    "test_defaults.py::test_call_jax_with_its_defaults_keeps_unused_arguments_and_returns_both_outputs":
        call_jax_with_its_defaults,
    "test_structure.py::test_output_structure": frozen_output_structure,
    "test_structure.py::test_generated_output_trees_come_back_as_jax_returns_them":
        (generated_output_tree, STRUCTURE_EXAMPLE),
    "test_properties.py::test_generated_pytrees_match_jax": (generated_pytree, PYTREE_EXAMPLE),
    "test_properties.py::test_generated_call_sequences_keep_cache_and_results_right":
        (generated_call_sequence, SEQUENCE_EXAMPLE),
    "test_space.py::test_generated_calls_match_jax_and_leave_inputs_alone": (generated_call, SPACE_CALL_EXAMPLE),
}
