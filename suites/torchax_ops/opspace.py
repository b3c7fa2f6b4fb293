"""The op space of this family, derived, never listed: PyTorch's OpInfo database (`op_db`) against
the aten registry of the torchax installed in the cell.

An OpInfo names its aten op (`OpInfo.aten_name`, resolved in `torch.ops.aten`); torchax registers
an op as a lowering (`torchax.ops.ops_registry.all_aten_ops`, filled when `torchax.ops.jaten`
imports) or as a decomposition (`torchax.decompositions.DECOMPOSITIONS`). Every OpInfo whose aten
op torchax registers either way is a case; every other OpInfo is a row of the coverage table with
its reason (no aten op of that name, or an aten op torchax does not register).

Everything here is computed from the packages at collection; nothing is cached across versions.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from harness.incell.compat import require

# The dtypes the issue names; float64 and int64 need jax_enable_x64 (see cores.x64_for).
DTYPES = ("float32", "float64", "bfloat16", "int64", "bool")
PATHS = ("eager", "jit")
# Samples per (op, dtype) in the `ci` hypothesis profile (bounded cell time: the largest sample, see
# cores._chosen); `nightly` runs every sample OpInfo yields. SEAMS_OPINFO_SAMPLES overrides both
# (0 = every sample).
CI_SAMPLES = 1


def sample_cap() -> int | None:
    """How many OpInfo samples a case runs: None for all of them."""
    given = os.environ.get("SEAMS_OPINFO_SAMPLES", "")
    if given.strip().isdigit():
        return int(given) or None
    return None if os.environ.get("SEAMS_HYPOTHESIS_PROFILE", "ci") == "nightly" else CI_SAMPLES


@dataclass(frozen=True)
class OpEntry:
    """One OpInfo as this family sees it: its case key and how torchax covers its aten op."""

    key: str          # the case id's op part: aten.floor_divide, aten.max(reduction_with_dim)
    name: str         # OpInfo.name
    variant: str      # OpInfo.variant_test_name
    aten: str         # OpInfo.aten_name
    covered_by: str   # "lowering", "decomposition", or "" (not registered)
    reason: str       # why it is not a case ("" when it is)


def _safe(text: str) -> str:
    """A name fit for a case id (its parts are split on '-' by the standalone exporter)."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", text)


def op_db() -> list[Any]:
    """PyTorch's OpInfo database (imports expecttest; skips where the cell lacks it)."""
    require("torch")
    require("expecttest")
    with _hypothesis_profile_kept():
        return require("torch.testing._internal.common_methods_invocations").op_db


@contextlib.contextmanager
def _hypothesis_profile_kept():
    """torch.testing._internal.common_utils registers hypothesis profiles of its own ('dev' among
    them) and loads one at import: in a cell that would silently swap the root conftest's profile
    (derandomized, bounded, health checks) for torch's in every family's properties. Put it back."""
    hypothesis = sys.modules.get("hypothesis")  # never imported here: a standalone script needs no hypothesis
    if hypothesis is None:  # nothing imported it (a standalone script): no profile to keep
        yield
        return
    settings = hypothesis.settings
    profiles = dict(settings._profiles)  # private, but the only way to see what was registered
    current = getattr(settings, "_current_profile", None)
    try:
        yield
    finally:
        settings._profiles.update(profiles)
        if current is not None:
            settings.load_profile(current)


def _packet_name(op: Any) -> str | None:
    """'floor_divide' for aten.floor_divide and any of its overloads; None for a torch function."""
    packet = getattr(op, "overloadpacket", op)
    qualified = getattr(packet, "_qualified_op_name", "")
    return qualified.split("::", 1)[1] if qualified.startswith("aten::") else None


def torchax_registry() -> dict[str, str]:
    """aten op name -> 'lowering' or 'decomposition', as the installed torchax registers it."""
    require("torchax")
    require("torchax.ops.jaten")  # importing it fills the registry (torchax's own load_ops does the same)
    registry = require("torchax.ops.ops_registry")
    decomps = require("torchax.decompositions")
    out: dict[str, str] = {}
    for op in getattr(decomps, "DECOMPOSITIONS", {}):
        if (name := _packet_name(op)):
            out[name] = "decomposition"
    for op in registry.all_aten_ops:
        if (name := _packet_name(op)):
            out[name] = "lowering"  # a lowering wins: torchax looks lowerings up first
    return out


