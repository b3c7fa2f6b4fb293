"""Packages from outside the index: a wheel file, a source tree, or a ref in a git repository.

A cell pins such a package with a *source* instead of a version (matrix: `jax: ./dist/x.whl`,
`jax: {path: ../jax}`, `jax: {git: ../jax, ref: 5f3c2a1, subdir: torchax}`; command line:
`--with jax=PATH[@REF]`, `SEAMS_WITH`). Before the env is built the source is *resolved*: a git ref
to its full SHA, a tree or wheel to the SHA-256 of its content, and the version the tree declares.
The resolved source (a JSON-friendly dict in `Cell.sources`) is part of the env key, so a new commit
or an edit to a dirty tree is a new env, and the same commit is the same env.

At build time the source is *materialized* into a temporary folder: only the paths a build needs
(the files at the tree's root and the package's own folder), from `git archive` for a ref or copied
for a tree (re-hashed on the way: a tree edited since it was resolved is an env-error), then
installed by uv from that folder. Nothing is ever passed through a shell.

Binary pairing: a jax tree needs a released jaxlib. The rule reads jax/version.py of the tree
(`_minimum_jaxlib_version`, `_version`) and takes the newest jaxlib release in that range, unless a
pin says otherwise (`--pair jaxlib==X`); the choice and its reason are kept with the source.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from harness.cells.cell import IMPORT_NAMES, Cell, is_url as _is_url
from harness.cells.startup_env import build_env
from harness.errors import UserError
from harness.redact import redact

KINDS = ("wheel", "path", "git")
_SKIP_DIRS = {"__pycache__", ".git", "build", "dist", ".eggs", ".tox", ".venv"}
_GIT_TIMEOUT_S = 600


class SourceError(UserError):
    """A source that cannot be resolved or materialized (one line; exit 2 on the command line)."""


def import_name(package: str) -> str:
    """The folder a package's code lives in, in its tree (jax -> jax, torch-xla -> torch_xla)."""
    pkg = canonicalize_name(package)
    return IMPORT_NAMES.get(pkg, pkg.replace("-", "_"))


# ---------------------------------------------------------------- specs (what the user wrote)

def spec_from_yaml(value: Any, base_dir: Path) -> dict[str, Any] | None:
    """A matrix pin value as a source spec, or None when it is a plain version.

    `./x.whl` (a string ending in .whl), `{path: DIR}`, `{git: REPO, ref: REF, subdir: S}`.
    Relative paths are relative to the matrix file's folder. Raises ValueError with the fix.
    """
    if isinstance(value, str) and value.endswith(".whl"):
        return {"kind": "wheel", "location": _abs(value, base_dir)}
    if not isinstance(value, dict):
        return None
    keys = set(value)
    if keys == {"path"} or keys == {"path", "subdir"}:
        spec = {"kind": "path", "location": _abs(_text(value["path"], "path"), base_dir)}
    elif "git" in keys and keys <= {"git", "ref", "subdir"}:
        spec = {"kind": "git", "location": _repo_location(_text(value["git"], "git"), base_dir),
                "ref": _text(value.get("ref", "HEAD"), "ref")}
    else:
        raise ValueError(f"a source pin is {{path: DIR}} or {{git: REPO, ref: REF, subdir: DIR}}, not keys {sorted(keys)}")
    if "subdir" in value:
        spec["subdir"] = _subdir(_text(value["subdir"], "subdir"))
    return spec


