"""Build a cell's virtualenv with uv, cached by the hash of its pins, and verify what got installed.

Envs live in $SEAMS_ENVS_DIR (default ~/.cache/xla-seams/envs) as NAME-HASH12/. A build happens in
a temporary folder under a file lock and is renamed into place only after the installed versions
were checked against the pins, so a half-built or wrong env is never used, and two processes
asking for the same env build it once.

A cached env is checked on every reuse, cheaply (a stat of each file in its manifest: the compiled
libraries, every package `__init__.py` and the pinned dists' metadata, ~15 ms for torch_xla): a
corrupt marker, a missing or changed file, or a vanished interpreter makes it rebuild once; if the
rebuild fails too, the cell is an env-error saying why. The rebuild bypasses uv's cache
(`--no-cache`): uv hard-links envs to its cache, so a file damaged in place in an env is usually
damaged in the cache too. An env built before manifests existed is adopted: its files are recorded
as they are on first reuse. Half-built `.tmp-*` folders of a killed build
are removed. Every uv and version-check process dies with the harness (harness.lifeline).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from filelock import FileLock

from harness import lifeline
from harness.redact import redact
from harness.cells.cell import IMPORT_NAMES, PYTHON, Cell
from harness.cells.devices import runtime_packages
from harness.cells.startup_env import build_env, drop_startup_vars

MARKER = "xla-seams-env.json"
MANIFEST_VERSION = 1

# Runs inside the cell's interpreter: import each pinned package and report its own version.
# The pins arrive as argv JSON, never spliced into code or a shell string.
_VERIFY = r"""
import importlib, json, sys
from importlib import metadata
pins = json.loads(sys.argv[1]); names = json.loads(sys.argv[2]); out = {}
sourced = json.loads(sys.argv[3]) if len(sys.argv) > 3 else []
for dist, ver in pins.items():
    mod = names.get(dist)
    rec = {"pinned": ver}
    try:
        rec["dist"] = metadata.version(dist)
    except Exception as e:
        rec["error"] = "not installed: " + str(e)
        out[dist] = rec
        continue
    if mod:
        try:
            m = importlib.import_module(mod)
            rec["reported"] = str(getattr(m, "__version__", rec["dist"]))
            rec["file"] = str(getattr(m, "__file__", "") or "")
        except BaseException as e:
            lines = (str(e) or type(e).__name__).strip().splitlines()
            rec["error"] = "import %s failed: %s: %s" % (mod, type(e).__name__, lines[-1] if lines else "")
    if dist in sourced:  # PEP 610: where the installer took the package from
        try:
            rec["direct_url"] = json.loads(metadata.distribution(dist).read_text("direct_url.json") or "{}").get("url")
        except Exception as e:
            rec["direct_url"] = None
    out[dist] = rec
print(json.dumps(out))
"""


class EnvError(Exception):
    """The cell's env could not be built or does not hold the pinned versions (one-line reason)."""

    def __init__(self, reason: str, log_tail: str = "") -> None:
        reason, log_tail = redact(reason), redact(log_tail)  # uv may quote an index URL with its token
        super().__init__(reason)
        self.reason = reason
        self.log_tail = log_tail


@dataclass(frozen=True)
class Env:
    """A ready cell env: its folder, interpreter, verified versions, and whether it was reused."""

    path: Path
    python: Path
    versions: dict[str, str]
    reused: bool
    build_s: float


def given_env(cell: Cell, python: Path) -> Env:
    """An interpreter the harness did not build (`harness run --python`: a machine with no package index,
    an accelerator image): checked as a built env is (every pin at its version, the device's runtime
    installed and importable) and never changed; an EnvError where it does not hold the cell."""
    versions = verify(python, cell)
    return Env(python.parent.parent, python, versions, True, 0.0)


def envs_root() -> Path:
    """Where cell envs are cached (SEAMS_ENVS_DIR overrides)."""
    from harness.safeio import folder_from_env

    return folder_from_env("SEAMS_ENVS_DIR", Path.home() / ".cache" / "xla-seams" / "envs")


def uv_executable() -> str:
    """The uv binary: the `uv` Python package's, else one on PATH."""
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        exe = shutil.which("uv")
        if exe:
            return exe
    raise EnvError("uv is not installed: pip install uv (the harness builds cell envs with it)")


def env_dir(cell: Cell) -> Path:
    """The folder a cell's env lives in (name for humans, hash for identity)."""
    return envs_root() / f"{cell.name}-{cell.key()[:12]}"


