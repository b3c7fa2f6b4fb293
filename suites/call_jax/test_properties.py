"""Property layer for call_jax: generated pytrees and generated sequences of calls.

Inputs mix XLA tensors (several shapes and dtypes) with every kind of non-tensor value a user
passes (None, bools, ints, floats, strings, enums, jnp / NumPy / torch dtypes), nested in tuples,
lists and dicts, as args and as kwargs in any insertion order. One probe function turns any such
tree into a pytree *output* (every tensor leaf, at its path, shifted by a number that depends on
the type and value of every static, and cast by the first dtype static), so a tensor that reaches
the wrong parameter, a static that is stale, or an output leaf that is lost all change the result.

Each call is compared with the same probe evaluated directly in JAX (no tracing cache involved).
Over a sequence of calls reusing one probe, the trace-cache counter must grow by one for every
call whose inputs differ in meaning from all earlier ones (shapes, dtypes, tree, statics by type
and value) and stay put on an exact repeat. Deterministic under the root conftest's profiles.
"""

from __future__ import annotations

import enum

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from harness.incell.compat import api_absent, torch_api
from harness.incell.numerics import to_numpy

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

try:
    import torch
except ImportError:  # collected everywhere; xla_inputs skips where the cell has no torch_xla
    torch = None


class Mode(enum.Enum):
    """A plain enum static."""

    FAST = 1
    SLOW = 2


class Level(enum.IntEnum):
    """An IntEnum static: Level.ONE == 1 == 1.0 == True, hash-equal too."""

    ONE = 1
    TWO = 2


SHAPES = [(), (3,), (2, 3), (3, 3), (1, 4)]
TENSOR_DTYPES = ["float32", "int32", "bfloat16"]
JAX_DTYPE_STATICS = ["float32", "float16", "int32", "bfloat16"]

# Small pools on purpose: collisions between equal-looking statics (0/False, 1/1.0/True/Level.ONE)
# and between equal shapes are what a wrongly keyed cache gets wrong.
statics = st.one_of(
    st.none(), st.booleans(), st.sampled_from([-2, 0, 1, 2, 3]), st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.5]),
    st.sampled_from(["", "a", "mode"]), st.sampled_from(list(Mode) + list(Level)),
    st.tuples(st.just("jnp"), st.sampled_from(JAX_DTYPE_STATICS)),
    st.tuples(st.just("np"), st.sampled_from(JAX_DTYPE_STATICS[:3])),
    st.tuples(st.just("torch"), st.sampled_from(JAX_DTYPE_STATICS)),
)
tensor_specs = st.tuples(st.just("tensor"), st.sampled_from(SHAPES), st.sampled_from(TENSOR_DTYPES))
leaves = st.one_of(tensor_specs, statics)
trees = st.recursive(
    leaves,
    lambda kids: st.one_of(st.tuples(kids, kids), st.lists(kids, max_size=3),
                           st.dictionaries(st.sampled_from(["w", "b", "cfg", "a", "z"]), kids, max_size=3)),
    max_leaves=6,
)
kwarg_names = st.sampled_from(["scale", "bias", "alpha", "mode", "zeta", "b"])
signatures = st.tuples(st.lists(trees, min_size=1, max_size=3),
                       st.dictionaries(kwarg_names, trees, max_size=3))


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
    return getattr(torch, name)


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
        if torch is not None and isinstance(value, torch.Tensor):
            t = host[id(value)]
            return jnp.asarray(t.float().numpy()).astype(jnp.bfloat16) if t.dtype == torch.bfloat16 \
                else jnp.asarray(t.numpy())
        if torch is not None and isinstance(value, torch.dtype):
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
    count = 0

    def leaf(spec):
        nonlocal count
        count += _is_tensor_spec(spec)
        return spec

    _map(sig[0], leaf)
    _map(sig[1], leaf)
    return count


def check_call(fn, sig, seed: int, observe, label: str):
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
        np.testing.assert_allclose(to_numpy(got), to_numpy(ref), rtol=2e-2 if loose else 1e-5,
                                   atol=1e-2 if loose else 1e-5, err_msg=where)


def _reorder(kwargs: dict, data) -> dict:
    keys = data.draw(st.permutations(list(kwargs)), label="kwargs order")
    return {k: kwargs[k] for k in keys}


