"""call_jax with non-tensor inputs (pytorch/xla#8795, fixed by #8878): None, bool, int, float, str
and containers mixing tensors and scalars, as args and kwargs.

Static (non-tensor) values must not become HLO parameters; a new static value retraces, the same
value hits the cache; unsupported inputs fail with an error that names the problem.
"""

from __future__ import annotations

import importlib

import jax.numpy as jnp
import numpy as np
import pytest

from harness.incell.compat import api_absent, torch_api
from suites.call_jax.conftest import record_hlo


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


@pytest.mark.parametrize("how", ["arg", "kwarg"])
@pytest.mark.parametrize("kind", list(STATICS))
def test_static_scalar(kind, how, xla_inputs, observe):
    cpu, (x,) = xla_inputs((4,))
    s = STATICS[kind]
    call = torch_api.call_jax()
    out = call(scaled, (x, s)) if how == "arg" else call(lambda x, *, s: scaled(x, s), (x,), {"s": s})
    record_hlo(observe, [out], tensors_passed=1)  # the static is baked in, not a parameter
    observe.close(out, scaled(cpu[0], s), rtol=1e-6, atol=1e-6)


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


@pytest.mark.parametrize("kind", list(CONTAINERS))
def test_container_mixing_tensors_and_scalars(kind, xla_inputs, observe):
    cpu, on_xla = xla_inputs((4,), (4,), seed=2)
    args = CONTAINERS[kind](on_xla)
    out = torch_api.call_jax()(jax_container, args)
    n_tensors = sum(1 for leaf in _leaves(args) if hasattr(leaf, "device"))
    record_hlo(observe, [out], tensors_passed=n_tensors)
    observe.close(out, jax_container(*CONTAINERS[kind](cpu)), rtol=1e-6, atol=1e-6)


def _leaves(tree):
    if isinstance(tree, (list, tuple)):
        for t in tree:
            yield from _leaves(t)
    elif isinstance(tree, dict):
        for t in tree.values():
            yield from _leaves(t)
    else:
        yield tree


def test_tensor_kwargs_keep_their_names(xla_inputs, observe):
    """Tensor kwargs given in non-sorted order must reach the parameters they are named for."""
    cpu, (a, scale, shift) = xla_inputs((3,), (3,), (3,), seed=3)
    out = torch_api.call_jax()(lambda a, *, shift, scale: a * scale + shift, (a,), {"shift": shift, "scale": scale})
    record_hlo(observe, [out], tensors_passed=3)
    observe.close(out, cpu[0] * cpu[1] + cpu[2], rtol=1e-6, atol=1e-6)


def test_static_value_change_retraces_and_same_value_hits_cache(xla_inputs, observe):
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


def test_unhashable_static_error_names_the_problem(xla_inputs, observe):
    """A NumPy array as a static is unsupported; the error must say which value and why."""
    _cpu, (x,) = xla_inputs((4,))
    with pytest.raises(Exception) as exc:
        torch_api.call_jax()(lambda x, m: x * jnp.sum(m), (x, np.ones(2)))
    message = f"{type(exc.value).__name__}: {exc.value}"
    observe.record(error=message)
    assert "ndarray" in message, f"the error does not name the offending type: {message}"
    assert any(w in message.lower() for w in ("static", "non-tensor", "argument", "arg ")), \
        f"the error does not say the value is a non-tensor argument that must be hashable: {message}"


def test_cpu_tensor_error_names_the_device(observe):
    """A CPU tensor passed to call_jax: the error must name the device problem."""
    torch = pytest.importorskip("torch")
    call = torch_api.call_jax()
    with pytest.raises(Exception) as exc:
        call(lambda x: x * 2.0, (torch.ones(4),))
    message = f"{type(exc.value).__name__}: {exc.value}"
    observe.record(error=message)
    assert "xla" in message.lower() and ("cpu" in message.lower() or "FloatTensor" in message), \
        f"the error does not say the tensor is not on the XLA device: {message}"


def test_missing_dependency_error_names_it(xla_inputs, observe):
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
