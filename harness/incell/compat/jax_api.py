"""JAX API moves bridged in one place: shard_map's home and check kwarg, pvary/pcast, vma access,
compute_on and its stream form.

Only *where* an API lives or how it is spelled is bridged here. Whether it behaves the same is
what the suites check, so nothing here catches an error from the API itself. Every probe records
the API's presence (harness.incell.compat.found) under the name its range has in matrices/apis/.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import jax
import numpy as np

from harness.incell.compat import api_absent, found

SHARD_MAP = "jax.shard_map"
EXPERIMENTAL_SHARD_MAP = "jax.experimental.shard_map"
PVARY = "jax.lax.pvary"
PCAST = "jax.lax.pcast"
COMPUTE_ON = "jax.experimental.compute_on"
COMPUTE_ON_STREAM = "jax.experimental.compute_on(gpu_stream:N)"
# compute_on's two spellings: compute_on(compute_type) as a decorator / context manager, and from jax
# 0.11.1 the function transform compute_on(f, *, compute_type, out_memory_spaces) (the former
# compute_on2) that replaced it
COMPUTE_ON_BY_TYPE = "jax.experimental.compute_on(compute_type)"
COMPUTE_ON_TRANSFORM = "jax.experimental.compute_on(f, *, compute_type, out_memory_spaces)"


def shard_map(f: Callable, *, mesh: Any, in_specs: Any, out_specs: Any, check: bool = True) -> Callable:
    """shard_map from jax.shard_map (0.7+) or jax.experimental.shard_map (before), with the
    replication/varying-axes check on or off (check_rep before 0.7, check_vma after)."""
    if found(SHARD_MAP, hasattr(jax, "shard_map")):
        return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check)
    exp_shard_map = _experimental_shard_map()
    return exp_shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=check)


def shard_map_itself() -> tuple[str, Callable]:
    """(API name, shard_map) as this release ships it, for calls with its own defaults (the
    wrapper above always passes the check explicitly, so it cannot see a flipped default)."""
    if found(SHARD_MAP, hasattr(jax, "shard_map")):
        return SHARD_MAP, jax.shard_map
    return EXPERIMENTAL_SHARD_MAP, _experimental_shard_map()


def _experimental_shard_map() -> Callable:
    try:
        from jax.experimental.shard_map import shard_map as exp_shard_map
    except ImportError:
        api_absent(EXPERIMENTAL_SHARD_MAP, f"jax {jax.__version__}")
    found(EXPERIMENTAL_SHARD_MAP, True)
    return exp_shard_map


def shard_map_home() -> str:
    """Where shard_map was found (recorded as an observation)."""
    return "jax.shard_map" if hasattr(jax, "shard_map") else "jax.experimental.shard_map"


def check_kwarg() -> str:
    """The name of shard_map's replication check argument in this version."""
    if hasattr(jax, "shard_map"):
        return "check_vma"
    exp_shard_map = _experimental_shard_map()
    return "check_rep" if "check_rep" in inspect.signature(exp_shard_map).parameters else "check_vma"


def pvary() -> Callable:
    """jax.lax.pvary (0.6.0 .. 0.9.x), or skip as api absent."""
    fn = getattr(jax.lax, "pvary", None)
    if fn is None:
        api_absent(PVARY, f"jax {jax.__version__}")
    found(PVARY, True)
    return fn


def pcast_varying() -> Callable:
    """x -> jax.lax.pcast(x, axes, to='varying') (0.8.2+), or skip as api absent."""
    fn = getattr(jax.lax, "pcast", None)
    if fn is None:
        api_absent(PCAST, f"jax {jax.__version__}")
    found(PCAST, True)
    return lambda x, axes: fn(x, axes, to="varying")


