"""The failing run's hypothesis example becomes the core's arguments (harness.report.examples),
read from notes hypothesis itself wrote, for every shape of @given argument the suites use."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import pytest
from hypothesis import given, settings, strategies as st

from harness.report.examples import failing_example


@dataclasses.dataclass(frozen=True)
class Program:
    mesh_index: int
    row_axes: tuple
    ops: tuple
    reduce_rows: bool


class Replicated(NamedTuple):
    n: int
    per: int
    op: str


def _note(test) -> str:
    """The note a failing property carries, as the plugin records it."""
    with pytest.raises(AssertionError) as info:
        test()
    notes = [str(n) for n in getattr(info.value, "__notes__", [])]
    start = next(i for i, n in enumerate(notes) if n.startswith(("Falsifying", "Failing")))
    return "\n".join(notes[start:])


@st.composite
def programs(draw) -> Program:  # drawn as the suites draw records: their repr names every field
    return Program(draw(st.integers(0, 7)), draw(st.tuples(st.sampled_from("xy"))),
                   tuple(draw(st.lists(st.sampled_from(["scale", "tanh"]), min_size=1, max_size=3))), draw(st.booleans()))


@st.composite
def replicated(draw) -> Replicated:
    return Replicated(draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.sampled_from(["square", "sin"])))


def test_a_record_argument_is_flattened_to_its_fields():
    @settings(database=None, derandomize=True)
    @given(prog=programs())
    def prop(prog):
        assert prog.mesh_index < 3 or not prog.reduce_rows

    got, why = failing_example(_note(prop), ["mesh_index", "row_axes", "ops", "reduce_rows"])
    assert why == "" and got["mesh_index"] >= 3 and got["reduce_rows"] is True
    assert Program(**got).ops and isinstance(got["row_axes"], tuple)


def test_a_namedtuple_and_a_literal_argument():
    @settings(database=None, derandomize=True)
    @given(case=replicated(),
           calls=st.lists(st.tuples(st.integers(0, 9), st.dictionaries(st.sampled_from("ab"), st.text(max_size=3)))))
    def prop(case, calls):
        assert len(calls) < 2 or case.n < 2

    got, why = failing_example(_note(prop), ["n", "per", "op", "calls"])
    assert why == "", why
    assert got["n"] >= 2 and len(got["calls"]) >= 2 and got["op"] in ("square", "sin")


@pytest.mark.parametrize("text, why", [
    (None, "recorded no example"),
    ("", "recorded no example"),
    ("AssertionError: boom", "no example call"),
    ("Falsifying example: test_x(\n    prog=Program(mesh=np.float32(1)),\n)", "not a literal"),
    ("Falsifying example: test_x(\n    prog=Program(1, 2),\n)", "positional fields: the example gives no calls"),
    ("Falsifying example: test_x(\n    other=3,\n)", "gives no calls"),
    ("Falsifying example: test_x(\n    **kw,\n)", "**kwargs"),
    ("Falsifying example: test_x(\n    calls=[1, 2,\n", "no example call"),
    ("Falsifying example: test_x(\n    calls=__import__('os').system('id'),\n)", "not a literal"),
])
def test_what_cannot_be_read_falls_back_with_a_reason(text, why):
    got, reason = failing_example(text, ["calls"])
    assert got is None and why in reason


def test_the_exported_script_runs_the_failing_example_and_says_so():
    from harness.report.standalone import export_script

    case = "suites/shard_map/test_properties.py::test_linear_transpose_is_the_adjoint"
    cell = {"cell": "jax060-cpu", "device": "cpu", "pins": {"jax": "0.6.0", "jaxlib": "0.6.0"}}
    note = ("Falsifying example: test_linear_transpose_is_the_adjoint(\n    prog=Program(mesh_index=6, row_axes=('x',), "
            "col_axes=(), rows_per=1, cols_per=2, ops=('scale', 'scale'), reduce_rows=False, seed=41),\n)\n"
            "Explanation: ...")
    script = export_script(case, cell, None, example=note)
    assert "EXAMPLE = \"the failing run's own" in script and "seed=41" in script and "mesh_index=6" in script
    pinned = export_script(case, cell, None, example="Falsifying example: test_linear_transpose_is_the_adjoint(\n    x=1,\n)")
    assert "EXAMPLE = 'the one pinned in the suite" in pinned and "seed=41" not in pinned
    assert "EXAMPLE =" not in export_script(case, cell, None)  # no run note: the pinned one, silently as before


def test_pytest_fixtures_and_parameters_in_the_note_are_not_the_cores():
    note = ("Failing explicit example: test_replicated_primal_linearize_transpose(\n    marking='unmarked',\n"
            "    devices_ok=None,\n    observe={},\n    case=Replicated(mesh_index=1, per_shard=2, op='square', seed=0),\n)")
    got, why = failing_example(note, ["mesh_index", "per_shard", "op", "seed"])
    assert why == "" and got == {"mesh_index": 1, "per_shard": 2, "op": "square", "seed": 0}
