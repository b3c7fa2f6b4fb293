"""torchax scenario cores: plain functions over their inputs, called by the tests and inlined by
`harness report` into standalone reproducers (see suites/compute_on/cores.py for the rules).

`CORES` maps each test to its core; a property test maps to (core, the example it pins).
"""

from __future__ import annotations

import contextlib

import numpy as np

from harness.incell.compat import require, torch_api
from harness.incell.ir import count_main_arguments


def torchax_env():
    """torchax's default environment (skips where the cell has no torch or no torchax)."""
    require("torch")
    require("torchax")
    require("torchax.interop")
    return torch_api.torchax_entry("default_env")()


def host(t):
    """A torch tensor as NumPy (bfloat16 through float32, which NumPy lacks)."""
    torch = require("torch")
    t = t.detach().cpu()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


@contextlib.contextmanager
def x64(on: bool):
    """jax_enable_x64 for the block, restored after (other cases must not see it)."""
    import jax

    old = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", on)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", old)


# --- test_interop.py ---

ROUND_TRIPS = {
    "float32": lambda torch: torch.randn(3, 4, generator=torch.Generator().manual_seed(0)),
    "bfloat16": lambda torch: torch.randn(5, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16),
    "int32": lambda torch: torch.arange(-3, 9, dtype=torch.int32).reshape(3, 4),
    "int64": lambda torch: torch.tensor([2**40, -(2**33), 7], dtype=torch.int64),
    "zero_size": lambda torch: torch.zeros(0, 3),
    "non_contiguous": lambda torch: torch.arange(12, dtype=torch.float32).reshape(3, 4).t(),
}


def round_trip(kind: str, observe) -> None:
    env = torchax_env()
    torch = require("torch")
    import jax
    import jax.numpy as jnp

    t = ROUND_TRIPS[kind](torch)
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
    observe.close(np.asarray(j).astype(np.float64), host(t).astype(np.float64), rtol=0, atol=0, name="to_jax")
    back = torch_api.j2t(env, j)
    assert back.dtype == t.dtype, f"round trip changed dtype {t.dtype} -> {back.dtype}"
    observe.close(back, t, rtol=0, atol=0, name="round_trip")


def small_model(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))


def small_data(torch):
    g = torch.Generator().manual_seed(5)
    return torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)


def jax_grad_through_torch_module(observe) -> None:
    env = torchax_env()
    torch = require("torch")
    import jax
    import jax.numpy as jnp

    model = small_model(torch)
    x, y = small_data(torch)
    states, jfn = torch_api.torchax_entry("extract_jax")(model)
    jx, jy = torch_api.t2j(env, x), torch_api.t2j(env, y)

    def loss(states, x, y):
        return jnp.mean((jfn(states, (x,)) - y) ** 2)

    grads = jax.grad(loss)(states, jx, jy)
    torch.mean((model(x) - y) ** 2).backward()
    ref = dict(model.named_parameters())
    assert sorted(grads) == sorted(ref), f"parameter names differ: {sorted(grads)} vs {sorted(ref)}"
    for name, p in ref.items():
        observe.close(np.asarray(grads[name]), host(p.grad), rtol=1e-5, atol=1e-6, name=f"grad.{name}")
    n_leaves = len(jax.tree_util.tree_leaves(states))
    text = jax.jit(loss).lower(states, jx, jy).as_text()
    observe.record(param_leaves=n_leaves, main_arguments=count_main_arguments(text))
    assert count_main_arguments(text) == n_leaves + 2, "the lowered loss takes one argument per parameter leaf plus x, y"


def optax_step_matches_torch_optim(opt: str, observe) -> None:
    env = torchax_env()
    torch = require("torch")
    import jax
    import jax.numpy as jnp

    optax = require("optax")
    model = small_model(torch)
    x, y = small_data(torch)
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
        observe.close(np.asarray(params[name]), host(p), rtol=1e-5, atol=1e-6, name=f"param.{name}")


def interop(name: str):
    """A torchax.interop entry point, looked up (and its presence recorded) on use."""
    return torch_api.torchax_entry(f"interop.{name}")


def interop_call_jax(observe) -> None:
    env = torchax_env()
    torch = require("torch")
    import jax.numpy as jnp

    a = torch.linspace(-2, 2, 7)
    b = torch.arange(7, dtype=torch.float32)
    ta, tb = env.to_xla(a), env.to_xla(b)
    with env:
        out = interop("call_jax")(lambda u, v: jnp.sin(u) * v, ta, tb)
    observe.record(result_type=type(out).__name__)
    assert isinstance(out, torch.Tensor)
    observe.close(np.asarray(interop("jax_view")(out)), host(torch.sin(a) * b), rtol=1e-6, atol=1e-6)


