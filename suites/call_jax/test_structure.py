"""Output structure through call_jax: optional (None) leaves, nested and mixed containers.

call_jax returns what the JAX function returned, as torch tensors in the same tree. The other
output cases return dicts and lists of tensors; here the JAX function returns a generated tree
mixing tensors, None, tuples, lists, dicts, a namedtuple and empty containers, and the result
must have exactly the structure (container types, keys, None where None was, leaf dtypes and
shapes) and the values that jax.jit of the same function gives directly. The bodies are cores in
suites/call_jax/cores.py (build, structure, output_tree).
"""

from __future__ import annotations

import pytest

from suites.call_jax import cores
from suites.call_jax.cores import Pair, template_tensors

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

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


@hypothesis.example(**cores.STRUCTURE_EXAMPLE)  # the example `harness report` exports
@hypothesis.given(template=templates.filter(lambda t: template_tensors(t) >= 1))
def test_generated_output_trees_come_back_as_jax_returns_them(template, xla_inputs, observe):
    cores.generated_output_tree(template, observe)


@pytest.mark.parametrize("shape", ["none_in_dict", "none_in_tuple_and_list", "namedtuple_with_none", "empty_containers",
                                   "mixed_nesting"])
def test_output_structure(shape, xla_inputs, observe):
    cores.frozen_output_structure(shape, observe)
