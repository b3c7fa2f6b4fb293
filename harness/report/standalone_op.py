"""Standalone reproducers of the OpInfo op cases (suites/torchax_ops/test_ops.py) and of the op's other
forms (its error inputs, in-place variant, out=): the op, the sample, the two results (issue 27),
where the family's core inlined was 398 lines.

A failing run's script is short by construction: where the run recorded what failed (its example
names the sample, its message the first failure), the script is the fixed header, the imports, the
OpInfo lookup, that sample by its index, torch's call, torchax's on the case's path, both results
printed, and only the check that failed (`Failed`: torch raising where the case wanted torchax to
follow, torchax raising, the PRNG key a traced call left a tracer in, the count of output leaves, an
output's type, shape, dtype or values; an error input torchax accepted), word for word the full
script's statement, its tolerance a literal from the run's record (in-place / out= runs record none:
worked out as the case does, 2 lines). Measured: every check of every form on every default cell of
the family exports 20-30 lines, 13-23 below the imports (median 25; tests/test_standalone_length.py),
where the full script is 34-63 (63: a traced in-place call that torch's refusal repeats). On 60 real failing results (torchax0013-cpu, xla29-cpu, xla27-cpu,
torchax007-cpu; op / in-place / out= / error forms, eager and jit, each check the runs failed by), the
short script gives the full one's signature (harness/reduce/signature.py) in 60 of 60 (docs/reduce.md,
"Op scripts minimal by construction"; tests/test_standalone_op.py checks 12 in the cell), so
`harness report --reduce` runs it once instead of searching.

Where the run recorded nothing usable (a passing case, an export without a run, a message none of
the patterns reads), the full script: look the OpInfo up in op_db, rebuild the sample the case ran
(OpInfo regenerates it from the same seeds: the index the failing run recorded, or else the one the
`ci` profile takes, the largest), call it with torch eager on CPU and with torchax (in its env, or
traced through `interop.jax_jit`: the path of the id), print both and check what the case checks, in
its words (a known issue's `match` reads the script's output as it reads the case's message): the
output leaves, that each is a torchax Tensor, shapes and dtypes, then the values within the case's
tolerance (torch's default for each output's dtype, or the OpInfo's own override for CPU) unless the
case compares them by structure only (a random op; an op whose cross-device comparison OpInfo
skips). A call traced must leave the env's PRNG key concrete. An in-place script compares the tensor
after the call and the call's result; an out= one the out= tensor, filled beforehand with other
values than torch's; an error-input script requires torchax to raise wherever torch raises.

Every part of the id (kind, op, variant, dtype, path) is checked against a grammar and embedded as a
literal; so are the failing run's facts, read from the example the case records
(`Falsifying example: sample(index=7, ties=True, values=True, rtol=None, atol=None)`, or
`inplace_sample(index=3)` / `out_sample(...)` / `error_input(...)` for the other forms): integers,
booleans and finite floats only, never its text; the message only picks one of CHECKS and an
output's number, by fixed patterns.

Where torch itself raises on the sample of an op / in-place script, the script does what the case
does: it calls torchax, which must raise too; else it fails in the case's words (`sample I: torch
raised X, torchax PATH returned ...`, the same statement in the full script and the short one), and
it exits 0 where torchax raises too (the full script stops there). An out= script exits 0 where torch
refuses the sample: the out= case counts such a sample and checks nothing on it.

What the script does not redo: a sample the run did not name is the `ci` choice (the largest), so a
failure only a later sample or only the tied copy shows needs the run's example.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from typing import Any, Mapping

from harness.report.examples import failing_example
from harness.report.standalone import NoStandalone, _header

OP_CASE = "suites/torchax_ops/test_ops.py::test_op["
# the op's other forms (test_ops.py: its error inputs, its in-place variant, its out= form), by test function
KINDS = {"suites/torchax_ops/test_ops.py::test_op[": "op", "suites/torchax_ops/test_ops.py::test_op_error[": "error",
         "suites/torchax_ops/test_ops.py::test_op_inplace[": "inplace", "suites/torchax_ops/test_ops.py::test_op_out[": "out"}
DTYPES = ("float32", "float64", "bfloat16", "int64", "bool")
PATHS = ("eager", "jit")
# KEY-DTYPE-PATH (KEY-PATH for error inputs, which carry their own dtypes), KEY = aten.NAME, an OpInfo
# variant in parentheses, `@` and the OpInfo's name where two OpInfos share both (suites/torchax_ops/
# opspace.py writes them so; names are of [A-Za-z0-9_.] only).
_NAME = r"[A-Za-z_][A-Za-z0-9_.]*"
_KEY = rf"aten\.(?P<aten>{_NAME})(?:\((?P<variant>{_NAME})\))?(?:@(?P<name>{_NAME}))?"
_ID = re.compile(rf"{_KEY}-(?P<dtype>{'|'.join(DTYPES)})-(?P<path>{'|'.join(PATHS)})")
_ERROR_ID = re.compile(rf"{_KEY}-(?P<path>{'|'.join(PATHS)})")
# torch.testing.assert_close's defaults (rtol, atol) per dtype, which the case widens by the OpInfo's
# overrides; integers and bool are exact.
_DEFAULT_TOL = {"float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7), "bfloat16": (1.6e-2, 1e-5)}


def is_op_case(case_id: str) -> bool:
    return case_id.startswith(tuple(KINDS))


def parse_op_case(case_id: str) -> dict[str, str]:
    """The id's parts, each checked (NoStandalone if the id is not one this family writes)."""
    prefix = next((p for p in KINDS if case_id.startswith(p)), "")
    rest = case_id[len(prefix):] if prefix else ""
    kind = KINDS.get(prefix, "")
    m = (_ERROR_ID if kind == "error" else _ID).fullmatch(rest[:-1]) if rest.endswith("]") else None
    if m is None:
        raise NoStandalone(f"{case_id}: not an op case id of suites/torchax_ops (aten.OP-DTYPE-PATH)")
    return {"kind": kind, "dtype": "", **{k: v or "" for k, v in m.groupdict().items()}}


