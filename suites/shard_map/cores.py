"""shard_map scenario cores: plain functions over their inputs, called by the tests and inlined
by `harness report` into standalone reproducers (see suites/compute_on/cores.py for the rules).

`CORES` maps each test to its core; a property test maps to (core, the @example it pins).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from harness.incell import numerics
from harness.incell.compat import jax_api
from harness.incell.defaults import check_defaults

N_DEVICES = 8
AXIS = "x"
P_PRIMAL = np.array([1.5, -0.5], dtype=np.float32)  # replicated primal (2 elements per shard)
MESHES = [((1,), ("x",)), ((2,), ("x",)), ((4,), ("x",)), ((8,), ("x",)), ((2, 4), ("x", "y")), ((4, 2), ("x", "y"))]
TOL = dict(rtol=2e-5, atol=2e-5)  # generated chains (exp, tanh, ...) through linearize/transpose, means over shards vs float64: 168 ulps at 1 (ulp-tight: test_tight_numerics.py)


@dataclass(frozen=True)
class Unary:
    """An elementwise function with its NumPy value and closed-form derivative."""

    name: str
    jax_fn: object
    np_fn: object
    np_deriv: object


UNARY = [
    Unary("sin", jnp.sin, np.sin, np.cos),
    Unary("tanh", jnp.tanh, np.tanh, lambda x: 1.0 - np.tanh(x) ** 2),
    Unary("square", lambda x: x * x, lambda x: x * x, lambda x: 2.0 * x),
    Unary("affine", lambda x: 1.5 * x - 0.25, lambda x: 1.5 * x - 0.25, lambda x: np.full_like(x, 1.5)),
    Unary("softplus", jax.nn.softplus, lambda x: np.logaddexp(0.0, x), lambda x: 1.0 / (1.0 + np.exp(-x))),
]


def need_devices(n: int = N_DEVICES) -> None:
    if len(jax.devices()) < n:
        pytest.skip(f"needs {n} devices, have {len(jax.devices())} (set XLA_FLAGS=--xla_force_host_platform_device_count=8)")


def reference(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The unsharded computation, per shard, in NumPy: bwd(fwd(t_s)) for f = mean(x**2)."""
    n = p.size
    out = []
    for t_s in t.reshape(N_DEVICES, n):
        tangent_out = np.mean(2 * p * t_s)  # fwd: d/dp mean(p**2) . t_s
        out.append(2 * p * tangent_out / n)  # bwd: transpose of fwd applied to tangent_out
    return np.concatenate(out)


def jaxpr_primitives(jaxpr_text: str) -> list[str]:
    return sorted(set(re.findall(r"= (\w+)\[", jaxpr_text)) | set(re.findall(r"= (\w+) ", jaxpr_text)))


def linearize_transpose(variant: str, observe) -> None:
    """jax#28260: linearize mean(x**2) at a replicated primal, transpose, apply to a sharded tangent."""
    need_devices()
    mesh = jax_api.make_mesh(N_DEVICES, AXIS)
    mark = None  # the primal marking each variant applies inside the shard_map body
    if variant == "pvary":
        pvary = jax_api.pvary()
        mark = lambda p: pvary(p, AXIS)  # noqa: E731
    elif variant == "pcast":
        pcast = jax_api.pcast_varying()
        mark = lambda p: pcast(p, AXIS)  # noqa: E731
    seen: dict[str, list[str] | None] = {}

    def f(x):
        return jnp.mean(x**2)

    def m(p, t):
        if mark is not None:
            p = mark(p)
        seen["primal_varying_axes"] = jax_api.varying_axes(p)
        seen["tangent_varying_axes"] = jax_api.varying_axes(t)
        _y, fwd = jax.linearize(f, p)
        bwd = jax.linear_transpose(fwd, p)
        return bwd(fwd(t))

    p = jnp.asarray(P_PRIMAL)
    t_host = np.arange(N_DEVICES * P_PRIMAL.size, dtype=np.float32) / 7.0
    t = jax.device_put(jnp.asarray(t_host), NamedSharding(mesh, P(AXIS)))
    g = jax_api.shard_map(functools.partial(m, p), mesh=mesh, in_specs=(P(AXIS),), out_specs=(P(AXIS),),
                          check=variant != "no_replication_check")
    observe.record(shard_map=jax_api.shard_map_home(), check_kwarg=jax_api.check_kwarg())

    (out,) = g(t)  # the failure (ValueError on 0.6.0+) surfaces here, uncaught
    observe.close(out, reference(P_PRIMAL, t_host), rtol=1e-6, atol=1e-6)  # mean of 2 products per shard, NumPy float32 reference in another order: a few ulps; 1e-6 is ~8 at 1

    jaxpr = str(jax.make_jaxpr(g)(t))
    prims = jaxpr_primitives(jaxpr)
    lowered = jax.jit(g).lower(t).as_text()
    shardy = bool(getattr(jax.config, "jax_use_shardy_partitioner", False))
    markers = {"gspmd": "@Sharding" in lowered and "SPMDFullToShardShape" in lowered,
               "shardy": "sdy.manual_computation" in lowered}
    observe.record(jaxpr_primitives=prims, sharding_markers=markers, shardy_partitioner=shardy, **seen)
    observe.record(jaxpr=jaxpr[:4000], stablehlo=lowered[:6000])

    # The manual region must reach the lowered module, as the partitioner in use spells it.
    assert markers["shardy" if shardy else "gspmd"], f"no {'sdy.manual_computation' if shardy else 'GSPMD @Sharding/SPMDFullToShardShape'} in the lowered module"
    if variant in ("pvary", "pcast"):
        # The marking is a real primitive on the primal and its type says it varies over the axis.
        assert "pvary" in prims or "pcast" in prims, f"no pvary/pcast equation in the jaxpr: {prims}"
        assert seen["primal_varying_axes"] == [AXIS], seen
    if seen.get("tangent_varying_axes") is not None:  # None: this jax's public type has no vma (0.5.3)
        # One behaviour per variant (issue 28: no case accepts two): the sharded tangent varies over
        # x where the check tracks it, and with the check off nothing is tracked.
        assert seen["tangent_varying_axes"] == ([] if variant == "no_replication_check" else [AXIS]), seen


