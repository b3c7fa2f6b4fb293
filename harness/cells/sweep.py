"""Release sweeps: a matrix generated from the index, one cell per release of one package.

A sweep is written on the command line (`--sweep 'jax>=0.4.38,<=0.10.2'`, with `--with PKG==VER`
to hold other packages) or as a sweep file (matrices/sweeps/*.yaml, validated with file:line):

    schema: 1
    defaults: {device: cpu, env: {...}, timeout_s: 300}     # as in a matrix
    sweeps:
      - package: torch_xla
        versions: ">=2.5,<2.10"           # PEP 440 specifiers over the index's releases
        devices: [cpu]                    # optional, default: defaults.device
        pins: {}                          # held fixed in every cell
        extras: []
        pre: false                        # include pre-releases / .dev nightlies
        with:                             # what some releases need beside them (first match wins)
          - {versions: "~=2.8.0", pins: {jax: 0.6.2}, extras: ["flax==0.11.2"]}

Releases are listed with harness.cells.releases (PyPI, an index_url, find_links); jax moves with
the same jaxlib and only releases both have are swept; torch_xla moves with torch X.Y.0. Cells are
built and validated by the matrix code and named the way users type them: jax0438-cpu, xla27-cpu,
xla281-cpu, torchax0013-cpu.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from harness.cells.releases import list_versions, paired_pins
from harness.cells.cell import PYTHON, Cell
from harness.errors import UserError
from harness.cells.matrix import DEFAULT_MATRIX, MATRICES_DIR, Matrix, _build_cell, _check_keys, _Ctx, _device, _devices
from harness.cells.yamlio import line_of, load_yaml

SWEEPS_DIR = MATRICES_DIR / "sweeps"
_PREFIX = {"jax": "jax", "torch-xla": "xla", "torchax": "torchax", "torch": "torch"}
_SWEEP_KEYS = {"package", "versions", "devices", "pins", "extras", "env", "timeout_s", "index_url",
               "find_links", "runs_on", "pre", "with"}
_WITH_KEYS = {"versions", "pins", "extras"}


def cell_stem(package: str, version: str) -> str:
    """The name stem of a swept release: jax 0.4.38 -> jax0438, torch_xla 2.7.0 -> xla27, 2.8.1 -> xla281."""
    pkg = canonicalize_name(package)
    parts = version.split(".")
    if pkg == "torch-xla" and len(parts) == 3 and parts[2] == "0":
        parts = parts[:2]  # the .0 release is what users call xla27
    return _PREFIX.get(pkg, pkg.replace("-", "_")) + "".join(parts)


def sweep_releases(package: str, spec: SpecifierSet, index_url: str | None = None,
                   find_links: tuple[str, ...] = (), pre: bool = False) -> list[str]:
    """Releases of package on the index that satisfy spec, oldest first (jax: only those jaxlib has too)."""
    pkg = canonicalize_name(package)
    versions = list_versions(pkg, index_url, find_links, pre=pre, python=PYTHON)
    if pkg == "jax":
        jaxlibs = set(list_versions("jaxlib", index_url, find_links, pre=pre, python=PYTHON))
        versions = [v for v in versions if v in jaxlibs]
    return [str(v) for v in versions if spec.contains(v, prereleases=pre)]


def _spec(ctx: _Ctx, text: Any, node: Any, key: str) -> SpecifierSet:
    try:
        return SpecifierSet(str(text))
    except InvalidSpecifier:
        raise ctx.err(node, key, f"{key}: {text!r} is not a PEP 440 specifier set; write e.g. '>=0.4.38,<=0.10.2'") from None


def _expand_one(ctx: _Ctx, sweep: Any, defaults: dict, default_device: str) -> list[Cell]:
    _check_keys(ctx, sweep, _SWEEP_KEYS, "a sweep")
    if "package" not in sweep or "versions" not in sweep:
        raise ctx.err(sweep, None, "a sweep needs `package` and `versions`, e.g. {package: jax, versions: '>=0.4.38'}")
    pkg = canonicalize_name(str(sweep["package"]))
    spec = _spec(ctx, sweep["versions"], sweep, "versions")
    devices = _devices(ctx, sweep, [default_device])
    withs = sweep.get("with") or []
    if not isinstance(withs, list):
        raise ctx.err(sweep, "with", "with must be a list of {versions, pins, extras}")
    rules = []
    for w in withs:
        _check_keys(ctx, w, _WITH_KEYS, "a `with` entry")
        rules.append((_spec(ctx, w.get("versions", ""), w, "versions"), w))
    pre = bool(sweep.get("pre", False))
    find_links = tuple(sweep.get("find_links") or ()) if isinstance(sweep.get("find_links"), list) else (
        (str(sweep["find_links"]),) if sweep.get("find_links") else ())
    index_url = sweep.get("index_url") or defaults.get("index_url")
    releases = sweep_releases(pkg, spec, index_url, find_links, pre)
    if not releases:
        raise ctx.err(sweep, "versions", f"no {pkg} release on the index matches {str(spec)!r}")
    held = {k: v for k, v in sweep.items() if k in ("pins", "extras", "env", "timeout_s", "index_url", "find_links", "runs_on")}
    cells = []
    for version in releases:
        extra = next((w for s, w in rules if s.contains(version, prereleases=True)), {})
        # Held pins first, then the rule's, then the swept pair: the swept package always wins.
        pins = {**(held.get("pins") or {}), **(extra.get("pins") or {}), **paired_pins(pkg, version)}
        part = {**held, "pins": pins, "extras": list(held.get("extras") or []) + list(extra.get("extras") or [])}
        for dev in devices:
            cells.append(_build_cell(ctx, f"{cell_stem(pkg, version)}-{dev}", dev, [defaults, part], sweep))
    return cells


class _ArgCtx(_Ctx):
    """Errors about a sweep from the command line: no file and line to name, the argument instead."""

    def err(self, node: Any, key: str | None, msg: str) -> UserError:
        return UserError(f"{self.path}: {msg}")


def _default_settings() -> dict:
    doc = load_yaml(DEFAULT_MATRIX)
    return dict(doc.get("defaults") or {}) if isinstance(doc, dict) else {}


def from_spec(text: str, held: dict[str, str] | None = None, extras: tuple[str, ...] = (), device: str | None = None,
              pre: bool = False, index_url: str | None = None, find_links: tuple[str, ...] = ()) -> Matrix:
    """The sweep written on a command line ('jax>=0.4.38'), with the default matrix's settings."""
    try:
        req = Requirement(text)
    except InvalidRequirement:
        raise UserError(f"--sweep {text!r}: write PACKAGE SPECIFIERS, e.g. 'jax>=0.4.38,<=0.10.2'") from None
    if req.extras or req.marker or req.url:
        raise UserError(f"--sweep {text!r}: only a package name and version specifiers are allowed")
    defaults = _default_settings()
    sweep: dict[str, Any] = {"package": req.name, "versions": str(req.specifier), "pins": dict(held or {}),
                             "extras": list(extras), "pre": pre}
    if device:
        sweep["devices"] = [device]
    if index_url:
        sweep["index_url"] = index_url
    if find_links:
        sweep["find_links"] = list(find_links)
    ctx = _ArgCtx(Path(f"--sweep {text!r}"))
    cells = _expand_one(ctx, sweep, defaults, defaults.get("device", "cpu"))
    return Matrix(cells=tuple(cells), sources=(Path(f"--sweep {text}"),))


