"""Load declarative matrices (YAML) into validated cells; every error names file:line and the fix.

A matrix file:

    schema: 1
    defaults: {device: cpu, env: {...}, timeout_s: 300, extras: [...]}
    stacks:                      # the version axis: named pin sets
      jax060: {pins: {jax: 0.6.0}}
    devices: [cpu]               # the device axis; cells = stacks x devices, named STACK-DEVICE
    exclude: [{stack: jax060, device: tpu}]
    include:                     # explicit cells beyond the product
      - {name: xla29-cpu, device: cpu, pins: {torch: 2.9.0, torch_xla: 2.9.0}, extras: [flax==0.12.0]}
      - {name: t-cpu, pins: {torchax: 0.0.13}, import_may_fail: [torchax]}   # its import failing is the finding

`import_may_fail`: pinned packages whose import may fail in the cell. The env check then takes their
version from the installed metadata and leaves the import to the tests, where its failure is what
the cell is for (otherwise a pinned package that does not import makes the cell an env-error).

`cuda`: 12 (the default) or 13, the CUDA major of a gpu cell: `jax[cudaN]` and its runtime
(jax-cudaN-pjrt, jax-cudaN-plugin), which the env check requires; other devices' cells ignore it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness.cells.startup_env import is_startup_var
from harness.cells.cell import FLOATING, Cell
from harness.cells.devices import CUDA_MAJORS, DEVICE_TYPES
from harness.cells.sources import spec_from_yaml
from harness.errors import UserError
from harness.cells.yamlio import line_of, load_yaml

from harness.paths import MATRICES_DIR
DEFAULT_MATRIX = MATRICES_DIR / "default.yaml"

_TOP_KEYS = {"schema", "description", "defaults", "stacks", "devices", "exclude", "include"}
_CELL_KEYS = {"pins", "extras", "env", "timeout_s", "index_url", "find_links", "runs_on", "import_may_fail", "cuda"}
_STACK_KEYS = _CELL_KEYS
_INCLUDE_KEYS = _CELL_KEYS | {"name", "device"}
_DEFAULT_KEYS = _CELL_KEYS - {"pins", "import_may_fail"} | {"device"}
# Names users type on a command line and tox takes as env names: no shell metacharacters.
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.]*\Z")
_CELL_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.]*-(cpu|gpu|tpu)\Z")
_ENV_NAME_RE = re.compile(r"[A-Z_][A-Z0-9_]*\Z")
# Scalars a YAML value may be where the harness turns it into a string (a version, a variable).
_SCALARS = (str, int)


@dataclass(frozen=True)
class Matrix:
    """The cells of one or more matrix files, in file order."""

    cells: tuple[Cell, ...]
    sources: tuple[Path, ...]

    def names(self) -> list[str]:
        """Cell names in order."""
        return [c.name for c in self.cells]

    def cell(self, name: str) -> Cell:
        """The cell called name, or a UserError listing close names."""
        for c in self.cells:
            if c.name == name:
                return c
        close = [n for n in self.names() if n.split("-")[0] == name.split("-")[0] or name in n]
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known cells: {', '.join(self.names())}"
        raise UserError(f"unknown cell {name!r} in {', '.join(str(s) for s in self.sources)}{hint}")

    def select(self, names: Iterable[str]) -> list[Cell]:
        """The named cells, in the order given."""
        return [self.cell(n) for n in names]


class _Ctx:
    def __init__(self, path: Path) -> None:
        self.path = path

    def err(self, node: Any, key: str | None, msg: str) -> UserError:
        return UserError(f"{self.path}:{line_of(node, key)}: {msg}")


def _check_keys(ctx: _Ctx, node: Any, allowed: set[str], what: str, at: tuple[Any, Any] = (None, None)) -> None:
    """node must be a mapping with only allowed keys; `at` is (parent, key) to name the line of a non-mapping."""
    if not isinstance(node, dict):
        raise ctx.err(at[0] if at[0] is not None else node, at[1], f"{what} must be a mapping, not {type(node).__name__}")
    for key in node:
        if key not in allowed:
            raise ctx.err(node, key, f"unknown key {key!r} in {what}; allowed: {', '.join(sorted(allowed))}")


def _pins(ctx: _Ctx, node: Any, owner: Any, sources: dict[str, dict] | None = None) -> dict[str, str]:
    """Exact versions; a source pin (a wheel file, {path:}, {git:, ref:, subdir:}) goes to `sources`."""
    if node is None:
        return {}
    if not isinstance(node, dict):
        raise ctx.err(owner, "pins", "pins must map package names to exact versions, e.g. {jax: 0.6.0}")
    pins: dict[str, str] = {}
    for pkg, ver in node.items():
        if not isinstance(pkg, str) or not _NAME_RE.match(pkg.replace("-", "_")):
            raise ctx.err(node, pkg, f"{pkg!r} is not a package name")
        try:
            spec = spec_from_yaml(ver, ctx.path.parent)
        except ValueError as exc:
            raise ctx.err(node, pkg, f"{pkg}: {exc}") from None
        if spec is not None:
            if sources is None:
                raise ctx.err(node, pkg, f"{pkg}: a source pin is not allowed here; pin a release")
            sources[canonicalize_name(pkg)] = spec
            continue
        if isinstance(ver, bool) or not isinstance(ver, _SCALARS):
            raise ctx.err(node, pkg, f"{pkg}: {ver!r} is not a version; write an exact release such as '0.6.0'")
        ver_s = str(ver)
        if ver_s in FLOATING:  # resolved to an exact version at build time (harness.cells.floating)
            pins[canonicalize_name(pkg)] = ver_s
            continue
        try:
            if ver_s != ver_s.strip():
                raise InvalidVersion(ver_s)
            Version(ver_s)
        except InvalidVersion:
            raise ctx.err(node, pkg, f"{pkg}: {ver_s!r} is not a PEP 440 version; write an exact release such as '0.6.0' "
                                     "(or latest / nightly)") from None
        pins[canonicalize_name(pkg)] = ver_s
    return pins


def _complete_pins(ctx: _Ctx, pins: dict[str, str], node: Any) -> dict[str, str]:
    """jax implies the same jaxlib; torch_xla X.Y needs torch X.Y.0 exactly (pinned by the user)."""
    if "jax" in pins and "jaxlib" not in pins:
        pins = {**pins, "jaxlib": pins["jax"]}
    if "torch-xla" in pins and pins["torch-xla"] in FLOATING:
        if pins.get("torch") not in (None, pins["torch-xla"]):
            raise ctx.err(node, "pins", f"torch_xla {pins['torch-xla']} brings its own torch X.Y.0; drop the torch pin")
        return pins
    if "torch-xla" in pins:
        v = Version(pins["torch-xla"])
        want = f"{v.major}.{v.minor}.0"
        have = pins.get("torch")
        if have is None or Version(have) != Version(want):
            found = f"torch=={have}" if have else "no torch pin"
            raise ctx.err(node, "pins", f"torch_xla {pins['torch-xla']} needs torch=={want} exactly ({found}); add `torch: {want}` to the pins")
    return pins


def _strings(ctx: _Ctx, node: Any, key: str, owner: Any) -> tuple[str, ...]:
    if node is None:
        return ()
    if isinstance(node, str):
        node = [node]
    if not isinstance(node, list) or not all(isinstance(x, str) for x in node):
        raise ctx.err(owner, key, f"{key} must be a list of strings")
    for x in node:
        _plain(ctx, x, owner, key)
    return tuple(node)


def _plain(ctx: _Ctx, value: Any, owner: Any, key: str) -> str:
    """A string without control characters (newlines, NUL): it ends up in command lines and file names."""
    if not isinstance(value, str):
        raise ctx.err(owner, key, f"{key} must be a string, not {value!r}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ctx.err(owner, key, f"{key}: {value!r} contains a control character (newline, tab, NUL ...)")
    return value


def _extras(ctx: _Ctx, node: Any, owner: Any) -> tuple[str, ...]:
    out = _strings(ctx, node, "extras", owner)
    for req in out:
        try:
            Requirement(req)
        except InvalidRequirement:
            raise ctx.err(owner, "extras", f"extras: {req!r} is not a PEP 508 requirement; write e.g. 'flax==0.12.0'") from None
        if req.startswith("-"):
            raise ctx.err(owner, "extras", f"extras: {req!r} looks like an option; only requirements are allowed")
    return out


def _env(ctx: _Ctx, node: Any, owner: Any) -> dict[str, str]:
    if node is None:
        return {}
    if not isinstance(node, dict):
        raise ctx.err(owner, "env", "env must map variable names to values")
    for k, v in node.items():
        if not isinstance(k, str) or not _ENV_NAME_RE.match(k):
            raise ctx.err(node, k, f"env: {k!r} is not an environment variable name (A-Z, 0-9, _)")
        if isinstance(v, bool) or not isinstance(v, _SCALARS) or "\x00" in str(v):
            raise ctx.err(node, k, f"env: {k}: {v!r} is not a string or number (quote it: '1')")
        if is_startup_var(k):
            raise ctx.err(node, k, f"env: {k} changes which code pytest or Python runs, so a cell may not set it; "
                                   "put pytest options after `--` on the command line")
    return {k: str(v) for k, v in node.items()}


def _device(ctx: _Ctx, value: Any, owner: Any, key: str = "device") -> str:
    if not isinstance(value, str) or value not in DEVICE_TYPES:
        raise ctx.err(owner, key, f"device {value!r} is not one of {', '.join(DEVICE_TYPES)}")
    return value


def _devices(ctx: _Ctx, owner: Any, default: list[str]) -> list[str]:
    """The `devices` list of a matrix or sweep (default when absent), each a known device type."""
    devices = owner.get("devices") or default
    if not isinstance(devices, list):
        raise ctx.err(owner, "devices", "devices must be a list such as [cpu, tpu]")
    for d in devices:
        _device(ctx, d, owner, "devices")
    return devices


def _build_cell(ctx: _Ctx, name: str, device: str, parts: list[Any], node: Any) -> Cell:
    """Merge defaults then stack/include settings (later wins; pins, env merge) into a Cell."""
    if not isinstance(name, str) or not _CELL_NAME_RE.match(name):
        raise ctx.err(node, "name" if isinstance(node, dict) and "name" in node else None,
                      f"cell name {name!r} must be letters, digits, '_' or '.', then '-cpu', '-gpu' or '-tpu' (e.g. jax060-cpu)")
    pins: dict[str, str] = {}
    sources: dict[str, dict] = {}
    env: dict[str, str] = {}
    extras: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    may_fail: tuple[str, ...] = ()
    timeout_s, index_url, runs_on, cuda = 300, None, None, "12"
    for part in parts:
        if not part:
            continue
        part_sources: dict[str, dict] = {}
        part_pins = _pins(ctx, part.get("pins"), part, part_sources)
        for pkg in part_pins:  # a later part's release pin replaces an earlier part's source
            sources.pop(pkg, None)
        for pkg in part_sources:
            pins.pop(pkg, None)
        pins.update(part_pins)
        sources.update(part_sources)
        env.update(_env(ctx, part.get("env"), part))
        extras += _extras(ctx, part.get("extras"), part)
        find_links += _strings(ctx, part.get("find_links"), "find_links", part)
        if "import_may_fail" in part:  # a later part's list replaces an earlier one's
            may_fail = tuple(canonicalize_name(p) for p in _strings(ctx, part["import_may_fail"], "import_may_fail", part))
        if "timeout_s" in part:
            t = part["timeout_s"]
            if isinstance(t, bool) or not isinstance(t, int) or t <= 0:
                raise ctx.err(part, "timeout_s", f"timeout_s must be a positive integer of seconds, not {t!r}")
            timeout_s = t
        if "index_url" in part:
            index_url = _plain(ctx, part["index_url"], part, "index_url")
        if "runs_on" in part:
            runs_on = _plain(ctx, part["runs_on"], part, "runs_on")
        if "cuda" in part:
            c = part["cuda"]
            if isinstance(c, bool) or str(c) not in CUDA_MAJORS:
                raise ctx.err(part, "cuda", f"cuda must be one of {', '.join(CUDA_MAJORS)} (jax's cudaN extra), not {c!r}")
            cuda = str(c)  # read by gpu cells only: a stack crossed with [tpu, gpu] gives its tpu cell the key too
    if not pins and not sources:
        raise ctx.err(node, None, f"cell {name!r} pins nothing; add pins such as {{jax: 0.6.0}}")
    if "jax" not in sources:  # a jax source is paired with its jaxlib by rule when resolved
        pins = _complete_pins(ctx, pins, node)
    for pkg in may_fail:
        if pkg not in pins and pkg not in sources:
            raise ctx.err(node, "import_may_fail", f"import_may_fail names {pkg!r}, which the cell does not pin; "
                                                   f"pinned: {', '.join(sorted({**pins, **sources}))}")
    return Cell(name=name, device=device, pins=pins, extras=extras, env=env, timeout_s=timeout_s,
                index_url=index_url, find_links=find_links, runs_on=runs_on,
                source=f"{ctx.path}:{line_of(node)}", sources=sources, import_may_fail=may_fail, cuda=cuda)


def _load_one(path: Path) -> list[Cell]:
    ctx = _Ctx(path)
    doc = load_yaml(path)
    if not isinstance(doc, dict):
        raise UserError(f"{path}:1: a matrix must be a mapping with stacks/devices and/or include")
    _check_keys(ctx, doc, _TOP_KEYS, "the matrix")
    if doc.get("schema", 1) != 1 or isinstance(doc.get("schema"), bool):
        raise ctx.err(doc, "schema", f"schema {doc.get('schema')!r} is not supported; this harness reads schema 1")
    defaults = doc.get("defaults") or {}
    _check_keys(ctx, defaults, _DEFAULT_KEYS, "defaults", (doc, "defaults"))
    default_device = defaults.get("device", "cpu")
    _device(ctx, default_device, defaults)
    base = defaults  # its 'device' key is read above; _build_cell ignores it
    cells: list[Cell] = []

    stacks = doc.get("stacks") or {}
    if not isinstance(stacks, dict):
        raise ctx.err(doc, "stacks", "stacks must map stack names to {pins: ...}")
    devices = _devices(ctx, doc, [default_device] if stacks else [])
    excludes = doc.get("exclude") or []
    if not isinstance(excludes, list):
        raise ctx.err(doc, "exclude", "exclude must be a list of {stack: ..., device: ...}")
    for ex in excludes:
        _check_keys(ctx, ex, {"stack", "device"}, "an exclude entry", (doc, "exclude"))
        if "device" in ex:
            _device(ctx, ex["device"], ex)
        if "stack" in ex and (not isinstance(ex["stack"], str) or ex["stack"] not in stacks):
            raise ctx.err(ex, "stack", f"exclude names unknown stack {ex['stack']!r}; stacks: {', '.join(stacks)}")
    for sname, stack in stacks.items():
        if not isinstance(sname, str) or not _NAME_RE.match(sname):
            raise ctx.err(stacks, sname, f"stack name {sname!r} may hold only letters, digits, '_' and '.'")
        _check_keys(ctx, stack, _STACK_KEYS, f"stack {sname!r}", (stacks, sname))
        for dev in devices:
            if any(ex.get("stack", sname) == sname and ex.get("device", dev) == dev for ex in excludes):
                continue
            cells.append(_build_cell(ctx, f"{sname}-{dev}", dev, [base, stack], stack))

    includes = doc.get("include") or []
    if not isinstance(includes, list):
        raise ctx.err(doc, "include", "include must be a list of cells")
    for inc in includes:
        _check_keys(ctx, inc, _INCLUDE_KEYS, "an include entry", (doc, "include"))
        if "name" not in inc:
            raise ctx.err(inc, None, "an include entry needs a name, e.g. name: xla29-cpu")
        dev = _device(ctx, inc.get("device", default_device), inc)
        cells.append(_build_cell(ctx, inc["name"], dev, [base, inc], inc))
    return cells


def load_matrix(*paths: Path) -> Matrix:
    """Load and validate matrix files; a cell name may appear only once across all of them."""
    paths = tuple(Path(p) for p in (paths or (DEFAULT_MATRIX,)))
    cells: list[Cell] = []
    seen: dict[str, str] = {}
    for path in paths:
        if not path.exists():
            raise UserError(f"{path}: no such matrix file")
        for cell in _load_one(path):
            if cell.name in seen:
                raise UserError(f"{cell.source}: duplicate cell name {cell.name!r} (first defined at {seen[cell.name]}); rename one")
            seen[cell.name] = cell.source
            cells.append(cell)
    return Matrix(cells=tuple(cells), sources=paths)


def catalogue() -> Matrix:
    """Every cell of every matrices/*.yaml: where `--cell NAME` and tox env names are looked up."""
    rest = sorted(p for p in MATRICES_DIR.glob("*.yaml") if p != DEFAULT_MATRIX)
    return load_matrix(DEFAULT_MATRIX, *rest)