@dataclass(frozen=True)
class Facts:
    """What the case's run knew and its id does not: the sample it failed on, and how it compared."""

    index: int | None = None  # the failing sample's index in OpInfo's samples (None: the ci choice, the largest)
    ties: bool = False        # its tied copy (floating input reduced to its signs) failed
    values: bool = True       # values were compared (False: a random op, or one OpInfo compares by structure only)
    rtol: float | None = None  # the OpInfo's override for this dtype on CPU (None: torch's default for each output)
    atol: float | None = None
    recorded: bool = False     # read from the run (else the script works values and tolerance out itself)


_FACTS = [f.name for f in fields(Facts) if f.name != "recorded"]


def run_facts(example: str | None) -> Facts:
    """The facts the failing run recorded as its example (`Falsifying example: sample(index=7, ties=True, ...)`),
    each a literal of its type (data, never code); Facts() where the run recorded none or any is not."""
    only = re.fullmatch(r"Falsifying example: (?:error_input|inplace_sample|out_sample)\(index=([0-9]{1,6})\)", example or "")
    if only:  # the op's other forms record only which sample or error input failed
        return Facts(index=int(only.group(1)))
    got, _why = failing_example(example, _FACTS)
    if not got:
        return Facts()
    ok = {"index": lambda v: v is None or (type(v) is int and v >= 0), "ties": lambda v: type(v) is bool,
          "values": lambda v: type(v) is bool, "rtol": _tolerance, "atol": _tolerance}
    if not all(ok[k](v) for k, v in got.items()):
        return Facts()
    return Facts(**got, recorded=set(got) == set(_FACTS))


def _tolerance(v: Any) -> bool:
    return v is None or (type(v) in (int, float) and math.isfinite(v) and v >= 0)


# The check a case's first failure names (suites/torchax_ops/cores.py writes these messages): read with
# fixed patterns that pick one of CHECKS and an output's number (an int), never carried as text.
CHECKS = ("torch-raises", "torchax-raises", "prng", "count", "type", "shape", "dtype", "values", "returned")
_FIRST = re.compile(r"(?:[0-9]+ of [0-9]+ (?:samples differ from torch eager|samples: the in-place call differs from torch eager"
                    r"|samples: out= differs from torch eager); |[0-9]+ of [0-9]+ error inputs: )(?P<first>.*)", re.DOTALL)
