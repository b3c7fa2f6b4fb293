"""Probe one version: build its cell (the same path as `harness run`), run one test, judge it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from packaging.utils import canonicalize_name

from harness.bisect.search import BAD, GOOD, SKIP
from harness.build.releases import paired_pins
from harness.build.cell import Cell
from harness.run.cellrun import run_cell
from harness.incell.compat import API_ABSENT, NOT_IN_CELL
from harness.build.envs import EnvError, ensure_env
from harness.errors import UserError
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
    return Path(os.environ.get("SEAMS_BISECT_CACHE") or Path.home() / ".cache" / "xla-seams" / "bisect")


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


class Prober:
    """Runs probes for one bisection, caching answers by test id, cell key and mode."""

    def __init__(self, base: Cell, package: str, test_id: str | None, regress: str, held: dict[str, str],
                 out_dir: Path, script: Sequence[str] | None = None,
                 log: Callable[[str], None] = lambda _m: None) -> None:
        self.base, self.package, self.test_id, self.regress = base, package, test_id, regress
        self.held, self.out_dir, self.script, self.log = held, out_dir, list(script or []), log
        self.answers: dict[str, Answer] = {}
        self.runs = 0

    def cell_for(self, version: str) -> Cell:
        return probe_cell(self.base, self.package, version, self.held)

    def _key(self, cell: Cell) -> str:
        blob = json.dumps([self.test_id, cell.key(), self.regress, self.script, cell.device])
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    def __call__(self, version: Any) -> str:
        return self.probe(str(version)).answer

    def probe(self, version: str) -> Answer:
        if version in self.answers:
            return self.answers[version]
        cell = self.cell_for(version)
        cache = _cache_dir() / f"{self._key(cell)}.json"
        if cache.exists():
            ans = Answer(**json.loads(cache.read_text()))
            ans.cached = True
        else:
            self.runs += 1
            self.log(f"probing {self.package} {version} ...")
            ans = self._run_script(cell, version) if self.script else self._run_test(cell, version)
            if not ans.raw == "env-error" or "timed out" not in ans.reason:
                cache.parent.mkdir(parents=True, exist_ok=True)
                cache.write_text(json.dumps({k: v for k, v in asdict(ans).items() if k != "cached"}))
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
        absent = case.raw == "skip" and (case.message or "").startswith((API_ABSENT, NOT_IN_CELL))
        reason = (case.message or "").splitlines()[0] if case.raw == "skip" and case.message else ""
        return Answer(version, classify(case.raw, case.message, self.regress), case.raw, reason=reason,
                      message=case.message, observations=case.observations, api_absent=absent)

    def _run_script(self, cell: Cell, version: str) -> Answer:
        try:
            env = ensure_env(cell)
        except EnvError as exc:
            return Answer(version, SKIP, "env-error", reason=exc.reason)
        child = {**os.environ, **cell.run_env(), "SEAMS_PYTHON": str(env.python),
                 "PATH": f"{env.path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "VIRTUAL_ENV": str(env.path)}
        with tempfile.TemporaryFile() as out:
            rc = subprocess.run(self.script, env=child, stdout=out, stderr=subprocess.STDOUT).returncode
            out.seek(0)
            tail = out.read()[-2000:].decode("utf-8", "replace")
        if rc == 0:
            return Answer(version, GOOD, f"exit {rc}", message=tail)
        if rc == 125:
            return Answer(version, SKIP, f"exit {rc}", reason="script says untestable (125)", message=tail)
        if 1 <= rc <= 127:
            return Answer(version, BAD, f"exit {rc}", message=tail)
        raise UserError(f"--script exited {rc} on {self.package} {version}: outside git bisect's 0-127 range; stopping")
