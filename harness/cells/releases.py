"""List a package's released versions from an index (PyPI JSON, PEP 691/503 simple) or a folder of wheels."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from harness.errors import UserError

PYPI_SIMPLE = "https://pypi.org/simple"
_TIMEOUT_S = 30


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.files: list[tuple[str, bool]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            a = dict(attrs)
            href = a.get("href") or ""
            self.files.append((href.split("#")[0].rsplit("/", 1)[-1], "data-yanked" in a))


def _version_of(filename: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        if filename.endswith((".tar.gz", ".zip")):
            return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return None


def _fits_python(filename: str, python: str | None) -> bool:
    """Whether a file can install on CPython `python` (e.g. '3.11'): a wheel's tags say; sdists may."""
    if python is None or not filename.endswith(".whl"):
        return True
    try:
        tags = parse_wheel_filename(filename)[3]
    except (InvalidWheelFilename, InvalidVersion):
        return False
    cp = "cp" + python.replace(".", "")
    minor = int(python.split(".")[1])
    for tag in tags:
        if tag.interpreter in ("py3", "py" + python.replace(".", ""), cp):
            return True
        if tag.abi == "abi3" and tag.interpreter.startswith("cp3") and int(tag.interpreter[3:] or 99) <= minor:
            return True
    return False


def _fetch(url: str, accept: str) -> tuple[bytes, str]:
    try:
        req = urllib.request.Request(url, headers={"Accept": accept})
    except ValueError as exc:  # `--index-url suites/x.py::t`: no scheme urllib knows (issue 31: one line, exit 2)
        raise UserError(f"{url!r}: not an index URL ({exc}); give http(s)://... or file://...") from None
    try:
        with urllib.request.urlopen(req, timeout=_TIMEOUT_S) as resp:  # noqa: S310 - index URLs are the user's
            return resp.read(), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise UserError(f"{url}: not found on the index (is the package name right?)") from None
        raise UserError(f"{url}: the index answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UserError(f"{url}: index unreachable ({reason})") from None


def _from_simple(index_url: str, package: str, python: str | None = None) -> set[Version]:
    url = index_url.rstrip("/") + f"/{canonicalize_name(package)}/"
    if urlparse(url).scheme == "file":
        path = Path(urlparse(url).path)
        page = path / "index.html" if (path / "index.html").exists() else path
        if page.is_dir():
            files = [(p.name, False) for p in page.iterdir()]
        else:
            try:
                parser = _Links()
                parser.feed(page.read_text())
            except OSError:
                raise UserError(f"{url}: no such package folder on the local index") from None
            files = parser.files
    else:
        body, ctype = _fetch(url, "application/vnd.pypi.simple.v1+json, text/html;q=0.1")
        if "json" in ctype:
            doc = json.loads(body)
            files = [(f["filename"], bool(f.get("yanked"))) for f in doc.get("files", [])]
        else:
            parser = _Links()
            parser.feed(body.decode("utf-8", "replace"))
            files = parser.files
    return {v for name, yanked in files if not yanked and _fits_python(name, python)
            and (v := _version_of(name)) is not None}


def _from_find_links(location: str, package: str, python: str | None = None) -> set[Version]:
    prefix = re.sub(r"[-_.]+", "_", package).lower()
    if urlparse(location).scheme in ("http", "https"):
        parser = _Links()
        parser.feed(_fetch(location, "text/html")[0].decode("utf-8", "replace"))
        names = [n for n, _ in parser.files]
    else:
        folder = Path(urlparse(location).path if location.startswith("file:") else location)
        if not folder.is_dir():
            raise UserError(f"--find-links {location}: no such folder")
        names = [p.name for p in folder.iterdir()]
    return {v for n in names if re.sub(r"[-_.]+", "_", n).lower().startswith(prefix + "_")
            and _fits_python(n, python) and (v := _version_of(n)) is not None}


def list_versions(package: str, index_url: str | None = None, find_links: tuple[str, ...] = (),
                  pre: bool = False, python: str | None = None) -> list[Version]:
    """Released versions of package, ascending (PEP 440 order); pre-releases only if asked; with python
    ('3.11'), only versions with a file that installs there."""
    found = _from_simple(index_url or PYPI_SIMPLE, package, python)
    for loc in find_links:
        found |= _from_find_links(loc, package, python)
    return sorted(v for v in found if pre or not (v.is_prerelease or v.is_devrelease))


def between(versions: list[Version], good: Version, bad: Version) -> list[Version]:
    """The versions from good to bad inclusive."""
    return [v for v in versions if (good <= v <= bad) or (bad <= v <= good)]


def nearest(versions: list[Version], wanted: Version) -> str:
    """'a, b': the releases either side of a version that does not exist (for the error message)."""
    below = [v for v in versions if v < wanted]
    above = [v for v in versions if v > wanted]
    return ", ".join(str(v) for v in ([below[-1]] if below else []) + ([above[0]] if above else []))


def paired_pins(package: str, version: str) -> dict[str, str]:
    """The pins that move together: jax with jaxlib, torch_xla with its torch X.Y.0."""
    pkg = canonicalize_name(package)
    if pkg == "jax":
        return {"jax": version, "jaxlib": version}
    if pkg == "torch-xla":
        v = Version(version)
        return {"torch-xla": version, "torch": f"{v.major}.{v.minor}.0"}
    return {pkg: version}


def held_pins(items: list[str]) -> dict[str, str]:
    """`--with PACKAGE==VERSION` items as pins (one-line error for anything else)."""
    out = {}
    for item in items:
        name, sep, ver = item.partition("==")
        if not sep or not ver:
            raise UserError(f"--with {item!r}: write PACKAGE==VERSION")
        try:
            Version(ver)
        except InvalidVersion:
            raise UserError(f"--with {item!r}: {ver!r} is not a PEP 440 version") from None
        if canonicalize_name(name) in out:
            raise UserError(f"--with names {canonicalize_name(name)} twice ({canonicalize_name(name)}=="
                            f"{out[canonicalize_name(name)]} and {item}); hold each package at one version")
        out[canonicalize_name(name)] = ver
    return out