_LABEL = r"sample [0-9]{1,6}(?: with ties)?"
_PRNG = "the call left a JAX tracer"
_COMPARED = (("count", re.compile(r"[0-9]+ output leaves where torch gives [0-9]+")),
             ("type", re.compile(r"output (?P<n>[0-9]{1,4}): \S+ where a torchax Tensor is due")),
             ("shape", re.compile(r"output (?P<n>[0-9]{1,4}): shape ")),
             ("dtype", re.compile(r"output (?P<n>[0-9]{1,4}): dtype ")),
             ("values", re.compile(r"output (?P<n>[0-9]{1,4}): ")))


@dataclass(frozen=True)
class Failed:
    """The one check the failing run's first failure names, and the output it names (op / in-place / out=)."""

    check: str
    output: int = 0


def failed_check(kind: str, message: str | None) -> Failed | None:
    """The check the case's message says failed first (None: a message none of the patterns reads)."""
    m = _FIRST.match(message or "")
    first = m.group("first") if m else ""
    if kind == "error":
        ok = re.match(r"error input [0-9]{1,6} \(.*\): torch raises \w+ \(.*\), torchax (?:eager|jit) returned", first, re.DOTALL)
        return Failed("returned") if ok else None
    if re.match(rf"{_LABEL}: torch raised \w+, torchax (?:eager|jit) returned(?: \||$)", first):
        return Failed("torch-raises") if kind != "out" else None
    if kind == "op":
        raised = re.match(rf"{_LABEL}: torch returned, torchax (?:eager|jit) raised (?:\w+\.)*\w+: (?P<what>.*)", first, re.DOTALL)
        if raised:
            return Failed("prng" if raised.group("what").startswith(_PRNG) else "torchax-raises")
        compared = re.match(rf"{_LABEL} \(.*?\): (?P<what>(?:output [0-9]|[0-9]+ output leaves).*)", first, re.DOTALL)
    else:  # in-place / out=: `sample I (...): TYPE: MESSAGE`, an AssertionError being the comparison's
        got = re.match(rf"{_LABEL} \(.*?\): (?P<type>(?:\w+\.)*\w+): (?P<what>.*)", first, re.DOTALL)
        if got is None:
            return None
        if got.group("type") != "AssertionError":
            return Failed("torchax-raises")
        if got.group("what").startswith(_PRNG):
            return Failed("prng")
        compared = got
    if compared is None:
        return None
    for check, pattern in _COMPARED:
        c = pattern.match(compared.group("what"))
        if c:
            return Failed(check, int(c.groupdict().get("n") or 0))
    if kind != "op":  # an AssertionError none of the comparison's words begin: torchax's own, raised by the call
        return Failed("torchax-raises")  # (renorm's "torchax Tensors can only do math within the torchax environment")
    return None


_SWAP = "lambda x: 'jax' if isinstance(x, (str, torch.device)) and str(x) == 'cpu' else x"
# per kind: the sample's arguments as one tree `a` (what is copied, moved to torchax, traced), torch's
# call on it (statements ending in `TARGET = <output leaves>`), and the traced function's return
# (`{input}`: the sample's input, or its tied copy)
_ARGS = {"op": "args = (({input}, *sample.args), sample.kwargs)",
         "inplace": "args = ({input}, sample.args, sample.kwargs)",
         "out": "args = (({input}, *sample.args), sample.kwargs, stale(result) if isinstance(result, torch.Tensor)"
                " else tuple(map(stale, result)))  # out=: torch's shapes and dtypes, never its values"}
# the call alone (a torch-raises script calls torch only to see it raise)
_TORCH_CALL = {"op": "info(*a[0], **a[1])", "inplace": "info.inplace_variant(a[0], *a[1], **a[2])",
               "out": "info(*a[0], **a[1], out=a[2])"}


def _call(kind: str, target: str) -> list[str]:
    if kind == "op":
        return [f"{target} = pt.tree_leaves({_TORCH_CALL[kind]})"]
    if kind == "inplace":
        return [f"{target} = pt.tree_leaves((a[0], {_TORCH_CALL[kind]}))  # the tensor, then the result"]
    return [_TORCH_CALL[kind], f"{target} = pt.tree_leaves(a[2])"]


_TRACED_RETURN = {"op": [f"return tuple(out) if type(out := {_TORCH_CALL['op']}).__module__ == 'torch.return_types' else out"],
                  "inplace": [f"return a[0], {_TORCH_CALL['inplace']}"],
                  "out": [_TORCH_CALL["out"], "return a[2]"]}


