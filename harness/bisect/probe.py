"""Probe one version: build its cell (the same path as `harness run`), run one test, judge it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import tempfile
import uuid
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

from packaging.utils import canonicalize_name

from harness.bisect.search import BAD, GOOD, SKIP
from harness.cells.releases import paired_pins
from harness.cells.cell import Cell
from harness.cells.startup_env import caller_env
from harness.run.cellrun import run_cell
from harness.incell.compat import API_ABSENT, NOT_IN_CELL
from harness.cells.envs import EnvError, ensure_env
from harness import faults, lifeline
from harness.errors import UserError
from harness.paths import SUITES_DIR
from harness.safeio import atomic_write
from harness.judge.results import read_results


@dataclass
class Answer:
    """One probe's result: good/bad/skip, why, and what the test recorded."""

    version: str
    answer: str
    raw: str
    reason: str = ""
    message: str | None = None
    observations: dict[str, Any] = field(default_factory=dict)
    api_absent: bool = False
    cached: bool = False


def probe_cell(base: Cell, package: str, version: str, held: dict[str, str]) -> Cell:
    """The base cell with package at version (and its pair), plus the pins held fixed."""
    pins = {**paired_pins(package, version), **held}
    name = re.sub(r"[^A-Za-z0-9_.]", "_", f"bisect.{canonicalize_name(package)}{version}")
    return base.with_pins(f"{name}-{base.device}", pins)


def _cache_dir() -> Path:
    from harness.safeio import folder_from_env

    return folder_from_env("SEAMS_BISECT_CACHE", Path.home() / ".cache" / "xla-seams" / "bisect")


def classify(raw: str, message: str | None, regress: str) -> str:
    """good / bad / skip for a raw outcome under a --regress mode."""
    if raw in ("skip", "env-error", "incomplete"):
        return SKIP
    if regress == "fail":
        return GOOD if raw == "pass" else BAD
    if regress == "crash":
        return BAD if raw == "crash" else (SKIP if raw == "timeout" else GOOD)
    if regress == "pass":
        return BAD if raw == "pass" else (GOOD if raw in ("fail", "error") else SKIP)
    if regress.startswith("error-matches:"):
        if raw == "pass":
            return GOOD
        return BAD if re.search(regress.split(":", 1)[1], message or "") else GOOD
    raise UserError(f"--regress {regress!r}: use fail, crash, pass or error-matches REGEX")


# Signals that come from outside the code under test (the OOM killer, a user, the harness stopping).
_OUTSIDE_SIGNALS = {"SIGKILL", "SIGTERM", "SIGINT", "SIGHUP"}
# uv's words for "these pins cannot be installed together": a fact about the versions, worth keeping.
# A commit's tree that does not build, does not import with its paired binary, or cannot be paired at
# all is as much a fact about that commit (harness.bisect.commits): kept, not probed twice.
_RESOLVER_SAYS = re.compile(r"no solution found|unsatisfiable|depends on|requires-python|no matching distribution|"
                            r"not found in the package registry|no version of|pinned \S+ but|"
                            r"failed to build|import \S+ failed|cannot be probed", re.IGNORECASE)
# ... unless what failed was the network, the memory or the disk on the way.
_TRANSIENT_SAYS = re.compile(r"failed to fetch|failed to download|connect|network|timed out|dns|memoryerror|"
                             r"out of memory|killed|no space left", re.IGNORECASE)


def definite(ans: Answer) -> bool:
    """True for an answer worth remembering: what the code did (pass, fail, error, skip, a crash of its
    own) or what the resolver said; never a probe killed from outside, cut short, timed out, or an
    install that failed on the network or the disk."""
    if ans.raw in ("incomplete", "timeout"):
        return False
    if ans.raw == "env-error":
        return bool(_RESOLVER_SAYS.search(ans.reason or "")) and not _TRANSIENT_SAYS.search(ans.reason or "")
    return True


def _load_cached(path: Path) -> Answer | None:
    """A cached answer, or None if there is none or it cannot be read (then it is probed again)."""
    try:
        ans = Answer(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if not definite(ans):  # written by an older harness that kept transient answers
        return None
    ans.cached = True
    return ans


def _store(path: Path, ans: Answer) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({k: v for k, v in asdict(ans).items() if k != "cached"}, default=str))
    except OSError:
        pass  # a cache that cannot be written costs a probe next time, nothing else


