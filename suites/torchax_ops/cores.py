"""torchax_ops scenario cores: one OpInfo op, one dtype, one path (torchax eager, or traced under
jax.jit), every sample (capped in `ci`) against torch eager on CPU; the op's error inputs, in-place
variant and out= form the same way.

Plain functions over their inputs, called by the tests and inlined by `harness report` into
standalone reproducers (see suites/compute_on/cores.py for the rules): the case id's parts
(`aten.floor_divide-float32-jit`) are `op_case`'s leading arguments. The op cases and their other
forms are written out shorter by harness/report/standalone_op.py (the op, the sample, the two
results) from the example a failing case records: keep what it rebuilds (samples(), the tied copy,
the tolerance, the comparison's messages) in step with it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from harness.incell.compat import require, torch_api
from suites.torchax_ops.dlpack import conversion_case
from suites.torchax_ops.modules import STEPS, buffers_case, forward_case
from suites.torchax_ops.opspace import (cases, coverage, elements, error_cap, error_elements_cap, error_inputs, opinfo,
                                        sample_cap, samples, seed)

# torch.testing.assert_close's own defaults per dtype (rtol, atol): what OpInfo's tests compare
# with unless the OpInfo overrides them (torch/testing/_comparison.py, default_tolerances).
_TORCH_DEFAULT_TOL = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
                      "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def torchax_env() -> Any:
    """torchax's default environment (skips where the cell has no torch or no torchax)."""
    require("torch")
    require("torchax")
    require("torchax.interop")
    return torch_api.torchax_entry("default_env")()


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


def x64_for(dtype: str) -> bool:
    """64-bit dtypes run with jax_enable_x64 on, as a user who needs them has it (without it JAX
    has no float64/int64 and torchax narrows them: a known issue of its own, not an op's)."""
    return dtype in ("float64", "int64")


def tolerance(info: Any, dtype: str, out_dtype: str | None = None) -> tuple[float, float, str]:
    """(rtol, atol, where from) for this OpInfo, sample dtype and output dtype: torch's default for
    the output's dtype (exact for integers and bool), widened to the largest toleranceOverride /
    precisionOverride the OpInfo declares for the sample dtype on CPU (OpInfo keys them so)."""
    import torch

    rtol, atol = _TORCH_DEFAULT_TOL.get(out_dtype or dtype, (0.0, 0.0))
    source = "torch.testing default"
    tdtype = getattr(torch, dtype)
    for deco, d in _decorators(info):
        if getattr(deco, "device_type", None) not in (None, "cpu"):
            continue
        table = getattr(d, "d", None)
        if not isinstance(table, dict) or tdtype not in table:
            continue
        value = table[tdtype]
        if hasattr(value, "atol"):  # toleranceOverride: tol(atol, rtol)
            if value.atol > atol or value.rtol > rtol:
                atol, rtol, source = max(atol, value.atol), max(rtol, value.rtol), f"OpInfo toleranceOverride ({_where(deco)})"
        elif isinstance(value, float) and value > atol:  # precisionOverride: an atol
            atol, source = value, f"OpInfo precisionOverride ({_where(deco)})"
    return rtol, atol, source


def _decorators(info: Any) -> list[tuple[Any, Any]]:
    """(DecorateInfo or the bare decorator, each decorator it applies) for an OpInfo."""
    out = []
    for deco in getattr(info, "decorators", ()) or ():
        inner = getattr(deco, "decorators", None)
        out.extend((deco, d) for d in inner) if inner is not None else out.append((deco, deco))
    return out


def _where(deco: Any) -> str:
    return f"{getattr(deco, 'cls_name', None) or 'any test'}.{getattr(deco, 'test_name', None) or 'any'}"


