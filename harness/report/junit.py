"""junit.xml for CI systems: one testcase per case x cell; news fails, known bugs and skips skip."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from harness.judge.outcomes import FAILING_VERDICTS

# Characters XML 1.0 cannot carry at all (control characters such as ESC from ANSI colours, lone
# surrogates): written as visible \xNN escapes so the file stays valid and the message readable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: Any) -> str:
    """str(value) with every character XML 1.0 forbids replaced by a visible escape."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}",
                        str(value))


def render_junit(report: dict[str, Any]) -> bytes:
    """The JUnit XML document."""
    root = ET.Element("testsuites", name="xla-seams")
    suites: dict[str, ET.Element] = {}
    for c in report["cells"]:
        suites[c["cell"]] = ET.SubElement(root, "testsuite", name=xml_text(c["cell"]), tests="0", failures="0", skipped="0")

    def add(cell: str, name: str, r: dict[str, Any]) -> None:
        suite = suites[cell]
        tc = ET.SubElement(suite, "testcase", classname=xml_text(cell), name=xml_text(name),
                           time=str(r.get("duration") or 0))
        v = r["verdict"]
        msg = xml_text((r.get("message") or "").strip())
        link = xml_text((r.get("expectation") or {}).get("link", ""))
        if v in FAILING_VERDICTS:
            el = ET.SubElement(tc, "failure", message=f"{v}: {msg.splitlines()[0] if msg else r['raw']}"[:500], type=v)
            el.text = msg
            suite.set("failures", str(int(suite.get("failures")) + 1))
        elif v in ("known-bug", "skipped"):
            ET.SubElement(tc, "skipped", message=f"{v}: {link or msg}"[:500])
            suite.set("skipped", str(int(suite.get("skipped")) + 1))
        suite.set("tests", str(int(suite.get("tests")) + 1))

    for case in report["cases"]:
        for cell, r in case["results"].items():
            add(cell, case["id"], r)
    for c in report["cells"]:
        if suites[c["cell"]].get("tests") == "0":
            add(c["cell"], "(whole cell)", {"verdict": c["verdict"] if c["verdict"] != "complete" else "incomplete",
                                            "raw": c["status"], "message": c["reason"], "expectation": c["expectation"]})
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