@lru_cache(maxsize=1)
def _code_digest() -> str:
    """A hash of the code that decides an answer inside a cell: the suites and the in-cell harness."""
    h = hashlib.sha256()
    for root in (SUITES_DIR, Path(__file__).resolve().parent.parent / "incell", SUITES_DIR.parent / "conftest.py"):
        files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
        for f in files:
            try:
                h.update(str(f.relative_to(SUITES_DIR.parent)).encode() + b"\0" + f.read_bytes())
            except (OSError, ValueError):
                continue
    return h.hexdigest()[:16]


def _script_digest(script: Sequence[str] | None) -> str:
    """A hash of the files a --script names (its argv alone would not see an edited script)."""
    h = hashlib.sha256()
    for arg in script or []:
        p = Path(arg)
        try:
            if p.is_file() and p.stat().st_size < 1 << 20:
                h.update(p.read_bytes())
        except (OSError, ValueError):
            continue
    return h.hexdigest()[:16]


def script_file(script: Sequence[str] | None) -> Path | None:
    """The exported reproducer `--script FILE.py` names, or None for a command line."""
    if script and len(script) == 1 and script[0].endswith(".py") and Path(script[0]).is_file():
        return Path(script[0]).resolve()
    return None


def _error_line(output: str) -> str:
    """The last `SomeError: message` line of a script's output (else its last line), for the probe table."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", ln):
            return ln[:300]
    return lines[-1][:300] if lines else ""


_IMPORT_ERROR = re.compile(r"^(?:ModuleNotFoundError|ImportError): (.*)$", re.M)


def _package_import_error(output: str, package: str) -> str | None:
    """The last import error in a script's output if it is about the bisected package's own modules
    (jax, torch_xla, ...); an import of anything else failing is the script's finding, not an absence."""
    names = {canonicalize_name(package).replace("-", "_"), package.replace("-", "_")}
    errors = _IMPORT_ERROR.findall(output)
    if not errors:
        return None
    last = errors[-1]
    mods = re.findall(r"'([\w.]+)'", last)
    return last.strip() if any(m.split(".")[0] in names for m in mods) else None


