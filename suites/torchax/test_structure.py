"""Output structure through torchax.interop.call_jax: the call_jax family's generated output
trees (tensors, None, tuples, lists, dicts, a namedtuple, empty containers) must come back with
JAX's structure and bit-equal leaves, as torchax tensors. The bodies are cores in
suites/torchax/cores.py (interop_output_tree)."""

from __future__ import annotations

import pytest

from suites.call_jax.test_structure import template_tensors, templates
from suites.torchax import cores

hypothesis = pytest.importorskip("hypothesis")


@hypothesis.example(**cores.INTEROP_STRUCTURE_EXAMPLE)  # the example `harness report` exports
@hypothesis.given(template=templates.filter(lambda t: template_tensors(t) >= 1))
def test_generated_output_trees_come_back_as_jax_returns_them(template, env, observe):
    cores.interop_generated_output_tree(template, observe)


@pytest.mark.parametrize("shape", ["none_in_dict", "none_in_tuple_and_list", "namedtuple_with_none", "empty_containers",
                                   "mixed_nesting"])
def test_output_structure(shape, env, observe):
    cores.interop_frozen_output_structure(shape, observe)
