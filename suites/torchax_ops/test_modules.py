"""Generated module forwards (modules.py's grammar: factories inside forward, integer and mask
indexing, in-place updates of the input and of buffers, BatchNorm running statistics, slicing
assignment, dtype promotion) through torch eager, torchax eager and extract_jax + jax.jit.

Two properties over the same programs: what the forward returns (and its gradient), and what it
updates in place (buffers). They are apart so a known failure of one does not hide news in the
other. Deterministic under the root conftest's profiles (`ci`: 12 examples, no shrinking).
"""

from __future__ import annotations

import pytest

from suites.torchax_ops import cores, modules

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

PROGRAMS = st.lists(st.sampled_from(sorted(modules.STEPS)), min_size=1, max_size=6)
EVERY_STEP = cores.EVERY_STEP  # every step once: the example each property always runs


@hypothesis.example(**EVERY_STEP)
@hypothesis.given(program=PROGRAMS, width=st.integers(2, 5), batch=st.integers(2, 4), seed=st.integers(0, 3))
def test_generated_forward_matches_torch_eager(program, width, batch, seed, observe):
    """Outputs (type, values), the input updated in place, and jax.grad vs torch autograd."""
    cores.torchax_env()
    modules.forward_case(program, width, batch, seed, observe)


@hypothesis.example(**EVERY_STEP)
@hypothesis.given(program=PROGRAMS, width=st.integers(2, 5), batch=st.integers(2, 4), seed=st.integers(0, 3))
def test_generated_forward_updates_buffers_as_torch_eager(program, width, batch, seed, observe):
    """BatchNorm's running statistics, its batch count and the counter buffer after the forward."""
    cores.torchax_env()
    modules.buffers_case(program, width, batch, seed, observe)


def test_the_pinned_example_runs_every_step_of_the_grammar(observe):
    cores.pinned_example_has_every_step(observe)