def spec_from_with(text: str, base_dir: Path | None = None) -> tuple[str, dict[str, Any]]:
    """`PKG=PATH`, `PKG=PATH@REF`, `PKG=URL@REF` or `PKG=FILE.whl` (--with, SEAMS_WITH) -> (pkg, spec)."""
    name, sep, where = text.partition("=")
    if not sep or not where or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise SourceError(f"--with {text!r}: write PKG=PATH, PKG=PATH@REF or PKG=FILE.whl (PKG==VER holds a release, with --sweep)")
    base = base_dir or Path.cwd()
    pkg = canonicalize_name(name)
    location, ref = where, None
    if not Path(base, where).exists():  # PATH@REF; a URL such as git@host:repo has no ref unless one follows it
        left, at, right = where.rpartition("@")
        if at and left and (Path(base, left).exists() or _is_url(left)):
            location, ref = left, right
    if location.endswith(".whl") and ref is None:
        return pkg, {"kind": "wheel", "location": _abs(location, base)}
    if ref is not None or _is_url(location):
        return pkg, {"kind": "git", "location": _repo_location(location, base), "ref": ref or "HEAD"}
    return pkg, {"kind": "path", "location": _abs(location, base)}


def parse_pair(items: list[str]) -> dict[str, str]:
    """--pair jaxlib==X (repeatable): the binary partners a source keeps instead of the rule's choice."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, ver = item.partition("==")
        try:
            if not sep:
                raise InvalidVersion(item)
            Version(ver)
        except InvalidVersion:
            raise SourceError(f"--pair {item!r}: write PACKAGE==VERSION, e.g. jaxlib==0.5.3") from None
        if canonicalize_name(name) in out:
            raise SourceError(f"--pair names {canonicalize_name(name)} twice; give it once")
        out[canonicalize_name(name)] = ver
    return out


def with_items(cli: list[str], environ: dict[str, str] | None = None) -> list[str]:
    """The --with sources of a run: the command line's, then $SEAMS_WITH's (whitespace-separated, shell-quoted)."""
    import shlex

    raw = (environ if environ is not None else os.environ).get("SEAMS_WITH", "").strip()
    try:
        env_items = shlex.split(raw) if raw else []
    except ValueError as exc:
        raise SourceError(f"SEAMS_WITH={raw!r}: {exc}") from None
    return list(cli) + env_items


def is_source_with(text: str) -> bool:
    """Whether a --with item names a source (PKG=...) rather than a held release (PKG==VER)."""
    return re.match(r"[A-Za-z0-9][A-Za-z0-9_.-]*=(?!=)", text) is not None


def swap_in(cell: Cell, pkg: str, spec: dict[str, Any]) -> Cell:
    """The cell with one package taken from a source; a swapped jax drops its jaxlib pin (re-paired)."""
    pins = {k: v for k, v in cell.pins.items() if k != pkg and not (pkg == "jax" and k == "jaxlib")}
    return replace(cell, pins=pins, sources={**cell.sources, pkg: dict(spec)})


def _text(value: Any, key: str) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip():
        raise ValueError(f"{key}: {value!r} must be a non-empty string")
    value = str(value)
    if any(ord(ch) < 32 for ch in value):
        raise ValueError(f"{key}: {value!r} contains a control character")
    return value


def _subdir(value: str) -> str:
    parts = Path(value).parts
    if Path(value).is_absolute() or ".." in parts:
        raise ValueError(f"subdir: {value!r} must be a folder inside the repository")
    return str(Path(value))


def _abs(path: str, base: Path) -> str:
    return str((base / Path(path).expanduser()).resolve())


def _repo_location(text: str, base: Path) -> str:
    return text if _is_url(text) else _abs(text, base)


# ---------------------------------------------------------------- git

def _git(repo: str | Path, *args: str, check: bool = True, binary: bool = False) -> Any:
    env = build_env(dict(os.environ))  # startup_env.BUILD_ALLOWED: no GIT_DIR, GIT_CONFIG_*, ...
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=env,
                              text=not binary, timeout=_GIT_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SourceError("git is not installed: a git source needs it") from None
    except subprocess.TimeoutExpired:
        raise SourceError(f"git {args[0]} in {repo} took over {_GIT_TIMEOUT_S} s") from None
    if check and proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace") if binary else proc.stderr
        line = next((ln for ln in err.strip().splitlines() if ln.strip()), f"exit {proc.returncode}")
        raise SourceError(f"git {args[0]} in {repo}: {line.removeprefix('fatal: ')}")
    return proc


def repos_root() -> Path:
    """Where clones of remote repositories are kept ($SEAMS_REPOS_DIR, default ~/.cache/xla-seams/repos)."""
    from harness.safeio import folder_from_env

    return folder_from_env("SEAMS_REPOS_DIR", Path.home() / ".cache" / "xla-seams" / "repos")


def local_repo(location: str, ref: str | None = None) -> Path:
    """A local git directory for a repository location: the path itself, or a cached bare clone of a URL
    (fetched again when the ref is not in it yet)."""
    if not _is_url(location):
        path = Path(location)
        if not path.is_dir():
            raise SourceError(f"{location}: no such folder (a git source needs a repository path or URL)")
        if _git(path, "rev-parse", "--git-dir", check=False).returncode != 0:
            raise SourceError(f"{location}: not a git repository")
        return path
    from filelock import FileLock

    root = repos_root()
    root.mkdir(parents=True, exist_ok=True)
    clone = root / (hashlib.sha256(location.encode()).hexdigest()[:16] + ".git")
    with FileLock(str(clone) + ".lock"):
        if not (clone / "HEAD").exists():
            tmp = clone.with_name(clone.name + f".tmp{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                _git(root, "clone", "--bare", "--quiet", "--", location, str(tmp))
                tmp.rename(clone)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        elif ref and _rev(clone, ref) is None:
            _git(clone, "fetch", "--quiet", "--tags", "--", location, "+refs/heads/*:refs/heads/*")
    return clone


def _rev(repo: Path, ref: str) -> str | None:
    if ref.startswith("-"):
        return None
    proc = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def resolve_ref(repo: Path, ref: str, location: str = "") -> str:
    """The full SHA of a tag, branch or (short) SHA; SourceError naming the repository if none."""
    sha = _rev(repo, ref)
    if sha is None:
        raise SourceError(f"{location or repo}: no commit {ref!r} (looked up as a tag, branch or SHA)")
    return sha


# ---------------------------------------------------------------- reading a tree

class _Tree:
    """Read access to a source tree: a folder on disk, or a commit's tree in a git repository."""

    def __init__(self, root: Path, repo: Path | None = None, sha: str | None = None, subdir: str = "") -> None:
        self.root, self.repo, self.sha, self.subdir = root, repo, sha, subdir

    def read(self, rel: str) -> bytes | None:
        if self.repo is None:
            p = self.root / rel
            return p.read_bytes() if p.is_file() else None
        spec = f"{self.sha}:{Path(self.subdir, rel).as_posix()}"
        proc = _git(self.repo, "cat-file", "blob", spec, check=False, binary=True)
        return proc.stdout if proc.returncode == 0 else None

    def entries(self) -> list[tuple[str, str]]:
        """(name, 'file'|'dir') at the tree's root."""
        if self.repo is None:
            return [(p.name, "dir" if p.is_dir() else "file") for p in sorted(self.root.iterdir())]
        treeish = f"{self.sha}:{self.subdir}" if self.subdir else self.sha
        proc = _git(self.repo, "ls-tree", "-z", treeish, check=False)
        if proc.returncode != 0:
            raise SourceError(f"{self.repo}: no folder {self.subdir!r} at {self.sha[:12]}")
        out = []
        for item in proc.stdout.split("\0"):
            if item:
                meta, _, name = item.partition("\t")
                out.append((name, "dir" if meta.split()[1] == "tree" else "file"))
        return out