def comparable(info: Any, dtype: str) -> str:
    """'' when the op's values are comparable across devices; else OpInfo's reason why not: it
    marks the op random (wrapper_set_seed) or skips its own CPU-vs-device comparison
    (TestCommon.test_compare_cpu: empty_like, random ops)."""
    import torch

    code = getattr(getattr(info, "op", None), "__code__", None)
    if code is not None and "wrapper_set_seed" in code.co_names:
        # OpInfo's own mark of a random op: it reseeds torch's generator around the call, so torch's
        # values are one fixed draw of torch's stream, which torchax (JAX's PRNG) cannot reproduce
        return "OpInfo runs the op under wrapper_set_seed (a random op)"
    tdtype = getattr(torch, dtype)
    for deco, d in _decorators(info):
        if (getattr(deco, "cls_name", None), getattr(deco, "test_name", None)) != ("TestCommon", "test_compare_cpu"):
            continue
        if deco.device_type not in (None, "cpu") or (deco.dtypes is not None and tdtype not in deco.dtypes):
            continue
        cells = [c.cell_contents for c in (getattr(d, "__closure__", None) or ()) if isinstance(c.cell_contents, str)]
        if getattr(d, "__name__", "") == "decorator" or cells:  # unittest.skip / skipIf
            return "OpInfo skips test_compare_cpu" + (f": {cells[0]}" if cells else "")
    return ""


def _clone(tree: Any) -> Any:
    import torch
    from torch.utils import _pytree as pytree

    return pytree.tree_map_only(torch.Tensor, lambda t: t.clone(), tree)


def _call(info: Any, sample: Any, value: int) -> Any:
    seed(value)
    return info(*_clone((sample.input, *sample.args)), **_clone(sample.kwargs))


def _on_jax(tree: Any) -> Any:
    """The sample as torchax runs it: a device OpInfo names ('cpu', the device under test, as a
    factory's device= or `to`'s argument) becomes 'jax', the device torchax's tensors live on."""
    import torch
    from torch.utils import _pytree as pytree

    def swap(leaf: Any) -> Any:
        if isinstance(leaf, torch.device) or (isinstance(leaf, str) and leaf == "cpu"):
            return "jax" if str(leaf) == "cpu" else leaf
        return leaf

    return pytree.tree_map(swap, tree)


def _torchax_eager(env: Any, info: Any, sample: Any) -> Any:
    args, kwargs = env.to_xla(_on_jax((_clone((sample.input, *sample.args)), _clone(sample.kwargs))))
    seed(0)
    with env:
        return info(*args, **kwargs)


def _jit_over_tensors(env: Any, tree: Any, body: Any) -> Any:
    """body(tree) traced through interop.jax_jit: the tree's tensors are jax.jit arguments, every
    other leaf is closed over as static (the one way each path of the op cases traces a call)."""
    import torch
    from torch.utils import _pytree as pytree

    leaves, spec = pytree.tree_flatten(tree)
    where = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]

    def traced(*tensors):
        filled = list(leaves)
        for i, t in zip(where, tensors):
            filled[i] = t
        return body(pytree.tree_unflatten(filled, spec))

    tensors = env.to_xla(tuple(leaves[i] for i in where))
    seed(0)
    return torch_api.torchax_entry("interop.jax_jit")(traced)(*tensors)


def _torchax_jit(env: Any, info: Any, sample: Any) -> Any:
    """The call traced: its tensors are jax.jit arguments, everything else closed over as static."""

    def call(tree):
        args, kwargs = tree
        out = info(*args, **kwargs)
        # torch.return_types (max.dim, sort, ...) are no JAX pytree: returned as they are, jax.jit
        # refuses every such op (pinned once: test_jit_boundary.py); as a tuple, the op is tested
        return tuple(out) if _is_structseq(out) else out

    return _jit_over_tensors(env, _on_jax((_clone((sample.input, *sample.args)), _clone(sample.kwargs))), call)


def _is_structseq(x: Any) -> bool:
    return type(x).__module__ == "torch.return_types"


def _chosen(samples: list[Any], cap: int | None) -> list[tuple[int, Any]]:
    """(index, sample) to run: all of them, or under a cap the largest (by tensor elements, the
    earlier on a tie): most values per compile, and the likeliest to hold ties and negatives."""
    indexed = list(enumerate(samples))
    if cap is None:
        return indexed
    return sorted(sorted(indexed, key=lambda t: -elements(t[1]))[:cap])


