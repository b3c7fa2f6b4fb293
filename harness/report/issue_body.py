"""One Markdown form for an upstream issue about one result: used by `harness report` (repro/CASE.md),
`harness news` (the filed issue) and `harness bisect` (issue.md beside bisect.md).

Sections, in order (the title, what broke and where, is the issue's own: `title()`): What happened (the message, once);
Versions (the cell's, and what moved); Bisection; Reproduce (the standalone script in a collapsible
block, then the harness route); Links. Text from results files (test ids, messages, versions) is
untrusted: control characters are shown as escapes, inline code cannot be closed by the text,
fenced blocks are longer than any backtick run inside, and machine paths are cut to what a
maintainer can read (site-packages/..., ~/...).
"""

from __future__ import annotations

import html
import re
import shlex
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.paths import REPO

MAX_MESSAGE = 4000
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")  # C1 too: 0x9b is a terminal's CSI


def one_line(text: Any, limit: int = 300) -> str:
    """Text for one line of Markdown: every control character (newlines too) shown as an escape."""
    s = re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", lambda m: f"\\x{ord(m.group()):02x}", str(text))
    return s if len(s) <= limit else s[:limit - 3] + "..."


# What Markdown (CommonMark, GitHub's) or HTML reads as syntax inside a line: links and images (`[`, `]`; an
# image's `!` starts nothing without its `[`), tags and entities (`<`, `&`; a `>` alone starts nothing), code (backtick), escapes,
# emphasis by `*`, table cells (`|`). Shown as entities they render as themselves and start nothing. (`_`
# is left readable: inside a word, as in a test id, it is never emphasis, and emphasis is no link or tag.)
_MD_ACTIVE = frozenset("\\`*[]<&|")


def md_line(text: Any, limit: int = 300) -> str:
    """Untrusted text for one line of running Markdown (a list item, a heading, an HTML summary): one_line,
    then every character Markdown or HTML reads as syntax written as an entity, so a value holding
    `![x](https://...)`, `[x](javascript:...)` or `<img ...>` shows as that text and is no link, image or tag."""
    return "".join(f"&#{ord(ch)};" if ch in _MD_ACTIVE else ch for ch in one_line(text, limit))


def url_text(link: Any) -> str:
    """An https:// URL for a Markdown link target or as a bare link: ASCII only, and the characters that
    could end the link or start other syntax (space, parentheses, brackets, angle brackets, `|`, backtick)
    percent-encoded; anything else is shown as text (md_line), never a link."""
    link = str(link)
    if not link.startswith("https://"):
        return md_line(link)
    return "".join(ch if ch.isascii() and ch.isprintable() and ch not in " ()<>[]|`\\" else f"%{ord(ch):02X}"
                   for ch in link if ord(ch) < 128)


