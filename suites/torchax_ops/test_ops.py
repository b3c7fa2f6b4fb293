"""Every OpInfo op the installed torchax registers, in each of float32 / float64 / bfloat16 /
int64 / bool it supports: torch eager on CPU vs torchax eager (`-eager`) and vs the call traced
through `torchax.interop.jax_jit` under jax.jit (`-jit`). Ids read `test_op[aten.floor_divide-float32-jit]`.

Beside the functional call, the op's other forms, where its OpInfo has them: its error inputs
(`test_op_error[aten.floor_divide-eager]`: where torch raises, torchax must), its in-place variant
(`test_op_inplace[aten.add-float32-jit]`: the tensor updated as torch updates it) and its out= form
(`test_op_out[aten.add-float32-eager]`: the out= tensor written as torch writes it).

The cases are derived at collection from op_db and torchax's registry (opspace.py); the OpInfos
that are not cases are the coverage table `test_opinfo_coverage` records (the report shows it).
"""

from __future__ import annotations

import re

import pytest

from suites.torchax_ops import cores, opspace

_KEY = r"aten\.[A-Za-z0-9_.]+(\([A-Za-z0-9_.]+\))?(@[A-Za-z0-9_.]+)?"
_DTYPE = "(%s)" % "|".join(opspace.DTYPES)
_PATH = "(%s)" % "|".join(opspace.PATHS)
# A case id as this family writes it, per test function; ids asked for on the command line are checked against it.
CASE_IDS = {"test_op": re.compile(f"{_KEY}-{_DTYPE}-{_PATH}"),
            "test_op_error": re.compile(f"{_KEY}-{_PATH}"),
            "test_op_inplace": re.compile(f"{_KEY}-{_DTYPE}-{_PATH}"),
            "test_op_out": re.compile(f"{_KEY}-{_DTYPE}-{_PATH}")}
CASE_ID = CASE_IDS["test_op"]
_ARGS = {"test_op_error": "key,path"}


def _derive(function: str, asked: frozenset[str]) -> list[tuple[str, ...]]:
    if function == "test_op":
        return opspace.cases(asked)
    return opspace.variant_cases(function.removeprefix("test_op_"), asked)


def _params(function: str, asked: frozenset[str]) -> tuple[list, str]:
    """The cases, or none and the reason (no torch, torchax or expecttest in this cell)."""
    try:
        return [pytest.param(*c, id="-".join(c)) for c in _derive(function, asked)], ""
    except pytest.skip.Exception as exc:  # require() of a package the cell does not install
        return [], str(exc.msg)


UNAVAILABLE: dict[str, str] = {}


def _asked_for(config: pytest.Config, function: str) -> list[str]:
    """Case ids named on the command line (a known issue's ids, a bisect probe): where the cell
    cannot derive the cases, these still collect and skip with the reason, as every family's do."""
    out = []
    for arg in config.args:
        head, _, rest = str(arg).partition(f"test_ops.py::{function}[")
        if head.endswith("torchax_ops/") and rest.endswith("]") and CASE_IDS[function].fullmatch(rest[:-1]):
            out.append(rest[:-1])
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    function = metafunc.function.__name__
    if function not in CASE_IDS:
        return
    # Derived here, not at import: the ids asked for on the command line join the profile's cases.
    asked = _asked_for(metafunc.config, function)
    params, UNAVAILABLE[function] = _params(function, frozenset(asked))
    names = _ARGS.get(function, "key,dtype,path")
    if params:
        metafunc.parametrize(names, params)
    else:
        blank = ("",) * len(names.split(","))
        metafunc.parametrize(names, [pytest.param(*blank, id=i) for i in ["unavailable", *asked]])


def _available(function: str) -> None:
    if UNAVAILABLE.get(function):
        pytest.skip(UNAVAILABLE[function])


# In this order on purpose: the forms that can kill a worker (error inputs XLA aborts on, torch's own
# SIGFPE in an in-place integer op) come first. Cells run xdist's worksteal, which gives each worker a
# contiguous share of the collection, so they all fall in the first worker's share and the restarts
# they cost (collection again, about 5 s) overlap the other worker's cases, not the run's end.
def test_op_error(key, path, observe):
    _available("test_op_error")
    cores.op_error_case(key, path, observe)


def test_op_inplace(key, dtype, path, observe):
    _available("test_op_inplace")
    cores.op_inplace_case(key, dtype, path, observe)


def test_op_out(key, dtype, path, observe):
    _available("test_op_out")
    cores.op_out_case(key, dtype, path, observe)


def test_op(key, dtype, path, observe):
    _available("test_op")
    cores.op_case(key, dtype, path, observe)


def test_opinfo_coverage(observe):
    """The coverage table the report shows: every OpInfo that is not a case, and why."""
    _available("test_op")
    cores.opinfo_coverage(observe)
