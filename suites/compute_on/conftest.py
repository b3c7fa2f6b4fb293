"""The compute_on family is jax's, and its modules import jax at the top (through cores): where a cell has no
jax (torchax installed with only what its metadata declares: torchax0013declared-cpu) the whole
family skips at collection, `not in cell`, instead of failing to import."""

import pytest

pytest.importorskip("jax", reason="not in cell: jax is not installed in this cell")