def replicated_primal_linearize_transpose(marking: str, mesh_index: int, per_shard: int, op: str, seed: int,
                                          observe) -> None:
    """bwd(fwd(t)) per shard for f = mean(op(p)), p replicated (closed over), t sharded, vs NumPy."""
    need_devices()
    shape, names = MESHES[mesh_index]
    mesh = jax_api.make_mesh_nd(shape, names)
    n_shards = int(np.prod(shape))
    marker = jax_api.mark_varying(marking) if marking in ("pvary", "pcast") else None
    unary = next(u for u in UNARY if u.name == op)
    rng = np.random.RandomState(seed)
    p_host = rng.uniform(-1.5, 1.5, size=per_shard).astype(np.float32)
    t_host = rng.uniform(-1.0, 1.0, size=per_shard * n_shards).astype(np.float32)

    def f(x):
        return jnp.mean(unary.jax_fn(x))

    def m(p, t):
        if marker is not None:
            p = marker(p, names)
        _y, fwd = jax.linearize(f, p)
        bwd = jax.linear_transpose(fwd, p)
        return bwd(fwd(t))

    spec = P(names if len(names) > 1 else names[0])
    g = jax_api.shard_map(functools.partial(m, jnp.asarray(p_host)), mesh=mesh, in_specs=(spec,),
                          out_specs=(spec,), check=marking != "no_check")
    t = jax.device_put(t_host, NamedSharding(mesh, spec))
    (out,) = jax.jit(g)(t)  # the vma error of jax#28260 surfaces here, uncaught

    dp = unary.np_deriv(p_host.astype(np.float64))
    ref = np.concatenate([dp * np.mean(dp * ts) / per_shard for ts in t_host.reshape(n_shards, -1)])
    observe.close(out, ref, **TOL)
    observe.record(mesh=dict(zip(names, shape)), op=op, per_shard=per_shard, marking=marking)


# --- test_linearize_transpose.py: grad through a body that marks its weight varying ---

def grad_of_shard_map_with_pvary(observe) -> None:
    """Upstream test_pvary_in_shmap_of_grad: grad through a shard_map whose body marks a replicated
    weight varying; the gradient must equal the unsharded one (psum of per-shard contributions)."""
    need_devices()
    mesh = jax_api.make_mesh(N_DEVICES, AXIS)
    pvary = jax_api.pvary()
    w = jnp.asarray(np.array([0.5, -2.0], dtype=np.float32))
    x_host = (np.arange(N_DEVICES * 2, dtype=np.float32).reshape(N_DEVICES, 2) - 3.0) / 5.0
    x = jax.device_put(jnp.asarray(x_host), NamedSharding(mesh, P(AXIS)))

    def body(w, x):
        w = pvary(w, AXIS)
        return jax.lax.psum(jnp.sum((x * w) ** 2), AXIS)

    def loss(w, x):
        return jax_api.shard_map(body, mesh=mesh, in_specs=(P(), P(AXIS)), out_specs=P())(w, x)

    grad = jax.grad(loss)(w, x)
    ref = np.sum(2 * x_host**2 * np.asarray(w), axis=0)  # d/dw sum((x*w)**2), all shards
    observe.close(grad, ref, rtol=1e-5, atol=1e-5)  # 16 float32 terms 2 x^2 w summed in XLA's psum order vs NumPy's: gamma_16 ~ 1e-6 relative, with margin
    jaxpr = str(jax.make_jaxpr(jax.grad(loss))(w, x))
    prims = jaxpr_primitives(jaxpr)
    observe.record(jaxpr_primitives=prims)
    assert "pvary" in prims, prims
    # The transpose of pvary is a psum over the axis: the cotangent of a replicated weight.
    assert "psum" in prims or "psum_invariant" in prims or "psum2" in prims, prims


# --- test_transpose_rules.py (upstream's fan-out / fan-in transpose tests, checked by value) ---

N_SMALL = 4  # mesh size, as upstream's tests use
PSUM_FAMILY = {"psum", "psum2", "psum_invariant"}


def small_mesh():
    """A 1-D mesh of 4 devices over "x" (skips with fewer)."""
    need_devices(N_SMALL)
    return jax_api.make_mesh(N_SMALL, "x")


def _prims(jaxpr) -> set[str]:
    return set(re.findall(r"\b([a-z_0-9]+)\[", str(jaxpr))) | set(re.findall(r"= ([a-z_0-9]+) ", str(jaxpr)))


def fanout_transposes_to_a_sum(observe) -> None:
    """in P(), out P('x'): every shard returns the replicated input; the cotangent of the input is
    the sum of every shard's cotangent block (upstream test_fanout_specs_transpose_to_psum)."""
    f = jax_api.shard_map(lambda x: x, mesh=small_mesh(), in_specs=(P(),), out_specs=P("x"))
    x = np.array([1.0, -2.0], np.float32)
    ct = np.arange(N_SMALL * 2, dtype=np.float32) / 3.0
    _y, vjp = jax.vjp(f, jnp.asarray(x))
    (xt,) = vjp(jnp.asarray(ct))
    blocks = ct.astype(np.float64).reshape(N_SMALL, 2)
    observe.record(transpose=numerics.assert_within_bound(
        xt, blocks.sum(axis=0), numerics.gamma(N_SMALL - 1, "float32") * np.abs(blocks).sum(axis=0),
        why=f"a {N_SMALL}-term float32 sum in any order: gamma_{N_SMALL - 1}"))
    prims = _prims(jax.make_jaxpr(vjp)(jnp.asarray(ct)))
    observe.record(transpose_primitives=sorted(prims))
    assert prims & PSUM_FAMILY, f"the transpose of a fan-out has no psum: {sorted(prims)}"
    assert "all_gather" not in prims, sorted(prims)


def psum_to_replicated_transposes_to_a_broadcast(observe) -> None:
    """in P('x'), out P() of psum: each shard's input cotangent is the whole output cotangent
    (upstream test_fanin_psum_transposes_to_fanout)."""
    mesh = small_mesh()
    f = jax_api.shard_map(lambda x: jax.lax.psum(x, "x"), mesh=mesh, in_specs=(P("x"),), out_specs=P())
    x = jax.device_put(jnp.arange(N_SMALL * 2, dtype=jnp.float32), NamedSharding(mesh, P("x")))
    ct = np.array([0.5, -1.5], np.float32)
    y, vjp = jax.vjp(f, x)
    observe.close(y, np.arange(N_SMALL * 2, dtype=np.float32).reshape(N_SMALL, 2).sum(axis=0), rtol=0, atol=0,
                  name="forward")  # small integers: exact
    (xt,) = vjp(jnp.asarray(ct))
    observe.close(xt, np.tile(ct, N_SMALL), rtol=0, atol=0, name="transpose")
    prims = _prims(jax.make_jaxpr(vjp)(jnp.asarray(ct)))
    observe.record(transpose_primitives=sorted(prims))
    # A broadcast of the cotangent: summing it again would scale the gradient by N.
    assert not (prims & PSUM_FAMILY), f"the transpose of psum -> replicated sums again: {sorted(prims)}"


def psum_to_sharded_transposes_to_a_psum(observe) -> None:
    """in P('x'), out P('x') of psum: the output is replicated data laid out per shard, so the
    input cotangent is the psum of the cotangent blocks (upstream test_psum_with_implicit_fanout_self_transposes)."""
    mesh = small_mesh()
    f = jax_api.shard_map(lambda x: jax.lax.psum(x, "x"), mesh=mesh, in_specs=(P("x"),), out_specs=P("x"))
    x = jax.device_put(jnp.arange(N_SMALL * 2, dtype=jnp.float32), NamedSharding(mesh, P("x")))
    ct = (np.arange(N_SMALL * 2, dtype=np.float32) - 3.0) / 2.0
    _y, vjp = jax.vjp(f, x)
    (xt,) = vjp(jax.device_put(jnp.asarray(ct), NamedSharding(mesh, P("x"))))
    observe.close(xt, np.tile(ct.reshape(N_SMALL, 2).sum(axis=0), N_SMALL), rtol=0, atol=0)  # sums of halves: exact in any order


