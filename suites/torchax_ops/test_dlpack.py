"""torch <-> JAX conversions with torchax's DLPack setting on and off, and the plain DLPack path (torch and jax only),
over layouts (transposed, sliced at an offset, size-1 dims with odd strides, 0-d) and dtypes
(float32, bool, bfloat16, int8): values, dtype, shape; memory sharing recorded as a fact."""

from __future__ import annotations

import pytest

from suites.torchax_ops import cores

# literals, so the ids can be read without importing (harness/judge/testids.py); dlpack.make builds each
LAYOUTS = ["contiguous", "transposed", "offset_slice", "size1_strides", "zero_d"]
DTYPES = ["float32", "bool", "bfloat16", "int8"]
PATHS = ["torchax_dlpack", "torchax_copy"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_conversion_keeps_values_dtype_and_shape(layout, dtype, path, observe):
    cores.dlpack_conversion(layout, dtype, path, observe)  # skips where the cell has no torch or torchax


# torch and jax alone: a case of its own, so it runs (and is judged) wherever both are, torchax or not
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_plain_dlpack_keeps_values_dtype_and_shape(layout, dtype, observe):
    cores.plain_dlpack_conversion(layout, dtype, observe)  # skips where the cell has no torch or no jax