def varying_axes(x: Any) -> list[str] | None:
    """The manual mesh axes a value varies over, through the public type (None where not exposed).

    0.5.3: typeof(x).varying_manual_axes; 0.6-0.9: typeof(x).vma; 0.10: typeof(x).manual_axis_type.
    """
    if not hasattr(jax, "typeof"):
        return None
    aval = jax.typeof(x)
    for attr in ("vma", "varying_manual_axes"):
        if hasattr(aval, attr):
            return sorted(str(a) for a in getattr(aval, attr))
    mat = getattr(aval, "manual_axis_type", None)
    if mat is not None:
        varying = getattr(mat, "varying", None)
        if varying is None:
            return [str(mat)]
        return sorted(str(a) for a in varying)
    return None


def make_mesh(n: int, axis: str) -> Any:
    """A 1-D mesh of the first n devices with Auto axis types, as the upstream reports build it.

    jax.make_mesh is avoided on purpose: its default axis type became Explicit in later
    releases, which changes the semantics under test rather than just the spelling.
    """
    from jax.sharding import Mesh

    return Mesh(np.array(jax.devices()[:n]), (axis,))


def compute_on() -> Callable:
    """compute_on as the suites call it, `compute_on(compute_type)(f)`: jax.experimental.compute_on's
    own (0.4.29+), or on a jax that has only the function transform (0.11.1+), that transform with its
    outputs in device memory (what the decorator gave, and what jax's own tests pass in its place); or
    skip as api absent. Short on purpose: a reduced reproducer whose checks call it keeps it whole."""
    try:
        from jax.experimental.compute_on import compute_on as co
    except ImportError:
        api_absent(COMPUTE_ON, f"jax {jax.__version__}")
    found(COMPUTE_ON, True)
    transform = found(COMPUTE_ON_TRANSFORM, "out_memory_spaces" in inspect.signature(co).parameters)
    found(COMPUTE_ON_BY_TYPE, not transform)
    if not transform:
        return co
    return lambda compute_type: lambda f: co(f, compute_type=compute_type, out_memory_spaces=jax.memory.Space.Device)


def compute_on_nesting_error() -> type[Exception]:
    """What nesting compute_on raises: NotImplementedError from the by-type form, ValueError from the
    transform (its lowering raises it; jax's own test_nested_compute_error changed with it)."""
    from jax.experimental.compute_on import compute_on as co

    return NotImplementedError if compute_on() is co else ValueError  # compute_on() bridges only the transform


def lower_text_on_stream(fn: Callable, stream: int, *args: Any) -> str:
    """StableHLO text of jit(compute_on(f'gpu_stream:{stream}')(fn)) at args, or skip as api absent.

    Before 0.5.1 the stream form is an unknown compute type: that one ValueError is the probe.
    """
    co = compute_on()
    try:
        text = jax.jit(co(f"gpu_stream:{stream}")(fn)).lower(*args).as_text()
    except ValueError as exc:
        if "Invalid compute type" in str(exc):
            api_absent(COMPUTE_ON_STREAM, f"jax {jax.__version__}: {str(exc).splitlines()[0][:120]}")
        raise
    found(COMPUTE_ON_STREAM, True)
    return text


def make_mesh_nd(shape: tuple[int, ...], names: tuple[str, ...]) -> Any:
    """A mesh of the first prod(shape) devices with Auto axis types (see make_mesh for why not jax.make_mesh)."""
    from jax.sharding import Mesh

    n = int(np.prod(shape))
    return Mesh(np.array(jax.devices()[:n]).reshape(shape), names)


def mark_varying(kind: str) -> Callable:
    """(x, axes) -> x marked varying over the manual axes, with pvary or pcast(to='varying')."""
    return pvary() if kind == "pvary" else pcast_varying()


EXPORT = "jax.export"


def export_module() -> Any:
    """jax.export (0.4.30+), or skip as api absent."""
    import importlib
    import importlib.util

    if importlib.util.find_spec("jax.export") is None:
        api_absent(EXPORT, f"jax {jax.__version__}")
    # There but failing to import is a finding, not an absence (0.4.30 - 0.6.1 import the
    # undeclared absl): the ImportError propagates.
    mod = importlib.import_module("jax.export")
    if not hasattr(mod, "export"):
        api_absent(EXPORT, f"jax {jax.__version__}")
    found(EXPORT, True)
    return mod