def _one_line(text: str) -> str:
    """The most telling line of a uv error: its 'cause:' (why) if any, else the first error line."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    causes = [ln.split(":", 1)[1].strip() for ln in lines if ln.lower().startswith(("cause:", "caused by:"))]
    if lines and lines[0].lower().startswith("error: failed to build") and causes:
        # A source that does not build: what failed, then the innermost cause (the file and line).
        # The exported folder's temporary path means nothing to a reader: name the package.
        what = re.sub(r"`([\w.-]+) @ file://\S+`", r"`\1`", lines[0].removeprefix("error: "))
        return f"{what}: {causes[-1]}"[:400]
    for ln in lines:
        if ln.lower().startswith(("cause:", "caused by:")):
            return ln.split(":", 1)[1].strip()[:400]
    for ln in lines:
        if ln.lower().startswith(("error:", "× ")):
            return ln.lstrip("× ").strip()[:400]
    return (lines[-1] if lines else "uv failed without output")[:400]


def verify(python: Path, cell: Cell, installed_from: dict[str, Path] | None = None) -> dict[str, str]:
    """Import each pinned package in the env and check its version; EnvError on any mismatch.

    A package in cell.import_may_fail that is installed at its pin but fails to import passes: its
    version is the installed metadata's, and the failing import is left to the tests.

    A package from a source (installed_from: package -> the folder or wheel uv installed) must also
    have been installed from exactly there (its PEP 610 direct_url), import from the env itself, and
    carry the version its tree declares (the release part: a tree builds a .dev version of it)."""
    from packaging.version import Version

    installed_from = installed_from or {}
    # What the env holds, not what the caller's PYTHONPATH, PYTHONHOME or LD_PRELOAD would bring in.
    env = {**drop_startup_vars(dict(os.environ))[0], **cell.run_env()}
    # The device's runtime (libtpu, jax's CUDA plugin) is checked too: installed and importable, any
    # version (the recipe's extra chose it). Importing it starts no device, so this holds anywhere.
    runtime = runtime_packages(cell.device, list(cell.pins), cell.cuda)
    wanted = {**{d: None for d in runtime}, **cell.pins}
    proc = _run([str(python), "-c", _VERIFY, json.dumps(wanted), json.dumps({**IMPORT_NAMES, **runtime}),
                 json.dumps(sorted(installed_from))], env, 600, f"the version check of {cell.name}")
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise EnvError(f"version check crashed: {tail[0]}", proc.stderr[-4000:])
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    versions: dict[str, str] = {}
    for dist, rec in report.items():
        if rec.get("error", "").startswith("import ") and dist in cell.import_may_fail:
            # Installed at the pinned version (checked below from its metadata); that it does not
            # import is what the cell's tests report (Cell.import_may_fail).
            del rec["error"]
        if "error" in rec:
            what = f"{dist}=={rec['pinned']}" if rec["pinned"] is not None else f"{dist} ({cell.device} runtime)"
            raise EnvError(f"{what}: {rec['error']}")
        if dist in installed_from:
            _check_source(dist, rec, installed_from[dist], python, cell)
            versions[dist] = rec["dist"]
            continue
        for key in ("dist", "reported") if rec["pinned"] is not None else ():
            got = rec.get(key)
            if got is not None and Version(got).public != Version(rec["pinned"]).public:
                raise EnvError(f"{dist}: pinned {rec['pinned']} but {'installed' if key == 'dist' else 'import reports'} {got}")
        versions[dist] = rec["dist"]
    return versions


def _check_source(dist: str, rec: dict, source: Path, python: Path, cell: Cell) -> None:
    """The installed dist is the one built from the cell's source, and it imports from the env."""
    from packaging.version import InvalidVersion, Version

    want = source.resolve().as_uri()
    if (rec.get("direct_url") or "").rstrip("/") != want.rstrip("/"):
        raise EnvError(f"{dist}: installed from {rec.get('direct_url') or 'the index'}, not from its source {want}")
    file = rec.get("file") or ""
    if file and python.parent.parent.resolve() not in Path(file).resolve().parents:
        raise EnvError(f"{dist}: imports from {file}, outside the env: a folder on sys.path shadows it")
    declared = cell.sources.get(dist, {}).get("version")
    try:
        if declared and Version(rec["dist"]).release != Version(declared).release:
            raise EnvError(f"{dist}: the tree declares {declared} but the build installed {rec['dist']}")
    except InvalidVersion:
        raise EnvError(f"{dist}: the build installed an invalid version {rec['dist']!r}") from None