@hypothesis.given(data=st.data())
def test_generated_pytrees_match_jax(data, xla_inputs, observe):
    """One call with a generated input tree (args and kwargs, any order) equals JAX directly."""
    sig = data.draw(signatures.filter(lambda s: n_tensors(s) >= 1), label="signature")
    args, kwargs = sig
    check_call(make_probe(), (args, _reorder(kwargs, data)), seed=1, observe=observe, label="call")


def _mutate(sig, data):
    """The next call in a sequence: an exact repeat, kwargs reordered, one static or tensor spec
    swapped for another (often an equal-looking one), or a new signature."""
    how = data.draw(st.sampled_from(["repeat", "reorder", "static", "tensor", "new"]), label="next")
    args, kwargs = sig
    if how == "repeat":
        return sig
    if how == "reorder":
        return args, _reorder(kwargs, data)
    if how == "new":
        return data.draw(signatures.filter(lambda s: n_tensors(s) >= 1), label="new signature")
    want_tensor = how == "tensor"
    slots = []

    def find(spec):
        if _is_tensor_spec(spec) == want_tensor and (want_tensor or not isinstance(spec, (tuple, list, dict))
                                                     or _is_dtype_spec(spec)):
            slots.append(spec)
        return spec

    def visit(spec):  # collect leaves in order, including plain statics _map does not call back on
        if _is_tensor_spec(spec) or _is_dtype_spec(spec) or not isinstance(spec, (tuple, list, dict)):
            find(spec)
        else:
            for s in (spec.values() if isinstance(spec, dict) else spec):
                visit(s)

    visit(list(args))
    visit(dict(kwargs))
    if not slots:
        return sig
    target = data.draw(st.integers(0, len(slots) - 1), label="slot")
    replacement = data.draw(tensor_specs if want_tensor else statics, label="replacement")
    counter = iter(range(len(slots)))

    def swap(spec):
        if _is_tensor_spec(spec) or _is_dtype_spec(spec) or not isinstance(spec, (tuple, list, dict)):
            if (_is_tensor_spec(spec) == want_tensor) and next(counter) == target:
                return replacement
            return spec
        if isinstance(spec, dict):
            return {k: swap(v) for k, v in spec.items()}
        return type(spec)(swap(s) for s in spec)

    # statics count among slots only when they are plain leaves: walk in the same order as visit
    return [swap(a) for a in args], {k: swap(v) for k, v in kwargs.items()}


@hypothesis.given(data=st.data())
def test_generated_call_sequences_keep_cache_and_results_right(data, xla_inputs, observe):
    """A sequence of calls reusing one function: each result equals JAX directly, and the cache
    grows by one exactly for inputs whose meaning is new, by none on an exact repeat."""
    if torch_api.cache_entries() is None:
        api_absent(torch_api.CACHE_COUNTERS[0], "no call_jax cache counter in this torch_xla")
    fn = make_probe()
    sig = data.draw(signatures.filter(lambda s: n_tensors(s) >= 1), label="first")
    seen_meaning, seen_exact, seen_equal = set(), set(), set()
    for step in range(data.draw(st.integers(2, 3), label="calls")):
        if step:
            sig = _mutate(sig, data)
            if n_tensors(sig) == 0:
                continue
        meaning, exact, equal = meaning_key(sig), exact_key(sig), equality_key(sig)
        # Statics equal under == but typed apart (1 after 1.0) hit the known cache bug that
        # test_equal_looking_statics_trace_apart pins; leave them to it so this property keeps
        # searching for anything else on the releases that have that bug.
        hypothesis.assume(meaning in seen_meaning or equal not in seen_equal)
        before = torch_api.cache_entries()
        check_call(fn, sig, seed=step, observe=observe, label=f"call {step}")
        grew = torch_api.cache_entries() - before
        if meaning not in seen_meaning:
            assert grew == 1, f"call {step}: inputs new in meaning, but the cache grew by {grew} (expected 1)"
        elif exact in seen_exact:
            assert grew == 0, f"call {step}: an exact repeat, but the cache grew by {grew} (expected 0)"
        seen_meaning.add(meaning)
        seen_exact.add(exact)
        seen_equal.add(equal)