class Prober:
    """Runs probes for one bisection, caching answers by test id, cell key and mode."""

    def __init__(self, base: Cell, package: str, test_id: str | None, regress: str, held: dict[str, str],
                 out_dir: Path, script: Sequence[str] | None = None,
                 log: Callable[[str], None] = lambda _m: None) -> None:
        self.base, self.package, self.test_id, self.regress = base, package, test_id, regress
        self.held, self.out_dir, self.script, self.log = held, out_dir, list(script or []), log
        # `--script FILE.py` (an exported standalone reproducer): run with the probe env's python,
        # isolated (-I) from a temporary folder, so nothing of this checkout is importable.
        self.script_file = script_file(self.script)
        self.answers: dict[str, Answer] = {}
        self.runs = 0

    def cell_for(self, version: str) -> Cell:
        return probe_cell(self.base, self.package, version, self.held)

    def _key(self, cell: Cell) -> str:
        """Everything the answer depends on: the test and the code that runs it (suites, the in-cell
        harness, the script's file), the env (pins, index, Python), the cell's variables, the mode."""
        blob = json.dumps([self.test_id, cell.key(), cell.run_env(), self.regress, self.script, cell.device,
                           _code_digest(), _script_digest(self.script)])
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    def __call__(self, version: Any) -> str:
        return self.probe(str(version)).answer

    def probe(self, version: str) -> Answer:
        if version in self.answers:
            return self.answers[version]
        cell = self.cell_for(version)
        cache = _cache_dir() / f"{self._key(cell)}.json"
        ans = _load_cached(cache)
        if ans is None:
            for attempt in range(2):  # a transient answer (killed, cut short, timed out) is tried once more
                self.runs += 1
                self.log(f"probing {self.package} {version} ..." + (" (again: the last probe was cut short)" if attempt else ""))
                ans = self._run_script(cell, version) if self.script else self._run_test(cell, version)
                if definite(ans):
                    _store(cache, ans)
                    break
        self.log(f"{self.package} {version}: {ans.answer} ({ans.raw}{': ' + ans.reason if ans.reason else ''})"
                 + (" [cached]" if ans.cached else ""))
        self.answers[version] = ans
        return ans

    def _run_test(self, cell: Cell, version: str) -> Answer:
        path = self.out_dir / f"{cell.name}.jsonl"
        run_cell(cell, path, [self.test_id])
        res = read_results(path)
        if res.status == "env-error":
            return Answer(version, SKIP, "env-error", reason=res.reason)
        case = res.cases.get(self.test_id)
        if case is None:
            return Answer(version, SKIP, "incomplete", reason=res.reason or "the test was not collected")
        if case.raw == "crash" and case.signal in _OUTSIDE_SIGNALS:  # the OOM killer or a user, not the code
            return Answer(version, SKIP, "incomplete", reason=f"the probe was killed ({case.signal})",
                          message=case.message)
        absent = case.raw == "skip" and (case.message or "").startswith((API_ABSENT, NOT_IN_CELL))
        reason = (case.message or "").splitlines()[0] if case.raw == "skip" and case.message else ""
        return Answer(version, classify(case.raw, case.message, self.regress), case.raw, reason=reason,
                      message=case.message, observations=case.observations, api_absent=absent)

    def _run_script(self, cell: Cell, version: str) -> Answer:
        try:
            env = ensure_env(cell)
        except EnvError as exc:
            return Answer(version, SKIP, "env-error", reason=exc.reason)
        # The caller's variables through the cells' allow-list only (XLA_FLAGS, JAX_*, LD_PRELOAD in the
        # caller's shell never reach a probe): the cell's own come from its matrix, as in run_cell.
        child = {**caller_env(dict(os.environ))[0], **cell.run_env(), "SEAMS_PYTHON": str(env.python),
                 "PATH": f"{env.path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(env.path)}
        token = uuid.uuid4().hex
        child.update(lifeline.owner_env(token))
        argv = self.script
        with tempfile.TemporaryFile() as out, tempfile.TemporaryDirectory() as cwd:
            if self.script_file is not None:  # an exported reproducer runs isolated, as a maintainer would
                argv = [str(env.python), "-I", str(self.script_file)]
                child = {k: v for k, v in child.items() if k != "PYTHONPATH"}
            faults.point("spawn", argv[0])
            lifeline.become_subreaper()  # a script's daemon, marked or not (env -i), comes back to us
            before = lifeline.descendants()
            cgroup = lifeline.Cgroup.create(token)  # where one is delegated: the script starts inside it
            if cgroup is not None:
                argv = lifeline.wrap(argv)
                child.update(cgroup.env())
            proc = subprocess.Popen(argv, env=child, cwd=cwd if self.script_file else None, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            lifeline.track(proc)
            try:
                rc = proc.wait()
            finally:
                lifeline.kill_group(proc)
                lifeline.untrack(proc)
                # what the script left running ends with its probe: its cgroup, marked, or adopted
                lifeline.sweep(token, adopted_besides=before, cgroup=cgroup)
                if cgroup is not None:
                    cgroup.remove()
            out.seek(0)
            tail = out.read()[-2000:].decode("utf-8", "replace")
        if rc < 0 and -rc in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            return Answer(version, SKIP, "incomplete", reason=f"the script was killed ({signal.Signals(-rc).name})",
                          message=tail)
        if rc == 0:
            return Answer(version, GOOD, f"exit {rc}", message=tail)
        if self.script_file is not None and rc != 125:
            absent = _package_import_error(tail, self.package)
            if absent:  # the API the script needs is not in this release: untestable, not the bug
                return Answer(version, SKIP, f"exit {rc}", reason=f"{API_ABSENT}: {absent}", message=tail,
                              api_absent=True)
        if rc == 125:
            return Answer(version, SKIP, f"exit {rc}", reason="script says untestable (125)", message=tail)
        if 1 <= rc <= 127:
            reason = _error_line(tail) if self.script_file is not None else ""  # the exception, not "Traceback"
            return Answer(version, BAD, f"exit {rc}", reason=reason, message=tail)
        raise UserError(f"--script exited {rc} on {self.package} {version}: outside git bisect's 0-127 range; stopping")
