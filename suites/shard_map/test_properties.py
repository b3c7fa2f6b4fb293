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

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, PartitionSpec as P

from harness.incell.compat import jax_api
from suites.shard_map import cores
from suites.shard_map.cores import MESHES, TOL, UNARY, Unary  # noqa: F401 - shared with the cores

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import example, given, strategies as st  # noqa: E402

N_DEVICES = 8


@pytest.fixture(scope="module")
def devices_ok():
    if len(jax.devices()) < N_DEVICES:
        pytest.skip(f"needs {N_DEVICES} devices, have {len(jax.devices())} (set XLA_FLAGS=--xla_force_host_platform_device_count=8)")


@dataclass(frozen=True)
class Program:
    """One generated case: mesh, which axes shard rows/cols, the function and the data seed."""

    mesh_index: int
    row_axes: tuple[str, ...]
    col_axes: tuple[str, ...]
    rows_per: int
    cols_per: int
    ops: tuple[str, ...]  # applied left to right
    reduce_rows: bool  # sum over rows (a psum over the row axes) instead of an elementwise output
    seed: int

    @property
    def mesh_shape(self) -> dict[str, int]:
        shape, names = MESHES[self.mesh_index]
        return dict(zip(names, shape))

    def size(self, axes: tuple[str, ...]) -> int:
        return int(np.prod([self.mesh_shape[a] for a in axes])) if axes else 1

    @property
    def shape(self) -> tuple[int, int]:
        return self.size(self.row_axes) * self.rows_per, self.size(self.col_axes) * self.cols_per

    @property
    def in_spec(self) -> P:
        return P(_entry(self.row_axes), _entry(self.col_axes))

    @property
    def out_spec(self) -> P:
        return P(None, _entry(self.col_axes)) if self.reduce_rows else self.in_spec

    @property
    def varying(self) -> tuple[str, ...]:
        return self.row_axes + self.col_axes


def _entry(axes: tuple[str, ...]):
    return None if not axes else (axes[0] if len(axes) == 1 else axes)


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


def _unary(name: str) -> Unary:
    return next(u for u in UNARY if u.name == name)


SCALE = 0.75


def _body_fn(prog: Program):
    """The per-shard function (elementwise ops, then an optional row sum + psum over the row axes)."""

    def body(x):
        for name in prog.ops:
            x = SCALE * x if name == "scale" else _unary(name).jax_fn(x)
        if prog.reduce_rows:
            x = jnp.sum(x, axis=0, keepdims=True)
            if prog.row_axes:
                x = jax.lax.psum(x, prog.row_axes)
        return x

    return body