def replicated_identity_transposes_to_identity(observe) -> None:
    """in P(), out P() identity: its vjp is the identity (upstream test_transpose_identity), also
    for the vjp of the vjp."""
    f = jax_api.shard_map(lambda x: x, mesh=small_mesh(), in_specs=(P(),), out_specs=P())
    _y, vjp = jax.vjp(f, jnp.float32(1.0))
    (ct,) = vjp(jnp.float32(2.5))
    observe.close(ct, np.float32(2.5), rtol=0, atol=0, name="vjp")
    _y2, vjp2 = jax.vjp(vjp, jnp.float32(1.0))
    (ct2,) = vjp2((jnp.float32(-4.0),))
    observe.close(ct2, np.float32(-4.0), rtol=0, atol=0, name="vjp_of_vjp")
    prims = _prims(jax.make_jaxpr(vjp)(jnp.float32(2.5)))
    observe.record(transpose_primitives=sorted(prims))
    assert not (prims & PSUM_FAMILY), f"a replicated identity transposes with a collective: {sorted(prims)}"


def marking_varying_and_grad_sums_back(mark: str, observe) -> None:
    """Upstream test_pvary (pcast from 0.8.2): marking a replicated input varying over x gives a
    value whose type says so, returned sharded; grad of the sum is N per element."""
    mesh = small_mesh()
    marker = jax_api.mark_varying(mark)
    seen = {}

    def body(x):
        y = marker(x, "x")
        seen["vma"] = jax_api.varying_axes(y)
        return y

    f = jax_api.shard_map(body, mesh=mesh, in_specs=(P(),), out_specs=P("x"))
    x = jnp.arange(8.0)
    observe.close(f(x), np.tile(np.arange(8.0), N_SMALL), rtol=0, atol=0, name="forward")
    observe.close(jax.grad(lambda x: f(x).sum())(x), np.full(8, float(N_SMALL)), rtol=0, atol=0, name="grad")
    observe.record(varying_axes=seen["vma"])
    assert seen["vma"] == ["x"], seen


# --- test_defaults.py (shard_map called bare: the replication check on by default) ---

AXIS_I = "i"
X_SMALL = np.arange(2 * N_SMALL, dtype=np.float32)  # small integers: every sum below is exact in float32


def mesh_i():
    """A 1-D mesh of the first 4 devices over "i" (skips with fewer)."""
    need_devices(N_SMALL)
    return Mesh(np.array(jax.devices()[:N_SMALL]), (AXIS_I,))


def bare_shard_map(observe):
    """shard_map itself, its defaults recorded (the check on is the relied-on one)."""
    api, shard_map = jax_api.shard_map_itself()
    check = {jax_api.SHARD_MAP: "check_vma", jax_api.EXPERIMENTAL_SHARD_MAP: "check_rep"}[api]
    check_defaults(observe, api, shard_map, {check: True})
    observe.record(shard_map=api)
    return shard_map


def defaults_refuse_an_unprovable_replicated_output(observe) -> None:
    """x * 2 varies over the axis; out_specs=P() claims it is replicated. With the check on (the
    default) that is an error at trace time; with it off, each device's shard is returned as if
    it were the whole replicated value (a wrong answer, no error)."""
    mesh = mesh_i()
    shard_map = bare_shard_map(observe)
    f = jax.jit(shard_map(lambda x: x * 2.0, mesh=mesh, in_specs=P(AXIS_I), out_specs=P()))
    try:
        out = f(X_SMALL)
    except ValueError as exc:
        assert re.search("out_specs which require replication which can't be statically inferred", str(exc)), \
            f"refused with another error: {exc}"
    else:
        raise AssertionError(f"shard_map with its defaults returned {np.asarray(out)} for an output it cannot prove "
                             "replicated (DID NOT RAISE ValueError)")


def defaults_match_numpy(observe) -> None:
    """The common call: a sharded input, a psum, a replicated output, nothing else passed."""
    mesh = mesh_i()
    shard_map = bare_shard_map(observe)
    f = jax.jit(shard_map(lambda x: jax.lax.psum(x, AXIS_I), mesh=mesh, in_specs=P(AXIS_I), out_specs=P()))
    # Sums of small integers in float32 are exact: no tolerance.
    observe.close(f(X_SMALL), X_SMALL.reshape(N_SMALL, -1).sum(axis=0), rtol=0, atol=0)


# --- test_complex.py (complex inputs: the transpose, not the conjugate transpose) ---

def complex_normal(shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np.complex64)


C_COEF = complex_normal((N_SMALL * 2,), 13)
C_X = complex_normal((N_SMALL * 2,), 14)
C_CT = complex_normal((N_SMALL * 2,), 15)
C_W = complex_normal((3, 3), 16)


def _close_complex(observe, got, want, name):
    # One complex multiply per element: |err| <= sqrt(2) * gamma_2 * |c||x| (Higham 3.6); in ulps
    # of each component that is a few ulps: 4 ulps of the magnitude, per component.
    bound = 4 * numerics.ulp(np.abs(want), "float32")
    observe.record(**{name: numerics.assert_within_bound(np.asarray(got).real, want.real, bound, why="complex multiply, 4 ulp")})
    observe.record(**{f"{name}.imag": numerics.assert_within_bound(np.asarray(got).imag, want.imag, bound, why="complex multiply, 4 ulp")})


def complex_scaling_transpose(sharding: str, observe) -> None:
    """f(x) = c * x, c complex: f^T(ct) = c * ct (not conj(c) * ct); the bilinear pairing holds."""
    mesh = mesh_i()
    c_spec = P(AXIS_I) if sharding == "sharded" else P()
    c = C_COEF if sharding == "sharded" else C_COEF[:1]
    f = jax_api.shard_map(lambda c, x: c * x, mesh=mesh, in_specs=(c_spec, P(AXIS_I)), out_specs=P(AXIS_I), check=True)
    fx = lambda x: f(jnp.asarray(c), x)  # noqa: E731
    y = jax.jit(fx)(C_X)
    _close_complex(observe, y, c.astype(np.complex128) * C_X, "primal")
    (xt,) = jax.linear_transpose(fx, C_X)(jnp.asarray(C_CT))
    want = c.astype(np.complex128) * C_CT
    conj = np.conj(c.astype(np.complex128)) * C_CT
    observe.record(transpose_minus_conjugate=float(np.max(np.abs(np.asarray(xt) - conj))))
    _close_complex(observe, xt, want, "transpose")
    # the bilinear pairing: sum(f(x) * y) == sum(x * f^T(y)), no conjugation anywhere
    lhs, rhs = np.sum(np.asarray(y) * C_CT), np.sum(C_X * np.asarray(xt))
    # Both sides sum the same 8 products |c||x||ct|: y and xt each carry 4 ulps (relative 2**-21),
    # and each side's complex products and sum add sqrt(2) gamma_10 (Higham 3.6), in float64 here.
    terms = float(np.sum(np.abs(c) * np.abs(C_X) * np.abs(C_CT)))
    tol = (2 * 2.0**-21 + 2 * np.sqrt(2) * numerics.gamma(10, "float32")) * terms
    observe.record(pairing_gap=float(abs(lhs - rhs)), pairing_tol=tol)
    assert abs(lhs - rhs) <= tol, f"<f(x), y> = {lhs} but <x, f^T(y)> = {rhs} (allowed {tol:.3g})"


