"""Living together: what torch (and jax) do in a fresh process after the packages are imported in
a given order, compared between orders.

`facts(order)` runs `probe` in a fresh interpreter of this cell (suites/coexist/fresh.py) after importing the modules of `order` in that order, and
returns what it saw, one group per feature. A fact that raised is recorded as the text
`error: Type: message` of its root cause, so a feature that fails the same way in both processes compares equal,
and one that starts failing after an import shows as a difference.
"""

from __future__ import annotations

import functools
from typing import Any

from suites.coexist.fresh import run_fresh

BASELINE = ("torch",)
# Inductor compiles in a pool of worker processes by default; starting that pool in every probe cost
# about 20 s of a 60 s probe on the 2-core box. One thread changes how fast, not what, it compiles.
COMPILE_ENV = {"TORCHINDUCTOR_COMPILE_THREADS": "1"}


def probe(order: str, compile_too: bool) -> None:
    """Import the comma-separated modules of `order`, then print the facts as one JSON line
    (torch.compile's only where `compile_too`: it costs an inductor build per process)."""
    import importlib
    import json as _json

    for name in order.split(","):
        importlib.import_module(name)
    import torch

    def attempt(fn):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - the failure is the fact compared
            # its root cause: torch.compile wraps one failure as InductorError or BackendCompilerFailed
            # depending on the path it took; what failed underneath is the fact
            seen = [exc]
            while (nxt := seen[-1].__cause__ or seen[-1].__context__) is not None and len(seen) < 20:
                seen.append(nxt)
            root = seen[-1]
            return f"error: {type(root).__name__}: {str(root).splitlines()[0][:200] if str(root) else ''}"

    def compiled(fn, *args):
        if not compile_too:
            return "not compiled in this process"
        return attempt(lambda: torch.compile(fn)(*args).tolist())

    def no_tensor_inputs():
        return torch.ones(3) * 2

    torch.manual_seed(0)
    module = torch.nn.Linear(3, 2)
    found = {
        "compile": {
            "function of a tensor": compiled(lambda x: torch.sin(x) + 1, torch.arange(4.0)),
            "function without tensor inputs": compiled(no_tensor_inputs),
            "module": compiled(module, torch.ones(3)),
        },
        "devices": {
            "torch.cuda.is_available()": attempt(torch.cuda.is_available),
            "torch.cuda.device_count()": attempt(torch.cuda.device_count),
            "torch.accelerator.is_available()": attempt(lambda: torch.accelerator.is_available()),
            "torch.accelerator.current_accelerator()": attempt(lambda: str(torch.accelerator.current_accelerator())),
            "torch.backends.mps.is_available()": attempt(torch.backends.mps.is_available),
            "torch.xpu.is_available()": attempt(lambda: torch.xpu.is_available()),
            "privateuse1 backend name": attempt(torch._C._get_privateuse1_backend_name),
        },
        "defaults": {
            "torch.get_default_dtype()": str(torch.get_default_dtype()),
            "torch.get_default_device()": attempt(lambda: str(torch.get_default_device())),
            "torch.empty(1).device": str(torch.empty(1).device),
            "torch.tensor(1.0).dtype": str(torch.tensor(1.0).dtype),
            "torch.tensor(1).dtype": str(torch.tensor(1).dtype),
        },
        "dlpack": {
            "to_dlpack -> from_dlpack": attempt(lambda: torch.utils.dlpack.from_dlpack(
                torch.utils.dlpack.to_dlpack(torch.arange(6.0).reshape(2, 3))).tolist()),
            "torch.from_dlpack(tensor)": attempt(lambda: torch.from_dlpack(torch.arange(3)).tolist()),
        },
        "rng": {},
        "autocast": {},
    }
    torch.manual_seed(1234)
    found["rng"] = {"rand(4)": torch.rand(4).tolist(), "randn(3)": torch.randn(3).tolist(),
                    "randint(0, 100, (4,))": torch.randint(0, 100, (4,)).tolist(),
                    "randperm(5)": torch.randperm(5).tolist(), "initial_seed()": torch.initial_seed()}

    def autocast_dtype():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return str((torch.ones(2, 2) @ torch.ones(2, 2)).dtype)

    found["autocast"] = {"matmul under cpu bfloat16 autocast": attempt(autocast_dtype),
                         "autocast off outside": attempt(lambda: str((torch.ones(2, 2) @ torch.ones(2, 2)).dtype))}
    if "jax" in order.split(","):
        import jax
        import jax.numpy as jnp

        found["jax"] = {"default_backend()": jax.default_backend(), "device_count()": jax.device_count(),
                        "jax_enable_x64": bool(jax.config.jax_enable_x64),
                        "jnp.arange(3).dtype": str(jnp.arange(3).dtype),
                        "jnp.sin(jnp.arange(4.0))": [float(v) for v in jnp.sin(jnp.arange(4.0))]}
        found["scenario"] = {}
        if "torchax" in order.split(","):
            import torchax
            import torchax.interop

            def torchax_round_trip():
                env = torchax.default_env()
                with env:
                    t = torch.arange(6.0, device="jax").reshape(2, 3)
                    return torchax.interop.call_jax(jnp.sin, t).cpu().tolist()

            found["scenario"]["torchax: call_jax(jnp.sin) on a torchax tensor"] = attempt(torchax_round_trip)

            # the families' scenarios in small (suites/torchax): conversions per dtype, a traced call,
            # jax.grad through a module; each is a fact compared between the two orders
            def torchax_conversions():
                env = torchax.default_env()
                out = {}
                with env:
                    for dtype in ("float32", "bfloat16", "int64", "bool"):
                        t = torch.tensor([1.5, -2.25, 0.0, 3.0]).to(getattr(torch, dtype)).to("jax")
                        back = t.cpu()
                        out[dtype] = [str(back.dtype), back.float().tolist()]
                return out

            def torchax_jax_jit():
                env = torchax.default_env()
                with env:
                    f = torchax.interop.jax_jit(lambda a, b: torch.relu(a @ b) + a.sum())
                    a = torch.arange(6.0, device="jax").reshape(2, 3) - 2
                    return f(a, torch.ones(3, 3, device="jax")).cpu().tolist()

            def torchax_grad_through_a_module():
                torch.manual_seed(0)
                weights, fn = torchax.extract_jax(torch.nn.Linear(3, 2))
                x = jnp.arange(6.0).reshape(2, 3)
                grads = jax.grad(lambda w: fn(w, (x,)).sum())(weights)
                return {k: [float(v) for v in jnp.ravel(grads[k])] for k in sorted(grads)}

            found["scenario"]["torchax: conversions to jax and back per dtype"] = attempt(torchax_conversions)
            found["scenario"]["torchax: interop.jax_jit of a torch function"] = attempt(torchax_jax_jit)
            found["scenario"]["torchax: jax.grad through extract_jax(nn.Linear)"] = attempt(torchax_grad_through_a_module)
        if "torch_xla" in order.split(","):
            def xla_call_jax():
                import torch_xla.core.xla_builder as xb
                import torch_xla.core.xla_model as xm

                t = torch.arange(6.0).reshape(2, 3).to(xm.xla_device())
                return xb.call_jax(jnp.sin, (t,)).cpu().tolist()

            found["scenario"]["torch_xla: call_jax(jnp.sin) on an XLA tensor"] = attempt(xla_call_jax)

            # suites/call_jax in small: non-tensor inputs, an unused argument, two outputs
            def xla_call_jax_statics_and_outputs():
                import torch_xla.core.xla_builder as xb
                import torch_xla.core.xla_model as xm

                t = torch.arange(6.0).reshape(2, 3).to(xm.xla_device())
                scaled = xb.call_jax(lambda x, unused, k, flag: jnp.where(flag, x * k, x), (t, t + 1, 3, True))
                pair = xb.call_jax(lambda x: (jnp.sin(x), jnp.cos(x).sum()), (t,))
                return {"scaled": scaled.cpu().tolist(), "pair": [pair[0].cpu().tolist(), float(pair[1].cpu())]}

            found["scenario"]["torch_xla: call_jax with statics, an unused argument, two outputs"] = \
                attempt(xla_call_jax_statics_and_outputs)
    print("SEAMS-ANSWER " + _json.dumps(found))


_FAILED: dict[tuple[tuple[str, ...], bool], str] = {}  # a process that gave no answer: its AssertionError's message


@functools.lru_cache(maxsize=None)
def facts(order: tuple[str, ...], compile_too: bool = True) -> dict[str, Any]:
    """The probe's facts in a fresh interpreter of this cell after importing `order`, in order.
    A process without an answer (the bridge does not import) is asked once per test process: each
    case that needs it fails with the same message."""
    if (order, compile_too) in _FAILED:
        raise AssertionError(_FAILED[order, compile_too])
    try:
        return run_fresh(probe, ",".join(order), compile_too, what=f"importing {', '.join(order)}", env=COMPILE_ENV)
    except AssertionError as exc:
        _FAILED[order, compile_too] = str(exc)
        raise


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """`key: A -> B` for every fact that differs (one missing on a side is a difference too)."""
    out = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key, "<not recorded>"), after.get(key, "<not recorded>")
        if a != b:
            out.append(f"{key}: {a!r} -> {b!r}")
    return out
