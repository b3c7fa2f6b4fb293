"""Which dtypes of an op become cases, per path and profile (suites/torchax_ops/opspace.py): `ci`
takes every supported dtype on the traced path and the first on the eager one; `nightly` and
SEAMS_OPINFO_DTYPES=all take every one on both; SEAMS_OPINFO_DTYPES=N the first N on both; a case
named on the command line is collected whatever the profile. The op's supported dtypes are given
here (OpInfo needs torch, which this interpreter lacks): what is under test is the selection."""

from __future__ import annotations

import pytest

from suites.torchax_ops import opspace

SUPPORTED = ["float32", "float64", "bfloat16", "int64", "bool"]


@pytest.fixture
def one_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opspace, "supported", lambda key: list(SUPPORTED))
    for name in ("SEAMS_OPINFO_DTYPES", "SEAMS_HYPOTHESIS_PROFILE"):
        monkeypatch.delenv(name, raising=False)


def _by_path(got: list[tuple[str, str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {p: [] for p in opspace.PATHS}
    for key, dtype, path in got:
        assert key == "aten.add"
        out[path].append(dtype)
    return out


@pytest.mark.usefixtures("one_op")
def test_ci_traces_every_dtype_and_runs_the_first_eagerly() -> None:
    assert _by_path(opspace._per_dtype("aten.add", frozenset())) == {"eager": ["float32"], "jit": SUPPORTED}


@pytest.mark.usefixtures("one_op")
@pytest.mark.parametrize(("var", "value"), [("SEAMS_HYPOTHESIS_PROFILE", "nightly"), ("SEAMS_OPINFO_DTYPES", "all")])
def test_nightly_and_all_take_every_dtype_on_both_paths(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    assert _by_path(opspace._per_dtype("aten.add", frozenset())) == {"eager": SUPPORTED, "jit": SUPPORTED}


@pytest.mark.usefixtures("one_op")
def test_a_number_caps_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEAMS_OPINFO_DTYPES", "2")
    assert _by_path(opspace._per_dtype("aten.add", frozenset())) == {"eager": SUPPORTED[:2], "jit": SUPPORTED[:2]}


@pytest.mark.usefixtures("one_op")
def test_a_case_asked_for_is_collected_in_ci() -> None:
    got = _by_path(opspace._per_dtype("aten.add", frozenset({"aten.add-int64-eager", "aten.add-int8-eager"})))
    assert got == {"eager": ["float32", "int64"], "jit": SUPPORTED}  # int8 is no dtype the op has here