@lru_cache(maxsize=1)
def entries() -> tuple[OpEntry, ...]:
    """Every OpInfo of op_db with its key and coverage, in op_db's order."""
    db = op_db()  # first: it skips where torch or expecttest is not installed
    registry = torchax_registry()
    import torch

    raw = []
    for info in db:
        aten = info.aten_name or info.name
        resolvable = hasattr(torch.ops.aten, aten) if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", aten) else False
        covered = registry.get(aten, "") if resolvable else ""
        if not resolvable:
            reason = f"no aten op named {aten!r} (OpInfo of a composite or Python-level function)"
        elif not covered:
            reason = f"aten.{aten} is not registered by torchax (no lowering, no decomposition)"
        else:
            reason = ""
        base = f"aten.{_safe(aten)}" + (f"({_safe(info.variant_test_name)})" if info.variant_test_name else "")
        raw.append((base, info, aten, covered, reason))
    # two OpInfos on one aten op (nn.functional.relu6 and a method variant, say) keep apart by name
    counts: dict[str, int] = {}
    for base, *_ in raw:
        counts[base] = counts.get(base, 0) + 1
    out = []
    for base, info, aten, covered, reason in raw:
        key = base if counts[base] == 1 else f"{base}@{_safe(info.name)}"
        out.append(OpEntry(key, info.name, info.variant_test_name, aten, covered, reason))
    return tuple(out)


@cache
def opinfo(key: str) -> Any:
    """The OpInfo behind a case key."""
    by_key = {e.key: i for i, e in enumerate(entries())}
    return op_db()[by_key[key]]


def supported(key: str) -> list[str]:
    """The family's dtypes this OpInfo says its op supports on CPU."""
    import torch

    have = opinfo(key).supported_dtypes("cpu")
    return [d for d in DTYPES if getattr(torch, d) in have]


# Dtypes per op and path in the `ci` profile: every dtype the op supports on the traced path, the
# first (in DTYPES' order, float32 first) on the eager one. Measured on torchax0013-cpu's every-dtype
# run (2026-11-25, idle box; suites/torchax_ops/README.md): all five dtypes on both paths take 305 s
# of cell time against the 3-minute budget, compile-bound (about 60% of a case is XLA compiling);
# an eager case compiles each primitive the lowering runs, a traced one a single executable, so an
# eager case costs about 1.7x a traced one. The dtype-specific causes (bfloat16 widened or rounded
# differently, float64 computed in float32, bool and int64 semantics, in-place float results cast
# into integer inputs) show on both paths: traced every dtype plus eager's first found all 47
# causes of that run and 395 of the 396 failing (form, op) pairs, where one dtype found 27 causes.
# `nightly` runs every dtype on both paths, SEAMS_OPINFO_DTYPES=all (or N, both paths) does here,
# and a case named on the command line (a known issue's, a bisect probe's) is collected in any profile.
CI_DTYPES: dict[str, int | None] = {"eager": 1, "jit": None}


def dtype_cap(path: str) -> int | None:
    """How many of an op's supported dtypes become cases on this path: None for all of them."""
    given = os.environ.get("SEAMS_OPINFO_DTYPES", "").strip()
    if given == "all":
        return None
    if given.isdigit() and int(given) > 0:
        return int(given)
    return None if os.environ.get("SEAMS_HYPOTHESIS_PROFILE", "ci") == "nightly" else CI_DTYPES[path]


def _per_dtype(key: str, asked: frozenset[str]) -> list[tuple[str, str, str]]:
    """(key, dtype, path) of one op: each path's first dtype_cap(path) supported dtypes, and any asked."""
    caps = {p: dtype_cap(p) for p in PATHS}
    return [(key, d, p) for i, d in enumerate(supported(key)) for p in PATHS
            if caps[p] is None or i < caps[p] or f"{key}-{d}-{p}" in asked]


