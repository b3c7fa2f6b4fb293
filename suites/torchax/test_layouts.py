"""Dtype and layout coverage through torchax: views that start inside their storage, float16 and
bfloat16 at the edges of their range, and tied parameters (one Parameter under two names).

The generated round trips cover transposed, stepped and expanded views, all starting at storage
offset 0, and values of magnitude ~1e3; a conversion that read from the start of the storage, or
that clamped, flushed subnormals or lost the sign of zero, would pass them. Cores in
suites/torchax/cores.py.
"""

from __future__ import annotations

import pytest

from suites.torchax import cores


@pytest.mark.parametrize("how", list(cores.OFFSET_VIEWS))
def test_round_trip_of_a_view_starting_inside_its_storage(how, env, observe):
    cores.offset_view_round_trip(how, observe)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_round_trip_keeps_dtype_and_range(dtype, env, observe):
    cores.low_precision_round_trip(dtype, observe)


def test_tied_parameters_through_extract_jax(env, observe):
    cores.tied_parameters_through_extract_jax(observe)
