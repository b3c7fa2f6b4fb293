"""A grammar of module forwards that work eagerly and are known to break once traced: tensors
created inside `forward`, integer and mask indexing, in-place updates of inputs and buffers
(BatchNorm running statistics, a registered counter), slicing assignment and dtype promotion.

A program is a list of step names; `Generated(program, width)` runs them in order over `h` (the
hidden state, float32 [batch, width]) and keeps `made`, a tensor built from factories alone
(returned beside `h`, so a factory that leaves torchax's device shows in the output's type).
"""

from __future__ import annotations

from typing import Any, Callable

from harness.incell.compat import require, torch_api


def _arange(m, h, x, made):
    import torch

    r = torch.arange(h.shape[1], device=h.device, dtype=h.dtype)
    return h + r / 4, made + r.sum()


def _zeros(m, h, x, made):
    import torch

    z = torch.zeros(h.shape, device=h.device)
    z[:, :1] = h[:, :1]  # slicing assignment into a tensor created in forward
    return z + h, made


def _ones_like(m, h, x, made):
    import torch

    return h * torch.ones_like(h), made + torch.ones((), device=h.device)


def _full(m, h, x, made):
    import torch

    f = torch.full((h.shape[1],), 0.5, device=h.device)
    return h - f, made * torch.full((), 2.0, device=h.device)


def _eye(m, h, x, made):
    import torch

    e = torch.eye(h.shape[1], device=h.device)
    return h @ (2 * e), made + e.trace()


def _randn_generator(m, h, x, made):
    import torch

    # a seeded torch.Generator: torchax draws from JAX's stream, so the values cannot match torch's;
    # times zero, only its shape, dtype and device reach the result
    g = torch.Generator().manual_seed(0)
    noise = torch.randn(h.shape, generator=g, device=h.device)
    return h + 0 * noise, made


def _int_index(m, h, x, made):
    import torch

    idx = torch.arange(h.shape[1] - 1, -1, -1, device=h.device)  # reversed columns, an int64 tensor
    return h[:, idx], made


def _mask_assign(m, h, x, made):
    h = h.clone()
    h[h < 0] = 0.25  # boolean-mask assignment (static shape; h[h < 0] as a read is dynamic)
    return h, made


def _slice_assign(m, h, x, made):
    h = h.clone()
    h[:, -1:] = 2 * h[:, :1]
    return h, made


def _input_inplace(m, h, x, made):
    x.mul_(0.5)  # the caller's tensor changes too: compared after the call
    return h + x, made


def _counter(m, h, x, made):
    m.counter += 1  # a registered buffer updated in place
    return h + m.counter, made


def _batchnorm(m, h, x, made):
    return m.bn(h), made  # train mode: running_mean / running_var / num_batches_tracked update


def _promote(m, h, x, made):
    import torch

    k = torch.arange(h.shape[1], device=h.device) % 3  # int64 * float32 -> float32
    return h * k + (h > 0), made  # bool + float32 -> float32


def _linear(m, h, x, made):
    return m.lin(h), made


def _tanh(m, h, x, made):
    import torch

    return torch.tanh(h), made


STEPS: dict[str, Callable[..., Any]] = {
    "arange": _arange, "zeros": _zeros, "ones_like": _ones_like, "full": _full, "eye": _eye,
    "randn_generator": _randn_generator, "int_index": _int_index, "mask_assign": _mask_assign,
    "slice_assign": _slice_assign, "input_inplace": _input_inplace, "counter": _counter,
    "batchnorm": _batchnorm, "promote": _promote, "linear": _linear, "tanh": _tanh,
}