def _traced(path: str, body: list[str], target: str, on_jax: str = "on_jax", env: str = "env",
            leaves: bool = False) -> list[str]:
    """The call on torchax: in its env (`eager`), or traced through interop.jax_jit (`jit`: the tensors of
    `on_jax` are the jit arguments, the rest static), its result as `target` (`leaves`: a traced call's
    result as its output leaves, to compare); `env` the expression of torchax's env."""
    if path == "eager":
        return [f"a = {env}.to_xla({on_jax})", f"with {env}:", *(f"    {line}" for line in body)]
    call = f"torchax.interop.jax_jit(traced)(*{env}.to_xla([flat[i] for i in pos]))"
    return [f"flat, spec = pt.tree_flatten({on_jax})",
            "pos = [i for i, x in enumerate(flat) if isinstance(x, torch.Tensor)]",
            "def traced(*ts):  # the sample's tensors are the jit arguments, the rest static",
            "    a = pt.tree_unflatten([ts[pos.index(i)] if i in pos else x for i, x in enumerate(flat)], spec)",
            *(f"    {line}" for line in body),
            f"{target} = pt.tree_leaves({call})" if leaves else f"{target} = {call}"]


def _match(parts: Mapping[str, str]) -> str:
    match = [f"o.aten_name == {parts['aten']!r}", f"o.variant_test_name == {parts['variant']!r}"]
    match += [f"o.name == {parts['name']!r}"] if parts["name"] else []
    return f"info = next(o for o in op_db if {' and '.join(match)})"


def _imports(path: str, body: list[str]) -> list[str]:
    """The script's two import lines, above its code (run at the top level: nothing imports it): jax where
    the code names it (torchax imports it either way), torchax.interop for a traced call (default_env()
    imports it, which a traced call may reach only after it)."""
    names = ["jax"] if any(re.search(r"\bjax\.", line) for line in body) else []
    names += ["torch", "torchax", *(["torchax.interop"] if path == "jit" else []), "torch.utils._pytree as pt"]
    return [f"import {', '.join(names)}", "from torch.testing._internal.common_methods_invocations import op_db"]


# each check's statement, one text for the full script and the short one (a reducer's signature names the
# statement that failed, so the two must agree word for word)
_CHECK = {"count": "assert len(want) == len(got), f'{len(got)} output leaves where torch gives {len(want)}'",
          "type": "assert isinstance(g, torchax.tensor.Tensor), f'output {n}: {type(g)} where a torchax Tensor is due'",
          "shape": "assert g.shape == w.shape, f'output {n}: shape {tuple(g.shape)} where torch gives {tuple(w.shape)}'",
          "dtype": "assert g.dtype == w.dtype, f'output {n}: dtype {g.dtype} where torch gives {w.dtype}'",
          "values": ("torch.testing.assert_close(g, w, equal_nan=True, check_device=False, check_stride=False, "
                     "msg=lambda m: f'output {n}: {m}', **tol)")}
_PRNG_CHECK = "assert 'Tracer' not in type(getattr(env, 'prng_key', None)).__name__, \"the call left a JAX tracer as the env's PRNG key\""
_TO_PLAIN = "g = g.torch() if isinstance(w, torch.Tensor) else g.torch().item() if isinstance(g, torchax.tensor.Tensor) else g"


