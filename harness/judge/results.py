"""Read cell results files (JSON lines) into cases with raw outcomes, tolerating a killed run.

A file may end anywhere: a run killed mid-line leaves a partial last line, which is tolerated and
makes the cell `incomplete`. Anything else malformed (a non-JSON line elsewhere, an unknown schema
version, a record of the wrong shape) is one UserError naming file:line.

Never a false green: a cell is `complete` only if it closed with CellEnd and every case it
collected finished. Each case that never finished becomes an `incomplete` case (so every report,
junit file and diff counts it); what went wrong outside any test - a module that failed to import,
a hang while collecting or at interpreter exit, a crash between tests - becomes a case of its own
named after where it happened (the module's id, `(collection)`, `(exit)`), so it is counted too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import jsonschema

from harness.errors import UserError
from harness.judge.outcomes import RAW_OUTCOMES as _RAW
from harness.paths import SCHEMA_DIR
from harness.run.collecterror import collect_message
from harness.safeio import read_input

SCHEMA_PATH = SCHEMA_DIR / "results-v1.json"
SCHEMA_VERSION = 1
WHOLE_CELL = "(whole cell)"  # the case id of what concerns a cell as a whole (also the diff's key)
_MESSAGE_LINES = 6
# Records are flat but for observations; anything nested deeper is not ours (and would blow the stack).
MAX_DEPTH = 32
MAX_RESULTS_BYTES = 1_000_000_000  # 10k results are ~10 MB; past this a file is runaway or hostile, not a cell


@dataclass
class Case:
    """One test case in one cell: what happened (raw) and, once judged, what it means (verdict)."""

    nodeid: str
    raw: str
    message: str | None = None
    error_type: str | None = None
    duration: float = 0.0
    observations: dict[str, Any] = field(default_factory=dict)
    signal: str | None = None
    verdict: str = ""
    expectation: dict[str, Any] | None = None

    @property
    def family(self) -> str:
        """suites/<family>/... -> family."""
        parts = self.nodeid.split("/")
        return parts[1] if len(parts) > 2 and parts[0] == "suites" else parts[0].split("::")[0]


@dataclass
class CellResults:
    """Everything one cell's results file says."""

    path: Path
    cell: str
    device: str
    pins: dict[str, str]
    install_line: str = ""
    extras: list[str] = field(default_factory=list)  # the cell's other requirements (flax==0.12.0): part of its identity
    env: dict[str, str] = field(default_factory=dict)
    run_info: dict[str, Any] = field(default_factory=dict)
    status: str = "incomplete"  # complete | incomplete | env-error | skipped
    reason: str = ""
    cases: dict[str, Case] = field(default_factory=dict)
    stale: list[dict[str, Any]] = field(default_factory=list)
    started_at: str = ""
    run_id: str = ""  # the invocation (a tox command, one `harness run`) the cell ran in (harness.run.invocation)
    duration_s: float | None = None
    verdict: str = ""  # cell-level verdict for cells without cases (env-error, skipped, incomplete)
    expectation: dict[str, Any] | None = None
    source: str = ""  # the matrix file:line or `--sweep SPEC` that made the cell (for repro commands)
    floating: dict[str, str] = field(default_factory=dict)  # pins that were `latest`/`nightly` (harness.cells.floating)
    # package -> the source it was built from, as CellStart recorded it (harness.cells.sources):
    # kind, location, sha/ref/subdir or content hash; report.json carries these so a repro can
    # name the commit and show a local path as a placeholder
    sources: dict[str, dict] = field(default_factory=dict)
    collected_ids: list[str] | None = None  # what the first pytest of the cell collected
    selection: dict[str, Any] | None = None  # what narrowed that collection (-k, -m, paths), as the plugin saw it
    env_verified: dict[str, str] = field(default_factory=dict)  # --build-only: what the env check found installed
    build_env: dict[str, str] = field(default_factory=dict)  # the caller's variables uv and git saw (CellStart)

    def versions(self) -> dict[str, str]:
        """Installed versions as the run reported them, else as the env check found them (--build-only),
        else the pins (env-error cells)."""
        out = dict(self.run_info.get("versions") or self.env_verified or self.pins)
        # A package built from a commit is judged at the version the harness gave that commit
        # (harness.cells.sources.commit_version: it sorts with the releases by the commit), whatever
        # its own build called it (an older jax built from an export names itself by today's date).
        for pkg, src in self.sources.items():
            if src.get("sha") and src.get("pin") and out.get(pkg):
                out[pkg] = str(src["pin"])
        return out