def complex_matmul_grad(observe) -> None:
    """vjp of x -> x @ W (rows sharded) with complex W is ct @ W^T, not ct @ W^H."""
    mesh = mesh_i()
    xs, cts = complex_normal((N_SMALL * 2, 3), 17), complex_normal((N_SMALL * 2, 3), 18)
    f = jax_api.shard_map(lambda x, w: x @ w, mesh=mesh, in_specs=(P(AXIS_I), P()), out_specs=P(AXIS_I), check=True)
    _, vjp = jax.vjp(lambda x: f(x, jnp.asarray(C_W)), xs)
    (gx,) = vjp(jnp.asarray(cts))
    want = cts.astype(np.complex128) @ C_W.T.astype(np.complex128)
    # a 3-term complex dot per element: gamma_{3+2} of sum |ct_k||w_k| per component (Higham 3.6)
    bound = np.sqrt(2) * numerics.gamma(5, "float32") * (np.abs(cts) @ np.abs(C_W).T)
    observe.record(vjp=numerics.assert_within_bound(np.asarray(gx).real, want.real, bound, why="3-term complex dot: sqrt(2) gamma_5"))
    observe.record(vjp_imag=numerics.assert_within_bound(np.asarray(gx).imag, want.imag, bound, why="3-term complex dot: sqrt(2) gamma_5"))


# --- test_tight_numerics.py (one op sharded, then a psum, within bounds derived per op) ---

TIGHT_X = np.random.default_rng(5).uniform(-4.0, 4.0, (N_SMALL * 8, 16)).astype(np.float32)
TIGHT_OPS = {"sin": (jnp.sin, np.sin), "exp": (jnp.exp, np.exp), "tanh": (jnp.tanh, np.tanh),
             "logistic": (jax.nn.sigmoid, lambda v: 1.0 / (1.0 + np.exp(-v))), "mul": (lambda v: v * 1.5, lambda v: v * 1.5)}


def sharded_op_and_psum_within_bounds(op: str, observe) -> None:
    mesh = mesh_i()
    jax_op, ref_op = TIGHT_OPS[op]
    max_ulps, why = numerics.OP_ULPS[op]

    def body(x):
        y = jax_op(x)
        return y, jax.lax.psum(jnp.sum(y, axis=0, keepdims=True), AXIS_I)

    f = jax.jit(jax_api.shard_map(body, mesh=mesh, in_specs=P(AXIS_I), out_specs=(P(AXIS_I), P()), check=True))
    y, total = f(TIGHT_X)
    y_ref = ref_op(TIGHT_X.astype(np.float64))
    observe.record(elementwise=numerics.assert_within_ulps(y, y_ref, max_ulps=max_ulps, why=why))
    # The sum of R rows: each term carries its op error (<= max_ulps ulp at the term), then R - 1
    # additions in some order (local sums, then the psum across shards): gamma_{R-1} * sum |terms|.
    rows = TIGHT_X.shape[0]
    bound = (max_ulps * numerics.ulp(y_ref, "float32")).sum(axis=0, keepdims=True) \
        + numerics.gamma(rows - 1, "float32") * np.abs(y_ref).sum(axis=0, keepdims=True)
    observe.record(psum=numerics.assert_within_bound(
        total, y_ref.sum(axis=0, keepdims=True), bound,
        why=f"{rows} terms each within {max_ulps} ulp ({why}), summed in float32: gamma_{rows - 1}"))


# --- test_properties.py: generated meshes, specs and functions vs NumPy ---

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


def linearize_and_jvp_match_numpy(mesh_index, row_axes, col_axes, rows_per, cols_per, ops, reduce_rows, seed,
                                  observe) -> None:
    """linearize and jvp of one generated Program (its fields) vs the NumPy derivative, and the
    linearized map still a shard_map."""
    need_devices()
    prog = Program(mesh_index, row_axes, col_axes, rows_per, cols_per, tuple(ops), reduce_rows, seed)
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


def linear_transpose_is_the_adjoint(mesh_index, row_axes, col_axes, rows_per, cols_per, ops, reduce_rows, seed,
                                    observe) -> None:
    """linear_transpose of a generated linear Program (its fields) vs the adjoint in NumPy."""
    need_devices()
    prog = Program(mesh_index, row_axes, col_axes, rows_per, cols_per, tuple(ops), reduce_rows, seed)
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


def grad_with_a_replicated_weight(mark: str, mesh_index, row_axes, col_axes, rows_per, cols_per, ops, reduce_rows,
                                  seed, observe) -> None:
    """loss(w, x) = sum(shard_map(body)(w, x) ** 2) with body = ops(x) * w, w a replicated scalar.

    `implicit` leaves w unmarked (jax inserts the varying cast itself from 0.6.0); `pvary` / `pcast`
    mark it explicitly. The gradient with respect to w sums every shard's contribution (the
    transpose of the marking is a psum), the one with respect to x stays sharded.
    """
    need_devices()
    prog = Program(mesh_index, row_axes, col_axes, rows_per, cols_per, tuple(ops), reduce_rows, seed)
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


# the properties' pinned examples (their @example; Program's fields, as literals)
LINEARIZE_EXAMPLE = {"mesh_index": 4, "row_axes": ("x", "y"), "col_axes": (), "rows_per": 1, "cols_per": 2,
                     "ops": ("sin", "square"), "reduce_rows": True, "seed": 7}
TRANSPOSE_EXAMPLE = {"mesh_index": 5, "row_axes": ("y",), "col_axes": ("x",), "rows_per": 2, "cols_per": 1,
                     "ops": ("scale",), "reduce_rows": True, "seed": 3}
GRAD_EXAMPLE = {"mesh_index": 3, "row_axes": ("x",), "col_axes": (), "rows_per": 1, "cols_per": 1,
                "ops": ("tanh",), "reduce_rows": True, "seed": 11}



# --- test_space.py: generated programs over every collective jax ships, vs a float64 NumPy model ---
#
# A program is a mesh (1-D, 2-D or 3-D over the 8 CPU devices), the mesh axes that shard the rows
# and the columns of a 2-D input (the others replicate it), a per-device block shape, a list of
# steps (elementwise ops and collectives), and the out specs. `space_reference` runs the same steps
# on every device's block in float64 NumPy, from the collectives' documented semantics, never from
# jax. Each step is (kind, mesh axes, argument), all literals, so a failing example is a repro.

