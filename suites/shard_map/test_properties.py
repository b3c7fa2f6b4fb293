"""Property layer for shard_map autodiff: generated meshes, specs and functions vs NumPy.

Each example draws a mesh (8 CPU devices: 1-D sizes 1/2/4/8, 2-D 2x4 and 4x2), which mesh axes
shard each dimension of a 2-D input, a small elementwise function and its values. The shard_map'd
program is compared with the unsharded computation written out in NumPy (closed-form derivatives,
never jax's own autodiff): jvp/linearize, linear_transpose (plus the adjoint identity), and grad,
with a replicated weight left implicit or marked varying with pvary / pcast where the version has
them. The replicated-primal form of jax-ml/jax#28260 is its own property, split by marking, so the
known bug is one test id and every other variant must pass.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

import jax
import pytest

from suites.shard_map import cores
from suites.shard_map.cores import MESHES, UNARY, Program

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import example, given, strategies as st  # noqa: E402

N_DEVICES = 8


@pytest.fixture(scope="module")
def devices_ok():
    if len(jax.devices()) < N_DEVICES:
        pytest.skip(f"needs {N_DEVICES} devices, have {len(jax.devices())} (set XLA_FLAGS=--xla_force_host_platform_device_count=8)")


@st.composite
def programs(draw, linear: bool = False) -> Program:
    mesh_index = draw(st.integers(0, len(MESHES) - 1))
    names = MESHES[mesh_index][1]
    # Each mesh axis shards the rows, the columns, or neither (replicated over it).
    where = [draw(st.sampled_from(["rows", "cols", "none"])) for _ in names]
    row_axes = tuple(a for a, w in zip(names, where) if w == "rows")
    col_axes = tuple(a for a, w in zip(names, where) if w == "cols")
    pool = ["affine"] if linear else [u.name for u in UNARY]
    ops = tuple(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2)))
    if linear:
        ops = ("scale",)
    return Program(mesh_index, row_axes, col_axes, draw(st.integers(1, 3)), draw(st.integers(1, 3)),
                   ops, draw(st.booleans()), draw(st.integers(0, 2**16)))


# A 2-D mesh with both axes on the rows and a psum: the widest collective the layer generates.
@example(prog=Program(**cores.LINEARIZE_EXAMPLE))
@given(prog=programs())
def test_linearize_and_jvp_match_the_unsharded_derivative(prog, devices_ok, observe):
    cores.linearize_and_jvp_match_numpy(*astuple(prog), observe)


@example(prog=Program(**cores.TRANSPOSE_EXAMPLE))
@given(prog=programs(linear=True))
def test_linear_transpose_is_the_adjoint(prog, devices_ok, observe):
    cores.linear_transpose_is_the_adjoint(*astuple(prog), observe)


@pytest.mark.parametrize("mark", ["implicit", "pvary", "pcast"])
@example(prog=Program(**cores.GRAD_EXAMPLE))
@given(prog=programs())
def test_grad_with_a_replicated_weight_matches_numpy(mark, prog, devices_ok, observe):
    """loss(w, x) = sum(shard_map(body)(w, x) ** 2) with body = ops(x) * w, w a replicated scalar.

    `implicit` leaves w unmarked (jax inserts the varying cast itself from 0.6.0); `pvary` / `pcast`
    mark it explicitly. The gradient with respect to w sums every shard's contribution (the
    transpose of the marking is a psum), the one with respect to x stays sharded.
    """
    cores.grad_with_a_replicated_weight(mark, *astuple(prog), observe)


@dataclass(frozen=True)
class Replicated:
    """The jax#28260 shape: linearize at a replicated primal p, tangent sharded over every axis."""

    mesh_index: int
    per_shard: int
    op: str
    seed: int


@st.composite
def replicated_cases(draw) -> Replicated:
    return Replicated(draw(st.integers(0, len(MESHES) - 1)), draw(st.integers(1, 3)),
                      draw(st.sampled_from([u.name for u in UNARY])), draw(st.integers(0, 2**16)))


@pytest.mark.parametrize("marking", ["unmarked", "pvary", "pcast", "no_check"])
@example(case=Replicated(1, 2, "square", 0))  # the upstream report: mean(x**2), 2 elements a shard
@given(case=replicated_cases())
def test_replicated_primal_linearize_transpose(marking, case, devices_ok, observe):
    """bwd(fwd(t)) per shard for f = mean(op(p)), p replicated (closed over), t sharded.

    `unmarked` is the issue's code (the vma check rejects it from 0.6.0: known issue); `pvary` /
    `pcast` mark p varying first; `no_check` turns the check off. All must match NumPy.
    """
    cores.replicated_primal_linearize_transpose(marking, case.mesh_index, case.per_shard, case.op, case.seed, observe)