def _body(parts: Mapping[str, str], facts: Facts) -> list[str]:
    kind, dtype, path = parts["kind"], parts["dtype"], parts["path"]
    if kind == "error":
        return _error_body(parts, facts)
    if not facts.recorded:  # no run to read them from: worked out as the case does
        tol = [f"over = [d.d[torch.{dtype}] for x in info.decorators for d in getattr(x, 'decorators', [x])"
               f" if getattr(x, 'device_type', None) in (None, 'cpu') and torch.{dtype} in (getattr(d, 'd', None) or {{}})]"
               "  # the OpInfo's toleranceOverride (atol, rtol) / precisionOverride (atol) for CPU",
               f"tol = dict(rtol=max([{_DEFAULT_TOL.get(dtype, (0.0, 0.0))[0]!r}] + [getattr(v, 'rtol', 0) for v in over]),"
               f" atol=max([{_DEFAULT_TOL.get(dtype, (0.0, 0.0))[1]!r}] + [getattr(v, 'atol', v) for v in over])) if over else {{}}"]
    elif facts.rtol is None or facts.atol is None:
        tol = ["tol = {}  # torch's default for each output's dtype (the OpInfo overrides none)"]
    else:
        tol = [f"tol = dict(rtol={facts.rtol!r}, atol={facts.atol!r})  # the OpInfo's own override for {dtype} on CPU"]
    given = f"info.sample_inputs('cpu', torch.{dtype})"
    if kind == "inplace":  # a sample that broadcasts its input has no in-place form (OpInfo's tests leave it out)
        given = f"(s for s in {given} if not s.broadcasts_input)"
    lines = [
        f"jax.config.update('jax_enable_x64', {dtype in ('float64', 'int64')})  # as the case runs {dtype}",
        _match(parts),
        "torch.manual_seed(0)  # OpInfo draws its samples from torch's generator",
        (f"sample = list(info.sample_inputs('cpu', torch.{dtype}))[{facts.index}]  # the failing run's"
         if facts.index is not None else
         f"sample = max({given}, key=lambda s: sum(t.numel() for t in"
         " pt.tree_leaves((s.input, s.args, s.kwargs)) if isinstance(t, torch.Tensor)))  # the ci profile's: the largest"),
    ]
    if facts.ties:
        lines.append("sample.input = sample.input.sign()  # the case's tied copy: equal values abound")
    if kind == "out":  # a sample torch refuses has no out= to check: the case counts it and runs nothing
        lines += ["try:",
                  "    result = info(*pt.tree_map_only(torch.Tensor, torch.clone, (sample.input, *sample.args)), **sample.kwargs)",
                  "except Exception as exc:",
                  "    raise SystemExit(print('torch raises, no out= to check:', repr(exc)[:300]))  # exit 0, as the case",
                  "stale = lambda t: ~t if t.dtype == torch.bool else t ^ 1 if not (t.is_floating_point() or t.is_complex())"
                  " else torch.full_like(t, float('nan'))"]
    if kind == "out":
        want = _call(kind, "want")
    else:  # torch refusing the sample is no failure: the case requires torchax to refuse it too
        label = (f"sample {facts.index}" if facts.index is not None else "the sample") + (" with ties" if facts.ties else "")
        want = ["try:", *(f"    {line}" for line in _call(kind, "want")),
                "except Exception as exc:  # torch refuses the sample: the case requires torchax to refuse it too",
                *(f"    {line}" for line in _after_torch_raises(kind, path, label, full=True))]
    lines += [
        _ARGS[kind].format(input="sample.input"),
        "print('sample:', sample.summary())",
        "torch.manual_seed(0)",
        "a = pt.tree_map_only(torch.Tensor, torch.clone, args)  # a copy: torch's call must not change the sample",
        *want,
        *([] if facts.recorded else [
            "torch.manual_seed(1)  # a second draw: values are compared unless it differs (a random op)",
            "a = pt.tree_map_only(torch.Tensor, torch.clone, args)",
            *_call(kind, "again"),
            "values = all(torch.equal(x.nan_to_num(), y.nan_to_num()) if isinstance(x, torch.Tensor) else x == y or x != x"
            " for x, y in zip(want, again))",
            "values &= 'wrapper_set_seed' not in getattr(getattr(info.op, '__code__', None), 'co_names', ())"
            "  # OpInfo's mark of a random op, and its skip of comparing values across devices:",
            f"values &= not any(getattr(x, 'test_name', None) == 'test_compare_cpu' and x.device_type in (None, 'cpu')"
            f" and torch.{dtype} in (x.dtypes or [torch.{dtype}]) and any(getattr(d, '__name__', '') == 'decorator'"
            " for d in x.decorators) for x in info.decorators)"]),
        "env = torchax.default_env()",
        # torchax 0.0.4 has no Environment.manual_seed: its random ops draw keys from torch's generator
        "env.manual_seed(0) if hasattr(env, 'manual_seed') else torch.manual_seed(0)",
        # the device the sample names (a factory's device=, to()'s argument) is torchax's
        f"on_jax = pt.tree_map({_SWAP}, args)",
    ]
    if path == "eager":
        lines += _traced(path, _call(kind, "got"), "got")
    else:
        lines += _traced(path, _TRACED_RETURN[kind], "got")
        lines += ["got = pt.tree_leaves(got)", _PRNG_CHECK]
    lines += [
        "print('torch:', want, '\\ntorchax:', got)",
        *tol,
        _CHECK["count"],
        "for n, (w, g) in enumerate(zip(want, got)):",
        "    if isinstance(w, torch.Tensor):",
        *(f"        {_CHECK[c]}" for c in ("type", "shape", "dtype")),
        f"    {_TO_PLAIN}",
    ]
    check = _CHECK["values"]
    if facts.recorded and facts.values:
        lines.append(f"    {check}")
    else:  # a random op's tensors are compared by structure (a non-tensor output by value)
        why = "" if not facts.recorded else "  # the run compared this op's tensors by structure only"
        lines += [f"    if {'values or ' if not facts.recorded else ''}not isinstance(w, torch.Tensor):{why}", f"        {check}"]
    return lines