def jax_view_and_torch_view_on_pytrees(observe) -> None:
    env = torchax_env()
    torch = require("torch")
    import jax

    tree = {"w": env.to_xla(torch.ones(2, 3)), "nested": [env.to_xla(torch.arange(4.0)), 3, "tag"]}
    jtree = interop("jax_view")(tree)
    leaves = jax.tree_util.tree_leaves(jtree)
    observe.record(leaf_types=sorted({type(leaf).__name__ for leaf in leaves}))
    assert isinstance(jtree["w"], jax.Array) and isinstance(jtree["nested"][0], jax.Array)
    assert jtree["nested"][1:] == [3, "tag"], "non-tensor leaves must pass through unchanged"
    back = interop("torch_view")(jtree)
    assert isinstance(back["w"], torch.Tensor) and back["nested"][1:] == [3, "tag"]
    observe.close(np.asarray(interop("jax_view")(back["nested"][0])), np.arange(4.0), rtol=0, atol=0)


def interop_call_jax_jnp_scalar_type_static(observe) -> None:
    """A jnp scalar type (jnp.int32, a class, so callable) passed as a static must reach the JAX
    function unchanged, as the call_jax family's generated trees pass it (found by the property)."""
    env = torchax_env()
    torch = require("torch")
    import jax.numpy as jnp

    x = env.to_xla(torch.arange(6, dtype=torch.float32).reshape(2, 3) * 1.5)
    seen = []

    def cast(u, dtype):
        seen.append(repr(dtype))
        return u.astype(dtype)

    with env:
        try:
            out = interop("call_jax")(cast, x, jnp.int32)
        finally:
            observe.record(static_seen=seen)
    assert seen == [repr(jnp.int32)], f"the JAX function received {seen}, not jnp.int32"
    got = np.asarray(interop("jax_view")(out))
    assert got.dtype == np.int32, f"cast to jnp.int32 came back as {got.dtype}"
    observe.close(got, (np.arange(6).reshape(2, 3) * 1.5).astype(np.int32), rtol=0, atol=0)


def interop_call_jax_torch_dtype_static(observe) -> None:
    """A torch dtype passed as a static reaches the JAX function as the matching JAX dtype
    (found by the property on torch_xla 2.8.1's bundled torchax)."""
    env = torchax_env()
    torch = require("torch")
    x = env.to_xla(torch.arange(6, dtype=torch.float32).reshape(2, 3) * 1.5)
    with env:
        out = interop("call_jax")(lambda u, dtype: u.astype(dtype), x, torch.int32)
    got = np.asarray(interop("jax_view")(out))
    assert got.dtype == np.int32, f"cast to torch.int32 came back as {got.dtype}"
    observe.close(got, (np.arange(6).reshape(2, 3) * 1.5).astype(np.int32), rtol=0, atol=0)


# --- test_properties.py (one generated example each) ---

WIDE = {"float64", "int64"}


def make_tensor(torch, dtype: str, shape: tuple, seed: int):
    gen = torch.Generator().manual_seed(seed)
    if dtype == "bool":
        return torch.randint(0, 2, shape, generator=gen).bool()
    if dtype in ("int8", "uint8", "int32", "int64"):
        lo, hi = {"int8": (-128, 128), "uint8": (0, 256), "int32": (-2**31, 2**31 - 1),
                  "int64": (-2**62, 2**62)}[dtype]
        return torch.randint(lo, hi, shape, generator=gen, dtype=getattr(torch, dtype))
    return (torch.randn(shape, generator=gen, dtype=torch.float64) * 1e3).to(getattr(torch, dtype))


def strided_view(t, how: str):
    """A view of t that shares its storage with other strides (or t itself where none applies)."""
    if how == "transpose" and t.dim() >= 2:
        return t.transpose(0, 1)
    if how == "step_slice" and t.dim() >= 1 and t.shape[0] > 1:
        return t[::2]
    if how == "expand":
        return t.unsqueeze(0).expand(3, *t.shape)
    if how == "flip_view" and t.dim() >= 2:
        return t.t() if t.dim() == 2 else t.permute(*reversed(range(t.dim())))
    return t


