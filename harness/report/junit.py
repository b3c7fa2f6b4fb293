"""junit.xml for CI systems: one testcase per case x cell; news fails, known bugs and skips skip."""

from __future__ import annotations

import re
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from harness.judge.outcomes import FAILING_VERDICTS

# Characters XML 1.0 cannot carry at all (control characters such as ESC from ANSI colours, lone
# surrogates): written as visible \xNN escapes so the file stays valid and the message readable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Whitespace an attribute value must carry as references, or an XML parser normalises it to spaces.
_ATTR_WS = {"\n": "&#10;", "\r": "&#13;", "\t": "&#09;"}
_TEXT_CR = {"\r": "&#13;"}  # a bare CR in text is read back as LF


def xml_text(value: Any) -> str:
    """str(value) with every character XML 1.0 forbids replaced by a visible escape."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}",
                        str(value))


def _attr(value: Any) -> str:
    return quoteattr(xml_text(value), _ATTR_WS)


class _Suite:
    """One cell's <testsuite>: its testcase elements as text, and the counts its attributes carry.

    Written as strings, not through ElementTree: building and serialising 10k elements was a
    quarter of a 10k-result report's time."""

    def __init__(self, cell: str) -> None:
        self.cell, self.cases, self.failures, self.skipped = cell, [], 0, 0

    def add(self, name: str, r: dict[str, Any]) -> None:
        v = r["verdict"]
        head = f'<testcase classname={_attr(self.cell)} name={_attr(name)} time={_attr(r.get("duration") or 0)}'
        msg = xml_text((r.get("message") or "").strip())
        link = xml_text((r.get("expectation") or {}).get("link", ""))
        if v in FAILING_VERDICTS:
            first = f"{v}: {msg.splitlines()[0] if msg else r['raw']}"[:500]
            body = f"<failure message={_attr(first)} type={_attr(v)}>{escape(msg, _TEXT_CR)}</failure>"
            self.failures += 1
        elif v in ("known-bug", "skipped"):
            body = f"<skipped message={_attr(f'{v}: {link or msg}'[:500])} />"
            self.skipped += 1
        else:
            self.cases.append(head + " />")
            return
        self.cases.append(f"{head}>{body}</testcase>")

    def xml(self) -> str:
        return (f"<testsuite name={_attr(self.cell)} tests=\"{len(self.cases)}\" failures=\"{self.failures}\" "
                f"skipped=\"{self.skipped}\">{''.join(self.cases)}</testsuite>")


def render_junit(report: dict[str, Any]) -> bytes:
    """The JUnit XML document."""
    suites = {c["cell"]: _Suite(c["cell"]) for c in report["cells"]}
    for case in report["cases"]:
        for cell, r in case["results"].items():
            suites[cell].add(case["id"], r)
    for c in report["cells"]:
        if not suites[c["cell"]].cases:
            suites[c["cell"]].add("(whole cell)", {"verdict": c["verdict"] if c["verdict"] != "complete" else "incomplete",
                                                   "raw": c["status"], "message": c["reason"], "expectation": c["expectation"]})
    body = "".join(s.xml() for s in suites.values())
    return ("<?xml version='1.0' encoding='utf-8'?>\n"
            f'<testsuites name="xla-seams">{body}</testsuites>').encode("utf-8")
