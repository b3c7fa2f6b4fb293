"""Output structure through torchax.interop.call_jax: the call_jax family's generated output
trees (tensors, None, tuples, lists, dicts, a namedtuple, empty containers) must come back with
JAX's structure and bit-equal leaves, as torchax tensors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from harness.incell.compat import require
from harness.incell.numerics import to_numpy
from suites.call_jax.test_structure import FROZEN, build, leaves_at_paths, n_tensors, structure, templates
from suites.torchax import cores

hypothesis = pytest.importorskip("hypothesis")

A = np.linspace(-1.0, 1.0, 3, dtype=np.float32)
B = np.arange(6, dtype=np.float32).reshape(2, 3) / 7.0


@pytest.fixture(scope="module")
def env():
    return cores.torchax_env()


def check_structure(template, env, label: str = "call"):
    torch = require("torch")
    with env:
        out = cores.interop("call_jax")(lambda a, b: build(template, a, b),
                                        env.to_xla(torch.from_numpy(A)), env.to_xla(torch.from_numpy(B)))
    want = jax.jit(lambda a, b: build(template, a, b))(jnp.asarray(A), jnp.asarray(B))
    got_s, want_s = structure(out), structure(want)
    assert got_s == want_s, f"{label}: output structure {got_s} differs from JAX's {want_s}"
    view = cores.interop("jax_view")
    for (path, got), (_, ref) in zip(leaves_at_paths(out), leaves_at_paths(want)):
        # the same float32 op (a * k or b + k) on both sides: bit for bit
        np.testing.assert_array_equal(to_numpy(np.asarray(view(got))), to_numpy(ref), err_msg=f"{label} {path}")


@hypothesis.given(template=templates.filter(lambda t: n_tensors(t) >= 1))
def test_generated_output_trees_come_back_as_jax_returns_them(template, env):
    check_structure(template, env)


@pytest.mark.parametrize("shape", list(FROZEN))
def test_output_structure(shape, env):
    check_structure(FROZEN[shape], env, label=shape)
