"""Floating pins: `latest` (newest release on the index) and `nightly` (newest .dev build on a nightly index).

A cell may pin `jax: latest` or `jax: nightly`. Before its env is built the pin is resolved to an
exact version, so the env cache key, CellStart (its `pins` and `floating`), RunInfo and the report
all carry the version that was tested. jax resolves to the newest version jaxlib also has; a
floating torch_xla brings its torch X.Y.0. A `nightly` pin that resolves to a version that is not a
development build is an env-error saying so: a nightly job that silently tests a release is
worse than none.
"""

from __future__ import annotations

import os
from dataclasses import replace

from packaging.version import Version

from harness.cells.releases import list_versions, paired_pins
from harness.cells.cell import FLOATING, PYTHON, Cell
from harness.errors import UserError

# Where `nightly` pins list and install from, unless SEAMS_NIGHTLY_INDEX_URL or the cell's own
# index_url says otherwise (jax's documented nightly index).
NIGHTLY_INDEXES = {"jax": "https://us-python.pkg.dev/ml-oss-artifacts-published/jax/simple/",
                   "jaxlib": "https://us-python.pkg.dev/ml-oss-artifacts-published/jax/simple/"}


class FloatingError(Exception):
    """A floating pin could not be resolved (one-line reason; the cell is an env-error)."""


def nightly_index(package: str, cell: Cell) -> str:
    """The index a `nightly` pin of package is listed and installed from."""
    url = os.environ.get("SEAMS_NIGHTLY_INDEX_URL") or cell.index_url or NIGHTLY_INDEXES.get(package)
    if not url:
        raise FloatingError(f"{package}: nightly needs a nightly index: set the cell's index_url or SEAMS_NIGHTLY_INDEX_URL")
    return url


def _newest(package: str, index_url: str | None, find_links: tuple[str, ...], pre: bool) -> Version:
    try:
        versions = list_versions(package, index_url, find_links, pre=pre, python=PYTHON)
        if package == "jax":  # jax is only testable with the same jaxlib
            jaxlibs = set(list_versions("jaxlib", index_url, find_links, pre=pre, python=PYTHON))
            versions = [v for v in versions if v in jaxlibs]
    except UserError as exc:
        raise FloatingError(str(exc)) from None
    if not versions:
        raise FloatingError(f"{package}: no {'version' if pre else 'release'} on {index_url or 'PyPI'}")
    return versions[-1]


def resolve(cell: Cell, pre: bool = False) -> Cell:
    """The cell with every floating pin replaced by the exact version it resolves to now."""
    floating = {pkg: word for pkg, word in cell.pins.items() if word in FLOATING}
    if not floating:
        return cell
    pins = {k: v for k, v in cell.pins.items() if k not in floating}
    extra_indexes = list(cell.extra_index_urls)
    for pkg, word in floating.items():
        if pkg == "jaxlib" and "jax" in floating:
            continue  # moves with jax
        if word == "latest":
            ver = _newest(pkg, cell.index_url, cell.find_links, pre)
        else:
            url = nightly_index(pkg, cell)
            ver = _newest(pkg, url, (), True)
            if not ver.is_devrelease:
                raise FloatingError(f"{pkg}: nightly resolved to {ver}, not a development (.dev) version: "
                                    f"the nightly index {url} served a release; refusing to test a release as a nightly")
            if url != cell.index_url and url not in extra_indexes:
                extra_indexes.append(url)
        pins.update(paired_pins(pkg, str(ver)))
    return replace(cell, pins=pins, floating=floating, extra_index_urls=tuple(extra_indexes))


def resolve_cells(cells: list[Cell], pre: bool = False) -> list[Cell]:
    """Resolve every cell's floating pins; a cell that cannot be resolved carries the reason (an env-error)."""
    out = []
    for cell in cells:
        try:
            out.append(resolve(cell, pre))
        except FloatingError as exc:
            out.append(replace(cell, unresolved=f"floating pin not resolved: {exc}"))
    return out