def generated_module(program: list[str], width: int, seed: int) -> Any:
    """The module a program describes, with seeded parameters (a fresh one per call)."""
    import torch

    class Generated(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(seed)
            self.lin = torch.nn.Linear(width, width)
            self.bn = torch.nn.BatchNorm1d(width)
            self.register_buffer("counter", torch.zeros((), dtype=torch.float32))

        def forward(self, x):
            h = self.lin(x * 1.0)  # a copy: input_inplace may change x after; a parameter on every path, so every program has a gradient to compare
            made = torch.zeros((), device=x.device)
            for name in program:
                h, made = STEPS[name](self, h, x, made)
            return h, made

    return Generated()


def _host(t: Any) -> Any:
    """A torch tensor, a torchax Tensor or a jax.Array as a float64 NumPy array."""
    import numpy as np

    if type(t).__module__.startswith("torchax"):  # a torchax Tensor: to CPU first (math needs its env)
        t = t.torch()
    if hasattr(t, "detach"):
        t = t.detach().cpu()
        return t.double().numpy()
    return np.asarray(t).astype(np.float64)


def _run_all(program: list[str], width: int, batch: int, seed: int) -> dict[str, Any]:
    """The generated module run three ways on the same input: torch eager (the reference),
    torchax eager (module moved to the jax device) and traced (extract_jax's function under
    jax.jit; the same forward through functional_call under jax.jit for what it updates)."""
    import jax
    import torch

    env = torch_api.torchax_entry("default_env")()
    x = torch.randn(batch, width, generator=torch.Generator().manual_seed(seed))
    run: dict[str, Any] = {"env": env, "x": x}

    ref_mod = generated_module(program, width, seed)
    run["x_ref"] = x.clone()
    run["ref"] = ref_mod(run["x_ref"])
    run["ref_bufs"] = {k: v.detach().clone() for k, v in ref_mod.named_buffers()}

    eager_mod = generated_module(program, width, seed)
    with env:
        eager_mod.to("jax")
        run["x_eager"] = env.to_xla(x.clone())
        run["eager"] = eager_mod(run["x_eager"])
    run["eager_bufs"] = dict(eager_mod.named_buffers())

    jit_mod = generated_module(program, width, seed)
    states, jfn = torch_api.torchax_entry("extract_jax")(jit_mod)
    jx = torch_api.t2j(env, x.clone())
    run.update(states=states, jfn=jfn, jx=jx, jit=jax.jit(lambda s, a: jfn(s, (a,)))(states, jx))
    names = [k for k, _ in generated_module(program, width, seed).named_buffers()]
    run["buffer_names"] = names

    def updated(s, a):
        ts, ta = env.j2t_iso((dict(s), a))
        with env:
            torch.func.functional_call(generated_module(program, width, seed), ts, (ta,))
        return env.t2j_iso(({k: ts[k] for k in names}, ta))

    run["jit_bufs"], run["x_jit"] = jax.jit(updated)(states, jx)
    return run


# 1e-5 abs/rel: Linear and BatchNorm reduce over width / batch in another order on XLA (n * eps
# for at most 8 terms here, well under 84 ulps at 1)
TOL = dict(rtol=1e-5, atol=1e-5)


def forward_case(program: list[str], width: int, batch: int, seed: int, observe) -> None:
    """torchax eager and extract_jax + jax.jit equal torch eager on the generated forward:
    outputs (torchax Tensors / jax.Arrays, values), the input updated in place, and jax.grad of
    sum(h) + made through extract_jax equal to torch autograd for every parameter."""
    import jax
    import jax.numpy as jnp

    tensor_type = require("torchax.tensor").Tensor
    run = _run_all(program, width, batch, seed)
    observe.record(program=list(program))
    for name, got in zip(("h", "made"), run["eager"]):
        assert isinstance(got, tensor_type), \
            f"torchax eager: output {name} is a {type(got).__module__}.{type(got).__name__}, not a torchax Tensor (a factory left the env)"
    for name, got in zip(("h", "made"), run["jit"]):
        assert isinstance(got, jax.Array), f"extract_jax + jax.jit: output {name} is a {type(got).__name__}, not a jax.Array"
    for path in ("eager", "jit"):
        for name, got, ref in zip(("h", "made"), run[path], run["ref"]):
            observe.close(_host(got), _host(ref), name=f"{path}.{name}", **TOL)
        observe.close(_host(run[f"x_{path}"]), _host(run["x_ref"]), name=f"{path}.input", **TOL)

    grad_mod = generated_module(program, width, seed)
    h_t, made_t = grad_mod(run["x"].clone())
    (h_t.sum() + made_t).backward()
    names, states, jfn = run["buffer_names"], run["states"], run["jfn"]
    params = {k: v for k, v in states.items() if k not in names}
    rest = {k: v for k, v in states.items() if k in names}

    def loss(p, a):
        hh, mm = jfn({**rest, **p}, (a,))
        return jnp.sum(hh) + mm

    grads = jax.grad(loss)(params, run["jx"])
    for k, p in grad_mod.named_parameters():
        if p.grad is not None:
            observe.close(_host(grads[k]), _host(p.grad), name=f"grad.{k}", **TOL)


def buffers_case(program: list[str], width: int, batch: int, seed: int, observe) -> None:
    """The buffers the generated forward updates in place (BatchNorm's running statistics and
    batch count, the counter) hold torch eager's values after torchax eager and after the traced
    forward (functional_call under jax.jit, returning them)."""
    run = _run_all(program, width, batch, seed)
    observe.record(program=list(program), buffers=run["buffer_names"])
    differ = []
    for path in ("eager", "jit"):
        for k in run["buffer_names"]:
            try:
                observe.close(_host(run[f"{path}_bufs"][k]), _host(run["ref_bufs"][k]), name=f"{path}.buffer.{k}", **TOL)
            except AssertionError:  # every path and buffer is checked; the case fails below, naming each
                differ.append(f"{path}: buffer {k} is {_host(run[f'{path}_bufs'][k]).ravel()[:4].tolist()} "
                              f"where torch eager has {_host(run['ref_bufs'][k]).ravel()[:4].tolist()}")
    assert not differ, "updated buffers differ from torch eager: " + "; ".join(differ)
