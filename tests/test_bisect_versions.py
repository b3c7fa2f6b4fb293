"""Listing versions from a local index (PEP 503 pages and wheel folders), as a nightly index would be read."""

from __future__ import annotations

import pytest
from packaging.version import Version

from harness.bisect.probe import classify, probe_cell
from harness.cells.releases import between, list_versions, nearest, paired_pins
from harness.cells.cell import Cell
from harness.errors import UserError


@pytest.fixture
def local_index(tmp_path):
    pkg = tmp_path / "simple" / "jax"
    pkg.mkdir(parents=True)
    files = ["jax-0.5.3-py3-none-any.whl", "jax-0.6.0-py3-none-any.whl", "jax-0.6.1.tar.gz",
             "jax-0.7.0.dev20250601-py3-none-any.whl", "jax-0.10.2-py3-none-any.whl", "jax-0.6.2-py3-none-any.whl"]
    links = "".join(f'<a href="../../files/{f}#sha256=00">{f}</a>\n' for f in files[:-1])
    links += f'<a href="../../files/{files[-1]}" data-yanked="broken">{files[-1]}</a>\n'
    (pkg / "index.html").write_text(f"<html><body>{links}</body></html>")
    return tmp_path / "simple"


def test_pep503_index_in_release_order_without_yanked_or_dev(local_index):
    versions = list_versions("jax", index_url=local_index.as_uri())
    assert versions == [Version(v) for v in ("0.5.3", "0.6.0", "0.6.1", "0.10.2")]


def test_nightlies_with_pre(local_index):
    versions = list_versions("jax", index_url=local_index.as_uri(), pre=True)
    assert Version("0.7.0.dev20250601") in versions


def test_find_links_folder_adds_versions(local_index, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "jax-0.9.0-py3-none-any.whl").write_bytes(b"")
    (wheels / "jaxlib-0.9.5-cp311-cp311-manylinux2014_x86_64.whl").write_bytes(b"")
    versions = list_versions("jax", index_url=local_index.as_uri(), find_links=(str(wheels),))
    assert Version("0.9.0") in versions and Version("0.9.5") not in versions


def test_unreachable_index_is_one_line(tmp_path):
    with pytest.raises(UserError, match="no such package folder|unreachable"):
        list_versions("nope", index_url=(tmp_path / "nothing").as_uri())


def test_between_and_nearest():
    vs = [Version(v) for v in ("0.5.3", "0.6.0", "0.6.1", "0.7.0")]
    assert between(vs, Version("0.6.0"), Version("0.7.0")) == vs[1:]
    assert nearest(vs, Version("0.5.4")) == "0.5.3, 0.6.0"


def test_paired_packages_move_together():
    assert paired_pins("jax", "0.6.0") == {"jax": "0.6.0", "jaxlib": "0.6.0"}
    assert paired_pins("torch_xla", "2.8.1") == {"torch-xla": "2.8.1", "torch": "2.8.0"}
    base = Cell(name="b-cpu", device="cpu", pins={"torch": "2.9.0", "torch-xla": "2.9.0", "jax": "0.7.1"})
    cell = probe_cell(base, "torch-xla", "2.8.1", held={"jax": "0.6.2"})
    assert cell.pins == {"torch": "2.8.0", "torch-xla": "2.8.1", "jax": "0.6.2"}
    assert cell.name == "bisect.torch_xla2.8.1-cpu"


@pytest.mark.parametrize("raw, regress, expected", [
    ("pass", "fail", "good"), ("fail", "fail", "bad"), ("crash", "fail", "bad"), ("skip", "fail", "skip"),
    ("env-error", "fail", "skip"), ("pass", "pass", "bad"), ("fail", "pass", "good"), ("crash", "crash", "bad"),
    ("fail", "crash", "good"), ("fail", "error-matches:arity", "good"),
])
def test_regress_modes(raw, regress, expected):
    assert classify(raw, "boom", regress) == expected


def test_error_matches_mode_looks_at_the_message():
    assert classify("fail", "Call applied function arity must match", "error-matches:arity") == "bad"