@lru_cache(maxsize=1)
def _validators() -> dict[str, jsonschema.protocols.Validator]:
    schema = json.loads(SCHEMA_PATH.read_text())
    cls = jsonschema.validators.validator_for(schema)
    out = {}
    for branch in schema["oneOf"]:
        rtype = branch["properties"]["$report_type"]
        for name in rtype.get("enum", [rtype.get("const")]):
            out[name] = cls(branch)
    return out


def _check(path: Path, lineno: int, rec: Any, brackets: int | None = None) -> str:
    if not isinstance(rec, dict) or "$report_type" not in rec:
        raise UserError(f"{path}:{lineno}: not a results record (a JSON object with '$report_type')")
    kind = rec["$report_type"]
    if not isinstance(kind, str):
        raise UserError(f"{path}:{lineno}: '$report_type' must be a string, not {kind!r}")
    # A line with no more brackets than the limit cannot nest deeper (most records): skip the walk.
    if (brackets is None or brackets > MAX_DEPTH) and _too_deep(rec):
        raise UserError(f"{path}:{lineno}: nested deeper than {MAX_DEPTH} levels: not a results record")
    if kind == "TestStart":  # the most frequent record: checked by hand, cheaply
        if not isinstance(rec.get("nodeid"), str):
            raise UserError(f"{path}:{lineno}: TestStart without a nodeid")
        return kind
    if kind == "TestReport":
        if not isinstance(rec.get("nodeid"), str) or rec.get("when") not in ("setup", "call", "teardown"):
            raise UserError(f"{path}:{lineno}: TestReport without nodeid/when")
        _check_report(path, lineno, rec)
        return kind
    validator = _validators().get(kind)
    if validator is None:
        raise UserError(f"{path}:{lineno}: unknown record type {kind!r}")
    err = jsonschema.exceptions.best_match(validator.iter_errors(rec))
    if err is not None:
        where = "/".join(str(p) for p in err.absolute_path) or "record"
        raise UserError(f"{path}:{lineno}: bad {kind} record: {where}: {err.message}")
    return kind


