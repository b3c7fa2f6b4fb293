"""Every OpInfo op the installed torchax registers, in each of float32 / float64 / bfloat16 /
int64 / bool it supports: torch eager on CPU vs torchax eager (`-eager`) and vs the call traced
through `torchax.interop.jax_jit` under jax.jit (`-jit`). Ids read `test_op[aten.floor_divide-float32-jit]`.

The cases are derived at collection from op_db and torchax's registry (opspace.py); the OpInfos
that are not cases are the coverage table `test_opinfo_coverage` records (the report shows it).
"""

from __future__ import annotations

import re

import pytest

from suites.torchax_ops import cores, opspace

# A case id as this family writes it; ids asked for on the command line are checked against it.
CASE_ID = re.compile(r"aten\.[A-Za-z0-9_.]+(\([A-Za-z0-9_.]+\))?(@[A-Za-z0-9_.]+)?-(%s)-(%s)"
                     % ("|".join(opspace.DTYPES), "|".join(opspace.PATHS)))


def _params(asked: frozenset[str]) -> tuple[list, str]:
    """The cases, or none and the reason (no torch, torchax or expecttest in this cell)."""
    try:
        return [pytest.param(k, d, p, id=f"{k}-{d}-{p}") for k, d, p in opspace.cases(asked)], ""
    except pytest.skip.Exception as exc:  # require() of a package the cell does not install
        return [], str(exc.msg)


PARAMS: list = []
UNAVAILABLE = ""


def _asked_for(config: pytest.Config) -> list[str]:
    """Case ids named on the command line (a known issue's ids, a bisect probe): where the cell
    cannot derive the cases, these still collect and skip with the reason, as every family's do."""
    out = []
    for arg in config.args:
        head, _, rest = str(arg).partition("test_ops.py::test_op[")
        if head.endswith("torchax_ops/") and rest.endswith("]") and CASE_ID.fullmatch(rest[:-1]):
            out.append(rest[:-1])
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    global PARAMS, UNAVAILABLE
    if metafunc.function.__name__ != "test_op":
        return
    # Derived here, not at import: the ids asked for on the command line join the profile's cases.
    PARAMS, UNAVAILABLE = _params(frozenset(_asked_for(metafunc.config)))
    if PARAMS:
        metafunc.parametrize("key,dtype,path", PARAMS)
    else:
        ids = ["unavailable", *_asked_for(metafunc.config)]
        metafunc.parametrize("key,dtype,path", [pytest.param("", "", "", id=i) for i in ids])


def test_op(key, dtype, path, observe):
    if UNAVAILABLE:
        pytest.skip(UNAVAILABLE)
    cores.op_case(key, dtype, path, observe)


def test_opinfo_coverage(observe):
    """The coverage table the report shows: every OpInfo that is not a case, and why."""
    if UNAVAILABLE:
        pytest.skip(UNAVAILABLE)
    cores.opinfo_coverage(observe)
