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


def _nightly() -> bool:
    """The `nightly` profile (every sample, dtype and error input), not the default `ci`."""
    return os.environ.get("SEAMS_HYPOTHESIS_PROFILE", "ci") == "nightly"


def sample_cap() -> int | None:
    """How many OpInfo samples a case runs: None for all of them."""
    given = os.environ.get("SEAMS_OPINFO_SAMPLES", "")
    if given.strip().isdigit():
        return int(given) or None
    return None if _nightly() else CI_SAMPLES


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


# Dtypes per op, form and path in the `ci` profile. Measured on torchax0013-cpu's every-dtype run
# (2026-11-25, idle box; suites/torchax_ops/README.md, "Which dtypes `ci` runs"): all five dtypes on
# both paths take 305 s of cell time against the 3-minute budget, compile-bound (about 60% of a case
# is XLA lowering and compiling; an eager case compiles each primitive the lowering runs, a traced
# one a single executable, so an eager case costs about 1.7x a traced one). What `ci` keeps was
# scored against that run's own verdicts (50 known-issue causes, 419 failing (form, op) pairs):
# - the functional op: every supported dtype traced, the first (in DTYPES' order) eagerly too. The
#   dtype-specific causes (bfloat16 widened or rounded differently, float64 computed in float32, bool
#   and int64 semantics) show on the traced path; eager's own on the first dtype.
# - the in-place and out= forms: the first dtype eagerly and the others traced, less float64. What
#   these forms get wrong of their own (casting into integer inputs, bool inputs refused, bfloat16
#   written back rounded, a decomposition outside the env) shows on either path and in the other
#   dtypes; what x64 breaks is the op's lowering, which the functional form's float64 cases show.
#   That leaves out 758 cases the earlier `ci` ran (in-place and out= traced in their first dtype
#   and in float64) that found nothing the rest did not.
# - an op (or form) with one supported dtype runs it both ways.
# All 50 causes and 418 of the 419 pairs (the one missed, gelu failing eagerly in bfloat16 only, is
# `nightly`'s, as before), in 52% of the every-dtype run's cases and 57% of its case time. `nightly`
# runs every dtype on both paths, SEAMS_OPINFO_DTYPES=all (or N: the first N, both paths) does here,
# and a case named on the command line (a known issue's, a bisect probe's) is collected in any profile.
CI_TRACED_FORMS_SKIP: dict[str, frozenset[str]] = {"inplace": frozenset({"float64"}), "out": frozenset({"float64"})}


def _dtypes_given() -> int | None | str:
    """SEAMS_OPINFO_DTYPES as a cap (None: `all`), or "" where it says neither (the profile decides)."""
    given = os.environ.get("SEAMS_OPINFO_DTYPES", "").strip()
    if given == "all":
        return None
    return int(given) if given.isdigit() and int(given) > 0 else ""


def _ci_takes(form: str, path: str, index: int, dtype: str, count: int) -> bool:
    """Whether `ci` runs a form's supported dtype (its index among the op's `count`) on a path."""
    if count == 1:
        return True  # one dtype: both ways
    if path == "eager":
        return index == 0
    # traced: every dtype of the functional op; the in-place and out= forms' others, less float64
    return form == "op" or (index > 0 and dtype not in CI_TRACED_FORMS_SKIP.get(form, frozenset()))


def _per_dtype(key: str, asked: frozenset[str], form: str = "op") -> list[tuple[str, str, str]]:
    """(key, dtype, path) of one op's form (op, inplace, out): the dtypes its profile takes on each
    path (`ci`: _ci_takes; `nightly`, SEAMS_OPINFO_DTYPES=all: every one; =N: the first N), and any asked."""
    given, dtypes = _dtypes_given(), supported(key)
    ci = given == "" and not _nightly()

    def take(index: int, dtype: str, path: str) -> bool:
        if ci:
            return _ci_takes(form, path, index, dtype, len(dtypes))
        return not isinstance(given, int) or index < given  # all (nightly, `all`), or the first N

    return [(key, d, p) for i, d in enumerate(dtypes) for p in PATHS if take(i, d, p) or f"{key}-{d}-{p}" in asked]


def cases(asked: frozenset[str] = frozenset()) -> list[tuple[str, str, str]]:
    """(key, dtype, path) for every registered OpInfo, each dtype it supports (as _per_dtype() takes
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
        out += [(e.key, p) for p in PATHS] if variant == "error" else _per_dtype(e.key, asked, variant)
    return out


# Error inputs per op in the `ci` profile (None: all of them, as `nightly` runs); SEAMS_OPINFO_ERRORS=N overrides.
CI_ERRORS: int | None = None
# ...and in `ci` an error input whose tensors hold more than this many elements is nightly's. Of the
# 355 error inputs of torchax 0.0.13's ops one is (multinomial's 2^24 + 1 categories, the limit torch
# checks), and converting and sampling it took 14 s of the family's 330 s of case time on jax 0.10.2
# (issue 27's budget); the case still checks the op's other 20 error inputs.
CI_ERROR_ELEMENTS: int | None = 1 << 20


def error_elements_cap() -> int | None:
    """The most tensor elements an error input may hold to be checked: None for no limit."""
    if os.environ.get("SEAMS_OPINFO_ERRORS", "").strip().isdigit() or _nightly():
        return None
    return CI_ERROR_ELEMENTS


def elements(sample: Any) -> int:
    """The elements of every tensor in a sample input (its input, args and kwargs)."""
    import torch
    from torch.utils import _pytree as pytree

    leaves = pytree.tree_leaves((sample.input, sample.args, sample.kwargs))
    return sum(t.numel() for t in leaves if isinstance(t, torch.Tensor))


def error_cap() -> int | None:
    """How many of an op's error inputs its case checks: None for all of them."""
    given = os.environ.get("SEAMS_OPINFO_ERRORS", "").strip()
    if given.isdigit():
        return int(given) or None
    return None if _nightly() else CI_ERRORS


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