def _too_deep(rec: Any) -> bool:
    """True if rec nests containers deeper than MAX_DEPTH (checked without recursion)."""
    stack = [(rec, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return False


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_report(path: Path, lineno: int, rec: dict[str, Any]) -> None:
    """The fields of a TestReport the reader uses: duration and the harness's `seams` property."""
    bad = f"{path}:{lineno}: bad TestReport record"
    if "duration" in rec and rec["duration"] is not None and not _number(rec["duration"]):
        raise UserError(f"{bad}: duration must be a number of seconds, not {rec['duration']!r}")
    props = rec.get("user_properties") or []
    if not isinstance(props, list):
        raise UserError(f"{bad}: user_properties must be a list of [name, value] pairs")
    for prop in props:
        if not isinstance(prop, list) or len(prop) != 2 or not isinstance(prop[0], str):
            raise UserError(f"{bad}: user_properties must be a list of [name, value] pairs, found {str(prop)[:60]}")
        if prop[0] != "seams":
            continue
        value = prop[1]
        if not isinstance(value, dict) or value.get("raw") not in _RAW:
            raise UserError(f"{bad}: the seams property needs a raw outcome, one of {', '.join(_RAW)}")
        for key in ("message", "error_type"):
            if value.get(key) is not None and not isinstance(value[key], str):
                raise UserError(f"{bad}: seams.{key} must be a string or null")
        if value.get("observations") is not None and not isinstance(value["observations"], dict):
            raise UserError(f"{bad}: seams.observations must be an object")


def _check_versions(path: Path, lineno: int, rec: dict[str, Any]) -> None:
    versions = rec.get("versions")
    if not all(isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in versions.items()):
        raise UserError(f"{path}:{lineno}: bad RunInfo record: versions must map package names to version strings or null")


def read_results(path: Path) -> CellResults:
    """Parse one cell's results file; raises UserError (one line, file:line) if it is malformed."""
    path = Path(path)
    data = read_input(path, MAX_RESULTS_BYTES, "results")  # a FIFO or device is one line, never a hang
    lines = data.split(b"\n")
    truncated = False
    if lines and lines[-1] == b"":
        lines.pop()
    res: CellResults | None = None
    running: set[str] = set()  # started, not finished (several at once under xdist)
    seen_end = False
    collected: int | None = None
    collected_ids: list[str] | None = None
    for i, raw_line in enumerate(lines, 1):
        try:
            rec = json.loads(raw_line)
        except RecursionError:
            raise UserError(f"{path}:{i}: nested too deeply to be a results record") from None
        except ValueError:
            if i == len(lines) and not data.endswith(b"\n"):
                truncated = True  # a run killed mid-write: keep what came before
                break
            raise UserError(f"{path}:{i}: not JSON (is this a results file? each line must be one JSON object)") from None
        kind = _check(path, i, rec, raw_line.count(b"{") + raw_line.count(b"["))
        if res is None:
            if kind != "CellStart":
                raise UserError(f"{path}:{i}: results must begin with a CellStart record, found {kind}")
            res = CellResults(path=path, cell=rec["cell"], device=rec["device"], pins=dict(rec["pins"]),
                              install_line=rec.get("install_line", ""), env=dict(rec.get("env") or {}),
                              extras=[str(e) for e in rec.get("extras") or []] if isinstance(rec.get("extras"), list) else [],
                              started_at=rec.get("started_at", ""), source=str(rec.get("source") or ""),
                              run_id=str(rec.get("run_id") or ""),
                              floating={str(k): str(v) for k, v in (rec.get("floating") or {}).items()}
                              if isinstance(rec.get("floating"), dict) else {},
                              sources=_sources(rec.get("sources")),
                              build_env={str(k): str(v) for k, v in (rec.get("build_env") or {}).items()}
                              if isinstance(rec.get("build_env"), dict) else {})
            continue
        if kind == "CellStart":
            raise UserError(f"{path}:{i}: a second CellStart: two runs were written into one file")
        if kind == "RunInfo" and not res.run_info:
            _check_versions(path, i, rec)
            res.run_info = rec
        elif kind == "Collected" and collected is None:
            # The first one lists the whole selection; a resumed pytest lists only what was left.
            collected = rec["count"]
            collected_ids = list(rec["nodeids"]) if isinstance(rec.get("nodeids"), list) else None
            res.collected_ids = collected_ids
            res.selection = rec["selection"] if isinstance(rec.get("selection"), dict) else None
        elif kind == "CollectReport" and rec.get("outcome") == "failed":
            nodeid = rec.get("nodeid") if isinstance(rec.get("nodeid"), str) and rec.get("nodeid") else "(collection)"
            res.cases.setdefault(nodeid, Case(nodeid, "error", message=collect_message(rec.get("longrepr")),
                                              error_type="CollectError"))
        elif kind == "TestStart":
            running.add(rec["nodeid"])
        elif kind == "TestReport":
            _take_report(res, rec)
            if rec["when"] == "teardown":
                running.discard(rec["nodeid"])
        elif kind in ("TestCrash", "TestTimeout"):
            nodeid = rec["nodeid"]
            raw = "crash" if kind == "TestCrash" else "timeout"
            how = rec.get("signal") or (f"exit {rec['returncode']}" if rec.get("returncode") is not None
                                        else "an unknown status")
            msg = (f"process died with {how}" if raw == "crash"
                   else f"killed after {rec['timeout_s']} s without finishing")
            if rec.get("worker"):  # under xdist: the worker died, the cell's run went on
                msg = f"xdist worker {rec['worker']}: {msg}"
            if isinstance(rec.get("stack"), str):  # the hung test's stack, innermost frame first
                msg += "\n" + "\n".join(rec["stack"].splitlines()[:_MESSAGE_LINES])
            if not nodeid:  # died outside any test: a case named after the phase, so it is counted
                phase = rec.get("phase") or "outside tests"
                nodeid, msg = f"({phase})", f"{msg} {_PHASES.get(phase, 'outside any test')}"
                if rec.get("running"):  # pytest's xdist controller, with several tests in flight
                    msg += (f" (pytest's xdist controller, while {len(rec['running'])} tests ran: "
                            f"{', '.join(rec['running'][:3])}; they ran again without xdist)")
            res.cases[nodeid] = Case(nodeid, raw, message=msg, signal=rec.get("signal"),
                                     error_type=rec.get("signal") if raw == "crash" else "Timeout")
            running.discard(nodeid)
        elif kind == "PhaseTimeout":
            phase = rec["phase"]
            nodeid = f"({phase})"
            msg = f"killed after {rec['timeout_s']} s hanging {_PHASES.get(phase, phase)}"
            if rec.get("worker"):  # xdist's own wait for a worker to exit ran out
                msg = f"xdist worker {rec['worker']}: {msg} (xdist's wait for the worker to exit)"
            res.cases[nodeid] = Case(nodeid, "timeout", error_type="PhaseTimeout", message=msg)
            running.clear()
        elif kind == "EnvError":
            res.status, res.reason = "env-error", rec["reason"]
        elif kind == "CellSkipped":
            res.status, res.reason = "skipped", rec["reason"]
        elif kind == "EnvVerified":  # --build-only: the env was built and checked, no test ran
            res.status, res.reason = "skipped", rec["reason"]
            res.env_verified = {str(k): str(v) for k, v in (rec.get("versions") or {}).items()}
        elif kind == "StaleExpectation":
            res.stale.append(rec)
        elif kind == "CellEnd":
            seen_end = True
            res.duration_s = rec.get("duration_s")
            if res.status not in ("env-error", "skipped"):
                res.status = rec.get("status", "complete")
                res.reason = rec.get("reason") or res.reason
    if res is None:
        raise UserError(f"{path}:1: empty results file (no CellStart record)")
    for nodeid in sorted(running - set(res.cases)):
        res.cases[nodeid] = Case(nodeid, "incomplete", message="the run ended while this test was running")
    if not seen_end:
        res.status = "incomplete"
        res.reason = ("the file ends mid-line: the run was killed" if truncated
                      else "no closing CellEnd record: the run was killed or is still going")
    if res.status in ("env-error", "skipped"):
        return res
    _check_complete(res, collected, collected_ids)
    return res


# Where a case-less record happened, as the message says it ("killed after 60 s hanging at ...").
_PHASES = {"collection": "while importing and collecting the tests", "exit": "at interpreter exit after the last test",
           "outside tests": "outside any test"}


def _check_complete(res: CellResults, collected: int | None, collected_ids: list[str] | None) -> None:
    """Zero tests or cases that never finished make the cell incomplete, each missing case counted."""
    finished = {n for n, c in res.cases.items()
                if c.raw != "incomplete" and not n.startswith("(") and c.error_type != "CollectError"}
    if collected_ids is not None:
        missing = [n for n in collected_ids if n not in finished]
    else:
        missing = [] if collected is None else [""] * max(0, collected - len(finished))
    tests = [n for n in res.cases if not n.startswith("(")]
    if missing:
        total = collected if collected is not None else len(missing)
        why = f"{len(missing)} of {total} collected cases did not finish"
        if not res.reason.startswith(why):  # the runner's CellEnd may say it already
            res.reason = f"{why}: {res.reason}" if res.status == "incomplete" and res.reason else why
        res.status = "incomplete"
        for n in missing:
            if n and n not in res.cases:
                res.cases[n] = Case(n, "incomplete", message=f"never ran: {why}")
    elif res.status == "complete" and not tests and not collected:
        res.status, res.reason = "incomplete", res.reason or "no tests collected (zero tests is never a pass)"
    if res.status == "incomplete" and res.cases and not any(c.raw == "incomplete" for c in res.cases.values()):
        # Cases alone would read as a finished cell: one more case carries the cell's state.
        res.cases[WHOLE_CELL] = Case(WHOLE_CELL, "incomplete", message=res.reason)


def _take_report(res: CellResults, rec: dict[str, Any]) -> None:
    for name, value in rec.get("user_properties") or []:
        if name != "seams":
            continue
        prev = res.cases.get(rec["nodeid"])
        if prev is not None and prev.raw != "pass":
            return  # a later teardown error does not overwrite the failure that came first
        res.cases[rec["nodeid"]] = Case(
            nodeid=rec["nodeid"], raw=value["raw"], message=value.get("message"),
            error_type=value.get("error_type"), duration=float(rec.get("duration") or 0.0),
            observations=value.get("observations") or {})


def read_many(paths: Iterable[Path]) -> tuple[list[CellResults], list[str]]:
    """Read every file it can; return the cells and one line per file that could not be read."""
    cells, errors = [], []
    for p in paths:
        try:
            cells.append(read_results(p))
        except UserError as exc:
            errors.append(str(exc))
    return cells, errors


_SOURCE_KEYS = {"kind": str, "location": str, "sha": str, "ref": str, "subdir": str, "content_hash": str,
                "version": str, "dirty": bool, "pin": str, "commit_date": str, "release_tag": str}


def _sources(raw: Any) -> dict[str, dict]:
    """CellStart's resolved sources, each kept to its known fields of the right type (a tampered
    record loses what does not fit, never crashes the report)."""
    if not isinstance(raw, dict):
        return {}
    out = {}
    for pkg, src in raw.items():
        if not isinstance(src, dict):
            continue
        out[str(pkg)] = {k: v for k, v in src.items() if k in _SOURCE_KEYS and type(v) is _SOURCE_KEYS[k]}
    return out