SPACE_MESHES = [((8,), ("x",)), ((4,), ("x",)), ((2,), ("x",)), ((2, 4), ("x", "y")), ((4, 2), ("x", "y")),
                ((2, 2, 2), ("x", "y", "z"))]
# Collectives the model knows (their per-device semantics below). Anything else jax.lax ships from
# its parallel module must be in SPACE_HOLES with the reason it is not generated.
SPACE_REDUCTIONS = ("psum", "pmean", "pmax", "pmin")
SPACE_MODELLED = SPACE_REDUCTIONS + ("all_gather", "psum_scatter", "all_to_all", "ppermute", "pshuffle",
                                     "pbroadcast", "pswapaxes", "axis_index", "pvary", "pcast")
SPACE_HOLES = {
    "ragged_all_to_all": "takes an output buffer and per-peer offsets/sizes: a ragged layout the block model does not draw",
    "axis_size": "a static int of the mesh, no data: checked by value in test_axis_size_is_the_mesh_size",
    "all_gather_invariant": "all_gather with an invariant result type; its values are all_gather's",
    "psend": "point-to-point send without a matching generated receiver (pipeline API)",
    "precv": "point-to-point receive without a matching generated sender (pipeline API)",
}
SPACE_NOT_DIFFERENTIABLE = ("pmax", "pmin")  # jax has no JVP rule for them (NotImplementedError)
# Holes on one backend only: generated elsewhere, never here.
SPACE_BACKEND_HOLES = {
    ("cpu", "pbroadcast"): "XLA:CPU cannot run it: `HLO opcode collective-broadcast is not supported by XLA:CPU "
                           "ThunkEmitter` (jax 0.4.38 - 0.9), `MLIR translation rule for primitive 'pbroadcast' not "
                           "found for platform cpu` (0.10); pinned by test_pbroadcast_is_refused_on_cpu_by_message",
}
SPACE_UNARY = {"sin": (np.sin, np.cos, lambda v: -np.sin(v)),
               "tanh": (np.tanh, lambda v: 1 - np.tanh(v) ** 2, lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2)),
               "square": (np.square, lambda v: 2 * v, lambda v: np.full_like(v, 2.0))}
SPACE_UNARY_JAX = {"sin": jnp.sin, "tanh": jnp.tanh, "square": jnp.square}
# Roundings each unary op costs, in ulps of its result (numerics.OP_ULPS; square is one multiply).
SPACE_UNARY_ULPS = {"sin": numerics.OP_ULPS["sin"][0], "tanh": numerics.OP_ULPS["tanh"][0],
                    "square": numerics.OP_ULPS["mul"][0]}


def space_collectives() -> list[str]:
    """The collectives this jax ships: public jax.lax callables defined where psum is (its parallel
    module), plus pvary, which 0.6 - 0.9 define beside the varying type in jax's core."""
    home = jax.lax.psum.__module__
    names = {n for n in dir(jax.lax) if not n.startswith("_") and getattr(getattr(jax.lax, n), "__module__", "") == home}
    return sorted(names | ({"pvary"} if callable(getattr(jax.lax, "pvary", None)) else set()))


def space_generated() -> list[str]:
    """The collectives the generator draws here: shipped, modelled, and no hole on this backend."""
    backend = jax.default_backend()
    return sorted(n for n in set(space_collectives()) & set(SPACE_MODELLED) if (backend, n) not in SPACE_BACKEND_HOLES)


def pbroadcast_refused_on_cpu(observe) -> None:
    """pbroadcast on XLA:CPU: refused when run, by the message of the layer that lacks it. A release
    that runs it makes this case fail (news): then it joins the generated space on cpu."""
    need_devices(N_SMALL)
    if jax.default_backend() != "cpu":
        pytest.skip("needs cpu: elsewhere pbroadcast is in the generated space")
    mesh = jax_api.make_mesh_nd((N_SMALL,), ("x",))
    g = jax_api.shard_map(lambda x: jax.lax.pbroadcast(x, "x", 1), mesh=mesh, in_specs=(P("x"),),
                          out_specs=P("x"), check=False)
    try:  # pytest.raises written out: a standalone script imports no pytest
        jax.block_until_ready(jax.jit(g)(jnp.arange(2.0 * N_SMALL)))
    except Exception as exc:  # noqa: BLE001 - the message, checked below, says which refusal it is
        error = exc
    else:
        raise AssertionError("DID NOT RAISE: pbroadcast ran on XLA:CPU")
    observe.record(error=f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:200]}")
    assert re.search("collective-broadcast. is not supported by XLA:CPU|MLIR translation rule for primitive "
                     "'pbroadcast' not found for platform cpu", str(error)), observe["error"]


def _space_sizes(mesh_index: int) -> dict[str, int]:
    shape, names = SPACE_MESHES[mesh_index]
    return dict(zip(names, shape))


def _space_lin(coord: tuple[int, ...], names: tuple[str, ...], sizes: dict[str, int], axes) -> int:
    """The device's index along `axes` taken together, the first axis major (jax's order)."""
    i = 0
    for a in axes:
        i = i * sizes[a] + coord[names.index(a)]
    return i


def _space_peers(coord, names, sizes, axes) -> list[tuple[int, ...]]:
    """The devices that differ from `coord` only along `axes`, in their index order along them."""
    shape = tuple(sizes[n] for n in names)
    same = [k for k, n in enumerate(names) if n not in axes]
    peers = [c for c in np.ndindex(*shape) if all(c[k] == coord[k] for k in same)]
    return sorted(peers, key=lambda c: _space_lin(c, names, sizes, axes))