def code(text: Any) -> str:
    """An inline code span the text cannot close (CommonMark: a longer backtick run, padded)."""
    s = one_line(text)
    longest = max((len(m) for m in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {s} {fence}" if longest or s.startswith(" ") or s.endswith(" ") else f"`{s}`"


def fence(text: str, lang: str = "") -> list[str]:
    """A fenced block longer than any backtick run in text, with control characters (but newlines
    and tabs) shown as escapes, so the text can neither close it nor hide in it."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return [ticks + lang, text, ticks]


def scrub_paths(text: str) -> str:
    """Machine paths cut to what is meaningful anywhere: this checkout, envs and the home folder."""
    text = re.sub(r"(?:/[^\s'\"():]+)*/site-packages/", "site-packages/", text)
    text = text.replace(str(REPO) + "/", "").replace(str(REPO), "xla-seams")
    home = str(Path.home())
    if home not in ("/", ""):
        text = text.replace(home + "/", "~/")
    return text


def demote_headings(markdown: str, levels: int = 3) -> str:
    """Headings of an embedded document pushed down under this one's (never past level 6)."""
    out, in_fence = [], None
    for line in markdown.splitlines():
        m = re.match(r"^(`{3,}|~{3,})", line)
        if m and (in_fence is None or m.group(1)[0] == in_fence[0] and len(m.group(1)) >= len(in_fence)):
            in_fence = None if in_fence else m.group(1)
        elif in_fence is None:
            h = re.match(r"^(#{1,6}) ", line)
            if h:
                line = "#" * min(6, len(h.group(1)) + levels) + line[len(h.group(1)):]
        out.append(line)
    return "\n".join(out)


def title(case_id: str | None, cell: Mapping[str, Any], result: Mapping[str, Any], since: str | None = None) -> str:
    """What broke and since when, in one line: the known issue's own words where there is one
    ("call_jax keys its trace cache by ==: ..."), then `test[param]` fails on jax 0.6.0 (cpu), then
    since which release or commit (`since`: "jax 0.6.0 (last good 0.5.3)") where that is known."""
    versions = cell.get("pins") or {}
    where = ", ".join(f"{k} {v}" for k, v in versions.items()) or str(cell.get("cell", "?"))
    raw = str(result.get("raw") or result.get("verdict") or "fails")
    verb = {"fail": "fails", "error": "errors", "crash": "crashes", "timeout": "hangs", "pass": "passes",
            "env-error": "does not install"}.get(raw, raw)
    what = case_id.rsplit("::", 1)[-1] if case_id else f"cell {cell.get('cell', '?')}"
    text = f"{what} {verb} on {where} ({cell.get('device', 'cpu')})" + (f" since {since}" if since else "")
    reason = str((result.get("expectation") or {}).get("reason") or "").strip()
    if reason:  # the bug in its own words first: its first clause
        text = f"{_first_clause(reason)[:140]}: {text}"
    return one_line(text, 300)


def _first_clause(sentence: str) -> str:
    """A sentence up to its first ': ', '; ' or ' (' outside quotes and code spans."""
    for m in re.finditer(r"(?<=\S):\s|;\s|\s\(", sentence):
        head = sentence[:m.start()]
        if head.count('"') % 2 == 0 and head.count("`") % 2 == 0:
            return head.rstrip(" .")
    return sentence.rstrip(" .")


def issue_body(case_id: str | None, cell: Mapping[str, Any], result: Mapping[str, Any], *,
               script: str | None = None, script_name: str = "repro.py", standalone_install: str = "",
               harness_install: str = "", harness_run: Sequence[str] = (), moved: Sequence[str] = (),
               bisection: str | None = None, marker: str | None = None, verdict_line: str | None = None,
               reduced: str | None = None, reduced_name: str = "repro.min.py") -> str:
    """The issue body for one result (see the module docstring for the sections); `reduced`, the
    script `harness reduce` made from `script`, is shown first, open, and the full one collapsed."""
    out: list[str] = [marker, ""] if marker else []  # the title is the issue's (or CASE.md's heading)
    if case_id:
        out.append(f"- case: {code(case_id)} (xla-seams scenario)")
    out.append(f"- cell: {code(cell.get('cell', '?'))}; outcome: {md_line(result.get('raw', '?'))}"
               + (f" ({md_line(result['signal'])})" if result.get("signal") else "")
               + f"; verdict: {md_line(result.get('verdict', '?'))}")
    if verdict_line:
        out.append(f"- {md_line(verdict_line, 400)}")
    exp = result.get("expectation") or {}
    if exp:  # the sentence that explains the bug, near the top (it was under Links, at the end)
        out.append(f"- known issue {code(exp.get('id', ''))}: {md_line(exp.get('reason', ''), 400)} "
                   f"({url_text(exp.get('link', ''))})")
    message = str(result.get("message") or "").strip()
    if message:
        cut = message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + "\n... (truncated)"
        out += ["", "### What happened", "", *fence(scrub_paths(cut))]
    versions = cell.get("versions") or cell.get("pins") or {}
    out += ["", "### Versions", "",
            "- " + (", ".join(f"{md_line(k)} {md_line(v)}" for k, v in versions.items()) or "unknown")
            + f"; device {md_line(cell.get('device', 'cpu'))}"
            + (f"; Python {md_line(cell['python'])}" if cell.get("python") else "")]
    if moved:
        out.append("- moved since the previous run: " + ", ".join(md_line(m) for m in moved))
    if bisection:
        out += ["", "### Bisection", "", demote_headings(scrub_paths(bisection).strip())]
    out += ["", "### Reproduce", ""]
    if reduced is not None:
        out += [f"Reduced ({len(reduced.splitlines())} lines; `harness reduce` kept the full script's exit status "
                "and failure; exit 1 while the bug is there, 0 once fixed):", "",
                *fence(f"python3.11 -m venv venv && . venv/bin/activate\n{standalone_install}\npython {shlex.quote(reduced_name)}", "sh"),
                "", *fence(reduced, "python"), ""]
    if script is not None:
        if "download.pytorch.org/whl/cpu" in standalone_install:  # say why the line names another index
            out += ["torch comes from PyTorch's CPU wheels: the cell runs on CPU, so no CUDA libraries are downloaded.", ""]
        out += [("The full script it was reduced from" if reduced is not None else "Standalone")
                + " (only the packages below; exit 1 while the bug is there, 0 once fixed):", "",
                *fence(f"python3.11 -m venv venv && . venv/bin/activate\n{standalone_install}\npython {shlex.quote(script_name)}", "sh"),
                "", f"<details><summary>{html.escape(one_line(script_name))}</summary>", "", *fence(script, "python"), "",
                "</details>", ""]
    if harness_install and case_id:
        out += ["With xla-seams (a clone of it; the plugin records the outcome, the verdict is judged by the harness):",
                "", *fence("python3.11 -m venv venv && . venv/bin/activate\n" + harness_install
                           + "".join(f"\n{line}" for line in harness_run), "sh")]
    elif script is None:
        out.append("No standalone script for this result (it has no scenario core, or the cell did not run).")
    link = str(exp.get("link") or "")
    if link.startswith("https://"):
        out += ["", "### Links", "", f"- {url_text(link)} ({code(exp.get('id', ''))})"]
    return "\n".join(out).rstrip() + "\n"