def _seed_env(env: Any) -> None:
    """The env's PRNG state from seed 0. torchax 0.0.4 has no Environment.manual_seed and no key of
    its own: each random op draws its key from torch's default generator (get_and_rotate_prng_key),
    so seeding that generator is the same step there. torchax 0.0.6 (bundled in torch_xla 2.9.0) and
    0.0.7 keep the key in a list of runtime properties, and manual_seed appends an override whose
    parent is the previous one, never popped: each call nests one level, and about 950 calls later
    every op's property lookup (OverrideProperty.__getattr__) recurses past Python's limit, so every
    case after that fails with RecursionError whatever its op. The suite seeds before every torchax
    call, so it first drops the overrides its earlier seeds left (the base property stays)."""
    seed = getattr(env, "manual_seed", None)
    if seed is None:
        import torch

        torch.manual_seed(0)
        return
    content = getattr(getattr(env, "_property", None), "content", None)
    if isinstance(content, list) and len(content) > 1:
        del content[1:]
    seed(0)


def _isolated(run: Any, env: Any, info: Any, sample: Any) -> Any:
    """One torchax call from a known PRNG state, checked to leave that state concrete: a random op
    traced under jax.jit that stores its tracer in the env's key (google/torchax#17) fails here,
    in the call that leaked it, not in whichever random op runs next."""
    _seed_env(env)
    out = run(env, info, sample)
    key = getattr(env, "prng_key", None)
    if "Tracer" in type(key).__name__:
        _seed_env(env)
        raise AssertionError(f"the call left a JAX tracer ({type(key).__name__}) as the env's PRNG key (it escaped the trace)")
    return out


def _leaves(tree: Any) -> list[Any]:
    from torch.utils import _pytree as pytree

    # torch.return_types (namedtuples) and tuples/lists compare by their leaves in order
    return pytree.tree_leaves(tuple(tree) if isinstance(tree, (tuple, list)) else tree)


def _compare(ref: Any, got: Any, dtype: str, info: Any, values: bool) -> float:
    """Raise AssertionError unless got matches ref leaf for leaf; the largest abs error seen."""
    import torch

    tensor_type = require("torchax.tensor").Tensor
    rl, gl = _leaves(ref), _leaves(got)
    assert len(rl) == len(gl), f"{len(gl)} output leaves where torch gives {len(rl)}"
    worst = 0.0
    for n, (r, g) in enumerate(zip(rl, gl)):
        if not isinstance(r, torch.Tensor):
            g = g.torch() if isinstance(g, tensor_type) else g
            assert not isinstance(g, torch.Tensor) or g.numel() == 1, f"output {n}: a tensor where torch gives {r!r}"
            g = g.item() if isinstance(g, torch.Tensor) else g
            assert g == r or (r != r and g != g), f"output {n}: {g!r} where torch gives {r!r}"
            continue
        assert isinstance(g, tensor_type), \
            f"output {n}: {type(g).__module__}.{type(g).__name__} where a torchax Tensor is due (it left the env)"
        g = g.torch()
        assert tuple(g.shape) == tuple(r.shape), f"output {n}: shape {tuple(g.shape)} where torch gives {tuple(r.shape)}"
        assert g.dtype == r.dtype, f"output {n}: dtype {g.dtype} where torch gives {r.dtype}"
        if not values or r.numel() == 0:
            continue
        rtol, atol, _ = tolerance(info, dtype, str(r.dtype).removeprefix("torch."))
        if r.is_floating_point() or r.is_complex():
            diff = (g.double() - r.double()).abs()
            finite = torch.isfinite(diff)
            worst = max(worst, float(diff[finite].max()) if bool(finite.any()) else 0.0)
        torch.testing.assert_close(g, r, rtol=rtol, atol=atol, equal_nan=True, check_dtype=False,
                                   check_stride=False, check_device=False, msg=lambda m, n=n: f"output {n}: {m}")
    return worst


