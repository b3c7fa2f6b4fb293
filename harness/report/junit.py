"""junit.xml for CI systems: one testcase per case x cell; news fails, known bugs and skips skip."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from harness.outcomes import FAILING_VERDICTS


def render_junit(report: dict[str, Any], path: Path) -> None:
    """Write the JUnit XML file."""
    root = ET.Element("testsuites", name="xla-seams")
    suites: dict[str, ET.Element] = {}
    for c in report["cells"]:
        suites[c["cell"]] = ET.SubElement(root, "testsuite", name=c["cell"], tests="0", failures="0", skipped="0")

    def add(cell: str, name: str, r: dict[str, Any]) -> None:
        suite = suites[cell]
        tc = ET.SubElement(suite, "testcase", classname=cell, name=name, time=str(r.get("duration") or 0))
        v = r["verdict"]
        msg = (r.get("message") or "").strip()
        link = (r.get("expectation") or {}).get("link", "")
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
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