def _tolerance_lines(dtype: str, facts: Facts) -> list[str]:
    """`tol = ...`: the run's own (a literal), or worked out as the case does where the run recorded none."""
    if not facts.recorded:  # no run to read them from (in-place / out= record only the sample): as the case does
        return [f"over = [d.d[torch.{dtype}] for x in info.decorators for d in getattr(x, 'decorators', [x])"
                f" if getattr(x, 'device_type', None) in (None, 'cpu') and torch.{dtype} in (getattr(d, 'd', None) or {{}})]"
                "  # the OpInfo's toleranceOverride (atol, rtol) / precisionOverride (atol) for CPU",
                f"tol = dict(rtol=max([{_DEFAULT_TOL.get(dtype, (0.0, 0.0))[0]!r}] + [getattr(v, 'rtol', 0) for v in over]),"
                f" atol=max([{_DEFAULT_TOL.get(dtype, (0.0, 0.0))[1]!r}] + [getattr(v, 'atol', v) for v in over])) if over else {{}}"]
    if facts.rtol is None or facts.atol is None:
        return ["tol = {}  # torch's default for each output's dtype (the OpInfo overrides none)"]
    return [f"tol = dict(rtol={facts.rtol!r}, atol={facts.atol!r})  # the OpInfo's own override for {dtype} on CPU"]



_SEED = ["env = torchax.default_env()", "env.manual_seed(0) if hasattr(env, 'manual_seed') else torch.manual_seed(0)"]


def _after_torch_raises(kind: str, path: str, label: str, full: bool) -> list[str]:
    """After torch raised on the sample (`raised`): torchax's call, which must raise too, else the case's
    failure in its words (the same statement in the full script and the short one: the reducer's
    signature names it). The short script goes on to its last line where torchax raises; the full one
    stops there (exit 0: the sample passes as the case's does), the rest of it compares results."""
    call = _call(kind, "got") if path == "eager" else _TRACED_RETURN[kind]
    on_jax = f"pt.tree_map({_SWAP}, args)"
    failure = f"raise AssertionError(f'{label}: torch raised {{type(raised).__name__}}, torchax {path} returned {{got}}')"
    too = "raise SystemExit(print('torchax raises too:', repr(exc)[:300]))  # exit 0: the case's rule holds"
    if not full:  # the script's end: whether torchax raises does not hang on its PRNG key (no seed to set)
        env = ["env = torchax.default_env()"] if path == "eager" else []
        traced = _traced(path, call, "got", on_jax=on_jax, env="env" if env else "torchax.default_env()")
        return [*env, "try:", *(f"    {line}" for line in traced), "except Exception as exc:", f"    {too}", failure]
    return ["raised = exc", "print('torch raises:', repr(exc)[:300])", *_SEED,
            "try:", *(f"    {line}" for line in _traced(path, call, "got", on_jax=on_jax)),
            "except Exception as exc:", f"    {too}",
            "else:", f"    {failure}"]