def ensure_env(cell: Cell, log: Callable[[str], None] = lambda _m: None) -> Env:
    """Return the cell's env, building and verifying it first if it is not cached or is damaged."""
    if cell.unresolved:  # a floating pin (latest/nightly) that did not resolve: harness.cells.floating
        raise EnvError(cell.unresolved)
    root = envs_root()
    root.mkdir(parents=True, exist_ok=True)
    final = env_dir(cell)
    start = time.monotonic()
    with FileLock(str(root / f"{final.name}.lock")):
        _remove_stale_tmps(root, final.name)
        damage, fresh = None, False
        if (final / MARKER).exists() or final.exists():
            try:
                versions = _reuse(final, cell)
                return Env(final, final / "bin" / "python", versions, True, time.monotonic() - start)
            except _Damaged as exc:
                damage, fresh = str(exc), exc.files
                log(f"cached env {final.name} is damaged ({damage}); rebuilding it")
                _discard(final)
        try:
            versions = _build(cell, root, final, log, fresh=fresh)
        except EnvError as exc:
            if damage:  # rebuilt once; say both what was wrong and why the rebuild failed
                raise EnvError(f"cached env was damaged ({damage}) and rebuilding it failed: {exc.reason}",
                               exc.log_tail) from None
            raise
    return Env(final, final / "bin" / "python", versions, False, time.monotonic() - start)


class _Damaged(Exception):
    """A cached env that must not be reused (one-line reason); `files`: its installed files are damaged."""

    def __init__(self, reason: str, files: bool = False) -> None:
        super().__init__(reason)
        self.files = files


def _reuse(final: Path, cell: Cell) -> dict[str, str]:
    """The versions of a cached env after its cheap health check; _Damaged if it fails."""
    marker = final / MARKER
    if not marker.exists():  # a build that died before its marker: never trust it
        raise _Damaged("no marker: its build never finished")
    try:
        data = json.loads(marker.read_text())
        versions = data["versions"]
        if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
            raise ValueError("versions is not a mapping of strings")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _Damaged(f"marker {MARKER} is corrupt: {type(exc).__name__}") from None
    python = final / "bin" / "python"
    if not python.exists():  # follows the symlink: the base interpreter may be gone
        raise _Damaged("its interpreter is missing")
    manifest = data.get("manifest")
    if not isinstance(manifest, dict) or data.get("manifest_version") != MANIFEST_VERSION:
        # Built before manifests existed, and trusted as a whole until now: record its files as they
        # are (a walk, ~1 s for torch) so damage from here on is seen. Re-verifying by importing
        # everything would cost up to a minute per torch_xla env on a busy machine.
        data.update(manifest=_manifest(final), manifest_version=MANIFEST_VERSION)
        _write_marker(final, data)
        return versions
    problem = _check_manifest(final, manifest)
    if problem:
        raise _Damaged(problem, files=True)
    return versions


def _site_packages(env: Path) -> list[Path]:
    return sorted(env.glob("lib/python*/site-packages"))


def _manifest(env: Path) -> dict[str, list[int]]:
    """Size and mtime of the files whose damage breaks an import: compiled libraries, package
    `__init__.py` files and dist metadata (stat-ing all ~20k files of a torch env costs 0.3 s)."""
    out: dict[str, list[int]] = {}
    for sp in _site_packages(env):
        for dirpath, dirnames, filenames in os.walk(sp):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in filenames:
                if ".so" in f or f == "__init__.py" or f == "METADATA":
                    p = Path(dirpath) / f
                    st = p.stat()
                    out[str(p.relative_to(env))] = [st.st_size, st.st_mtime_ns]
    return out


def _check_manifest(env: Path, manifest: dict) -> str | None:
    """The first file that is missing or changed since the build, as a reason; None if all match."""
    if not manifest:
        return "its manifest lists no files"
    for rel, want in manifest.items():
        try:
            st = (env / rel).stat()
        except OSError:
            return f"{rel} is missing"
        if not isinstance(want, list) or [st.st_size, st.st_mtime_ns] != want:
            return f"{rel} changed since the env was built"
    return None


def _write_marker(env: Path, data: dict) -> None:
    tmp = env / f".{MARKER}.{os.getpid()}"
    tmp.write_text(json.dumps(data))
    os.replace(tmp, env / MARKER)


