"""The tight-bound helpers: ulps per format, gamma_n, and failures that say why the bound is what it is."""

from __future__ import annotations

import numpy as np
import pytest

from harness.incell import numerics


def test_ulp_matches_numpy_spacing_for_float32_and_float16():
    values = np.array([1.0, 3.0, 0.1, 1e-40, 1000.0, 2.0**-20])
    for dtype, np_dtype in (("float32", np.float32), ("float16", np.float16)):
        finite = values[np.abs(values) <= np.finfo(np_dtype).max]
        want = np.spacing(np.abs(finite.astype(np_dtype))).astype(np.float64)
        np.testing.assert_array_equal(numerics.ulp(finite.astype(np_dtype), dtype), want)


def test_bfloat16_has_eight_significand_bits():
    assert numerics.ulp(np.array([1.0]), "bfloat16")[0] == 2.0**-7


def test_gamma_is_n_u_over_one_minus_n_u():
    assert numerics.gamma(1, "float32") == pytest.approx(2.0**-24 / (1 - 2.0**-24))
    assert numerics.unit_roundoff("float64") == 2.0**-53


def test_eighty_ulps_fail_a_one_ulp_bound_that_rtol_1e_5_would_pass():
    ref = np.linspace(1.0, 1.9, 7)
    off = (ref.astype(np.float32) * np.float32(1 + 80 * 2.0**-23)).astype(np.float32)
    np.testing.assert_allclose(off, ref, rtol=1e-5)  # the old tolerance lets it through
    with pytest.raises(AssertionError, match=r"ulps from the float64 reference > 1.0 allowed \(why not\)"):
        numerics.assert_within_ulps(off, ref, max_ulps=1.0, why="why not")
    ok = numerics.assert_within_ulps(ref.astype(np.float32), ref, max_ulps=0.5, why="rounding")
    assert ok["max_ulp_err"] <= 0.5 and ok["dtype"] == "float32" and ok["why"] == "rounding"


def test_nan_never_passes_and_a_bound_names_the_worst_element():
    with pytest.raises(AssertionError):
        numerics.assert_within_ulps(np.array([np.nan], np.float32), np.array([1.0]), max_ulps=4, why="x")
    with pytest.raises(AssertionError, match=r"worst at \(1,\)"):
        numerics.assert_within_bound(np.array([1.0, 2.5]), np.array([1.0, 2.0]), np.array([0.1, 0.1]), why="x")
    assert numerics.assert_within_bound(np.array([1.05]), np.array([1.0]), 0.1, why="x")["max_err_over_bound"] <= 1


def test_every_op_bound_says_why():
    assert all(why and bound >= 0.5 for bound, why in numerics.OP_ULPS.values())