def generated_round_trip(dtype: str, shape: tuple, how: str, seed: int, observe) -> None:
    """torch -> JAX keeps shape, dtype and every value of the (possibly strided) view; back to
    torch gives the same tensor again."""
    env = torchax_env()
    torch = require("torch")
    import jax
    import jax.numpy as jnp

    t = strided_view(make_tensor(torch, dtype, shape, seed), how)
    with x64(dtype in WIDE):
        j = torch_api.t2j(env, t)
        label = f"{dtype}{tuple(t.shape)} strides={t.stride()} ({how})"
        assert isinstance(j, jax.Array), f"{label}: t2j returned {type(j).__name__}"
        assert tuple(j.shape) == tuple(t.shape), f"{label}: shape became {tuple(j.shape)}"
        assert j.dtype == jnp.dtype(dtype), f"{label}: dtype became {j.dtype}"
        np.testing.assert_array_equal(np.asarray(j.astype(jnp.float32) if dtype == "bfloat16" else j),
                                      host(t), err_msg=f"{label}: to JAX")
        back = torch_api.j2t(env, j)
        assert back.dtype == t.dtype and tuple(back.shape) == tuple(t.shape), \
            f"{label}: came back as {back.dtype}{tuple(back.shape)}"
        np.testing.assert_array_equal(host(back), host(t), err_msg=f"{label}: back to torch")


def generated_module(torch, kinds: list, width: list, seed: int):
    torch.manual_seed(seed)
    layers, n = [], width[0]
    for i, kind in enumerate(kinds):
        if kind.startswith("linear"):
            out = width[(i + 1) % len(width)]
            layers.append(torch.nn.Linear(n, out, bias=kind == "linear"))
            n = out
        elif kind == "layernorm":
            layers.append(torch.nn.LayerNorm(n))
        else:
            layers.append({"tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid, "softplus": torch.nn.Softplus}[kind]())
    layers.append(torch.nn.Linear(n, 2))
    return torch.nn.Sequential(*layers)


def generated_module_grads(kinds: list, width: list, batch: int, seed: int, observe) -> None:
    """jax.grad of an MSE loss through a generated torch module (extract_jax) equals torch
    autograd: every parameter gets a gradient, with its name, shape and values."""
    env = torchax_env()
    torch = require("torch")
    import jax
    import jax.numpy as jnp

    model = generated_module(torch, kinds, width, seed)
    gen = torch.Generator().manual_seed(seed + 10)
    x, y = torch.randn(batch, width[0], generator=gen), torch.randn(batch, 2, generator=gen)
    states, jfn = torch_api.torchax_entry("extract_jax")(model)
    jx, jy = torch_api.t2j(env, x), torch_api.t2j(env, y)

    def loss(states, x, y):
        return jnp.mean((jfn(states, (x,)) - y) ** 2)

    value, grads = jax.value_and_grad(loss)(states, jx, jy)
    tloss = torch.mean((model(x) - y) ** 2)
    tloss.backward()
    np.testing.assert_allclose(float(value), float(tloss), rtol=1e-5, atol=1e-6, err_msg="loss")
    ref = dict(model.named_parameters())
    assert sorted(grads) == sorted(ref), f"parameter names differ: {sorted(grads)} vs {sorted(ref)}"
    for name, p in ref.items():
        g = np.asarray(grads[name])
        assert g.shape == tuple(p.shape), f"grad.{name}: shape {g.shape}, parameter {tuple(p.shape)}"
        np.testing.assert_allclose(g, host(p.grad), rtol=1e-4, atol=1e-6, err_msg=f"grad.{name}")


CORES = {
    "test_interop.py::test_round_trip": round_trip,
    "test_interop.py::test_jax_grad_through_torch_module": jax_grad_through_torch_module,
    "test_interop.py::test_optax_step_matches_torch_optim": optax_step_matches_torch_optim,
    "test_interop.py::test_interop_call_jax": interop_call_jax,
    "test_interop.py::test_jax_view_and_torch_view_on_pytrees": jax_view_and_torch_view_on_pytrees,
    "test_interop.py::test_interop_call_jax_jnp_scalar_type_static": interop_call_jax_jnp_scalar_type_static,
    "test_interop.py::test_interop_call_jax_torch_dtype_static": interop_call_jax_torch_dtype_static,
    # any drawn example shows torchax 0.0.4's j2t_copy stub; this one is a plain float32 vector
    "test_properties.py::test_generated_round_trips_are_exact":
        (generated_round_trip, {"dtype": "float32", "shape": (3,), "how": "contiguous", "seed": 0}),
    # the property's @example (found on torchax 0.0.4)
    "test_properties.py::test_generated_module_grads_match_torch_autograd":
        (generated_module_grads, {"kinds": ["softplus"], "width": [2], "batch": 4, "seed": 3}),
}