def _discard(path: Path) -> None:
    """Move a damaged env aside, then delete it (a rename is atomic: no half-deleted env is seen)."""
    trash = path.with_name(f".tmp-{path.name}-trash{os.getpid()}")
    try:
        path.rename(trash)
    except OSError:
        trash = path
    shutil.rmtree(trash, ignore_errors=True)


def _remove_stale_tmps(root: Path, name: str) -> None:
    """Remove half-built folders of this env (we hold its lock: no live build owns them) and of
    any env whose builder process is gone."""
    for tmp in root.glob(".tmp-*"):
        owner, _, pid = tmp.name[len(".tmp-"):].rpartition("-")
        pid = pid.removeprefix("trash")
        if not pid.isdigit():
            continue
        if owner.removesuffix(".src") == name or not _alive(int(pid)):
            shutil.rmtree(tmp, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _materialize(cell: Cell, dest: Path, log: Callable[[str], None]) -> dict[str, Path]:
    """Export each source the cell takes (git archive, or a copy of the tree) into dest."""
    from harness.cells.sources import SourceError, build_env_for, describe, materialize

    out = {}
    for pkg, src in cell.sources.items():
        log(f"{pkg} from {describe(src)}" if src.get("resolved") else f"{pkg} from {src.get('location')}")
        if not src.get("resolved"):
            raise EnvError(f"{pkg}: its source was not resolved before the build (a harness bug)")
        try:
            out[pkg] = materialize(pkg, src, dest)
            if src["kind"] != "wheel":
                out[pkg] = _build_wheel(pkg, out[pkg], dest, log, build_env_for(pkg, src))
        except (SourceError, OSError) as exc:
            raise EnvError(f"{pkg}: {exc}") from None
    return out


def _build_wheel(pkg: str, tree: Path, dest: Path, log: Callable[[str], None],
                 version_env: dict[str, str] | None = None) -> Path:
    """Build a source tree's wheel in a cached build env holding its [build-system].requires.

    uv's default (a fresh isolated build env per build) cost 8 of the 13 s of installing a jax commit
    on a busy machine; a bisection builds one tree per probe with the same requirements."""
    from harness.cells.sources import SourceError, build_requires

    try:
        requires = build_requires(tree)
    except SourceError as exc:
        raise EnvError(f"Failed to build `{pkg}`: {exc}") from None
    benv = _build_env(requires, log)
    out = dest / f"{tree.name}-wheel"
    uv = uv_executable()
    # the commit's version (sources.build_env_for); nothing else of the caller's but the allow-list
    env = build_env(dict(os.environ), {"VIRTUAL_ENV": str(benv), **(version_env or {})})
    log(f"building {pkg} from {tree.name}")
    proc = _run([uv, "build", "--wheel", "--offline", "--no-build-isolation", "--python",
                 str(benv / "bin" / "python"), "--out-dir", str(out), str(tree)], env, 1800, f"building {pkg}")
    wheels = sorted(out.glob("*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        raise EnvError(f"Failed to build `{pkg}`: {_build_error(proc.stderr or proc.stdout)}", (proc.stderr or "")[-4000:])
    return wheels[0]


def _build_error(text: str) -> str:
    """The telling line of a failed build: the backend's own last error line (printed before uv's
    "error: Failed to build"), else uv's cause."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    end = next((i for i, ln in enumerate(lines) if ln.startswith("error: Failed to build")), len(lines))
    for ln in reversed(lines[:end]):
        if re.match(r"^(error:|[\w.]*(Error|Exception)\b)", ln):
            return ln.removeprefix("error: ")[:300]
    return _one_line("\n".join(lines[end:]) or text)


def _build_env(requires: list[str], log: Callable[[str], None]) -> Path:
    """A venv holding one set of build requirements, built once (under a lock) and reused."""
    root = envs_root()
    key = hashlib.sha256(json.dumps([PYTHON, requires]).encode()).hexdigest()[:12]
    final = root / f"build-{key}"
    with FileLock(str(root / f"build-{key}.lock")):
        if (final / MARKER).exists() and (final / "bin" / "python").exists():
            return final
        if final.exists():  # a build env without its marker never finished, or lost its interpreter
            _discard(final)
        tmp = root / f".tmp-build-{key}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        log(f"creating the build env for {', '.join(requires)}")
        try:
            uv = uv_executable()
            env = build_env(dict(os.environ), {"VIRTUAL_ENV": str(tmp)})
            if _run([uv, "venv", "--quiet", "--python", PYTHON, str(tmp)], env, 600, "creating a build env").returncode:
                raise EnvError("uv could not create a build env")
            install = [uv, "pip", "install", "--quiet", "--python", str(tmp / "bin" / "python"), "--", *requires]
            proc = _run(install[:4] + ["--offline"] + install[4:], env, 1800, "installing build requirements")
            if proc.returncode != 0:
                proc = _run(install, env, 1800, "installing build requirements")
            if proc.returncode != 0:
                raise EnvError(f"build requirements {', '.join(requires)}: uv: {_one_line(proc.stderr or proc.stdout)}")
            _write_marker(tmp, {"build_requires": requires})
            tmp.rename(final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final


def _build(cell: Cell, root: Path, final: Path, log: Callable[[str], None], fresh: bool = False) -> dict[str, str]:
    tmp = root / f".tmp-{final.name}-{os.getpid()}"
    # Sources are exported beside the env (same lock, same clean-up of a killed build's leftovers).
    src = root / f".tmp-{final.name}.src-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(src, ignore_errors=True)
    try:
        log(f"building env for {cell.name} ({len(cell.requirements())} requirements)")
        installed_from = _materialize(cell, src, log)
        _uv_install(cell, tmp, fresh, installed_from)
        python = tmp / "bin" / "python"
        log(f"verifying versions in {cell.name}")
        versions = verify(python, cell, installed_from)
        _write_marker(tmp, {"cell": cell.describe(), "versions": versions, "requirements": cell.requirements(),
                            "manifest_version": MANIFEST_VERSION, "manifest": _manifest(tmp)})
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(src, ignore_errors=True)
    return versions


def _uv_install(cell: Cell, target: Path, fresh: bool = False, installed_from: dict[str, Path] | None = None) -> None:
    uv = uv_executable()
    run_env = build_env(dict(os.environ), {"VIRTUAL_ENV": str(target)})  # startup_env.BUILD_ALLOWED
    _uv(cell, [uv, "venv", "--quiet", "--relocatable", "--python", PYTHON, str(target)], run_env)
    install = [uv, "pip", "install", "--quiet", "--python", str(target / "bin" / "python")]
    # --opt=VALUE: a matrix's value is never read as an option of its own
    if cell.index_url:
        install += [f"--index-url={cell.index_url}"]
    for url in cell.extra_index_urls:  # a `nightly` pin's index (harness.cells.floating)
        install += [f"--extra-index-url={url}"]
    for link in cell.find_links:
        install += [f"--find-links={link}"]
    reqs = ["--", *cell.requirements()]
    if installed_from:  # a source is installed from the folder or wheel it was exported to
        from harness.cells.cell import requirement

        named = {requirement(pkg, cell.sources[pkg]): f"{pkg} @ {path.resolve().as_uri()}"
                 for pkg, path in installed_from.items()}
        reqs = [named.get(r, r) for r in reqs]
    if fresh:  # after damage: fresh wheels, never what may be the damaged cache's copy
        _uv(cell, install + ["--no-cache"] + reqs, run_env)
        return
    # Warm cache first: resolving offline from uv's cache skips the index round trips (0.2 s vs 0.9 s
    # for a jax cell); anything not cached falls through to a normal online install.
    if not _uv(cell, install + ["--offline"] + reqs, run_env, check=False):
        _uv(cell, install + reqs, run_env)


def _uv(cell: Cell, argv: list[str], env: dict[str, str], check: bool = True) -> bool:
    proc = _run(argv, env, 3600, f"uv installing {cell.name}")
    if proc.returncode != 0 and check:
        raise EnvError(f"uv: {_one_line(proc.stderr or proc.stdout)}", (proc.stderr or "")[-4000:])
    return proc.returncode == 0


def _run(argv: list[str], env: dict[str, str], timeout_s: int, what: str) -> subprocess.CompletedProcess:
    """Run a helper process that dies with the harness however the harness ends (harness.lifeline)."""
    proc = subprocess.Popen(lifeline.wrap(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, stdin=subprocess.DEVNULL, start_new_session=True)
    lifeline.track(proc)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise EnvError(f"{what} timed out after {timeout_s} s") from None
    finally:
        lifeline.kill_group(proc)
        lifeline.untrack(proc)
    if proc.returncode == -9 or proc.returncode == 137:
        raise EnvError(f"{what} was killed (the harness is stopping, or out of memory)", err[-4000:])
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
