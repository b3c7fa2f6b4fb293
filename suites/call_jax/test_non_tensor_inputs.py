"""call_jax with non-tensor inputs (pytorch/xla#8795, fixed by #8878): None, bool, int, float, str
and containers mixing tensors and scalars, as args and kwargs.

Static (non-tensor) values must not become HLO parameters; a new static value retraces, the same
value hits the cache; unsupported inputs fail with an error that names the problem.
"""

from __future__ import annotations

import pytest

from suites.call_jax import cores


@pytest.mark.parametrize("how", ["arg", "kwarg"])
@pytest.mark.parametrize("kind", ["none", "bool", "int", "float", "str"])
def test_static_scalar(kind, how, observe):
    cores.static_scalar(kind, how, observe)


@pytest.mark.parametrize("kind", ["tuple", "list", "dict", "nested"])
def test_container_mixing_tensors_and_scalars(kind, observe):
    cores.container_mixing_tensors_and_scalars(kind, observe)


def test_tensor_kwargs_keep_their_names(observe):
    """Tensor kwargs given in non-sorted order must reach the parameters they are named for."""
    cores.tensor_kwargs_keep_their_names(observe)


def test_static_value_change_retraces_and_same_value_hits_cache(observe):
    cores.static_value_change_retraces_and_same_value_hits_cache(observe)


def test_unhashable_static_error_names_the_problem(observe):
    """A NumPy array as a static is unsupported; the error must say which value and why."""
    cores.unhashable_static_error_names_the_problem(observe)


def test_cpu_tensor_error_names_the_device(observe):
    """A CPU tensor passed to call_jax: the error must name the device problem."""
    cores.cpu_tensor_error_names_the_device(observe)


def test_missing_dependency_error_names_it(observe):
    """In a cell without one of call_jax's Python dependencies, the error must name the missing module."""
    cores.missing_dependency_error_names_it(observe)