def build_paths(tree: _Tree, package: str) -> list[str]:
    """What a build needs from the tree: its root files (setup.py, pyproject.toml, README, LICENSE ...)
    and the package's own folder. SourceError when the tree does not hold the package."""
    entries = tree.entries()
    folder = import_name(package)
    if (folder, "dir") not in entries:
        raise SourceError(f"no {folder}/ folder: this tree does not hold the {package} package")
    if not any(name in ("pyproject.toml", "setup.py") for name, kind in entries if kind == "file"):
        raise SourceError(f"neither pyproject.toml nor setup.py: {package} cannot be built from it")
    return sorted(name for name, kind in entries if kind == "file" and not name.startswith(".")) + [folder]


def declared_version(tree: _Tree, package: str) -> dict[str, str]:
    """The version a tree declares, statically: pyproject's [project].version, else a literal
    `__version__`/`_version` in PKG/version.py or PKG/__init__.py. For jax also
    `_minimum_jaxlib_version`. Empty where it cannot be read without running code."""
    out: dict[str, str] = {}
    raw = tree.read("pyproject.toml")
    if raw:
        try:
            ver = tomllib.loads(raw.decode("utf-8", "replace")).get("project", {}).get("version")
            if isinstance(ver, str):
                out["version"] = ver
        except tomllib.TOMLDecodeError:
            pass
    folder = import_name(package)
    for rel in (f"{folder}/version.py", f"{folder}/__init__.py"):
        found = _literals(tree.read(rel))
        if "version" not in out:
            ver = found.get("__version__") or found.get("_version")
            if ver:
                out["version"] = ver
        if "_minimum_jaxlib_version" in found:
            out["minimum_jaxlib"] = found["_minimum_jaxlib_version"]
    try:
        Version(out.get("version", ""))
    except InvalidVersion:
        out.pop("version", None)
    return out