def _short_body(parts: Mapping[str, str], facts: Facts, failed: Failed) -> list[str]:
    """The op / in-place / out= script with only the check the run failed: the sample by its recorded
    index, torch's call, torchax's, both results printed, then that one check (its tolerance a literal)."""
    kind, dtype, path, check = parts["kind"], parts["dtype"], parts["path"], failed.check
    lines = [
        # jax's default, which a fresh process has (the case sets it for every dtype: its process ran others)
        *([f"jax.config.update('jax_enable_x64', True)  # as the case runs {dtype}"] if dtype in ("float64", "int64") else []),
        _match(parts),
        "torch.manual_seed(0)  # OpInfo draws its samples from torch's generator",
        f"sample = list(info.sample_inputs('cpu', torch.{dtype}))[{facts.index}]  # the failing run's",
    ]
    if kind == "out":
        lines += ["result = info(*pt.tree_map_only(torch.Tensor, torch.clone, (sample.input, *sample.args)), **sample.kwargs)",
                  "stale = lambda t: ~t if t.dtype == torch.bool else t ^ 1 if not (t.is_floating_point() or t.is_complex())"
                  " else torch.full_like(t, float('nan'))"]
    compared = check not in ("torch-raises", "torchax-raises", "prng")  # else a call raises: the sample shown first
    # the case's tied copy (the input's signs): the same shapes and dtypes, so the same summary
    args = _ARGS[kind].format(input="sample.input.sign()" if facts.ties else "sample.input")
    args += "  # the tied copy" if facts.ties and "  #" not in args else ""
    lines += [args, *([] if compared or check == "torch-raises" else ["print('sample:', sample.summary())"]),
              "a = pt.tree_map_only(torch.Tensor, torch.clone, args)  # a copy: torch's call must not change the sample"]
    if check == "torch-raises":  # the run's failure: torch refuses the sample and torchax does not
        # as the case words it, so the known issue's match reads it; exit 0 once torchax raises too
        label = f"sample {facts.index}" + (" with ties" if facts.ties else "")
        return lines + [
            "try:", f"    {_TORCH_CALL[kind]}",
            "except Exception as exc:", "    print('sample:', sample.summary(), '\\ntorch raises:', repr(raised := exc)[:300])",
            "else:", "    raise SystemExit(print('torch returns here: not the failure the run recorded'))  # exit 0",
            *_after_torch_raises(kind, path, label, full=False)]
    lines += _call(kind, "want")
    # a compared check's op is not a random one (the run compared it), and torchax's PRNG key changes nothing of
    # its count, types, shapes, dtypes or values: no seed to set, and a traced call needs no name for the env
    env = "torchax.default_env()" if compared and path == "jit" else "env"
    lines += [] if env != "env" else _SEED[:1] if compared else _SEED
    on_jax, leaves = f"pt.tree_map({_SWAP}, args)", compared and path == "jit"  # a traced result compared as leaves
    lines += _traced(path, _call(kind, "got") if path == "eager" else _TRACED_RETURN[kind], "got", on_jax=on_jax,
                     env=env, leaves=leaves)
    if check == "torchax-raises":
        return lines
    if check == "prng":
        return lines + [_PRNG_CHECK]
    lines.append("print('sample:', sample.summary(), '\\ntorch:', want, '\\ntorchax:', got)")
    if check == "count":
        return lines + [_CHECK["count"]]
    n = failed.output
    if check == "values" and kind != "op":  # in-place / out=: every output is a tensor, torchax's made torch's here
        return lines + [*_tolerance_lines(dtype, facts),
                        f"n, w, g = {n}, want[{n}], got[{n}].torch()  # the output the run names", _CHECK[check]]
    lines += [*(_tolerance_lines(dtype, facts) if check == "values" else []),
              f"n, w, g = {n}, want[{n}], got[{n}]  # the output the run names"]
    return lines + ([_TO_PLAIN] if check == "values" else []) + [_CHECK[check]]


def _short_error_body(parts: Mapping[str, str], facts: Facts) -> list[str]:
    """The error-input script with the run's one error input: torch raises on it, torchax must too."""
    path = parts["path"]
    # traced as the case traces it: a torch.return_types result (aminmax, kthvalue) returned as a tuple
    call = ["got = info(*a[0], **a[1])"] if path == "eager" else _TRACED_RETURN["op"]
    return [
        _match(parts),
        f"i, env = {facts.index}, torchax.default_env()  # the failing run's error input",
        "sample = list(info.error_inputs('cpu'))[i].sample_input",
        "args = ((sample.input, *sample.args), sample.kwargs)",
        "jax.config.update('jax_enable_x64', any(isinstance(t, torch.Tensor) and t.dtype in (torch.float64, torch.int64,"
        " torch.complex128) for t in pt.tree_leaves(args)))  # as the case runs 64-bit inputs",
        "a = pt.tree_map_only(torch.Tensor, torch.clone, args)",
        "try:",
        "    info(*a[0], **a[1])",
        "except Exception as exc:",
        "    print(f'error input {i}:', sample.summary(), '\\ntorch raises:', repr(raised := exc)[:300])",
        "else:",
        "    raise SystemExit(print('torch accepts it here: not checked'))  # exit 0: nothing to check",
        "try:",
        *(f"    {line}" for line in _traced(path, call, "got", on_jax=f"pt.tree_map({_SWAP}, args)")),
        "except Exception as exc:",
        "    raise SystemExit(print('torchax raises:', repr(exc)[:300]))  # exit 0: the case's rule holds",
        f"raise AssertionError(f'error input {{i}}: torch raises {{type(raised).__name__}}, torchax {path} returned {{got}}')",
    ]


