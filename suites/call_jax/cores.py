"""call_jax scenario cores: plain functions over their inputs, called by the tests and inlined by
`harness report` into standalone reproducers (see suites/compute_on/cores.py for the rules).

`CORES` maps each test to its core; the test's parameter ids are the core's leading arguments.
"""

from __future__ import annotations

import contextlib
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from harness.incell.compat import api_absent, require, torch_api
from harness.incell.ir import called_computation_parameter_counts, count_entry_parameters


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
}
