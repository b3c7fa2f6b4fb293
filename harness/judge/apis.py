"""API presence ranges as data: which releases ship each API the suites bridge, and drift from them.

`api absent` is a fact a scenario records (the raw outcome `skip: api absent: NAME`, and an
observation `apis: {NAME: false}` from harness.incell.compat). Whether that fact is right is policy,
kept here beside the known issues: outside an API's recorded range it is expected, inside it
(or the API present outside it) it is news, the `api-drift` verdict. Reports re-judge from the
recorded facts, so a corrected range changes a report without re-running anything.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from harness.errors import UserError
from harness.cells.yamlio import line_of, load_yaml
from harness.incell.compat import APIS_OBSERVATION
from harness.paths import MATRICES_DIR

# One file per upstream project, so each helper family edits its own.
DEFAULT_PATH = MATRICES_DIR / "apis"
ENV_VAR = "SEAMS_APIS"
OBSERVATION = APIS_OBSERVATION  # observations key: {api name: present?}
_KEYS = {"api", "package", "shipped", "evidence", "link", "note"}
_ABSENT_MESSAGE = re.compile(r"^api absent: ([A-Za-z_][\w.]*(?:\([^)]*\))?)")


@dataclass(frozen=True)
class ApiRange:
    """One API and the releases of its package that ship it (PEP 440 specifiers)."""

    api: str
    package: str
    shipped: SpecifierSet
    evidence: str
    link: str
    source: str = ""

    def ships_in(self, version: str) -> bool | None:
        """True if this version ships the API, False if not, None if the version is unreadable."""
        try:
            return self.shipped.contains(Version(version), prereleases=True)
        except InvalidVersion:
            return None


@dataclass(frozen=True)
class ApiDrift:
    """An API observed present or absent against its recorded range (or with no range at all).

    Shaped like an Expectation (id, expect, link, reason, source) so reports and results records
    show it in the same slot.
    """

    api: str
    present: bool
    version: str | None
    range: ApiRange | None

    @property
    def id(self) -> str:  # noqa: D102
        return f"api-range:{self.api}"

    @property
    def expect(self) -> str:  # noqa: D102
        return "absent" if self.present else "present"

    @property
    def link(self) -> str:  # noqa: D102
        return self.range.link if self.range else "none filed"

    @property
    def source(self) -> str:  # noqa: D102
        return self.range.source if self.range else str(DEFAULT_PATH)

    @property
    def reason(self) -> str:
        """One line naming the API, the range, the version seen and what to do."""
        if self.range is None:
            return (f"api absent: {self.api} has no recorded release range: add it to matrices/apis/ "
                    f"(absence can only be judged against a range)")
        r = self.range
        if "=" in self.api:  # a default the suites rely on (harness/incell/defaults.py)
            if self.present:
                return (f"{self.api} holds in {r.package} {self.version}, outside the range recorded for this default "
                        f"({r.package}{r.shipped}, {r.source}): check and widen the range")
            return (f"{self.api} does not hold in {r.package} {self.version}, inside the range that has this default "
                    f"({r.package}{r.shipped}, {r.source}): upstream changed or removed the default - news "
                    f"(the case's `defaults` observation shows the signature)")
        if self.present:
            return (f"{self.api} is present in {r.package} {self.version}, outside the range that ships it "
                    f"({r.package}{r.shipped}, {r.source}): upstream re-added or kept it - check and widen the range")
        return (f"{self.api} is absent from {r.package} {self.version}, inside the range that ships it "
                f"({r.package}{r.shipped}, {r.source}): upstream removed or moved it - news")


def _fail(path: Path, node: Any, key: str | None, msg: str) -> UserError:
    return UserError(f"{path}:{line_of(node, key)}: {msg}")


def _parse(path: Path, raw: Any, index: int) -> ApiRange:
    if not isinstance(raw, dict):
        raise UserError(f"{path}: apis[{index}] must be a mapping with api, package, shipped, evidence, link")
    unknown = set(raw) - _KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise _fail(path, raw, key, f"unknown key {key!r} in an API range; allowed: {', '.join(sorted(_KEYS))}")
    for key in ("api", "package", "shipped", "evidence", "link"):
        if not raw.get(key):
            raise _fail(path, raw, None, f"API range is missing {key!r}")
    try:
        shipped = SpecifierSet(str(raw["shipped"]))
    except InvalidSpecifier:
        raise _fail(path, raw, "shipped", f"shipped {raw['shipped']!r} is not a PEP 440 specifier "
                                          "(write e.g. '>=0.6.0,<0.10.0')") from None
    link = str(raw["link"])
    if not (link.startswith("https://") or link == "none filed"):
        raise _fail(path, raw, "link", "link must be an https:// URL (release notes, commit) or the words 'none filed'")
    return ApiRange(api=str(raw["api"]), package=canonicalize_name(str(raw["package"])), shipped=shipped,
                    evidence=str(raw["evidence"]), link=link, source=f"{path}:{line_of(raw)}")


def load_api_ranges(path: Path = DEFAULT_PATH) -> dict[str, ApiRange]:
    """Load and validate an API-ranges file, or every *.yaml in a folder; errors name file:line."""
    path = Path(path)
    if path.is_dir():
        merged: dict[str, ApiRange] = {}
        for f in sorted(path.glob("*.yaml")):
            for name, rng in load_api_ranges(f).items():
                if name in merged:
                    raise UserError(f"{rng.source}: duplicate API {name!r} (first at {merged[name].source})")
                merged[name] = rng
        return merged
    try:
        st = path.stat()
    except OSError:
        st = None
    if st is None:
        return _load_file(path, 0, -1)  # load_yaml says what is wrong with it
    return dict(_load_file(path, st.st_mtime_ns, st.st_size))


@lru_cache(maxsize=32)
def _load_file(path: Path, _mtime_ns: int, _size: int) -> dict[str, ApiRange]:
    """One API-ranges file, parsed once per version of it (a whole run's report exports thousands of
    scripts, each asking for the ranges)."""
    doc = load_yaml(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("apis"), list):
        raise UserError(f"{path}:{line_of(doc, 'apis') or 1}: expected a mapping with a top-level 'apis:' list")
    out: dict[str, ApiRange] = {}
    for i, raw in enumerate(doc["apis"]):
        rng = _parse(path, raw, i)
        if rng.api in out:
            raise UserError(f"{rng.source}: duplicate API {rng.api!r} (first at {out[rng.api].source})")
        out[rng.api] = rng
    return out


def default_api_ranges() -> dict[str, ApiRange]:
    """The ranges in $SEAMS_APIS if set, else matrices/apis/ (empty if neither exists)."""
    path = Path(os.environ.get(ENV_VAR) or DEFAULT_PATH)
    if not path.exists():
        if os.environ.get(ENV_VAR):
            raise UserError(f"{path}: no such API-ranges file (from ${ENV_VAR})")
        return {}
    return load_api_ranges(path)


def observed_apis(observations: Mapping[str, Any] | None, message: str | None) -> dict[str, bool]:
    """{api: present?} a case recorded; an `api absent: NAME` skip message counts as NAME absent.

    The message is read too so results written before the observation existed are judged alike.
    """
    seen: dict[str, bool] = {}
    rec = (observations or {}).get(OBSERVATION)
    if isinstance(rec, dict):
        seen.update({str(k): bool(v) for k, v in rec.items()})
    m = _ABSENT_MESSAGE.match(message or "")
    if m and m.group(1) not in seen:
        seen[m.group(1)] = False
    return seen


CENSUS = "census"  # observations key of the dependency API census (suites/coexist/census.py)


def census_apis(observations: Mapping[str, Any] | None, ranges: Mapping[str, ApiRange]) -> dict[str, bool]:
    """{api: present?} for the APIs a bridge's source uses that have a recorded range.

    The census sees hundreds of APIs; only those with a range can be judged for drift (the rest's
    absence is the census case's own finding, with the bridge's file and line). An absent entry
    names the path up to its first missing part, so a missing module is judged under its own name.
    """
    rec = (observations or {}).get(CENSUS)
    if not isinstance(rec, dict):
        return {}
    seen: dict[str, bool] = {}
    for name in rec.get("present") or ():
        if not isinstance(name, str):
            continue
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # jax.experimental.shard_map.shard_map present: its module is too
            if ".".join(parts[:i]) in ranges:
                seen[".".join(parts[:i])] = True
    for entry in rec.get("absent") or ():
        name = entry.get("api") if isinstance(entry, dict) else None
        if isinstance(name, str) and name in ranges:
            seen[name] = False
    return seen


def api_drift(seen: Mapping[str, bool], versions: Mapping[str, str | None],
              ranges: Mapping[str, ApiRange]) -> list[ApiDrift]:
    """Every observation that contradicts its API's recorded range (or has no range to judge by)."""
    have = {canonicalize_name(k): v for k, v in versions.items()}
    out: list[ApiDrift] = []
    for api, present in seen.items():
        rng = ranges.get(api)
        if rng is None:
            if not present:  # an absence nobody can judge is not a green skip
                out.append(ApiDrift(api, present, None, None))
            continue
        version = have.get(rng.package)
        if version is None:
            continue  # the package is not in this cell: presence says nothing about its releases
        ships = rng.ships_in(version)
        if ships is not None and ships != present:
            out.append(ApiDrift(api, present, version, rng))
    return out


def ranges_table(ranges: Iterable[ApiRange]) -> list[str]:
    """One line per API: name, package range, source (for `harness validate` and docs)."""
    return [f"{r.api}: {r.package}{r.shipped} ({r.source})" for r in ranges]
