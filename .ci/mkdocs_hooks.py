"""mkdocs hooks: the docs site also shows each family's README, and links out of docs/ still work.

The family READMEs live beside their suites (suites/<family>/README.md) and are read on GitHub
there; the site takes them in as pages `suites/<family>/README.md`. A relative link (on GitHub's
terms: from the file's real place in the repository) that reaches such a README, or a page of
docs/, becomes the link between site pages; a link to any other file of the repository (a test,
a matrix) becomes its path in code, since the site does not carry it. A link to nothing is left
as written, so `mkdocs build --strict` fails on it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parent.parent
_FENCE = re.compile(r"^(```|~~~)", re.M)
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def _extra_pages() -> dict[Path, str]:
    """Real path -> site path of the pages taken in from outside docs/."""
    return {p: p.relative_to(REPO).as_posix() for p in sorted(REPO.glob("suites/*/README.md"))}


def on_files(files: Files, config) -> Files:
    """Adds the family READMEs as pages."""
    for real, uri in _extra_pages().items():
        files.append(File(uri, str(REPO), config["site_dir"], config["use_directory_urls"]))
    return files


def _real_path(src_uri: str, docs_dir: Path) -> Path:
    extra = REPO / src_uri
    return extra if src_uri.startswith("suites/") and extra in _extra_pages() else docs_dir / src_uri


def rewrite_links(markdown: str, src_uri: str, docs_dir: Path) -> str:
    """The page's relative links, as the site needs them (see the module docstring)."""
    here = _real_path(src_uri, docs_dir).parent
    pages = {**{p.resolve(): p.relative_to(docs_dir).as_posix() for p in docs_dir.rglob("*.md")},
             **{p.resolve(): uri for p, uri in _extra_pages().items()}}

    def fix(m: re.Match) -> str:
        bang, text, target = m.groups()
        if bang or re.match(r"[a-z][a-z0-9+.-]*:|#|/", target):
            return m.group(0)
        path, _, anchor = target.partition("#")
        real = (here / path).resolve()
        if real in pages:
            rel = os.path.relpath(pages[real], PurePosixPath(src_uri).parent.as_posix() or ".")
            return f"[{text}]({PurePosixPath(rel).as_posix()}{'#' + anchor if anchor else ''})"
        if real.exists() and REPO in real.parents and docs_dir not in (real, *real.parents):
            shown = real.relative_to(REPO).as_posix()
            return f"{text} (`{shown}`)" if text.strip("`") != shown else f"`{shown}`"
        return m.group(0)

    parts = _FENCE.split(markdown)
    # split with one group: text, fence, text, fence, ...; rewrite outside fenced blocks only
    out, inside = [], False
    for i, part in enumerate(parts):
        if i % 2 == 1:
            out.append(part)
            inside = not inside
            continue
        out.append(part if inside else _LINK.sub(fix, part))
    return "".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:
    return rewrite_links(markdown, page.file.src_uri, Path(config["docs_dir"]).resolve())