def load_sweep(path: Path) -> Matrix:
    """Expand a sweep file into a validated matrix (one cell per release and device)."""
    ctx = _Ctx(path)
    doc = load_yaml(path)
    if not isinstance(doc, dict):
        raise UserError(f"{path}:1: a sweep file must be a mapping with `sweeps:`")
    _check_keys(ctx, doc, {"schema", "description", "defaults", "sweeps"}, "the sweep file")
    if doc.get("schema", 1) != 1:
        raise ctx.err(doc, "schema", f"schema {doc.get('schema')!r} is not supported; this harness reads schema 1")
    defaults = doc.get("defaults") or {}
    _check_keys(ctx, defaults, {"device", "env", "timeout_s", "extras", "index_url", "find_links", "runs_on"}, "defaults")
    default_device = _device(ctx, defaults.get("device", "cpu"), defaults)
    sweeps = doc.get("sweeps")
    if not isinstance(sweeps, list) or not sweeps:
        raise ctx.err(doc, "sweeps" if "sweeps" in doc else None, "`sweeps:` must be a non-empty list of sweeps")
    cells: list[Cell] = []
    seen: dict[str, int] = {}
    for sweep in sweeps:
        for cell in _expand_one(ctx, sweep, defaults, default_device):
            if cell.name in seen:
                raise ctx.err(sweep, None, f"sweep cell {cell.name!r} is also made by the sweep at line {seen[cell.name]}; "
                                           "narrow one of their `versions`")
            seen[cell.name] = line_of(sweep)
            cells.append(cell)
    return Matrix(cells=tuple(cells), sources=(path,))


def is_sweep_file(path: Path) -> bool:
    """Whether a YAML file is a sweep file (has `sweeps:`) rather than a matrix."""
    doc = load_yaml(path)
    return isinstance(doc, dict) and "sweeps" in doc


def matrix_from_args(matrix_files: list[Path] | None, args) -> Matrix | None:
    """The matrix the sweep options and sweep files describe, or None when there are none."""
    from harness.cells.releases import held_pins
    from harness.cells.matrix import load_matrix

    specs = getattr(args, "sweep", None) or []
    files = list(matrix_files or [])
    sweep_files = [f for f in files if Path(f).exists() and is_sweep_file(Path(f))]
    if not specs and not sweep_files:
        if getattr(args, "sweep_with", None) or getattr(args, "sweep_extra", None):
            raise UserError("--with and --sweep-extra only apply to --sweep")
        return None
    held = held_pins(args.sweep_with)
    parts: list[Matrix] = [from_spec(s, held, tuple(args.sweep_extra), pre=args.pre, index_url=args.index_url)
                           for s in specs]
    parts += [load_sweep(Path(f)) for f in sweep_files]
    plain = [f for f in files if f not in sweep_files]
    if plain:
        parts.insert(0, load_matrix(*plain))
    cells, seen = [], {}
    for m in parts:
        for c in m.cells:
            if c.name in seen:
                raise UserError(f"{c.source}: duplicate cell name {c.name!r} (first from {seen[c.name]}); drop one sweep or matrix")
            seen[c.name] = c.source
            cells.append(c)
    return Matrix(cells=tuple(cells), sources=tuple(s for m in parts for s in m.sources))
