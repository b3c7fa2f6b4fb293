"""Matrix validation: every malformed input is one line naming file:line and the fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.cells.matrix import catalogue, load_matrix
from tests.fake_site import fake_site_python


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(UserError) as exc:
        load_matrix(_write(tmp_path, text))
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_stacks_times_devices_make_named_cells(tmp_path):
    m = load_matrix(_write(tmp_path, """
        stacks:
          jax060: {pins: {jax: 0.6.0}}
          jax0102: {pins: {jax: 0.10.2}}
        devices: [cpu, tpu]
        exclude: [{stack: jax0102, device: tpu}]
    """))
    assert m.names() == ["jax060-cpu", "jax060-tpu", "jax0102-cpu"]
    cell = m.cell("jax0102-cpu")
    assert cell.pins == {"jax": "0.10.2", "jaxlib": "0.10.2"}  # 0.10 stays a string, jaxlib follows jax
    assert "jax[tpu]==0.6.0" in m.cell("jax060-tpu").requirements()


def test_defaults_merge_into_cells(tmp_path):
    m = load_matrix(_write(tmp_path, """
        defaults: {env: {XLA_FLAGS: --xla_force_host_platform_device_count=8}, timeout_s: 60}
        include:
          - {name: xla29-cpu, pins: {torch: 2.9.0, torch_xla: 2.9.0, jax: 0.7.1}, extras: [flax==0.11.2], env: {A: "1"}}
    """))
    c = m.cell("xla29-cpu")
    assert c.env == {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "A": "1"}
    assert c.timeout_s == 60 and c.extras == ("flax==0.11.2",)
    assert c.run_env()["PJRT_DEVICE"] == "CPU"
    assert c.install_line() == "pip install torch==2.9.0 torch-xla==2.9.0 jax==0.7.1 jaxlib==0.7.1 flax==0.11.2"


@pytest.mark.parametrize("text, expected", [
    ("stacks: {a: {pins: {jax: 0.6.0}}\n", "YAML syntax error"),
    ("stackz: {}\n", ":1: unknown key 'stackz' in the matrix"),
    ("stacks:\n  a:\n    pins: {jax: 0.6.0}\n    pinz: {}\n", ":4: unknown key 'pinz' in stack 'a'"),
    ("stacks:\n  a:\n    pins: {jax: not-a-version}\n", ":3: jax: 'not-a-version' is not a PEP 440 version"),
    ("include:\n  - {name: x-cpu, pins: {torch_xla: 2.9.0}}\n", "torch_xla 2.9.0 needs torch==2.9.0 exactly (no torch pin)"),
    ("include:\n  - {name: x-cpu, pins: {torch: 2.8.0, torch_xla: 2.9.0}}\n", "needs torch==2.9.0 exactly (torch==2.8.0)"),
    ("include:\n  - {name: a-cpu, pins: {jax: 0.6.0}}\n  - {name: a-cpu, pins: {jax: 0.6.1}}\n", "duplicate cell name 'a-cpu'"),
    ("include:\n  - {name: a-cpu, device: fpga, pins: {jax: 0.6.0}}\n", "device 'fpga' is not one of cpu, gpu, tpu"),
    ("include:\n  - {name: 'x; rm -rf ~-cpu', pins: {jax: 0.6.0}}\n", "cell name 'x; rm -rf ~-cpu' must be"),
    ("include:\n  - {name: a-cpu, pins: {jax: 0.6.0}, extras: ['--index-url=http://x']}\n", "is not a PEP 508 requirement"),
    ("include:\n  - {name: a-cpu}\n", "pins nothing"),
    ("include:\n  - {name: a-cpu, pins: {jax: 0.6.0}, timeout_s: -1}\n", "timeout_s must be a positive integer"),
    ("include:\n  - {name: a-cpu, pins: {jax: 0.6.0}, env: {'bad name': 1}}\n", "is not an environment variable name"),
    ("schema: 2\n", "schema 2 is not supported"),
    ("stacks: {a: {pins: {jax: 0.6.0}}}\nexclude: [{stack: b}]\n", "exclude names unknown stack 'b'"),
    ("stacks:\n  a: {pins: {jax: 0.6.0}}\n  a: {pins: {jax: 0.6.1}}\n", ":3: duplicate key 'a'"),
])
def test_malformed_matrix_is_one_line_with_file_and_line(tmp_path, text, expected):
    msg = _error(tmp_path, text)
    assert expected in msg
    assert msg.startswith(str(tmp_path / "m.yaml"))


def test_unknown_cell_suggests_close_names():
    with pytest.raises(UserError, match="did you mean jax060-cpu"):
        catalogue().cell("jax060-fpu")


def test_cell_names_are_what_users_type():
    names = catalogue().names()
    for expected in ("jax053-cpu", "jax060-cpu", "jax0102-cpu", "jax060-tpu", "xla29-cpu"):
        assert expected in names
    assert len(set(names)) == len(names)


def test_env_cache_key_changes_with_pins_only():
    m = catalogue()
    a, b = m.cell("jax060-cpu"), m.cell("jax053-cpu")
    assert a.key() != b.key()
    assert a.key() == load_matrix().cell("jax060-cpu").key()


def test_import_may_fail_names_pinned_packages_only(tmp_path):
    m = load_matrix(_write(tmp_path, """
        include:
          - {name: t-cpu, pins: {torchax: 0.0.13, torch: 2.13.0}, import_may_fail: [Torchax]}
          - {name: u-cpu, pins: {torchax: 0.0.13}}
    """))
    t, u = m.cell("t-cpu"), m.cell("u-cpu")
    assert t.import_may_fail == ("torchax",) and u.import_may_fail == ()
    assert t.describe()["import_may_fail"] == ["torchax"] and "import_may_fail" not in u.describe()
    # an env checked without the import is never reused as one checked with it
    assert t.with_pins("t-cpu", {}).key() == t.key() != load_matrix(_write(tmp_path, """
        include:
          - {name: t-cpu, pins: {torchax: 0.0.13, torch: 2.13.0}}
    """)).cell("t-cpu").key()
    msg = _error(tmp_path, "include:\n  - {name: a-cpu, pins: {jax: 0.6.0}, import_may_fail: [torchax]}\n")
    assert ":2: import_may_fail names 'torchax', which the cell does not pin; pinned: jax, jaxlib" in msg
    assert "unknown key 'import_may_fail' in defaults" in _error(tmp_path, "defaults: {import_may_fail: [jax]}\n")


def test_the_default_matrix_installs_torchax_with_only_what_it_declares():
    """torchax0013declared-cpu: `pip install torchax==0.0.13` and the harness's own packages, nothing else
    (no extra, no torch, no jax: torchax 0.0.13 declares none of them outside its extras)."""
    from harness.cells.cell import RUNTIME_REQUIREMENTS

    cell = load_matrix().cell("torchax0013declared-cpu")
    assert cell.requirements() == ["torchax==0.0.13", *RUNTIME_REQUIREMENTS]
    assert cell.import_may_fail == ("torchax",) and cell.install_line() == "pip install torchax==0.0.13"
    # the declared-only torch_xla cell: torch_xla's pins (torch beside it, jax as its pallas extra pins) and no extras
    noflax = load_matrix().cell("xla29noflax-cpu")
    assert noflax.extras == () and set(noflax.pins) == {"torch", "torch-xla", "jax", "jaxlib"}


def test_the_default_matrix_builds_the_newest_torch_with_torchax_although_it_cannot_import():
    cell = load_matrix().cell("torchax0013torch213-cpu")
    assert cell.pins == {"torchax": "0.0.13", "torch": "2.13.0", "jax": "0.10.2", "jaxlib": "0.10.2"}
    assert cell.import_may_fail == ("torchax",)  # the census and the torchax cases report it, not an env-error


def test_a_pin_whose_import_may_fail_is_checked_by_its_metadata_and_left_to_the_tests(tmp_path):
    from harness.cells.cell import Cell
    from harness.cells.envs import EnvError, verify

    python = fake_site_python(tmp_path, {"torchax": ("0.0.13", "import jax\n")})
    plain = Cell(name="t-cpu", device="cpu", pins={"torchax": "0.0.13"})
    with pytest.raises(EnvError, match=r"^torchax==0.0.13: import torchax failed: ModuleNotFoundError: No module named 'jax'$"):
        verify(python, plain)
    may_fail = Cell(name="t-cpu", device="cpu", pins={"torchax": "0.0.13"}, import_may_fail=("torchax",))
    assert verify(python, may_fail) == {"torchax": "0.0.13"}
    # the version is still checked, and a package that is not installed is still an env-error
    with pytest.raises(EnvError, match=r"torchax: pinned 0.0.14 but installed 0.0.13"):
        verify(python, may_fail.with_pins("t-cpu", {"torchax": "0.0.14"}))
    with pytest.raises(EnvError, match=r"^torch==2.13.0: not installed"):
        verify(python, Cell(name="t-cpu", device="cpu", pins={"torchax": "0.0.13", "torch": "2.13.0"},
                            import_may_fail=("torchax", "torch")))