def space_step_shape(step, block: tuple[int, int], sizes: dict[str, int]) -> tuple[int, int] | None:
    """The block shape after `step`, or None where the step cannot apply to this shape."""
    kind, axes, arg = step
    n = int(np.prod([sizes[a] for a in axes])) if axes else 1
    r, c = block
    if kind == "all_gather":
        dim, tiled = arg
        return (r * n, c) if (dim == 0 or not tiled) else (r, c * n)
    if kind == "psum_scatter":
        if block[arg] % n:
            return None
        return (r // n, c) if arg == 0 else (r, c // n)
    if kind == "all_to_all":
        split, concat = arg
        if block[split] % n:
            return None
        out = list(block)
        out[split] //= n
        out[concat] *= n
        return tuple(out)
    if kind == "pswapaxes":
        return block if block[arg] == n else None
    return block


def space_step_varying(step, varying: frozenset) -> frozenset:
    """The mesh axes the value may vary over after `step` (a superset: an out spec must name them)."""
    kind, axes, _arg = step
    if kind in SPACE_REDUCTIONS:
        return varying - set(axes)
    if kind in ("unary", "scale"):
        return varying
    return varying | set(axes)


def _space_step_np(step, blocks: dict, names, sizes, primal: dict | None = None) -> dict:
    """One step on every device's block. With `primal`, `blocks` are tangents at those primals."""
    kind, axes, arg = step
    out = {}
    for coord, b in blocks.items():
        peers = _space_peers(coord, names, sizes, axes) if axes else [coord]
        i, n = _space_lin(coord, names, sizes, axes), len(peers)
        if kind == "unary":
            f, df, _ = SPACE_UNARY[arg]
            out[coord] = df(primal[coord]) * b if primal is not None else f(b)
        elif kind == "scale":
            out[coord] = SCALE * b
        elif kind in ("psum", "pmean"):
            s = np.sum([blocks[p] for p in peers], axis=0)
            out[coord] = s / n if kind == "pmean" else s
        elif kind in ("pmax", "pmin"):
            if primal is not None:
                raise NotImplementedError(f"{kind} has no derivative in the model (nor in jax)")
            out[coord] = (np.max if kind == "pmax" else np.min)([blocks[p] for p in peers], axis=0)
        elif kind == "all_gather":
            dim, tiled = arg
            parts = [blocks[p] for p in peers]
            out[coord] = np.concatenate(parts, axis=dim) if tiled else np.stack(parts).reshape(-1, b.shape[1])
        elif kind == "psum_scatter":
            s = np.sum([blocks[p] for p in peers], axis=0)
            out[coord] = np.split(s, n, axis=arg)[i]
        elif kind in ("all_to_all", "pswapaxes"):
            split, concat = arg if kind == "all_to_all" else (arg, arg)
            out[coord] = np.concatenate([np.split(blocks[p], n, axis=split)[i] for p in peers], axis=concat)
        elif kind == "ppermute":
            src = [s for s, d in arg if d == i]
            out[coord] = blocks[peers[src[0]]] if src else np.zeros_like(b)
        elif kind == "pshuffle":
            out[coord] = blocks[peers[arg[i]]]
        elif kind == "pbroadcast":
            out[coord] = blocks[peers[arg]]
        elif kind == "axis_index":
            out[coord] = b * (1.0 + i)
        elif kind in ("pvary", "pcast"):
            out[coord] = b
        else:
            raise AssertionError(f"no model for step {kind!r}")
    return out


def _space_split(x: np.ndarray, in_axes, block, names, sizes) -> dict:
    r, c = block
    out = {}
    for coord in np.ndindex(*(sizes[n] for n in names)):
        ri, ci = (_space_lin(coord, names, sizes, a) for a in in_axes)
        out[coord] = x[ri * r:(ri + 1) * r, ci * c:(ci + 1) * c].astype(np.float64)
    return out


def _space_join(blocks: dict, out_axes, names, sizes) -> np.ndarray:
    """The global output from the blocks per out spec; devices an unnamed axis tells apart must agree."""
    r, c = next(iter(blocks.values())).shape
    nr, nc = (int(np.prod([sizes[a] for a in axes])) if axes else 1 for axes in out_axes)
    out = np.full((nr * r, nc * c), np.nan)
    for coord, b in blocks.items():
        ri, ci = (_space_lin(coord, names, sizes, a) for a in out_axes)
        where = (slice(ri * r, (ri + 1) * r), slice(ci * c, (ci + 1) * c))
        if not np.isnan(out[where]).all():
            # The generator only leaves out axes the value cannot vary over: a model error otherwise.
            assert np.array_equal(out[where], b), f"devices disagree on a block the out spec replicates: {coord}"
        out[where] = b
    return out


def space_reference(prog: dict, x: np.ndarray, t: np.ndarray | None = None):
    """(f(x), jvp tangent or None, largest |intermediate|, error gain G, roundings k) in float64."""
    shape, names = SPACE_MESHES[prog["mesh_index"]]
    sizes = dict(zip(names, shape))
    vals = _space_split(x, prog["in_axes"], prog["block"], names, sizes)
    tans = _space_split(t, prog["in_axes"], prog["block"], names, sizes) if t is not None else None
    biggest = max(np.abs(x).max(), np.abs(t).max() if t is not None else 0.0)
    gain, roundings = 1.0, 0.0
    for step in prog["steps"]:
        kind, axes, arg = step
        n = int(np.prod([sizes[a] for a in axes])) if axes else 1
        if kind == "unary":
            v = np.concatenate([b.ravel() for b in vals.values()])
            _f, df, d2f = SPACE_UNARY[arg]
            # an input error d becomes |f'| d, and in the tangent f'(x) t also |f''| d |t|
            gain *= max(1.0, float(np.abs(df(v)).max()), float((np.abs(d2f(v)) * biggest).max()))
            roundings += 2 * SPACE_UNARY_ULPS[arg] + 1  # the op (in ulps = 2u each), the tangent's multiply
        elif kind == "scale":
            roundings += 1  # one multiply; SCALE < 1 shrinks errors
        elif axes:
            # At most an n-term sum, in the step or in its transpose (all_gather's is psum_scatter,
            # pvary's is psum, ...): n errors added, n roundings (pmean's division included).
            gain, roundings = gain * n, roundings + n
        if tans is not None:
            tans = _space_step_np(step, tans, names, sizes, primal=vals)
        vals = _space_step_np(step, vals, names, sizes)
        biggest = max([biggest] + [float(np.abs(b).max(initial=0)) for b in vals.values()]
                      + ([float(np.abs(b).max(initial=0)) for b in tans.values()] if tans else []))
    y = _space_join(vals, prog["out_axes"], names, sizes)
    ty = _space_join(tans, prog["out_axes"], names, sizes) if tans is not None else None
    return y, ty, biggest, gain, roundings


def space_jacobian(prog: dict, x: np.ndarray) -> np.ndarray:
    """d f / d x as a (outputs, inputs) float64 matrix: the model's jvp at each unit tangent."""
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = 1.0
        cols.append(space_reference(prog, x, e.reshape(x.shape))[1].ravel())
    return np.stack(cols, axis=1)


def _space_jax_step(step, x):
    kind, axes, arg = step
    name = axes[0] if len(axes) == 1 else tuple(axes)
    if kind == "unary":
        return SPACE_UNARY_JAX[arg](x)
    if kind == "scale":
        return SCALE * x
    if kind in SPACE_REDUCTIONS:
        return getattr(jax.lax, kind)(x, name)
    if kind == "all_gather":
        dim, tiled = arg
        y = jax.lax.all_gather(x, name, axis=dim, tiled=tiled)
        return y if tiled else y.reshape(-1, x.shape[1])
    if kind == "psum_scatter":
        return jax.lax.psum_scatter(x, name, scatter_dimension=arg, tiled=True)
    if kind == "all_to_all":
        return jax.lax.all_to_all(x, name, arg[0], arg[1], tiled=True)
    if kind == "pswapaxes":
        return jax.lax.pswapaxes(x, name, arg)
    if kind == "ppermute":
        return jax.lax.ppermute(x, name, perm=[tuple(p) for p in arg])
    if kind == "pshuffle":
        return jax.lax.pshuffle(x, name, list(arg))
    if kind == "pbroadcast":
        return jax.lax.pbroadcast(x, name, arg)
    if kind == "axis_index":
        return x * (1 + jax.lax.axis_index(name)).astype(x.dtype)
    if kind in ("pvary", "pcast"):
        return jax_api.mark_varying(kind)(x, tuple(axes))
    raise AssertionError(f"no jax spelling for step {kind!r}")


def _space_spec(axes_per_dim) -> P:
    return P(*(_entry(tuple(a)) for a in axes_per_dim))


def space_program(mesh_index: int, in_axes, block, steps, out_axes, seed: int) -> dict:
    """The program's fields as one dict (what the core and the model read)."""
    return {"mesh_index": mesh_index, "in_axes": tuple(tuple(a) for a in in_axes), "block": tuple(block),
            "steps": tuple(tuple(s) for s in steps), "out_axes": tuple(tuple(a) for a in out_axes), "seed": seed}


def _space_bound(gain: float, roundings: float, scale: np.ndarray, biggest: float) -> float:
    # Normwise forward error analysis (Higham ch. 3): each of the k roundings costs at most u times
    # the largest intermediate |value| (`biggest`), and a later step grows an error by at most its
    # gain (|f'| or |f''|·|t| of a unary op, n for an n-term sum). The derivative doubles k (the
    # tangent repeats every op) and the transposed or summed result adds up to 8 more terms.
    k = int(np.ceil(2 * roundings)) + 8
    return numerics.gamma(k, "float32") * gain * max(float(np.max(scale, initial=0.0)), biggest)


def collective_program_matches_numpy(check: str, mesh_index: int, in_axes, block, steps, out_axes, seed: int,
                                     observe) -> None:
    """One generated program under shard_map: the forward (eager and jit), jvp, linearize (primal and
    tangent), vjp (primal and cotangent), grad and, for a linear program, linear_transpose, each
    against the float64 NumPy model; pmax/pmin programs must refuse to differentiate."""
    need_devices()
    prog = space_program(mesh_index, in_axes, block, steps, out_axes, seed)
    shape, names = SPACE_MESHES[mesh_index]
    sizes = dict(zip(names, shape))
    mesh = jax_api.make_mesh_nd(shape, names)
    rng = np.random.RandomState(seed)
    x_shape = tuple(b * int(np.prod([sizes[a] for a in axes])) for b, axes in zip(block, prog["in_axes"]))
    x_host = rng.uniform(-1.5, 1.5, size=x_shape).astype(np.float32)
    t_host = rng.uniform(-1.0, 1.0, size=x_shape).astype(np.float32)
    kinds = {step[0] for step in prog["steps"]}
    differentiable = not kinds & set(SPACE_NOT_DIFFERENTIABLE)
    y_ref, ty_ref, biggest, gain, roundings = space_reference(prog, x_host, t_host if differentiable else None)
    ct_host = rng.uniform(-1.0, 1.0, size=y_ref.shape).astype(np.float32)
    in_spec, out_spec = _space_spec(prog["in_axes"]), _space_spec(prog["out_axes"])

    def body(x):
        for step in prog["steps"]:
            x = _space_jax_step(step, x)
        return x

    g = jax_api.shard_map(body, mesh=mesh, in_specs=(in_spec,), out_specs=out_spec, check=check == "checked")
    x = jax.device_put(x_host, NamedSharding(mesh, in_spec))
    t = jax.device_put(t_host, NamedSharding(mesh, in_spec))
    ct = jax.device_put(ct_host, NamedSharding(mesh, out_spec))
    observe.record(program={k: str(v) for k, v in prog.items()}, check=check)
    fwd_bound = _space_bound(gain, roundings, np.abs(y_ref), biggest)
    why = f"normwise: gamma_k, k from {roundings:g} roundings, gain {gain:.3g}, largest intermediate {biggest:.3g}"

    def within(name, got, want, bound):
        try:
            measured = numerics.assert_within_bound(np.asarray(got), want, bound, why=why)
        except AssertionError as exc:  # re-raised with the transform's name (the message is the verdict's)
            raise AssertionError(f"{name}: {exc}") from exc
        observe.record(**{name: measured})

    within("eager", g(x), y_ref, fwd_bound)  # the eager shard_map path, not the jit one
    if not differentiable:
        within("forward", jax.jit(g)(x), y_ref, fwd_bound)
        try:  # pytest.raises written out: a standalone script imports no pytest
            jax.jvp(g, (x,), (t,))
        except NotImplementedError as exc:
            assert re.search("Differentiation rule for 'p(max|min)' not implemented", str(exc)), str(exc)
        else:
            raise AssertionError("DID NOT RAISE <class 'NotImplementedError'>: jvp of pmax/pmin")
        return
    linear = kinds <= {"scale", "axis_index"} | set(SPACE_MODELLED) - set(SPACE_NOT_DIFFERENTIABLE)

    def transforms(x, t, ct):
        out = {"forward": g(x)}
        out["jvp_primal"], out["jvp"] = jax.jvp(g, (x,), (t,))
        out["linearize_primal"], lin = jax.linearize(g, x)
        out["linearize"] = lin(t)
        out["vjp_primal"], vjp = jax.vjp(g, x)
        (out["vjp"],) = vjp(ct)
        out["grad"] = jax.grad(lambda x: jnp.sum(g(x) * ct))(x)
        if linear:
            (out["linear_transpose"],) = jax.linear_transpose(g, x)(ct)
        return out

    got = jax.jit(transforms)(x, t, ct)
    jac = space_jacobian(prog, x_host)
    back = (jac.T @ ct_host.astype(np.float64).ravel()).reshape(x_shape)
    back_scale = (np.abs(jac).T @ np.abs(ct_host.astype(np.float64)).ravel()).reshape(x_shape)
    tan_bound = _space_bound(gain, roundings, np.abs(jac) @ np.abs(t_host.astype(np.float64)).ravel(), biggest)
    ct_bound = _space_bound(gain, roundings, back_scale, float(np.abs(ct_host).max()))
    for name in ("forward", "jvp_primal", "linearize_primal", "vjp_primal"):
        within(name, got[name], y_ref, fwd_bound)
    for name in ("jvp", "linearize"):
        within(name, got[name], ty_ref, tan_bound)
    for name in ("vjp", "grad") + (("linear_transpose",) if linear else ()):
        within(name, got[name], back, ct_bound)
    assert set(got) == {"forward", "jvp_primal", "jvp", "linearize_primal", "linearize", "vjp_primal", "vjp",
                        "grad"} | ({"linear_transpose"} if linear else set()), sorted(got)



def pvary_unchecked_transposes_once(mark: str, observe) -> None:
    """Frozen from the generated space: x (2x4) sharded over x and replicated over y, marked varying
    over y with pvary / pcast, returned sharded over y, the check off. Its vjp must sum the four y
    blocks of the cotangent once."""
    need_devices()
    marker = jax_api.mark_varying(mark)
    mesh = jax_api.make_mesh_nd((2, 4), ("x", "y"))
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 4
    ct = np.arange(32, dtype=np.float32).reshape(2, 16) / 8  # the output: 4 copies of x side by side
    f = jax_api.shard_map(lambda v: marker(v, ("y",)), mesh=mesh, in_specs=(P("x", None),), out_specs=P("x", "y"),
                          check=False)
    y, vjp = jax.vjp(f, jnp.asarray(x))
    observe.close(y, np.tile(x, (1, 4)), rtol=0, atol=0, name="forward")  # copies: exact
    (xt,) = vjp(jnp.asarray(ct))
    got, want = np.asarray(xt), ct.reshape(2, 4, 4).sum(axis=1)  # sums of four eighths: exact
    observe.record(vjp_over_expected=float(got.sum() / want.sum()))
    assert np.array_equal(got, want), (f"vjp: the cotangent summed over y gives {got.tolist()}, expected "
                                       f"{want.tolist()} ({got.sum() / want.sum():.3g}x)")


def every_collective_is_generated_or_a_hole(observe) -> None:
    """Every collective this jax ships is in the generated space or a hole with its reason, so a
    collective a release adds is news here rather than silently outside the space."""
    shipped = space_collectives()
    observe.record(collectives=shipped, generated=space_generated())
    unknown = sorted(set(shipped) - set(SPACE_MODELLED) - set(SPACE_HOLES))
    assert not unknown, f"jax {jax.__version__} ships collectives neither generated nor a named hole: {unknown}"
    # the space must hold the core collectives every release since shard_map has shipped
    assert {"psum", "all_gather", "ppermute", "axis_index"} <= set(shipped), shipped


def gather_and_scatter_with_their_defaults_match_the_model(observe) -> None:
    """all_gather and psum_scatter called bare (the space always passes `tiled`): untiled, on the
    leading axis. With tiled=True the gathered block would be (16, 3), not (4, 4, 3), and the
    scattered one (1, 3), not (3,): a flipped default changes the shapes checked here."""
    need_devices(N_SMALL)
    for api, fn, relied in (("jax.lax.all_gather", jax.lax.all_gather, {"tiled": False, "axis": 0}),
                            ("jax.lax.psum_scatter", jax.lax.psum_scatter, {"tiled": False, "scatter_dimension": 0})):
        check_defaults(observe, api, fn, relied)
    mesh = jax_api.make_mesh_nd((N_SMALL,), ("x",))
    x_host = np.arange(N_SMALL * N_SMALL * 3, dtype=np.float32).reshape(N_SMALL * N_SMALL, 3)
    blocks = x_host.reshape(N_SMALL, N_SMALL, 3)  # device i's block is blocks[i]

    def body(x):
        return jax.lax.all_gather(x, "x"), jax.lax.psum_scatter(x, "x")

    g = jax_api.shard_map(body, mesh=mesh, in_specs=(P("x"),), out_specs=(P("x"), P("x")), check=True)
    gathered, scattered = jax.jit(g)(x_host)
    # every device holds the stack of all blocks; out_specs P("x") lays the N copies end to end
    observe.close(gathered, np.concatenate([blocks] * N_SMALL), rtol=0, atol=0, name="all_gather")  # moves data only
    # device i keeps row i of the sum of the blocks (small integers: exact)
    observe.close(scattered, blocks.sum(axis=0).reshape(-1), rtol=0, atol=0, name="psum_scatter")

# the space property's pinned example (its @example): a 3-D mesh, every kind of spec entry
SPACE_EXAMPLE = {"mesh_index": 5, "in_axes": (("x", "z"), ()), "block": (2, 2),
                 "steps": (("unary", (), "sin"), ("psum_scatter", ("y",), 1), ("all_gather", ("x",), (0, True))),
                 "out_axes": (("x", "z"), ("y",)), "seed": 5}

CORES = {
    "test_linearize_transpose.py::test_linearize_transpose": linearize_transpose,
    # the upstream report's case, pinned by the property's @example: mean(x**2), 2 elements a shard
    "test_properties.py::test_replicated_primal_linearize_transpose":
        (replicated_primal_linearize_transpose, {"mesh_index": 1, "per_shard": 2, "op": "square", "seed": 0}),
    "test_linearize_transpose.py::test_grad_of_shard_map_with_pvary": grad_of_shard_map_with_pvary,
    "test_transpose_rules.py::test_fanout_transposes_to_a_sum_over_the_axis": fanout_transposes_to_a_sum,
    "test_transpose_rules.py::test_psum_to_replicated_transposes_to_a_broadcast": psum_to_replicated_transposes_to_a_broadcast,
    "test_transpose_rules.py::test_psum_to_sharded_transposes_to_a_psum": psum_to_sharded_transposes_to_a_psum,
    "test_transpose_rules.py::test_replicated_identity_transposes_to_identity": replicated_identity_transposes_to_identity,
    "test_transpose_rules.py::test_marking_a_replicated_input_varying_and_grad_sums_back": marking_varying_and_grad_sums_back,
    "test_defaults.py::test_shard_map_with_its_defaults_refuses_an_output_it_cannot_prove_replicated":
        defaults_refuse_an_unprovable_replicated_output,
    "test_defaults.py::test_shard_map_with_its_defaults_matches_numpy": defaults_match_numpy,
    "test_complex.py::test_transpose_of_a_complex_scaling_is_not_conjugated": complex_scaling_transpose,
    "test_complex.py::test_grad_of_a_complex_matmul_under_shard_map_uses_the_transpose": complex_matmul_grad,
    "test_tight_numerics.py::test_sharded_op_and_psum_are_within_their_bounds": sharded_op_and_psum_within_bounds,
    "test_properties.py::test_linearize_and_jvp_match_the_unsharded_derivative":
        (linearize_and_jvp_match_numpy, LINEARIZE_EXAMPLE),
    "test_properties.py::test_linear_transpose_is_the_adjoint": (linear_transpose_is_the_adjoint, TRANSPOSE_EXAMPLE),
    "test_properties.py::test_grad_with_a_replicated_weight_matches_numpy": (grad_with_a_replicated_weight, GRAD_EXAMPLE),
    "test_space.py::test_generated_collective_programs_match_the_float64_model":
        (collective_program_matches_numpy, SPACE_EXAMPLE),
    "test_space.py::test_every_collective_jax_ships_is_generated_or_a_named_hole": every_collective_is_generated_or_a_hole,
    "test_space.py::test_pbroadcast_is_refused_on_cpu_by_message": pbroadcast_refused_on_cpu,
    "test_space.py::test_pvary_with_the_check_off_transposes_once": pvary_unchecked_transposes_once,
    "test_defaults.py::test_all_gather_and_psum_scatter_with_their_defaults_match_the_model":
        gather_and_scatter_with_their_defaults_match_the_model,
}
