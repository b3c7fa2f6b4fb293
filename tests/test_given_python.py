"""`harness run --python PATH` (an interpreter the harness did not build: a machine with no index, an
accelerator's image) and a gpu cell's CUDA major (`cuda: 13`): the first GPU run needed both."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.cells.cell import Cell
from harness.cells.envs import EnvError, given_env
from harness.cells.matrix import load_matrix
from harness.cells.devices import runtime_packages
from harness.cli import main


def test_a_given_interpreter_is_checked_as_a_built_env_is():
    """This interpreter has no jax: a cell pinning jax is refused with the reason, nothing installed."""
    with pytest.raises(EnvError, match=r"jax==0\.6\.0"):
        given_env(Cell(name="x-cpu", device="cpu", pins={"jax": "0.6.0", "jaxlib": "0.6.0"}), Path(sys.executable))


def test_a_given_interpreter_that_holds_the_pins_is_the_env():
    import yaml

    env = given_env(Cell(name="y-cpu", device="cpu", pins={"pyyaml": yaml.__version__}), Path(sys.executable))
    assert env.python == Path(sys.executable) and env.versions["pyyaml"] == yaml.__version__ and env.reused


@pytest.mark.parametrize("extra, says", [
    ([], "not an executable file"),
    (["--build-only"], "nothing to build"),
    (["-j", "2"], "one at a time"),
])
def test_bad_python_options_are_one_line_and_exit_2(tmp_path, capsys, extra, says):
    python = sys.executable if extra else str(tmp_path / "no-python")
    code = main(["run", "--cell", "jax060-cpu", "--python", python, "--out", str(tmp_path / "o"), *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and says in err


def test_a_file_that_is_not_executable_is_refused(tmp_path, capsys):
    plain = tmp_path / "python"
    plain.write_text("not a program")
    assert main(["run", "--cell", "jax060-cpu", "--python", str(plain), "--out", str(tmp_path / "o")]) == 2
    assert "not an executable file" in capsys.readouterr().err


def test_a_gpu_cell_takes_the_cuda_major_it_names(tmp_path):
    m = tmp_path / "m.yaml"
    m.write_text("schema: 1\ndevices: [gpu, tpu]\nstacks:\n  a: {pins: {jax: 0.10.2}, cuda: 13}\n  b: {pins: {jax: 0.7.2}}\n")
    cells = {c.name: c for c in load_matrix(m).cells}
    assert cells["a-gpu"].requirements()[0] == "jax[cuda13]==0.10.2"
    assert runtime_packages("gpu", ["jax"], cells["a-gpu"].cuda) == {
        "jax-cuda13-pjrt": "jax_plugins.xla_cuda13", "jax-cuda13-plugin": "jax_cuda13_plugin"}
    assert cells["b-gpu"].requirements()[0] == "jax[cuda12]==0.7.2"  # the default, as before
    assert cells["a-tpu"].requirements()[0] == "jax[tpu]==0.10.2"   # other devices ignore it
    assert cells["b-gpu"].key() == Cell(name="b-gpu", device="gpu", pins=dict(cells["b-gpu"].pins)).key()


@pytest.mark.parametrize("value", ["11", "true", "[13]", "cuda13"])
def test_a_cuda_major_jax_does_not_publish_is_one_line(tmp_path, capsys, value):
    m = tmp_path / "m.yaml"
    m.write_text(f"schema: 1\ndevices: [gpu]\nstacks:\n  a: {{pins: {{jax: 0.10.2}}, cuda: {value}}}\n")
    assert main(["matrix", "--matrix", str(m)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cuda must be one of 12, 13" in err


def test_a_worker_cell_keeps_its_cuda_major_and_refuses_another():
    """`harness run -j` hands each worker its cell as JSON on the command line: cuda survives the trip,
    and a value that is no CUDA major jax publishes is one line, never a requirement."""
    import dataclasses

    from harness.errors import UserError
    from harness.run.parallel import cell_from_json, cell_to_json

    cell = Cell(name="a-gpu", device="gpu", pins={"jax": "0.10.2", "jaxlib": "0.10.2"}, cuda="13")
    assert cell_from_json(cell_to_json(cell)).requirements()[0] == "jax[cuda13]==0.10.2"
    for bad in ("11", "{cuda}", "13] @ file:///x"):
        with pytest.raises(UserError, match="cuda"):
            cell_from_json(cell_to_json(dataclasses.replace(cell, cuda=bad)))
