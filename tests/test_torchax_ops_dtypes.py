"""Which dtypes of an op become cases, per path and profile (suites/torchax_ops/opspace.py): `ci`
takes every supported dtype of the functional op on the traced path and the first on the eager
one, and for the in-place and out= forms the first eagerly and the others traced, less float64; `nightly` and
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


@pytest.mark.usefixtures("one_op")
@pytest.mark.parametrize("form", ["inplace", "out"])
def test_ci_runs_the_in_place_and_out_forms_first_eagerly_and_the_rest_traced_but_float64(form: str) -> None:
    got = _by_path(opspace._per_dtype("aten.add", frozenset(), form))
    assert got == {"eager": ["float32"], "jit": ["bfloat16", "int64", "bool"]}
    assert _by_path(opspace._per_dtype("aten.add", frozenset(), "op"))["jit"] == SUPPORTED


@pytest.mark.usefixtures("one_op")
@pytest.mark.parametrize("form", ["op", "inplace", "out"])
def test_a_single_dtype_runs_both_ways(monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    monkeypatch.setattr(opspace, "supported", lambda key: ["float64"])
    assert _by_path(opspace._per_dtype("aten.add", frozenset(), form)) == {"eager": ["float64"], "jit": ["float64"]}


@pytest.mark.usefixtures("one_op")
def test_float64_first_is_eagers_and_float64_asked_for_is_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(opspace, "supported", lambda key: ["float64", "int64"])
    assert _by_path(opspace._per_dtype("aten.add", frozenset(), "out")) == {"eager": ["float64"], "jit": ["int64"]}
    monkeypatch.setattr(opspace, "supported", lambda key: list(SUPPORTED))
    asked = frozenset({"aten.add-float64-jit", "aten.add-float32-jit"})
    assert _by_path(opspace._per_dtype("aten.add", asked, "inplace"))["jit"] == SUPPORTED[:2] + ["bfloat16", "int64", "bool"]


@pytest.mark.usefixtures("one_op")
@pytest.mark.parametrize(("var", "value"), [("SEAMS_HYPOTHESIS_PROFILE", "nightly"), ("SEAMS_OPINFO_DTYPES", "all")])
def test_nightly_and_all_trace_float64_in_place_and_out(monkeypatch: pytest.MonkeyPatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    for form in ("inplace", "out"):
        assert _by_path(opspace._per_dtype("aten.add", frozenset(), form)) == {"eager": SUPPORTED, "jit": SUPPORTED}


@pytest.mark.parametrize(("env", "expected"), [({}, opspace.CI_ERROR_ELEMENTS),
                                               ({"SEAMS_HYPOTHESIS_PROFILE": "nightly"}, None),
                                               ({"SEAMS_OPINFO_ERRORS": "0"}, None),
                                               ({"SEAMS_OPINFO_ERRORS": "3"}, None),
                                               ({"SEAMS_OPINFO_ERRORS": "x"}, opspace.CI_ERROR_ELEMENTS)])
def test_ci_leaves_only_huge_error_inputs_to_nightly(monkeypatch: pytest.MonkeyPatch, env: dict, expected) -> None:
    for name in ("SEAMS_HYPOTHESIS_PROFILE", "SEAMS_OPINFO_ERRORS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert opspace.error_elements_cap() == expected
    assert opspace.CI_ERROR_ELEMENTS == 1 << 20