def _literals(text: bytes | None) -> dict[str, str]:
    if not text:
        return {}
    try:
        mod = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out = {}
    for node in mod.body:
        target = (node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1
                  else node.target if isinstance(node, ast.AnnAssign) else None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            out[target.id] = value.value
    return out


def _walk(root: Path, paths: list[str]) -> list[Path]:
    """Files under the build paths of a tree on disk, in a stable order (no caches or build output)."""
    files = []
    for rel in paths:
        p = root / rel
        if p.is_file():
            files.append(p)
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
            files += [Path(dirpath, f) for f in sorted(filenames) if not f.endswith((".pyc", ".pyo"))]
    return files


def _hash_files(root: Path, files: list[Path], copy_to: Path | None = None) -> str:
    h = hashlib.sha256()
    for f in files:
        rel = f.relative_to(root).as_posix()
        data = f.read_bytes()
        h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
        if copy_to is not None:
            dest = copy_to / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
            shutil.copymode(f, dest)
    return h.hexdigest()


# ---------------------------------------------------------------- resolving

def resolve_source(package: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A source spec resolved: its identity (SHA or content hash), the version it declares, and
    for a tree the paths a build needs. SourceError (one line) when it cannot be."""
    kind = spec.get("kind")
    if spec.get("resolved"):
        return dict(spec)
    if kind == "wheel":
        return _resolve_wheel(package, spec)
    if kind == "path":
        return _resolve_path(package, spec)
    if kind == "git":
        return _resolve_git(package, spec)
    raise SourceError(f"{package}: unknown source kind {kind!r}; one of {', '.join(KINDS)}")


def _resolve_wheel(package: str, spec: dict[str, Any]) -> dict[str, Any]:
    path = Path(spec["location"])
    if not path.is_file():
        raise SourceError(f"{path}: no such wheel file")
    try:
        name, version, _build, _tags = parse_wheel_filename(path.name)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        raise SourceError(f"{path}: not a wheel file name ({exc})") from None
    if canonicalize_name(name) != package:
        raise SourceError(f"{path}: a wheel of {name}, not of {package}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return {**spec, "resolved": True, "content_hash": digest, "version": str(version), "pin": str(version)}


def _resolve_path(package: str, spec: dict[str, Any]) -> dict[str, Any]:
    root = Path(spec["location"], spec.get("subdir", ""))
    if not root.is_dir():
        raise SourceError(f"{root}: no such folder")
    tree = _Tree(root)
    try:
        paths = build_paths(tree, package)
    except SourceError as exc:
        raise SourceError(f"{root}: {exc}") from None
    digest = _hash_files(root, _walk(root, paths))
    out = {**spec, "resolved": True, "content_hash": digest, "paths": paths, **declared_version(tree, package)}
    head = _git(root, "rev-parse", "HEAD", check=False)
    if head.returncode == 0:  # a checkout: name its commit, and whether the build paths differ from it
        out["sha"] = head.stdout.strip()
        status = _git(root, "status", "--porcelain", "--", *paths, check=False)
        out["dirty"] = bool(status.stdout.strip()) if status.returncode == 0 else True
    if "sha" in out:
        out.update(commit_facts(root, out["sha"], package, out.get("version")))
        dirty = f".dirty.{digest[:8]}" if out.get("dirty") else ""
        out["pin"] = commit_version(out, dirty)
    else:
        out["pin"] = f"{out.get('version', '0')}+h{digest[:12]}"
    return out


def _resolve_git(package: str, spec: dict[str, Any]) -> dict[str, Any]:
    repo = local_repo(spec["location"], spec.get("ref"))
    sha = resolve_ref(repo, spec.get("ref") or "HEAD", spec["location"])
    tree = _Tree(Path(spec["location"]), repo, sha, spec.get("subdir", ""))
    try:
        paths = build_paths(tree, package)
    except SourceError as exc:
        raise SourceError(f"{spec['location']}@{sha[:12]}{'/' + spec['subdir'] if spec.get('subdir') else ''}: "
                          f"{exc}") from None
    out = {**spec, "resolved": True, "sha": sha, "dirty": False, "paths": paths, **declared_version(tree, package)}
    out.update(commit_facts(repo, sha, package, out.get("version")))
    out["pin"] = commit_version(out)
    return out


def commit_facts(repo: str | Path, sha: str, package: str, declared: str | None) -> dict[str, Any]:
    """When the commit was made (committer date, UTC) and whether it is the release it declares
    (tagged vX, PKG-vX or X): what its version is made from (commit_version)."""
    out: dict[str, Any] = {}
    shown = _git(repo, "show", "-s", "--format=%ct", sha, check=False)
    if shown.returncode == 0 and shown.stdout.strip().isdigit():
        import datetime as _dt

        when = _dt.datetime.fromtimestamp(int(shown.stdout.strip()), _dt.timezone.utc)
        out["commit_date"] = when.isoformat(timespec="seconds").replace("+00:00", "Z")
    tags = _git(repo, "tag", "--points-at", sha, check=False)
    if declared and tags.returncode == 0:
        names = set(tags.stdout.split())
        out["release_tag"] = next((t for t in (f"{package}-v{declared}", f"v{declared}", declared) if t in names), None)
    return out


def commit_version(src: dict[str, Any], dirty: str = "") -> str:
    """A version for a build from a commit that sorts with the releases by the commit: the release
    itself at its tag (`0.5.3+g<sha>`), else a development release of the version the tree declares,
    dated by the commit (`0.5.4.dev20250409+g75e4279e32`: after 0.5.3, before 0.5.4 and 0.6.0), as
    jax's own build names a git checkout. The SHA is in the local label and in the source record."""
    declared, sha = src.get("version"), src["sha"]
    if not declared:
        return f"0+g{sha[:10]}{dirty}"
    if src.get("release_tag"):  # the release's own commit (edits on top of it show in the label)
        return f"{declared}+g{sha[:10]}{dirty}"
    base = Version(declared).base_version
    date = (src.get("commit_date") or "")[:10].replace("-", "")
    return f"{base}.dev{date}+g{sha[:10]}{dirty}" if date else f"{declared}+g{sha[:10]}{dirty}"


def build_env_for(package: str, src: dict[str, Any]) -> dict[str, str]:
    """Variables that make a package's own build name the version the harness gave its commit.

    jax's build (setup.py, jax/version.py) appends WHEEL_VERSION_SUFFIX to the declared version and
    records JAX_GIT_HASH; without them a `git archive` export (no .git) builds `X.devTODAY`, which
    sorts by the day it was built, not by the commit. jax releases before WHEEL_VERSION_SUFFIX (0.4.x)
    ignore it: their builds keep today's date (the pin and the report still name the commit)."""
    if package != "jax" or not src.get("sha") or not src.get("version"):
        return {}
    pin = str(src.get("pin") or "")
    base = Version(src["version"]).base_version if not src.get("release_tag") else src["version"]
    if not pin.startswith(base):
        return {}
    return {"WHEEL_VERSION_SUFFIX": pin[len(base):], "JAX_GIT_HASH": src["sha"]}


def describe(src: dict[str, Any]) -> str:
    """One line naming a resolved source: where, which commit or content, dirty or not."""
    where = redact(src["location"]) + (f" (subdir {src['subdir']})" if src.get("subdir") else "")
    if src["kind"] == "git":
        return f"{where} at {src['sha']}" + (f" ({src['ref']})" if src.get("ref") not in (None, src["sha"]) else "")
    if src["kind"] == "path" and src.get("sha"):
        return f"{where}, commit {src['sha']}" + (f", dirty (content {src['content_hash'][:12]})" if src.get("dirty") else ", clean")
    return f"{where}, content sha256 {src['content_hash'][:12]}"


# ---------------------------------------------------------------- pairing

def pair_jaxlib(src: dict[str, Any], versions: list[Version]) -> tuple[str, str]:
    """(jaxlib version, why) for a jax tree: the newest released jaxlib in
    [_minimum_jaxlib_version, _version] of the tree. SourceError when none is in range."""
    low, high = src.get("minimum_jaxlib"), src.get("version")
    if not low or not high:
        raise SourceError(f"jax tree {describe(src)}: jax/version.py declares no _minimum_jaxlib_version/_version; "
                          "pass --pair jaxlib==X")
    lo, hi = Version(low), Version(high)
    fit = [v for v in versions if lo <= v <= hi]
    if not fit:
        raise SourceError(f"no released jaxlib in [{lo}, {hi}] (jax/version.py of {describe(src)}); pass --pair jaxlib==X")
    return str(fit[-1]), (f"jaxlib {fit[-1]}: the newest jaxlib release in [{lo}, {hi}] "
                          f"(_minimum_jaxlib_version, _version of jax/version.py in the tree)")


def resolve_cell(cell: Cell, pair: dict[str, str] | None = None,
                 jaxlib_versions: Callable[[], list[Version]] | None = None) -> Cell:
    """The cell with every source resolved (pins get the tree's version with a +g<sha> / +h<hash>
    label) and a sourced jax paired with a jaxlib. SourceError when a source cannot be resolved."""
    if not cell.sources:
        return cell
    pins = dict(cell.pins)
    sources: dict[str, dict[str, Any]] = {}
    for pkg, spec in cell.sources.items():
        src = resolve_source(pkg, spec)
        pins[pkg] = src["pin"]
        sources[pkg] = src
    for partner, ver in (pair or {}).items():
        partners = {"jaxlib" for p in sources if canonicalize_name(p) == "jax"}
        partners |= {"torch" for p in sources if canonicalize_name(p) == "torch-xla"}
        if partner not in {canonicalize_name(p) for p in cell.pins} | partners:
            raise SourceError(f"--pair {partner}=={ver}: cell {cell.name} has no {partner} and no source it is the "
                              "binary partner of; --pair names the partner of a source (jaxlib for a jax source)")
        pins[partner] = ver
        if "jax" in sources and partner == "jaxlib":
            sources["jax"]["pairing"] = f"jaxlib {ver}: given with --pair"
    jax = sources.get("jax")
    if jax is not None and "jaxlib" not in pins:
        if jax["kind"] == "wheel":  # a released-looking wheel: the same jaxlib, as for an index pin
            pins["jaxlib"] = Version(jax["version"]).base_version
            jax["pairing"] = f"jaxlib {pins['jaxlib']}: the wheel's own version"
        else:
            lister = jaxlib_versions or _released_jaxlibs(cell)
            pins["jaxlib"], jax["pairing"] = pair_jaxlib(jax, lister())
    return replace(cell, pins=pins, sources=sources)


def _released_jaxlibs(cell: Cell) -> Callable[[], list[Version]]:
    def listing() -> list[Version]:
        from harness.cells.cell import PYTHON
        from harness.cells.releases import list_versions

        return list_versions("jaxlib", cell.index_url, cell.find_links, python=PYTHON)
    return listing


def apply_with(cells: list[Cell], items: list[str], pair: dict[str, str] | None = None) -> list[Cell]:
    """Swap the --with sources into every cell, then resolve (and pair) each cell's sources."""
    specs = [spec_from_with(item) for item in items]
    names = [canonicalize_name(pkg) for pkg, _spec in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # which one would win is no choice to leave to the order of the options
        raise SourceError(f"--with names {', '.join(twice)} more than once (command line and SEAMS_WITH together); "
                          "give each package one source")
    out = []
    for cell in cells:
        for pkg, spec in specs:
            cell = swap_in(cell, pkg, spec)
        if pair and not cell.sources:
            raise SourceError("--pair only applies to a cell with a source (--with PKG=PATH or a source pin)")
        out.append(resolve_cell(cell, pair))
    return out


# ---------------------------------------------------------------- building

# PEP 517's default for a tree with a setup.py and no [build-system] table.
_LEGACY_REQUIRES = ["setuptools>=40.8.0", "wheel"]


def build_requires(tree: Path) -> list[str]:
    """The build requirements an exported tree declares ([build-system].requires). SourceError when
    its pyproject.toml does not parse: the tree does not build (one line, with the TOML error)."""
    pyproject = tree / "pyproject.toml"
    if not pyproject.is_file():
        return list(_LEGACY_REQUIRES)
    try:
        doc = tomllib.loads(pyproject.read_text(encoding="utf-8", errors="replace"))
    except tomllib.TOMLDecodeError as exc:
        raise SourceError(f"pyproject.toml does not parse: {exc}") from None
    requires = doc.get("build-system", {}).get("requires")
    if requires is None:
        return list(_LEGACY_REQUIRES)
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise SourceError("pyproject.toml: [build-system].requires is not a list of requirements")
    return sorted(requires)


# ---------------------------------------------------------------- materializing

def materialize(package: str, src: dict[str, Any], dest: Path) -> Path:
    """Put what uv installs for a resolved source under dest; returns the path to install.
    A tree edited since it was resolved raises SourceError (its content hash no longer matches)."""
    if src["kind"] == "wheel":
        path = Path(src["location"])
        if hashlib.sha256(path.read_bytes()).hexdigest() != src["content_hash"]:
            raise SourceError(f"{path}: the wheel changed since it was resolved; run again")
        return path
    ident = src.get("sha", "")[:12] if src["kind"] == "git" else src["content_hash"][:12]
    # The folder's name carries the identity: uv caches builds of a local folder by its path.
    out = dest / f"{import_name(package)}-{ident}"
    out.mkdir(parents=True)
    if src["kind"] == "path":
        root = Path(src["location"], src.get("subdir", ""))
        if _hash_files(root, _walk(root, src["paths"]), copy_to=out) != src["content_hash"]:
            raise SourceError(f"{root}: the tree changed while the env was being built; run again")
        return out
    repo = local_repo(src["location"], src["sha"])
    treeish = f"{src['sha']}:{src['subdir']}" if src.get("subdir") else src["sha"]
    env = build_env(dict(os.environ))  # startup_env.BUILD_ALLOWED: no GIT_DIR, GIT_CONFIG_*, ...
    proc = subprocess.Popen(["git", "-C", str(repo), "archive", "--format=tar", treeish, "--", *src["paths"]],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, stdin=subprocess.DEVNULL)
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            tar.extractall(out, filter="data")
    except tarfile.TarError as exc:
        proc.kill()
        raise SourceError(f"git archive of {describe(src)} failed: {exc}") from None
    finally:
        err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
        proc.wait()
    if proc.returncode != 0:
        raise SourceError(f"git archive of {describe(src)} failed: {err.strip().splitlines()[-1:] or proc.returncode}")
    return out