def cases(asked: frozenset[str] = frozenset()) -> list[tuple[str, str, str]]:
    """(key, dtype, path) for every registered OpInfo, each dtype it supports (as dtype_cap() takes
    them per path) and path; plus any case in `asked` (ids KEY-DTYPE-PATH) the op supports."""
    out = []
    for e in entries():
        if e.covered_by:
            out += _per_dtype(e.key, asked)
    return out


# The variants of an OpInfo op beside its functional call (test_ops.py's other functions): its
# error_inputs (torch raises, torchax must), its in-place variant (`x.add_(y)` updates x), its out=
# form (`torch.add(x, y, out=o)` writes o). Each is a case of an OpInfo whose functional aten op
# torchax registers (torchax routes `add_` and `add.out` through that op's lowering or not at all).
VARIANTS = ("error", "inplace", "out")


def has_variant(key: str, variant: str) -> bool:
    info = opinfo(key)
    if variant == "error":
        return info.error_inputs_func is not None
    if variant == "inplace":
        return info.inplace_variant is not None
    return bool(info.supports_out)


def variant_cases(variant: str, asked: frozenset[str] = frozenset()) -> list[tuple[str, ...]]:
    """The cases of one variant: (key, path) for `error` (an OpInfo's error inputs are not per dtype),
    (key, dtype, path) for `inplace` and `out`, dtypes as cases() takes them; plus any case in `asked`."""
    out: list[tuple[str, ...]] = []
    for e in entries():
        if not e.covered_by or not has_variant(e.key, variant):
            continue
        out += [(e.key, p) for p in PATHS] if variant == "error" else _per_dtype(e.key, asked)
    return out


# Error inputs per op in the `ci` profile (None: all of them, as `nightly` runs); SEAMS_OPINFO_ERRORS=N overrides.
CI_ERRORS: int | None = None


def error_cap() -> int | None:
    """How many of an op's error inputs its case checks: None for all of them."""
    given = os.environ.get("SEAMS_OPINFO_ERRORS", "").strip()
    if given.isdigit():
        return int(given) or None
    return None if os.environ.get("SEAMS_HYPOTHESIS_PROFILE", "ci") == "nightly" else CI_ERRORS


def error_inputs(info: Any) -> list[Any]:
    """`list(info.error_inputs("cpu"))`, reseeded per input as OpInfo does (see samples())."""
    return _reseeded(info.error_inputs_func(info, "cpu"))


def seed(value: int) -> None:
    """torch.manual_seed(value) on CPU, without its per-call cost: torch.manual_seed also queues a
    lazy CUDA seeding with the caller's formatted stack (about 1 ms under pytest), and a case seeds
    thousands of times. Every generator these cases draw from is CPU's default one."""
    import torch

    torch.default_generator.manual_seed(value)


def samples(info: Any, dtype: str) -> list[Any]:
    """`list(info.sample_inputs("cpu", dtype))` after torch.manual_seed(0), the same samples with the
    same values (a standalone script rebuilds them with those public calls): OpInfo's iterator
    reseeds torch, `random` and NumPy with common_utils.SEED before each sample, and looks for a
    unittest frame on the stack twice per call (inspect.stack, slow under pytest); this reseeds
    alike and looks for nothing (outside a torch TestCase there is none, so the seed is SEED)."""
    import torch

    seed(0)
    return _reseeded(info.sample_inputs_func(info, "cpu", getattr(torch, dtype), False))


def _reseeded(made: Any) -> list[Any]:
    """Every item of an OpInfo generator, torch / random / NumPy reseeded with SEED before each."""
    import random

    import numpy as np

    common_utils = require("torch.testing._internal.common_utils")
    produced = iter(made)
    out = []
    while True:
        seed(common_utils.SEED)
        random.seed(common_utils.SEED)
        np.random.seed(common_utils.SEED)
        try:
            out.append(next(produced))
        except StopIteration:
            return out


def coverage() -> dict[str, Any]:
    """The coverage table: every OpInfo, whether it is a case, and if not, why."""
    rows = [{"opinfo": e.name + (f" ({e.variant})" if e.variant else ""), "aten": e.aten, "key": e.key,
             "covered_by": e.covered_by or "not registered", "reason": e.reason} for e in entries()]
    return {"in_opinfo": len(rows), "covered": sum(1 for r in rows if not r["reason"]),
            "registered": len(torchax_registry()), "rows": rows}
