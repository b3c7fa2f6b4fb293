"""Running JAX code from PyTorch through torchax (successor of torch_xla2; seed 003, google/torchax).

Round trips between torch tensors and JAX arrays, jax.grad through a torch nn.Module, an optax
step against the same step in torch.optim, torchax.interop.call_jax, and jax_view/torch_view on
pytrees. References are torch eager on CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.incell.compat import require, torch_api
from harness.incell.ir import count_main_arguments

try:  # collected (and listed) everywhere; skipped per case where the cell has no torch
    import torch
except ImportError:
    torch = None


@pytest.fixture(scope="module")
def tx():
    require("torch")
    torchax = require("torchax")
    require("torchax.interop")
    return torchax


@pytest.fixture(scope="module")
def env(tx):
    return torch_api.torchax_entry("default_env")()


class Interop:
    """torchax.interop's entry points, each looked up (and its presence recorded) on use."""

    def __getattr__(self, name):
        return torch_api.torchax_entry(f"interop.{name}")


def _np(t):
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


ROUND_TRIPS = {
    "float32": lambda: torch.randn(3, 4, generator=torch.Generator().manual_seed(0)),
    "bfloat16": lambda: torch.randn(5, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16),
    "int32": lambda: torch.arange(-3, 9, dtype=torch.int32).reshape(3, 4),
    "int64": lambda: torch.tensor([2**40, -(2**33), 7], dtype=torch.int64),
    "zero_size": lambda: torch.zeros(0, 3),
    "non_contiguous": lambda: torch.arange(12, dtype=torch.float32).reshape(3, 4).t(),
}


@pytest.mark.parametrize("kind", list(ROUND_TRIPS))
def test_round_trip(kind, env, observe):
    import jax
    import jax.numpy as jnp

    t = ROUND_TRIPS[kind]()
    j = torch_api.t2j(env, t)
    observe.record(torch_dtype=str(t.dtype), jax_dtype=str(j.dtype), shape=list(j.shape),
                   x64=bool(jax.config.jax_enable_x64))
    assert isinstance(j, jax.Array)
    assert tuple(j.shape) == tuple(t.shape)
    expected_jax_dtype = {"bfloat16": jnp.bfloat16, "int32": jnp.int32, "zero_size": jnp.float32,
                          "float32": jnp.float32, "non_contiguous": jnp.float32}.get(kind)
    if kind == "int64":  # without x64 JAX has no int64: values must still survive or fail loudly
        expected_jax_dtype = jnp.int64 if jax.config.jax_enable_x64 else j.dtype
    assert j.dtype == expected_jax_dtype, f"{t.dtype} became {j.dtype}"
    observe.close(np.asarray(j).astype(np.float64), _np(t).astype(np.float64), rtol=0, atol=0, name="to_jax")
    back = torch_api.j2t(env, j)
    assert back.dtype == t.dtype, f"round trip changed dtype {t.dtype} -> {back.dtype}"
    observe.close(back, t, rtol=0, atol=0, name="round_trip")


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))


def _data():
    g = torch.Generator().manual_seed(5)
    return torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)


def test_jax_grad_through_torch_module(tx, env, observe):
    import jax
    import jax.numpy as jnp

    model = _model()
    x, y = _data()
    states, jfn = torch_api.torchax_entry("extract_jax")(model)
    jx, jy = torch_api.t2j(env, x), torch_api.t2j(env, y)

    def loss(states, x, y):
        return jnp.mean((jfn(states, (x,)) - y) ** 2)

    grads = jax.grad(loss)(states, jx, jy)
    torch.mean((model(x) - y) ** 2).backward()
    ref = dict(model.named_parameters())
    assert sorted(grads) == sorted(ref), f"parameter names differ: {sorted(grads)} vs {sorted(ref)}"
    for name, p in ref.items():
        observe.close(np.asarray(grads[name]), _np(p.grad), rtol=1e-5, atol=1e-6, name=f"grad.{name}")
    n_leaves = len(jax.tree_util.tree_leaves(states))
    text = jax.jit(loss).lower(states, jx, jy).as_text()
    observe.record(param_leaves=n_leaves, main_arguments=count_main_arguments(text))
    assert count_main_arguments(text) == n_leaves + 2, "the lowered loss takes one argument per parameter leaf plus x, y"


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_optax_step_matches_torch_optim(opt, tx, env, observe):
    import jax
    import jax.numpy as jnp

    optax = require("optax")
    model = _model()
    x, y = _data()
    states, jfn = torch_api.torchax_entry("extract_jax")(model)
    params = {k: v for k, v in states.items()}
    jx, jy = torch_api.t2j(env, x), torch_api.t2j(env, y)
    lr = 0.1 if opt == "sgd" else 1e-2
    optimizer = optax.sgd(lr) if opt == "sgd" else optax.adam(lr, b1=0.9, b2=0.999, eps=1e-8)

    def loss(p, x, y):
        return jnp.mean((jfn(p, (x,)) - y) ** 2)

    @jax.jit
    def step(p, opt_state, x, y):
        value, g = jax.value_and_grad(loss)(p, x, y)
        updates, opt_state = optimizer.update(g, opt_state, p)
        return optax.apply_updates(p, updates), opt_state, value

    opt_state = optimizer.init(params)
    lowered = step.lower(params, opt_state, jx, jy).as_text()
    for _ in range(2):
        params, opt_state, value = step(params, opt_state, jx, jy)

    topt = torch.optim.SGD(model.parameters(), lr=lr) if opt == "sgd" else \
        torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8)
    for _ in range(2):
        topt.zero_grad()
        tloss = torch.mean((model(x) - y) ** 2)
        tloss.backward()
        topt.step()
    observe.record(stablehlo_main_arguments=count_main_arguments(lowered))
    assert count_main_arguments(lowered) == len(jax.tree_util.tree_leaves((params, opt_state))) + 2
    for name, p in model.named_parameters():
        observe.close(np.asarray(params[name]), _np(p), rtol=1e-5, atol=1e-6, name=f"param.{name}")