def op_case(key: str, dtype: str, path: str, observe) -> None:
    """torch eager on CPU vs torchax (`eager` in its env, or `jit`: traced under jax.jit) for every
    sample OpInfo gives this op in this dtype (the largest one under the `ci` cap), plus a copy of
    it with tied values where the op returns indices of floating inputs (argmax's first maximum):
    same raising, output leaves, shapes, dtypes, values. A failure records the first failing sample
    and how it was compared as the case's example (harness/report/standalone_op.py writes the
    standalone script from it: the op, that sample, the two results)."""
    require("torch")
    env = torchax_env()
    info = opinfo(key)
    cap = sample_cap()
    rtol, atol, tol_source = tolerance(info, dtype)
    why_not = comparable(info, dtype)
    stats = {"samples": 0, "torch_raised": 0, "rng_dependent": False, "max_abs_err": 0.0, "tie_samples": 0}
    failures: list[str] = []
    failed_at: list[str] = []  # the first failing sample's facts, as the script's example
    with x64(x64_for(dtype)):
        given = samples(info, dtype)
        for i, sample in _chosen(given, cap):
            ref = _check_sample(info, sample, (i, False), dtype, path, env, stats, failures, failed_at)
            if _returns_indices(ref, sample):
                stats["tie_samples"] += 1
                _check_sample(info, _with_ties(sample), (i, True), dtype, path, env, stats, failures, failed_at)
    overridden = tol_source != "torch.testing default"
    example = {}
    if failed_at:  # `sample(index=, ties=, values=, rtol=, atol=)`, as a hypothesis note names its input
        example["falsifying_example"] = (f"Falsifying example: sample({failed_at[0]}, rtol={rtol if overridden else None!r}, "
                                         f"atol={atol if overridden else None!r})")
    observe.record(**stats, sample_cap=cap, failing_samples=len(failures), values_compared=not why_not,
                   not_comparable=why_not or None, rtol=rtol, atol=atol, tolerance_from=tol_source, x64=x64_for(dtype),
                   **example)
    if stats["samples"] == 0:
        import pytest

        pytest.skip(f"OpInfo {info.name} yields no sample for {dtype} on cpu")
    assert not failures, f"{len(failures)} of {stats['samples']} samples differ from torch eager; " + " | ".join(failures[:3])


def _check_sample(info: Any, sample: Any, at: tuple[int, bool], dtype: str, path: str, env: Any, stats: dict,
                  failures: list[str], failed_at: list[str]) -> Any:
    """One sample (its index, and whether it is the tied copy) through torch and torchax; a
    difference is appended to failures, the sample's facts to failed_at. The reference."""
    run = _torchax_eager if path == "eager" else _torchax_jit
    label = f"{at[0]}" + (" with ties" if at[1] else "")
    stats["samples"] += 1
    why_not = comparable(info, dtype)
    try:
        ref = _call(info, sample, 0)
    except Exception as exc:  # torch refuses this sample: torchax must refuse it too
        stats["torch_raised"] += 1
        try:
            _isolated(run, env, info, sample)
        except Exception:
            return None
        failures.append(f"sample {label}: torch raised {type(exc).__name__}, torchax {path} returned")
        failed_at.append(f"index={at[0]}, ties={at[1]}, values={not why_not}")
        return None
    # an output that depends on the RNG (bernoulli, dropout, randn_like) is compared by
    # structure, shape and dtype only: its values are torch's stream, not the op's semantics
    rng = not _same(ref, _call(info, sample, 1))
    stats["rng_dependent"] |= rng
    facts = f"index={at[0]}, ties={at[1]}, values={not (why_not or rng)}"
    try:
        got = _isolated(run, env, info, sample)
    except Exception as exc:
        failures.append(f"sample {label}: torch returned, torchax {path} raised {type(exc).__name__}: {_short(exc)}")
        failed_at.append(facts)
        return ref
    try:
        err = _compare(ref, got, dtype, info, values=not (why_not or rng))
        stats["max_abs_err"] = max(stats["max_abs_err"], err)
    except AssertionError as exc:
        failures.append(f"sample {label} ({_describe(sample)}): {_short(exc)}")
        failed_at.append(facts)
    return ref


def _returns_indices(ref: Any, sample: Any) -> bool:
    """An op that answers with int64 positions into a floating input (argmax, sort, max.dim, topk)."""
    import torch

    floating = isinstance(sample.input, torch.Tensor) and sample.input.is_floating_point() and sample.input.numel() > 1
    return floating and any(isinstance(t, torch.Tensor) and t.dtype == torch.int64 for t in _leaves(ref))


