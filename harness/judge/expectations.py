"""Known upstream issues as data: which test ids fail how, under which versions and devices."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness.cells.devices import DEVICE_TYPES
from harness.errors import UserError
from harness.judge.outcomes import RAW_OUTCOMES
from harness.cells.yamlio import line_of, load_yaml
from harness.paths import MATRICES_DIR

# One file per scenario family, so each family's known issues live beside each other.
DEFAULT_PATH = MATRICES_DIR / "known_issues"
_KEYS = {"id", "tests", "when", "devices", "expect", "match", "link", "reason"}
_BOUNDARY = ("/", ":", "[", "-", "]")
# A `match` regex gets this long per message: a pattern that backtracks catastrophically on some
# message must not hang a run. Past it the message counts as not matching: news, never green.
MATCH_TIMEOUT_S = 0.5

try:  # the `regex` package bounds a search's time; every cell env installs it (cell.RUNTIME_REQUIREMENTS)
    import regex as _rx
except ImportError:  # a hand-made env: no bound, but a hang still ends at the test's timeout (news)
    import re as _rx


@dataclass(frozen=True)
class Expectation:
    """One known upstream issue: tests (ids or id prefixes) expected to end in `expect`."""

    id: str
    tests: tuple[str, ...]
    expect: str
    link: str
    reason: str
    when: Mapping[str, SpecifierSet | None] = field(default_factory=dict)  # None: must be absent
    devices: tuple[str, ...] = ()
    match: str | None = None
    source: str = ""

    def covers(self, nodeid: str) -> bool:
        """True if nodeid equals one of the patterns or extends one at an id boundary."""
        for pat in self.tests:
            if nodeid == pat:
                return True
            if nodeid.startswith(pat) and (pat.endswith(_BOUNDARY) or nodeid[len(pat)] in _BOUNDARY):
                return True
        return False

    def applies(self, versions: Mapping[str, str | None], device: str) -> bool:
        """True if the installed versions satisfy every specifier and the device is listed."""
        if self.devices and device not in self.devices:
            return False
        for pkg, spec in self.when.items():
            have = versions.get(pkg)
            if spec is None:  # `absent`: applies only where the package is not installed
                if have is not None:
                    return False
                continue
            if have is None:
                return False
            try:
                if not spec.contains(Version(have), prereleases=True):
                    return False
            except InvalidVersion:
                return False
        return True

    def message_matches(self, message: str | None) -> bool:
        """True if there is no `match` regex, or it is found in the failure message."""
        if self.match is None:
            return True
        try:
            if _rx.__name__ == "regex":
                return bool(_rx.search(self.match, message or "", timeout=MATCH_TIMEOUT_S))
            return bool(_rx.search(self.match, message or ""))
        except TimeoutError:
            return False


def normalize_versions(versions: Mapping[str, str | None]) -> dict[str, str | None]:
    """Canonical package names (torch_xla -> torch-xla) so specifiers match either spelling."""
    return {canonicalize_name(k): v for k, v in versions.items()}


def _fail(path: Path, node: Any, key: str | None, msg: str) -> UserError:
    return UserError(f"{path}:{line_of(node, key)}: {msg}")


def _has_control(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in text)


def _text(path: Path, raw: dict, key: str) -> str:
    """raw[key] must be a non-empty string; the id and link also without control characters."""
    value = raw[key]
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, raw, key, f"{key!r} must be a non-empty string, not {value!r}")
    if key != "reason" and _has_control(value):
        raise _fail(path, raw, key, f"{key!r}: {value!r} contains a control character (newline, NUL ...)")
    return value


def _parse_entry(path: Path, raw: Any, index: int) -> Expectation:
    if not isinstance(raw, dict):
        raise UserError(f"{path}: issues[{index}] must be a mapping with id, tests, expect, link, reason")
    unknown = [k for k in raw if k not in _KEYS]
    if unknown:
        key = unknown[0]
        raise _fail(path, raw, key, f"unknown key {key!r} in an expectation; allowed: {', '.join(sorted(_KEYS))}")
    for key in ("id", "tests", "expect", "link", "reason"):
        if key not in raw:
            raise _fail(path, raw, None, f"expectation is missing {key!r}")
    for key in ("id", "link", "reason"):
        _text(path, raw, key)
    tests = raw["tests"]
    if isinstance(tests, str):
        tests = [tests]
    if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t for t in tests):
        raise _fail(path, raw, "tests", "'tests' must be a test id or a list of test ids / id prefixes")
    for t in tests:
        if _has_control(t):
            raise _fail(path, raw, "tests", f"test id {t!r} contains a control character (newline, NUL ...)")
    expect = raw["expect"]
    if not isinstance(expect, str) or expect not in RAW_OUTCOMES or expect in ("pass", "skip"):
        raise _fail(path, raw, "expect", f"expect {expect!r} is not a failing outcome; use one of fail, error, crash, timeout, env-error")
    when: dict[str, SpecifierSet | None] = {}
    when_raw = raw.get("when") or {}
    if not isinstance(when_raw, dict):
        raise _fail(path, raw, "when", "'when' must map package names to PEP 440 specifiers, e.g. {jax: '>=0.6.0'}")
    for pkg, spec in when_raw.items():
        if not isinstance(pkg, str) or not pkg or _has_control(pkg):
            raise _fail(path, when_raw, pkg, f"when: {pkg!r} is not a package name")
        if spec == "absent":
            when[canonicalize_name(pkg)] = None
            continue
        try:
            if not isinstance(spec, str) or _has_control(spec):
                raise InvalidSpecifier(repr(spec))
            when[canonicalize_name(pkg)] = SpecifierSet(spec)
        except InvalidSpecifier:
            raise _fail(path, when_raw, pkg, f"{pkg}: {spec!r} is not a PEP 440 specifier (write e.g. '>=0.6.0,<0.10', or 'absent')") from None
    devices = raw.get("devices") or ()
    if isinstance(devices, str):
        devices = (devices,)
    if not isinstance(devices, (list, tuple)):
        raise _fail(path, raw, "devices", f"'devices' must be a list such as [cpu, tpu], not {devices!r}")
    for d in devices:
        if not isinstance(d, str) or d not in DEVICE_TYPES:
            raise _fail(path, raw, "devices", f"device {d!r} is not one of {', '.join(DEVICE_TYPES)}")
    match = raw.get("match")
    if match is not None:
        if not isinstance(match, str):
            raise _fail(path, raw, "match", f"match must be a regex string, not {match!r}")
        try:
            _rx.compile(match)
        except (_rx.error, OverflowError, ValueError, RecursionError) as exc:
            raise _fail(path, raw, "match", f"match is not a valid regex: {exc}") from None
    link = raw["link"]
    if not (link == "none filed" or (link.startswith("https://") and not any(c.isspace() for c in link))):
        raise _fail(path, raw, "link", "link must be an https:// upstream URL or the words 'none filed'")
    return Expectation(
        id=raw["id"], tests=tuple(tests), expect=expect, link=link, reason=raw["reason"],
        when=when, devices=tuple(devices), match=match, source=f"{path}:{line_of(raw)}",
    )


def load_expectations(path: Path = DEFAULT_PATH) -> list[Expectation]:
    """Load and validate a known-issues file, or every *.yaml in a folder; errors name file:line."""
    path = Path(path)
    if path.is_dir():
        out: list[Expectation] = []
        for f in sorted(path.glob("*.yaml")):
            out.extend(load_expectations(f))
        _check_unique(out)
        return out
    doc = load_yaml(path)
    if doc is None:
        return []
    if not isinstance(doc, dict) or "issues" not in doc:
        raise UserError(f"{path}:1: expected a mapping with a top-level 'issues:' list")
    entries = doc["issues"] or []
    if not isinstance(entries, list):
        raise UserError(f"{path}:{line_of(doc, 'issues')}: 'issues' must be a list of expectations")
    out = [_parse_entry(path, raw, i) for i, raw in enumerate(entries)]
    _check_unique(out)
    return out


def _check_unique(expectations: list[Expectation]) -> None:
    seen: set[str] = set()
    for exp in expectations:
        if exp.id in seen:
            raise UserError(f"{exp.source}: duplicate expectation id {exp.id!r}")
        seen.add(exp.id)


def applying_expectations(
    expectations: list[Expectation], versions: Mapping[str, str | None], device: str
) -> list[Expectation]:
    """Every expectation that applies to these versions and device (whatever it covers), in file order."""
    versions = normalize_versions(versions)
    return [e for e in expectations if e.applies(versions, device)]


class CoverIndex:
    """Which expectations cover a node id, found through a dict of their test patterns: a lookup costs the
    id's boundary prefixes (a handful), not one `covers` call per known issue (100k results x 10k known
    issues in seconds). Gives exactly what `[e for e in expectations if e.covers(nodeid)]` gives, in order."""

    def __init__(self, expectations: list[Expectation]) -> None:
        self._by_pattern: dict[str, list[int]] = {}
        self._expectations = list(expectations)
        for i, exp in enumerate(self._expectations):
            for pat in exp.tests:
                self._by_pattern.setdefault(pat, []).append(i)

    def covering(self, nodeid: str) -> list[Expectation]:
        """The expectations covering nodeid, in file order."""
        # covers(): nodeid == pat, or pat is a prefix ending in a boundary character, or a prefix that
        # the next character of nodeid starts a boundary after. Those prefixes are all there is to look up.
        found: set[int] = set(self._by_pattern.get(nodeid, ()))
        for i, ch in enumerate(nodeid):
            if ch in _BOUNDARY:
                found.update(self._by_pattern.get(nodeid[:i], ()))
                found.update(self._by_pattern.get(nodeid[:i + 1], ()))
        return [self._expectations[i] for i in sorted(found)]


def applicable_expectations(
    expectations: list[Expectation], nodeid: str, versions: Mapping[str, str | None], device: str
) -> list[Expectation]:
    """Every expectation covering nodeid that applies to these versions and device, in file order."""
    return [e for e in applying_expectations(expectations, versions, device) if e.covers(nodeid)]


def find_expectation(
    expectations: list[Expectation], nodeid: str, versions: Mapping[str, str | None], device: str
) -> Expectation | None:
    """The first expectation covering nodeid that applies to these versions and device."""
    found = applicable_expectations(expectations, nodeid, versions, device)
    return found[0] if found else None
