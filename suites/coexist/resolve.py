"""Check dotted API names against the jax and torch of a fresh interpreter of this cell.

`resolve_probe(names)` runs there (suites/coexist/fresh.py): it imports jax and torch (never the
bridge) and the jax submodules a name needs. A fresh process, not the test process: what other
cases imported (torch_xla registers operators of its own; jax submodules) must not decide what
the census sees. For each name it answers {"status", "api", "detail"}:
- present: every part resolves; `api` is the name cut after its first non-module part
  (`jax.numpy.bfloat16.dtype` -> `jax.numpy.bfloat16`: deeper parts are an object's attributes,
  not the package's API surface) or after the overload (`torch.ops.aten.add.Tensor`);
- absent: a part is missing (`detail` names the part and the error);
- unimportable: the module exists but importing it raises (a missing optional package such as
  tensorflow for jax.experimental.jax2tf): a dependency finding, not an API one;
- other-package: an operator in a namespace torch itself does not register (torchvision::,
  xla::): whether it exists says nothing about torch;
- `deprecated` (beside present) holds the DeprecationWarning the lookup raised.
"""

from __future__ import annotations

from typing import Any

from suites.coexist.fresh import run_fresh


def resolve_probe(names: list) -> None:
    """Print {name: verdict} for the dotted names (jax.* or torch.ops.*) as the answer line."""
    import json
    import types
    import warnings
    from importlib import import_module
    from importlib.util import find_spec

    def _lookup(obj, name):
        """getattr with the DeprecationWarning it raises, if any."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = getattr(obj, name)
        dep = next((str(w.message) for w in caught if issubclass(w.category, (DeprecationWarning, FutureWarning))), None)
        return value, dep

    def _submodule(path):
        """(module, None), (None, None) where no such module exists, (None, error) where it fails to import."""
        try:
            if find_spec(path) is None:
                return None, None
        except (ImportError, ValueError):
            return None, None
        try:
            return import_module(path), None
        except Exception as exc:  # noqa: BLE001 - any error importing it is the fact recorded
            return None, f"{type(exc).__name__}: {exc}"

    def resolve_jax(name):
        """Walk jax.a.b.c through modules, importing submodules as needed, up to the first non-module part."""
        parts = name.split(".")
        obj, error = _submodule(parts[0])
        if obj is None:
            return {"status": "absent" if error is None else "unimportable", "api": parts[0], "detail": error or "not installed"}
        deprecated = None
        for i, part in enumerate(parts[1:], start=1):
            path = ".".join(parts[: i + 1])
            try:
                value, dep = _lookup(obj, part)
            except AttributeError as exc:
                value, dep = None, None
                module, error = _submodule(path) if isinstance(obj, types.ModuleType) else (None, None)
                if module is None:
                    status = "unimportable" if error else "absent"
                    return {"status": status, "api": path, "detail": error or f"AttributeError: {exc}"}
                value = module
            except Exception as exc:  # noqa: BLE001 - a module __getattr__ that raises otherwise: recorded
                return {"status": "absent", "api": path, "detail": f"{type(exc).__name__}: {exc}"}
            deprecated = deprecated or dep
            if not isinstance(value, types.ModuleType):
                return {"status": "present", "api": path, "deprecated": deprecated}
            obj = value
        return {"status": "present", "api": name, "deprecated": deprecated}

    def _torch_namespaces():
        """The operator namespaces torch registers itself (aten, prims, quantized, ...)."""
        import torch

        names = getattr(torch._C, "_dispatch_get_all_op_names", None)
        return {n.split("::")[0] for n in names()} if names else set()

    def resolve_torch_op(name):
        """torch.ops.NS.OP[.OVERLOAD]: the packet must exist, and the overload among its overloads."""
        parts = name.split(".")
        if parts[:2] != ["torch", "ops"] or len(parts) < 4:
            return {"status": "present", "api": name, "detail": "not an operator"}  # torch.ops.aten itself
        import torch

        ns, op = parts[2], parts[3]
        try:
            packet = getattr(getattr(torch.ops, ns), op)
        except Exception as exc:  # noqa: BLE001 - AttributeError or RuntimeError from the dispatcher: absent
            if ns not in _torch_namespaces():  # torchvision::, xla::: registered by that package when imported
                return {"status": "other-package", "api": ".".join(parts[:4]),
                        "detail": f"torch itself registers no {ns}:: operator (another package does, when imported)"}
            return {"status": "absent", "api": ".".join(parts[:4]), "detail": f"{type(exc).__name__}: {exc}"}
        if len(parts) == 4:
            return {"status": "present", "api": name}
        overload = parts[4]
        api = ".".join(parts[:5])
        overloads = packet.overloads() if hasattr(packet, "overloads") else []
        if overload in overloads:
            return {"status": "present", "api": api}
        if hasattr(type(packet), overload):  # a method of the packet (.overloads, ._qualified_op_name), not an overload
            return {"status": "present", "api": ".".join(parts[:4])}
        return {"status": "absent", "api": api,
                "detail": f"{ns}::{op} has no overload {overload!r} (it has {', '.join(sorted(overloads)) or 'none'})"}

    def resolve(name):
        """The verdict for one dotted name (jax.* or torch.ops.*)."""
        return resolve_torch_op(name) if name.startswith("torch.ops.") else resolve_jax(name)

    print("SEAMS-ANSWER " + json.dumps({n: resolve(n) for n in names}))


def resolve_all(names: list[str]) -> dict[str, dict[str, Any]]:
    """The verdict for each name, from a fresh interpreter of this cell."""
    # Public names first: importing a private module before its public package can fail where the
    # bridge, importing them the other way round, does not (jax 0.7.1's pallas_call_registration
    # before jax.experimental.pallas is a circular import that breaks both).
    ordered = sorted(names, key=lambda n: ("._" in n, n))
    return run_fresh(resolve_probe, ordered, what="checking the census's names")
