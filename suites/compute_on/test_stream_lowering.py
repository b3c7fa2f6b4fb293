"""compute_on("gpu_stream:N") checked where no GPU is: the annotation in the lowering, per op.

`test_eager_vs_aot.py::test_stream_annotation_reaches_the_lowering` runs the stream on a GPU and
skips elsewhere, so on a CPU matrix nothing checked the stream annotation at all (a coverage gap).
The lowering is the same on every platform, so this case checks it on any device: every op the
annotated function computes carries `_xla_stream_annotation = "N"` and no op outside it does (an
attribute found *somewhere* in the module would also pass with the annotation on one op only).
On CPU the annotated program also runs; the annotation must not change its values.
"""

from __future__ import annotations

import pytest

from suites.compute_on import cores


@pytest.mark.parametrize("stream", [1, 3])
def test_stream_annotation_marks_exactly_the_ops_inside(stream, observe):
    cores.stream_annotation_marks_exactly_the_ops_inside(stream, observe)