def test_interop_call_jax(tx, env, observe):
    import jax.numpy as jnp

    interop = Interop()

    a = torch.linspace(-2, 2, 7)
    b = torch.arange(7, dtype=torch.float32)
    ta, tb = env.to_xla(a), env.to_xla(b)
    with env:
        out = interop.call_jax(lambda u, v: jnp.sin(u) * v, ta, tb)
    observe.record(result_type=type(out).__name__)
    assert isinstance(out, torch.Tensor)
    observe.close(np.asarray(interop.jax_view(out)), _np(torch.sin(a) * b), rtol=1e-6, atol=1e-6)


def test_jax_view_and_torch_view_on_pytrees(tx, env, observe):
    import jax

    interop = Interop()

    tree = {"w": env.to_xla(torch.ones(2, 3)), "nested": [env.to_xla(torch.arange(4.0)), 3, "tag"]}
    jtree = interop.jax_view(tree)
    leaves = jax.tree_util.tree_leaves(jtree)
    observe.record(leaf_types=sorted({type(l).__name__ for l in leaves}))
    assert isinstance(jtree["w"], jax.Array) and isinstance(jtree["nested"][0], jax.Array)
    assert jtree["nested"][1:] == [3, "tag"], "non-tensor leaves must pass through unchanged"
    back = interop.torch_view(jtree)
    assert isinstance(back["w"], torch.Tensor) and back["nested"][1:] == [3, "tag"]
    observe.close(np.asarray(interop.jax_view(back["nested"][0])), np.arange(4.0), rtol=0, atol=0)


def test_interop_call_jax_jnp_scalar_type_static(tx, env, observe):
    """A jnp scalar type (jnp.int32, a class, so callable) passed as a static must reach the JAX
    function unchanged, as the call_jax family's generated trees pass it (found by the property)."""
    import jax.numpy as jnp

    interop = Interop()
    x = env.to_xla(torch.arange(6, dtype=torch.float32).reshape(2, 3) * 1.5)
    seen = []

    def cast(u, dtype):
        seen.append(repr(dtype))
        return u.astype(dtype)

    with env:
        try:
            out = interop.call_jax(cast, x, jnp.int32)
        finally:
            observe.record(static_seen=seen)
    assert seen == [repr(jnp.int32)], f"the JAX function received {seen}, not jnp.int32"
    got = np.asarray(interop.jax_view(out))
    assert got.dtype == np.int32, f"cast to jnp.int32 came back as {got.dtype}"
    observe.close(got, (np.arange(6).reshape(2, 3) * 1.5).astype(np.int32), rtol=0, atol=0)


def test_interop_call_jax_torch_dtype_static(tx, env, observe):
    """A torch dtype passed as a static reaches the JAX function as the matching JAX dtype
    (found by the property on torch_xla 2.8.1's bundled torchax)."""
    interop = Interop()
    x = env.to_xla(torch.arange(6, dtype=torch.float32).reshape(2, 3) * 1.5)
    with env:
        out = interop.call_jax(lambda u, dtype: u.astype(dtype), x, torch.int32)
    got = np.asarray(interop.jax_view(out))
    assert got.dtype == np.int32, f"cast to torch.int32 came back as {got.dtype}"
    observe.close(got, (np.arange(6).reshape(2, 3) * 1.5).astype(np.int32), rtol=0, atol=0)