def _np_forward(prog: Program, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f(x), f'(x)) of the elementwise part, unsharded, in NumPy (chain rule by hand)."""
    val, der = x.astype(np.float64), np.ones_like(x, dtype=np.float64)
    for name in prog.ops:
        if name == "scale":
            val, der = SCALE * val, SCALE * der
        else:
            u = _unary(name)
            val, der = u.np_fn(val), der * u.np_deriv(val)
    return val, der


def _np_out(prog: Program, elementwise: np.ndarray) -> np.ndarray:
    return elementwise.sum(axis=0, keepdims=True) if prog.reduce_rows else elementwise


def _setup(prog: Program):
    shape, names = MESHES[prog.mesh_index]
    mesh = jax_api.make_mesh_nd(shape, names)
    rng = np.random.RandomState(prog.seed)
    x = rng.uniform(-1.5, 1.5, size=prog.shape).astype(np.float32)
    t = rng.uniform(-1.0, 1.0, size=prog.shape).astype(np.float32)
    sharding = NamedSharding(mesh, prog.in_spec)
    g = jax_api.shard_map(_body_fn(prog), mesh=mesh, in_specs=(prog.in_spec,), out_specs=prog.out_spec)
    return mesh, g, x, t, jax.device_put(x, sharding), jax.device_put(t, sharding)


def _describe(prog: Program) -> dict:
    return {"mesh": dict(prog.mesh_shape), "in_spec": str(prog.in_spec), "out_spec": str(prog.out_spec),
            "shape": list(prog.shape), "ops": list(prog.ops), "reduce_rows": prog.reduce_rows}


# A 2-D mesh with both axes on the rows and a psum: the widest collective the layer generates.
@example(prog=Program(4, ("x", "y"), (), 1, 2, ("sin", "square"), True, 7))
@given(prog=programs())
def test_linearize_and_jvp_match_the_unsharded_derivative(prog, devices_ok, observe):
    _mesh, g, x_host, t_host, x, t = _setup(prog)  # noqa: F841 - mesh kept alive
    val, der = _np_forward(prog, x_host)
    y_ref, ydot_ref = _np_out(prog, val), _np_out(prog, der * t_host)

    def both(x, t):  # one compiled program per example: linearize and jvp of the same point
        y, lin = jax.linearize(g, x)
        return y, lin(t), jax.jvp(g, (x,), (t,))[1]

    y, ydot_lin, ydot = jax.jit(both)(x, t)
    observe.close(y, y_ref, name="primal_out", **TOL)
    observe.close(ydot_lin, ydot_ref, name="linearize", **TOL)
    observe.close(ydot, ydot_ref, name="jvp", **TOL)
    observe.record(program=_describe(prog))
    # IR invariant: the linearized map is itself a shard_map (the tangent runs per shard, not gathered).
    lin_jaxpr = str(jax.make_jaxpr(lambda t: jax.linearize(g, x)[1](t))(t))
    assert "shard_map" in lin_jaxpr, f"no shard_map in the linearized jaxpr: {lin_jaxpr[:400]}"


@example(prog=Program(5, ("y",), ("x",), 2, 1, ("scale",), True, 3))
@given(prog=programs(linear=True))
def test_linear_transpose_is_the_adjoint(prog, devices_ok, observe):
    mesh, g, x_host, _t, x, _ = _setup(prog)
    rng = np.random.RandomState(prog.seed + 1)
    out_shape = (1, prog.shape[1]) if prog.reduce_rows else prog.shape
    ct_host = rng.uniform(-1.0, 1.0, size=out_shape).astype(np.float32)
    ct = jax.device_put(ct_host, NamedSharding(mesh, prog.out_spec))

    (xt,) = jax.jit(lambda ct: jax.linear_transpose(g, x)(ct))(ct)
    # Adjoint of x -> SCALE * x (then a row sum): broadcast the cotangent back over the rows.
    ref = SCALE * (np.broadcast_to(ct_host, prog.shape) if prog.reduce_rows else ct_host)
    observe.close(xt, ref, name="transpose", **TOL)
    # <g(x), ct> == <x, g^T(ct)>, computed in float64 from the values jax returned.
    lhs = float(np.vdot(np.asarray(g(x), np.float64), ct_host.astype(np.float64)))
    rhs = float(np.vdot(x_host.astype(np.float64), np.asarray(xt, np.float64)))
    observe.record(program=_describe(prog), adjoint_gap=abs(lhs - rhs))
    assert abs(lhs - rhs) <= 1e-4 * max(1.0, abs(lhs)), (lhs, rhs)


@pytest.mark.parametrize("mark", ["implicit", "pvary", "pcast"])
@example(prog=Program(3, ("x",), (), 1, 1, ("tanh",), True, 11))
@given(prog=programs())
def test_grad_with_a_replicated_weight_matches_numpy(mark, prog, devices_ok, observe):
    """loss(w, x) = sum(shard_map(body)(w, x) ** 2) with body = ops(x) * w, w a replicated scalar.

    `implicit` leaves w unmarked (jax inserts the varying cast itself from 0.6.0); `pvary` / `pcast`
    mark it explicitly. The gradient with respect to w sums every shard's contribution (the
    transpose of the marking is a psum), the one with respect to x stays sharded.
    """
    marker = jax_api.mark_varying(mark) if mark != "implicit" else None
    shape, names = MESHES[prog.mesh_index]
    mesh = jax_api.make_mesh_nd(shape, names)
    rng = np.random.RandomState(prog.seed)
    x_host = rng.uniform(-1.5, 1.5, size=prog.shape).astype(np.float32)
    w_host = np.float32(rng.uniform(0.5, 1.5))
    inner = _body_fn(Program(prog.mesh_index, prog.row_axes, prog.col_axes, prog.rows_per, prog.cols_per,
                             prog.ops, False, prog.seed))

    def body(w, x):
        if marker is not None and prog.varying:
            w = marker(w, prog.varying)
        y = inner(x) * w
        if prog.reduce_rows:
            y = jnp.sum(y, axis=0, keepdims=True)
            if prog.row_axes:
                y = jax.lax.psum(y, prog.row_axes)
        return y

    sm = jax_api.shard_map(body, mesh=mesh, in_specs=(P(), prog.in_spec), out_specs=prog.out_spec)

    def loss(w, x):
        return jnp.sum(sm(w, x) ** 2)

    x = jax.device_put(x_host, NamedSharding(mesh, prog.in_spec))
    gw, gx = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.float32(w_host), x)

    val, der = _np_forward(prog, x_host)
    out = _np_out(prog, val * float(w_host))
    upstream = 2.0 * out  # dloss/dout
    back = np.broadcast_to(upstream, prog.shape) if prog.reduce_rows else upstream
    observe.close(gw, float(np.sum(back * val)), name="grad_w", rtol=1e-4, atol=1e-4)  # the loss squares and sums up to 32 generated values, its gradient sums them again: two n-term reductions
    observe.close(gx, back * float(w_host) * der, name="grad_x", rtol=1e-4, atol=1e-4)  # of chains with exp/tanh in another order than NumPy's: 1e-4 (~800 ulps at 1) covers n * eps * the chain's gain
    observe.record(program=_describe(prog), mark=mark)
    if marker is not None and prog.varying:
        prims = str(jax.make_jaxpr(jax.grad(loss))(jnp.float32(w_host), x))
        assert ("pvary" in prims or "pcast" in prims), "the explicit marking is not in the jaxpr"


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