def _with_ties(sample: Any) -> Any:
    """The sample with its floating input reduced to its signs (-1, 0, 1), so every row holds equal
    values: where torch documents which of equal elements wins (argmax, max.dim: the first),
    torchax must agree."""
    import copy

    tied = copy.copy(sample)
    tied.input = sample.input.sign()
    return tied


def _same(a: Any, b: Any) -> bool:
    import torch

    la, lb = _leaves(a), _leaves(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or not torch.equal(torch.nan_to_num(x.detach()), torch.nan_to_num(y.detach())):
                return False
        elif not isinstance(x, torch.Tensor) and x != y and x == x:
            return False
    return True


def _short(exc: BaseException, limit: int = 400) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _describe(sample: Any) -> str:
    """A sample in one line: its tensor shapes and dtypes, its other arguments."""
    import torch

    def one(x: Any) -> str:
        if isinstance(x, torch.Tensor):
            return f"{str(x.dtype).removeprefix('torch.')}{list(x.shape)}"
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(one(v) for v in x) + "]"
        return repr(x)

    parts = [one(sample.input), *(one(a) for a in sample.args), *(f"{k}={one(v)}" for k, v in sample.kwargs.items())]
    return _short(", ".join(parts), 200)


def _wants_x64(sample: Any) -> bool:
    """An error input or sample of its own dtypes: 64-bit tensors in it run with x64 on (as op cases' do)."""
    import torch

    return any(isinstance(t, torch.Tensor) and t.dtype in (torch.float64, torch.int64, torch.complex128)
               for t in _leaves((sample.input, sample.args, sample.kwargs)))


def op_error_case(key: str, path: str, observe) -> None:
    """Every error input OpInfo gives this op (`op.error_inputs("cpu")`, under the `ci` cap the first
    ones): where torch eager raises, torchax (`eager` in its env, or `jit`: traced) must raise too.
    The exception types are recorded per input (torch's / torchax's), not compared: a torchax that
    returns a value where torch raises is the failure."""
    require("torch")
    env = torchax_env()
    info = opinfo(key)
    run = _torchax_eager if path == "eager" else _torchax_jit
    given = error_inputs(info)
    cap, largest = error_cap(), error_elements_cap()
    too_large: list[int] = []  # error inputs over the `ci` size limit, left to nightly
    raised: list[str] = []  # "INDEX: TorchError / TorchaxError"
    torch_returned: list[int] = []  # error inputs torch on CPU accepts in this release (not checked)
    failures: list[str] = []
    failed_at: list[int] = []
    for i, err in enumerate(given[:cap]):
        sample = err.sample_input
        if largest is not None and elements(sample) > largest:
            too_large.append(i)
            continue
        with x64(_wants_x64(sample)):
            try:
                _call(info, sample, 0)
            except Exception as exc:
                torch_error = type(exc).__name__
            else:
                torch_returned.append(i)
                continue
            try:
                _isolated(run, env, info, sample)
            except Exception as exc:
                raised.append(f"{i}: {torch_error} / {type(exc).__name__}")
                continue
        failures.append(f"error input {i} ({_describe(sample)}): torch raises {torch_error}"
                        f" ({_short(Exception(err.error_regex), 80)}), torchax {path} returned")
        failed_at.append(i)
    example = {"falsifying_example": f"Falsifying example: error_input(index={failed_at[0]})"} if failed_at else {}
    observe.record(error_inputs=len(given), checked=min(len(given), cap or len(given)) - len(too_large),
                   left_to_nightly=too_large, raised=raised,
                   torch_returned=torch_returned, failing_inputs=len(failures), **example)
    if not raised and not failures:
        import pytest

        pytest.skip(f"OpInfo {info.name}: no error input torch raises on here ({len(given)} given)")
    assert not failures, f"{len(failures)} of {len(raised) + len(failures)} error inputs: " + " | ".join(failures[:3])


def _conclude(observe, stats: dict, failures: list[str], failed_at: list[str], kind: str, dtype: str,
              why_not: str, no_sample: str, differs: str) -> None:
    """The end of an in-place or out= case: what it saw recorded (the first failing sample as the
    example its standalone script replays), a skip where no sample applied, else every failure."""
    example = {"falsifying_example": f"Falsifying example: {kind}({failed_at[0]})"} if failed_at else {}
    observe.record(**stats, failing_samples=len(failures), values_compared=not why_not, x64=x64_for(dtype), **example)
    if stats["samples"] == 0:
        import pytest

        pytest.skip(no_sample)
    assert not failures, f"{len(failures)} of {stats['samples']} samples: {differs}; " + " | ".join(failures[:3])


def _inplace_torch(info: Any, sample: Any, value: int) -> tuple[Any, Any]:
    """(the input after the in-place call, what the call returned), torch eager on CPU."""
    x = _clone(sample.input)
    args, kwargs = _clone((sample.args, sample.kwargs))
    seed(value)
    returned = info.inplace_variant(x, *args, **kwargs)
    return x, returned


def _inplace_torchax(env: Any, path: str, info: Any, sample: Any) -> tuple[Any, Any, bool | None]:
    """(the input after the in-place call, what it returned, whether that was the input itself: None
    traced) on torchax: eagerly on a torchax tensor in the env, or traced (the input is a jit argument
    the function updates and returns)."""

    tree = _on_jax((_clone(sample.input), _clone((sample.args, sample.kwargs))))
    if path == "eager":
        x, (args, kwargs) = env.to_xla(tree)
        seed(0)
        with env:
            returned = info.inplace_variant(x, *args, **kwargs)
        return x, returned, returned is x

    def call(tree):
        x, (args, kwargs) = tree
        return x, info.inplace_variant(x, *args, **kwargs)

    x, returned = _jit_over_tensors(env, tree, call)
    return x, returned, None


def op_inplace_case(key: str, dtype: str, path: str, observe) -> None:
    """The OpInfo's in-place variant (`x.add_(y)`) on its samples (the largest under the `ci` cap; a
    sample that broadcasts its input has no in-place form and is left out, as OpInfo's own tests do):
    where torch raises (an int tensor asked to hold a float result), torchax must; otherwise the
    tensor torchax updated (eagerly: the very tensor; traced: the jit argument the function updated
    and returned) and the call's result equal torch's updated input, in shape, dtype and value."""
    require("torch")
    env = torchax_env()
    info = opinfo(key)
    why_not = comparable(info, dtype)
    failures: list[str] = []
    failed_at: list[str] = []
    stats = {"samples": 0, "torch_raised": 0, "returns_self": None}
    with x64(x64_for(dtype)):
        given = [(i, s) for i, s in enumerate(samples(info, dtype)) if not getattr(s, "broadcasts_input", False)]
        for i, sample in sorted(_chosen([s for _i, s in given], sample_cap()), key=lambda t: t[0]):
            index = given[i][0]
            stats["samples"] += 1
            try:
                ref = _inplace_torch(info, sample, 0)
            except Exception as exc:
                stats["torch_raised"] += 1
                try:
                    _isolated(lambda e, inf, s: _inplace_torchax(e, path, inf, s), env, info, sample)
                except Exception:
                    continue
                failures.append(f"sample {index}: torch raised {type(exc).__name__}, torchax {path} returned")
                failed_at.append(f"index={index}")
                continue
            rng = not _same(ref, _inplace_torch(info, sample, 1))
            try:
                x, returned, is_self = _isolated(lambda e, inf, s: _inplace_torchax(e, path, inf, s), env, info, sample)
                if is_self is not None:
                    stats["returns_self"] = is_self if stats["returns_self"] is None else stats["returns_self"] and is_self
                _compare(ref, (x, returned), dtype, info, values=not (why_not or rng))
            except Exception as exc:
                failures.append(f"sample {index} ({_describe(sample)}): {type(exc).__name__}: {_short(exc)}")
                failed_at.append(f"index={index}")
    _conclude(observe, stats, failures, failed_at, "inplace_sample", dtype, why_not,
              f"OpInfo {info.name} yields no sample for {dtype} on cpu that does not broadcast its input",
              "the in-place call differs from torch eager")


def _stale_outs(ref: Any) -> Any:
    """out= for a result: a tensor of its shape and dtype (a tuple of them for several) holding other
    values than torch's result wherever it can (NaN; an integer's lowest bit flipped; a bool negated),
    so an out= tensor torchax never writes cannot pass by holding the right values already (an
    empty one holds whatever its memory held)."""
    import torch

    def stale(t: Any) -> Any:
        if t.dtype == torch.bool:
            return ~t
        if t.is_floating_point() or t.is_complex():
            return torch.full_like(t, float("nan"))
        return t ^ 1

    return stale(ref) if isinstance(ref, torch.Tensor) else tuple(stale(t) for t in ref)


def returns_the_out(returned: Any, out: Any) -> bool:
    """Whether an eager out= call returned its out= tensors themselves. An out overload whose schema
    returns nothing (split_with_sizes_copy.out, `-> ()`) returns None in torch as in torchax: that
    is False here, not an error of this check's own (it once was, a TypeError the run took for
    torchax's)."""
    if returned is out:
        return True
    return (isinstance(out, tuple) and isinstance(returned, (tuple, list)) and len(returned) == len(out)
            and all(r is o for r, o in zip(returned, out)))


def _out_torchax(env: Any, path: str, info: Any, sample: Any, outs: Any) -> tuple[Any, bool | None]:
    """(the out= tensors after the call, whether the call returned them: None traced) on torchax."""

    tree = _on_jax((_clone((sample.input, *sample.args)), _clone(sample.kwargs), outs))
    if path == "eager":
        args, kwargs, out = env.to_xla(tree)
        seed(0)
        with env:
            returned = info(*args, **kwargs, out=out)
        return out, returns_the_out(returned, out)

    def call(tree):
        args, kwargs, out = tree
        info(*args, **kwargs, out=out)
        return out

    return _jit_over_tensors(env, tree, call), None


def op_out_case(key: str, dtype: str, path: str, observe) -> None:
    """The OpInfo's out= form on its samples (the largest under the `ci` cap): torch writes out=
    tensors of the result's shape and dtype (holding other values, see _stale_outs); torchax
    (eagerly: the very tensors; traced: the jit arguments the function wrote and returned) must hold
    torch's values in the same shape and dtype. A sample torch refuses, or whose result is not
    tensors, has no out= to check and is counted, not run."""
    torch = require("torch")
    env = torchax_env()
    info = opinfo(key)
    why_not = comparable(info, dtype)
    failures: list[str] = []
    failed_at: list[str] = []
    stats = {"samples": 0, "not_applicable": 0, "returns_out": None}
    with x64(x64_for(dtype)):
        given = samples(info, dtype)
        for i, sample in _chosen(given, sample_cap()):
            try:
                result = _call(info, sample, 0)
                if not (isinstance(result, torch.Tensor)
                        or (isinstance(result, (tuple, list)) and result and all(isinstance(t, torch.Tensor) for t in result))):
                    raise TypeError("not tensors")
                outs = _stale_outs(result)
                ref = _clone(outs)
                seed(0)
                info(*_clone((sample.input, *sample.args)), **_clone(sample.kwargs), out=ref)
                again = _clone(outs)
                seed(1)
                info(*_clone((sample.input, *sample.args)), **_clone(sample.kwargs), out=again)
            except Exception:
                stats["not_applicable"] += 1
                continue
            stats["samples"] += 1
            try:
                out, same = _isolated(lambda e, inf, s: _out_torchax(e, path, inf, s, _clone(outs)), env, info, sample)
                if same is not None:
                    stats["returns_out"] = same if stats["returns_out"] is None else stats["returns_out"] and same
                _compare(ref, out, dtype, info, values=not (why_not or not _same(ref, again)))
            except Exception as exc:
                failures.append(f"sample {i} ({_describe(sample)}): {type(exc).__name__}: {_short(exc)}")
                failed_at.append(f"index={i}")
    _conclude(observe, stats, failures, failed_at, "out_sample", dtype, why_not,
              f"OpInfo {info.name}: no sample in {dtype} on cpu that torch computes into out= tensors",
              "out= differs from torch eager")


def generated_forward(program: list[str], width: int, batch: int, seed: int, observe) -> None:
    """test_modules.py's forward property on one program (its core, for the standalone export)."""
    torchax_env()
    forward_case(program, width, batch, seed, observe)


def generated_buffers(program: list[str], width: int, batch: int, seed: int, observe) -> None:
    """test_modules.py's buffer property on one program."""
    torchax_env()
    buffers_case(program, width, batch, seed, observe)


def dlpack_conversion(layout: str, dtype: str, path: str, observe) -> None:
    """test_dlpack.py's torchax case (its core, for the standalone export)."""
    torchax_env()
    conversion_case(layout, dtype, path, observe)


def plain_dlpack_conversion(layout: str, dtype: str, observe) -> None:
    """test_dlpack.py's plain DLPack case: torch and jax alone, so it runs in every cell with both,
    torchax or not (xla26-cpu; a cell whose torchax does not import, where it tells a broken bridge from
    a broken DLPack)."""
    require("torch")
    require("jax")
    conversion_case(layout, dtype, "plain_dlpack", observe)


# the properties' pinned example: every step of the grammar once
EVERY_STEP = {"program": ["arange", "zeros", "ones_like", "full", "eye", "randn_generator", "int_index", "mask_assign",
                          "slice_assign", "input_inplace", "counter", "batchnorm", "promote", "linear", "tanh"],
              "width": 3, "batch": 4, "seed": 0}

def jit_of_torch_return_types(observe) -> None:
    """interop.jax_jit of a function that returns what torch.max(x, dim) returns (a torch.return_types
    structseq, as sort, topk, kthvalue, mode, cummax, aminmax do) gives values and indices as torch."""
    torch = require("torch")
    env = torchax_env()
    x = torch.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    ref = torch.max(x, 1)
    out = torch_api.torchax_entry("interop.jax_jit")(lambda t: torch.max(t, 1))(env.to_xla(x))
    observe.record(result_type=f"{type(out).__module__}.{type(out).__name__}")
    values, indices = out
    assert torch.equal(values.torch(), ref.values) and torch.equal(indices.torch().long(), ref.indices)


def opinfo_coverage(observe) -> None:
    """The coverage table: every OpInfo, a case or the reason it is not one. It fails where the
    derivation finds nothing (a registry or op_db that moved would otherwise pass as zero cases)."""
    table = coverage()
    n_cases = len(cases())
    observe.record(opinfo_coverage={**table, "rows": [r for r in table["rows"] if r["reason"]]},
                   covered_keys=[r["key"] for r in table["rows"] if not r["reason"]], cases=n_cases)
    assert table["registered"] > 0, "torchax's aten registry is empty: torchax.ops.ops_registry moved?"
    assert table["covered"] > 0 and n_cases, "no OpInfo op is registered by torchax: the mapping is broken"


def pinned_example_has_every_step(observe) -> None:
    """The properties' pinned example runs every step of modules.STEPS once."""
    observe.record(steps=sorted(STEPS))
    assert sorted(EVERY_STEP["program"]) == sorted(STEPS), "cores.EVERY_STEP lags modules.STEPS"


CORES = {
    "test_ops.py::test_opinfo_coverage": opinfo_coverage,
    "test_jit_boundary.py::test_jax_jit_of_a_function_returning_torch_return_types": jit_of_torch_return_types,
    "test_modules.py::test_the_pinned_example_runs_every_step_of_the_grammar": pinned_example_has_every_step,
    "test_ops.py::test_op": op_case,
    "test_ops.py::test_op_error": op_error_case,
    "test_ops.py::test_op_inplace": op_inplace_case,
    "test_ops.py::test_op_out": op_out_case,
    "test_dlpack.py::test_conversion_keeps_values_dtype_and_shape": dlpack_conversion,
    "test_dlpack.py::test_plain_dlpack_keeps_values_dtype_and_shape": plain_dlpack_conversion,
    "test_modules.py::test_generated_forward_matches_torch_eager": (generated_forward, EVERY_STEP),
    "test_modules.py::test_generated_forward_updates_buffers_as_torch_eager": (generated_buffers, EVERY_STEP),
}