def _error_body(parts: Mapping[str, str], facts: Facts) -> list[str]:
    """OpInfo's error inputs for the op (the failing run's one, or all of them as the case checks them):
    where torch raises, torchax must raise too."""
    path = parts["path"]
    which = (f"[{facts.index}]:  # the failing run's error input" if facts.index is not None else
             "range(len(errors)):  # every error input, as the case checks them")
    call = ["got = info(*a[0], **a[1])"]
    return [
        _match(parts),
        "errors = list(info.error_inputs('cpu'))",
        "env = torchax.default_env()",
        f"for i in {which}",
        "    sample = errors[i].sample_input",
        "    args = ((sample.input, *sample.args), sample.kwargs)",
        "    jax.config.update('jax_enable_x64', any(isinstance(t, torch.Tensor) and t.dtype in (torch.float64, torch.int64,"
        " torch.complex128) for t in pt.tree_leaves(args)))  # as the case runs 64-bit inputs",
        "    print(f'error input {i}:', sample.summary())",
        "    try:",
        "        a = pt.tree_map_only(torch.Tensor, torch.clone, args)",
        "        info(*a[0], **a[1])",
        "    except Exception as exc:",
        "        raised = exc",
        "        print('torch raises:', repr(exc)[:300])",
        "    else:",
        "        print('torch accepts it here: not checked')",
        "        continue",
        f"    on_jax = pt.tree_map({_SWAP}, args)",
        "    try:",
        *(f"        {line}" for line in _traced(path, call if path == "eager" else _TRACED_RETURN["op"], "got")),
        "    except Exception as exc:",
        "        print('torchax raises:', repr(exc)[:300])",
        "    else:",
        f"        raise AssertionError(f'error input {{i}}: torch raises {{type(raised).__name__}}, torchax {path} returned {{got}}')",
    ]


def short_form(case_id: str, example: str | None, message: str | None) -> Failed | None:
    """The check an op case's short script keeps (None: the full script, the run having recorded no
    usable sample or failure): its sample's index from the run's example, its check from the message."""
    try:
        parts = parse_op_case(case_id)
    except NoStandalone:
        return None
    facts = run_facts(example)
    if facts.index is None:
        return None
    failed = failed_check(parts["kind"], message)
    if failed is None or (parts["kind"] == "op" and not facts.recorded):
        return None
    return failed


def export_op_script(case_id: str, cell: Mapping[str, Any], expectation: Mapping[str, Any] | None = None,
                     example: str | None = None, message: str | None = None) -> str:
    """The standalone reproducer of one OpInfo op case on one cell: the short one (only the check that
    failed) where the run recorded its sample and failure (`message`, the case's), else the full one."""
    parts = parse_op_case(case_id)
    facts = run_facts(example)
    failed = short_form(case_id, example, message)
    what = "error input" if parts["kind"] == "error" else "sample"
    note = (f"the failing run's {what} {facts.index}" + (" (its tied copy)" if facts.ties else "")
            if facts.index is not None else None)
    # a short script's code says which sample it runs (`# the failing run's`): no EXAMPLE line to repeat it
    lines = _header(case_id, cell, expectation, note if failed is None else None)
    if failed is None:
        body = _body(parts, facts)
    elif parts["kind"] == "error":
        body = _short_error_body(parts, facts)
    else:
        body = _short_body(parts, facts, failed)
    if not body[-1].startswith("raise "):  # a script ending in its failure says what exit 0 means where it exits
        body += ["print('no failure: ' + CASE.rsplit('::', 1)[-1] + ' behaves as the suite expects')"]
    return "\n".join(lines + _imports(parts["path"], body) + body + [""])
