"""Output structure through call_jax: optional (None) leaves, nested and mixed containers.

call_jax returns what the JAX function returned, as torch tensors in the same tree. The other
output cases return dicts and lists of tensors; here the JAX function returns a generated tree
mixing tensors, None, tuples, lists, dicts, a namedtuple and empty containers, and the result
must have exactly the structure (container types, keys, None where None was, leaf dtypes and
shapes) and the values that jax.jit of the same function gives directly.
"""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from harness.incell.compat import torch_api
from harness.incell.numerics import to_numpy

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

Pair = collections.namedtuple("Pair", ["first", "second"])

# Leaves: ("a", k) -> a * k, ("b", k) -> b + k (small integers: exact in float32), or None.
tensor_leaves = st.tuples(st.sampled_from(["a", "b"]), st.integers(-3, 3))
leaves = st.one_of(tensor_leaves, st.none())
templates = st.recursive(
    leaves,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3).map(tuple), st.lists(kids, max_size=3),
        st.dictionaries(st.sampled_from(["w", "b", "a", "z", "opt"]), kids, max_size=3),
        st.tuples(kids, kids).map(lambda t: Pair(*t))),
    max_leaves=6)


def _tensor_leaf(t) -> bool:
    return isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str) and not isinstance(t, Pair)


def build(template, a, b):
    """The output tree a JAX function returns for a template."""
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


def n_tensors(template) -> int:
    if template is None:
        return 0
    if _tensor_leaf(template):
        return 1
    return sum(n_tensors(v) for v in (template.values() if isinstance(template, dict) else template))


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


def check_structure(template, xla_inputs, observe, label: str = "call"):
    cpu, on_xla = xla_inputs((3,), (2, 3), seed=3)
    out = torch_api.call_jax()(lambda a, b: build(template, a, b), tuple(on_xla))
    want = jax.jit(lambda a, b: build(template, a, b))(*(jnp.asarray(t.numpy()) for t in cpu))
    got_s, want_s = structure(out), structure(want)
    assert got_s == want_s, f"{label}: output structure {got_s} differs from JAX's {want_s}"
    for (path, got), (_, ref) in zip(leaves_at_paths(out), leaves_at_paths(want)):
        # a * k and b + k on small integers and randn floats: one rounding each side, the same
        # float32 operation: bit for bit.
        np.testing.assert_array_equal(to_numpy(got), to_numpy(ref), err_msg=f"{label} {path}")


@hypothesis.given(template=templates.filter(lambda t: n_tensors(t) >= 1))
def test_generated_output_trees_come_back_as_jax_returns_them(template, xla_inputs, observe):
    check_structure(template, xla_inputs, observe)


# Frozen shapes the generator reaches rarely at the ci profile's 12 examples.
FROZEN = {
    "none_in_dict": {"w": ("a", 2), "opt": None},
    "none_in_tuple_and_list": (("a", 1), None, [None, ("b", 0)]),
    "namedtuple_with_none": Pair(("b", 1), None),
    "empty_containers": {"a": ("a", 1), "b": (), "z": [], "w": {}},
    "mixed_nesting": [{"w": (("a", -1), Pair(None, ("b", 2)))}, ()],
}


@pytest.mark.parametrize("shape", list(FROZEN))
def test_output_structure(shape, xla_inputs, observe):
    check_structure(FROZEN[shape], xla_inputs, observe, label=shape)
