"""Known upstream issues as data: which test ids fail how, under which versions and devices."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness.errors import UserError
from harness.outcomes import RAW_OUTCOMES
from harness.yamlio import line_of, load_yaml

# One file per scenario family, so each family's known issues live beside each other.
DEFAULT_PATH = Path(__file__).resolve().parent.parent / "matrices" / "known_issues"
_KEYS = {"id", "tests", "when", "devices", "expect", "match", "link", "reason"}
_BOUNDARY = ("/", ":", "[", "-", "]")


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
        return self.match is None or bool(re.search(self.match, message or ""))


def normalize_versions(versions: Mapping[str, str | None]) -> dict[str, str | None]:
    """Canonical package names (torch_xla -> torch-xla) so specifiers match either spelling."""
    return {canonicalize_name(k): v for k, v in versions.items()}


def _fail(path: Path, node: Any, key: str | None, msg: str) -> UserError:
    return UserError(f"{path}:{line_of(node, key)}: {msg}")


def _parse_entry(path: Path, raw: Any, index: int) -> Expectation:
    if not isinstance(raw, dict):
        raise UserError(f"{path}: issues[{index}] must be a mapping with id, tests, expect, link, reason")
    unknown = set(raw) - _KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise _fail(path, raw, key, f"unknown key {key!r} in an expectation; allowed: {', '.join(sorted(_KEYS))}")
    for key in ("id", "tests", "expect", "link", "reason"):
        if key not in raw:
            raise _fail(path, raw, None, f"expectation is missing {key!r}")
    tests = raw["tests"]
    if isinstance(tests, str):
        tests = [tests]
    if not tests or not all(isinstance(t, str) and t for t in tests):
        raise _fail(path, raw, "tests", "'tests' must be a test id or a list of test ids / id prefixes")
    expect = raw["expect"]
    if expect not in RAW_OUTCOMES or expect in ("pass", "skip"):
        raise _fail(path, raw, "expect", f"expect {expect!r} is not a failing outcome; use one of fail, error, crash, timeout, env-error")
    when: dict[str, SpecifierSet | None] = {}
    for pkg, spec in (raw.get("when") or {}).items():
        if spec == "absent":
            when[canonicalize_name(str(pkg))] = None
            continue
        try:
            when[canonicalize_name(str(pkg))] = SpecifierSet(str(spec))
        except InvalidSpecifier:
            raise _fail(path, raw.get("when"), pkg, f"{pkg}: {spec!r} is not a PEP 440 specifier (write e.g. '>=0.6.0,<0.10', or 'absent')") from None
    devices = raw.get("devices") or ()
    if isinstance(devices, str):
        devices = (devices,)
    match = raw.get("match")
    if match is not None:
        try:
            re.compile(match)
        except re.error as exc:
            raise _fail(path, raw, "match", f"match is not a valid regex: {exc}") from None
    link = str(raw["link"])
    if not (link.startswith("https://") or link == "none filed"):
        raise _fail(path, raw, "link", "link must be an https:// upstream URL or the words 'none filed'")
    return Expectation(
        id=str(raw["id"]), tests=tuple(tests), expect=expect, link=link, reason=str(raw["reason"]),
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


def applicable_expectations(
    expectations: list[Expectation], nodeid: str, versions: Mapping[str, str | None], device: str
) -> list[Expectation]:
    """Every expectation covering nodeid that applies to these versions and device, in file order."""
    versions = normalize_versions(versions)
    return [e for e in expectations if e.covers(nodeid) and e.applies(versions, device)]


def find_expectation(
    expectations: list[Expectation], nodeid: str, versions: Mapping[str, str | None], device: str
) -> Expectation | None:
    """The first expectation covering nodeid that applies to these versions and device."""
    found = applicable_expectations(expectations, nodeid, versions, device)
    return found[0] if found else None
