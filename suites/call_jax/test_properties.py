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

Every input is drawn up front by the strategy given to @given (a signature, or a whole call
sequence), so the falsifying example hypothesis prints is the case; the bodies are cores in
suites/call_jax/cores.py, and `harness report` exports each property's pinned @example.
"""

from __future__ import annotations

import pytest

from suites.call_jax import cores
from suites.call_jax.cores import (Level, Mode, _is_dtype_spec, _is_tensor_spec, equality_key, meaning_key,
                                   n_tensors)

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


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


tensor_signatures = signatures.filter(lambda s: n_tensors(s) >= 1)


def _reorder(kwargs: dict, draw) -> dict:
    keys = draw(st.permutations(list(kwargs)))
    return {k: kwargs[k] for k in keys}


@st.composite
def single_calls(draw):
    """One call's whole input: a signature with at least one tensor, kwargs in a drawn order."""
    args, kwargs = draw(tensor_signatures)
    return args, _reorder(kwargs, draw)


def _mutate(sig, draw):
    """The next call in a sequence: an exact repeat, kwargs reordered, one static or tensor spec
    swapped for another (often an equal-looking one), or a new signature."""
    how = draw(st.sampled_from(["repeat", "reorder", "static", "tensor", "new"]))
    args, kwargs = sig
    if how == "repeat":
        return sig
    if how == "reorder":
        return args, _reorder(kwargs, draw)
    if how == "new":
        return draw(tensor_signatures)
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
    target = draw(st.integers(0, len(slots) - 1))
    replacement = draw(tensor_specs if want_tensor else statics)
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


def _no_equal_looking_repeat(seq) -> bool:
    """Statics equal under == but typed apart (1 after 1.0) hit the known cache bug that
    test_equal_looking_statics_trace_apart pins; leave them to it so this property keeps
    searching for anything else on the releases that have that bug."""
    seen_meaning, seen_equal = set(), set()
    for sig in seq:
        meaning, equal = meaning_key(sig), equality_key(sig)
        if meaning not in seen_meaning and equal in seen_equal:
            return False
        seen_meaning.add(meaning)
        seen_equal.add(equal)
    return True


@st.composite
def call_sequences(draw):
    """2-3 calls reusing one function, each the previous one mutated; a call left without a
    tensor is not made (call_jax needs one), so the list holds only the calls made."""
    sig = draw(tensor_signatures)
    seq = [sig]
    for _ in range(draw(st.integers(2, 3)) - 1):
        sig = _mutate(sig, draw)
        if n_tensors(sig):
            seq.append(sig)
    return seq


@hypothesis.example(**cores.PYTREE_EXAMPLE)  # the example `harness report` exports
@hypothesis.given(sig=single_calls())
def test_generated_pytrees_match_jax(sig, xla_inputs, observe):
    """One call with a generated input tree (args and kwargs, any order) equals JAX directly."""
    cores.generated_pytree(sig, observe)


@hypothesis.example(**cores.SEQUENCE_EXAMPLE)  # the example `harness report` exports
@hypothesis.given(calls=call_sequences().filter(_no_equal_looking_repeat))
def test_generated_call_sequences_keep_cache_and_results_right(calls, xla_inputs, observe):
    """A sequence of calls reusing one function: each result equals JAX directly, and the cache
    grows by one exactly for inputs whose meaning is new, by none on an exact repeat."""
    cores.generated_call_sequence(calls, observe)
