"""Build a cell's virtualenv with uv, cached by the hash of its pins, and verify what got installed.

Envs live in $SEAMS_ENVS_DIR (default ~/.cache/xla-seams/envs) as NAME-HASH12/. A build happens in
a temporary folder under a file lock and is renamed into place only after the installed versions
were checked against the pins, so a half-built or wrong env is never used, and two processes
asking for the same env build it once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from filelock import FileLock

from harness.cell import IMPORT_NAMES, PYTHON, Cell

MARKER = "xla-seams-env.json"

# Runs inside the cell's interpreter: import each pinned package and report its own version.
# The pins arrive as argv JSON, never spliced into code or a shell string.
_VERIFY = r"""
import importlib, json, sys
from importlib import metadata
pins = json.loads(sys.argv[1]); names = json.loads(sys.argv[2]); out = {}
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
        except BaseException as e:
            lines = (str(e) or type(e).__name__).strip().splitlines()
            rec["error"] = "import %s failed: %s: %s" % (mod, type(e).__name__, lines[-1] if lines else "")
    out[dist] = rec
print(json.dumps(out))
"""


class EnvError(Exception):
    """The cell's env could not be built or does not hold the pinned versions (one-line reason)."""

    def __init__(self, reason: str, log_tail: str = "") -> None:
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


def envs_root() -> Path:
    """Where cell envs are cached (SEAMS_ENVS_DIR overrides)."""
    root = os.environ.get("SEAMS_ENVS_DIR") or Path.home() / ".cache" / "xla-seams" / "envs"
    return Path(root)


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
    for ln in lines:
        if ln.lower().startswith(("cause:", "caused by:")):
            return ln.split(":", 1)[1].strip()[:400]
    for ln in lines:
        if ln.lower().startswith(("error:", "× ")):
            return ln.lstrip("× ").strip()[:400]
    return (lines[-1] if lines else "uv failed without output")[:400]


def verify(python: Path, cell: Cell) -> dict[str, str]:
    """Import each pinned package in the env and check its version; EnvError on any mismatch."""
    from packaging.version import Version

    env = {**os.environ, **cell.run_env()}
    proc = subprocess.run(
        [str(python), "-c", _VERIFY, json.dumps(cell.pins), json.dumps(IMPORT_NAMES)],
        capture_output=True, text=True, env=env, timeout=600,
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise EnvError(f"version check crashed: {tail[0]}", proc.stderr[-4000:])
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    versions: dict[str, str] = {}
    for dist, rec in report.items():
        if "error" in rec:
            raise EnvError(f"{dist}=={rec['pinned']}: {rec['error']}")
        for key in ("dist", "reported"):
            got = rec.get(key)
            if got is not None and Version(got).public != Version(rec["pinned"]).public:
                raise EnvError(f"{dist}: pinned {rec['pinned']} but {'installed' if key == 'dist' else 'import reports'} {got}")
        versions[dist] = rec["dist"]
    return versions


def ensure_env(cell: Cell, log: Callable[[str], None] = lambda _m: None) -> Env:
    """Return the cell's env, building and verifying it first if it is not cached."""
    if cell.unresolved:  # a floating pin (latest/nightly) that did not resolve: harness.floating
        raise EnvError(cell.unresolved)
    root = envs_root()
    root.mkdir(parents=True, exist_ok=True)
    final = env_dir(cell)
    marker = final / MARKER
    start = time.monotonic()
    with FileLock(str(root / f"{final.name}.lock")):
        if marker.exists():
            data = json.loads(marker.read_text())
            return Env(final, final / "bin" / "python", data["versions"], True, time.monotonic() - start)
        if final.exists():  # a build that died before its marker: never trust it
            shutil.rmtree(final, ignore_errors=True)
        tmp = root / f".tmp-{final.name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            log(f"building env for {cell.name} ({len(cell.requirements())} requirements)")
            _uv_install(cell, tmp)
            python = tmp / "bin" / "python"
            log(f"verifying versions in {cell.name}")
            versions = verify(python, cell)
            (tmp / MARKER).write_text(json.dumps({"cell": cell.describe(), "versions": versions,
                                                  "requirements": cell.requirements()}, indent=1))
            tmp.rename(final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return Env(final, final / "bin" / "python", versions, False, time.monotonic() - start)


def _uv_install(cell: Cell, target: Path) -> None:
    uv = uv_executable()
    run_env = {**os.environ, "VIRTUAL_ENV": str(target)}
    run_env.pop("PYTHONPATH", None)
    _uv(cell, [uv, "venv", "--quiet", "--relocatable", "--python", PYTHON, str(target)], run_env)
    install = [uv, "pip", "install", "--quiet", "--python", str(target / "bin" / "python")]
    if cell.index_url:
        install += ["--index-url", cell.index_url]
    for url in cell.extra_index_urls:  # a `nightly` pin's index (harness.floating)
        install += ["--extra-index-url", url]
    for link in cell.find_links:
        install += ["--find-links", link]
    reqs = ["--", *cell.requirements()]
    # Warm cache first: resolving offline from uv's cache skips the index round trips (0.2 s vs 0.9 s
    # for a jax cell); anything not cached falls through to a normal online install.
    if not _uv(cell, install + ["--offline"] + reqs, run_env, check=False):
        _uv(cell, install + reqs, run_env)


def _uv(cell: Cell, argv: list[str], env: dict[str, str], check: bool = True) -> bool:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=3600)
    except subprocess.TimeoutExpired:
        raise EnvError(f"uv timed out after 3600 s installing {cell.name}") from None
    if proc.returncode != 0 and check:
        raise EnvError(f"uv: {_one_line(proc.stderr or proc.stdout)}", (proc.stderr or "")[-4000:])
    return proc.returncode == 0
