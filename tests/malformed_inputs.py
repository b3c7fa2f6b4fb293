"""A catalogue of malformed inputs, each one a file (or argument) every command must reject in one line.

Shared by tests/test_bad_input.py (every entry, in-process, plus a sample as real processes) and
counted in the closing figures. Each entry: name -> (command, {file name: bytes}, expected text).
`{F}` in the command is the first file's path, `{G}` the second's, `{T}` the temporary folder.
"""

from __future__ import annotations

import json

SHARD = "suites/shard_map/test_linearize_transpose.py::test_linearize_transpose[base]"
UNPARAM = "suites/shard_map/test_linearize_transpose.py::test_grad_of_shard_map_with_pvary"

_CELL = "include:\n  - {name: a-cpu, pins: {jax: 0.6.0}%s}\n"
_ISSUE = ("issues:\n  - id: x\n    tests: [suites/]\n    expect: fail\n    link: https://github.com/x/y/issues/1\n"
          "    reason: r\n")
_BOMB = "a: &a [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{b}: &{b} [{', '.join(['*' + a] * 10)}]\n" for a, b in zip("abcdefg", "bcdefgh"))


def _matrix(body: str) -> tuple[list[str], dict[str, bytes]]:
    return ["matrix", "--matrix", "{F}"], {"m.yaml": body.encode("utf-8", "surrogatepass")}


def _cell(extra: str) -> str:
    return _CELL % extra


def _issue(replace: dict[str, str] | None = None, add: str = "") -> str:
    text = _ISSUE
    for old, new in (replace or {}).items():
        assert old in text
        text = text.replace(old, new)
    return text + add


def _validate(body: str | bytes) -> tuple[list[str], dict[str, bytes]]:
    return ["validate", "{F}"], {"known.yaml": body if isinstance(body, bytes) else body.encode()}


_START = {"$report_type": "CellStart", "schema_version": 1, "cell": "a-cpu", "device": "cpu", "pins": {"jax": "0.6.0"}}
_END = {"$report_type": "CellEnd", "cell": "a-cpu", "complete": True, "status": "complete", "duration_s": 1.0}
_SEAMS = {"raw": "fail", "message": "m", "error_type": "E", "observations": {}}


def _report_call(**change) -> dict:
    rec = {"$report_type": "TestReport", "nodeid": "suites/x.py::t", "when": "call", "outcome": "failed",
           "duration": 0.1, "user_properties": [["seams", dict(_SEAMS)]]}
    for k, v in change.items():
        if k.startswith("seams_"):
            rec["user_properties"][0][1][k[6:]] = v
        else:
            rec[k] = v
    return rec


def _results(*middle, raw_lines: bytes = b"", start: dict | None = None) -> tuple[list[str], dict[str, bytes]]:
    lines = [json.dumps(start or _START).encode()] + [json.dumps(r).encode() for r in middle]
    body = b"\n".join(lines) + b"\n" + raw_lines + json.dumps(_END).encode() + b"\n"
    return ["report", "{F}", "--out", "{T}/out"], {"a.jsonl": body}


_GOOD_REPORT = {"schema_version": 1, "generated_at": "2026-11-23T00:00:00+00:00", "counts": {"ok": 1}, "errors": [],
                "cells": [{"cell": "a-cpu", "device": "cpu", "status": "complete", "reason": "", "verdict": "complete",
                           "pins": {"jax": "0.6.0"}, "install_line": "pip install jax==0.6.0", "versions": {"jax": "0.6.0"},
                           "devices": {}, "python": "3.11", "platform": "linux", "run_env": {}, "counts": {"ok": 1},
                           "stale_expectations": [], "expectation": None}],
                "cases": [{"id": "suites/x.py::t", "family": "x",
                           "results": {"a-cpu": {"raw": "pass", "verdict": "ok", "observations": {}}}}]}


def _diff(doc: object | bytes) -> tuple[list[str], dict[str, bytes]]:
    bad = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return ["diff", "{F}", "{G}"], {"bad.json": bad, "good.json": json.dumps(_GOOD_REPORT).encode()}


def _report_with(**change) -> dict:
    doc = json.loads(json.dumps(_GOOD_REPORT))
    for path, value in change.items():
        node = doc
        keys = path.split("__")
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        node[keys[-1] if not isinstance(node, list) else int(keys[-1])] = value
    return doc


def _bisect(test_id: str, *more: str) -> tuple[list[str], dict[str, bytes]]:
    return ["bisect", test_id, "--package", "jax", "--good", "0.5.3", "--bad", "0.6.0", *more], {}


CATALOGUE: dict[str, tuple[list[str], dict[str, bytes], str]] = {}


def _add(name: str, spec: tuple[list[str], dict[str, bytes]], expected: str = "") -> None:
    CATALOGUE[name] = (spec[0], spec[1], expected)


# --- matrix files: encodings, bombs, sizes, shapes -------------------------------------------------
_add("matrix: not UTF-8", (["matrix", "--matrix", "{F}"], {"m.yaml": b"include:\n  - {name: \xff\xfe-cpu}\n"}), "not UTF-8")
_add("matrix: binary file", (["matrix", "--matrix", "{F}"], {"m.yaml": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"}), "")
_add("matrix: alias bomb", _matrix(_BOMB), "alias bomb")
_add("matrix: alias cycle", _matrix("&a [*a]\n"), "")
_add("matrix: oversized file", _matrix("# " + "x" * 2_000_000 + "\n"), "larger than")
_add("matrix: nested 10000 deep", _matrix("[" * 10000 + "]" * 10000), "nested deeper")
_add("matrix: block nesting 300 deep", _matrix("".join("  " * i + "- \n" for i in range(300))), "nested deeper")
_add("matrix: nested 100 deep", _matrix("include: " + "[" * 100 + "]" * 100 + "\n"), "nested deeper")
_add("matrix: a list as a key", _matrix("? [a, b]\n: 1\n"), "a key must be a plain name")
_add("matrix: a mapping as a key", _matrix("{{a: 1}: 1}\n"), "a key must be a plain name")
_add("matrix: a python tag", _matrix("!!python/object/apply:os.system [echo hi]\n"), "YAML syntax error")
_add("matrix: two documents", _matrix("include: []\n---\ninclude: []\n"), "")
_add("matrix: a list at the top", _matrix("- a\n- b\n"), "must be a mapping")
_add("matrix: a scalar at the top", _matrix("hello\n"), "must be a mapping")
_add("matrix: merge of a list", _matrix("x: &x [1]\ninclude:\n  - {<<: *x, name: a-cpu}\n"), "")
_add("matrix: duplicate key", _matrix("include: []\ninclude: []\n"), "duplicate key")
_add("matrix: schema true", _matrix("schema: true\n"), "schema True is not supported")
_add("matrix: schema a list", _matrix("schema: [1]\n"), "is not supported")
_add("matrix: stacks a list", _matrix("stacks: [a]\n"), "stacks must map")
_add("matrix: stack a list", _matrix("stacks: {a: [1]}\n"), "stack 'a' must be a mapping")
_add("matrix: stack name with a newline", _matrix('stacks: {"a\\n": {pins: {jax: 0.6.0}}}\n'), "stack name")
_add("matrix: stack name a number", _matrix("stacks: {1: {pins: {jax: 0.6.0}}}\n"), "stack name")
_add("matrix: devices a string", _matrix("stacks: {a: {pins: {jax: 0.6.0}}}\ndevices: cpu\n"), "devices must be a list")
_add("matrix: devices nested list", _matrix("stacks: {a: {pins: {jax: 0.6.0}}}\ndevices: [[cpu]]\n"), "is not one of")
_add("matrix: devices unknown", _matrix("stacks: {a: {pins: {jax: 0.6.0}}}\ndevices: [fpga]\n"), "is not one of")
_add("matrix: include a mapping", _matrix("include: {name: a-cpu}\n"), "include must be a list")
_add("matrix: include entry a list", _matrix("include: [[1]]\n"), "an include entry must be a mapping")
_add("matrix: include entry a string", _matrix("include: [a-cpu]\n"), "an include entry must be a mapping")
_add("matrix: name a number", _matrix("include:\n  - {name: 123, pins: {jax: 0.6.0}}\n"), "cell name 123")
_add("matrix: name a list", _matrix("include:\n  - {name: [a-cpu], pins: {jax: 0.6.0}}\n"), "cell name")
_add("matrix: name with a trailing newline", _matrix('include:\n  - {name: "a-cpu\\n", pins: {jax: 0.6.0}}\n'), "cell name")
_add("matrix: name with a NUL", _matrix('include:\n  - {name: "a\\0-cpu", pins: {jax: 0.6.0}}\n'), "cell name")
_add("matrix: name with a slash", _matrix("include:\n  - {name: ../a-cpu, pins: {jax: 0.6.0}}\n"), "cell name")
_add("matrix: name with a space", _matrix("include:\n  - {name: 'a b-cpu', pins: {jax: 0.6.0}}\n"), "cell name")
_add("matrix: name missing", _matrix("include:\n  - {pins: {jax: 0.6.0}}\n"), "needs a name")
_add("matrix: device a list", _matrix("include:\n  - {name: a-cpu, device: [cpu], pins: {jax: 0.6.0}}\n"), "is not one of")
_add("matrix: pins a list", _matrix("include:\n  - {name: a-cpu, pins: [jax]}\n"), "pins must map")
_add("matrix: pin a list", _matrix("include:\n  - {name: a-cpu, pins: {jax: [0.6.0]}}\n"), "is not a version")
_add("matrix: pin a bool", _matrix("include:\n  - {name: a-cpu, pins: {jax: true}}\n"), "is not a version")
_add("matrix: pin a mapping", _matrix("include:\n  - {name: a-cpu, pins: {jax: {v: 1}}}\n"), "a source pin is {path: DIR} or {git: REPO")
_add("matrix: pin null", _matrix("include:\n  - {name: a-cpu, pins: {jax: null}}\n"), "is not a version")
_add("matrix: pin with a newline", _matrix('include:\n  - {name: a-cpu, pins: {jax: "0.6.0\\n"}}\n'), "is not a PEP 440 version")
_add("matrix: pin a range", _matrix("include:\n  - {name: a-cpu, pins: {jax: '>=0.6'}}\n"), "is not a PEP 440 version")
_add("matrix: package name a list key", _matrix("include:\n  - name: a-cpu\n    pins:\n      ? [jax]\n      : 0.6.0\n"), "a key must be a plain name")
_add("matrix: package name with a slash", _matrix("include:\n  - {name: a-cpu, pins: {../jax: 0.6.0}}\n"), "is not a package name")
_add("matrix: package name a number", _matrix("include:\n  - {name: a-cpu, pins: {1: 0.6.0}}\n"), "is not a package name")
_add("matrix: timeout true", _matrix(_cell(", timeout_s: true")), "timeout_s must be a positive integer")
_add("matrix: timeout negative", _matrix(_cell(", timeout_s: -5")), "timeout_s must be a positive integer")
_add("matrix: timeout zero", _matrix(_cell(", timeout_s: 0")), "timeout_s must be a positive integer")
_add("matrix: timeout a string", _matrix(_cell(", timeout_s: '30'")), "timeout_s must be a positive integer")
_add("matrix: timeout a fraction", _matrix(_cell(", timeout_s: 1.5")), "timeout_s must be a positive integer")
_add("matrix: timeout a list", _matrix(_cell(", timeout_s: [30]")), "timeout_s must be a positive integer")
_add("matrix: env a list", _matrix(_cell(", env: [A]")), "env must map")
_add("matrix: env value a list", _matrix(_cell(", env: {A: [1]}")), "is not a string or number")
_add("matrix: env value a bool", _matrix(_cell(", env: {A: true}")), "is not a string or number")
_add("matrix: env name with a newline", _matrix(_cell(', env: {"A\\nB": 1}')), "is not an environment variable name")
_add("matrix: env name lower case", _matrix(_cell(", env: {a: 1}")), "is not an environment variable name")
_add("matrix: extras a mapping", _matrix(_cell(", extras: {flax: 1}")), "extras must be a list of strings")
_add("matrix: extras a number", _matrix(_cell(", extras: [1]")), "extras must be a list of strings")
_add("matrix: extras with a newline", _matrix(_cell(', extras: ["flax==0.12\\n"]')), "control character")
_add("matrix: extras an option", _matrix(_cell(", extras: ['-e .']")), "")
_add("matrix: index_url a list", _matrix(_cell(", index_url: [x]")), "index_url must be a string")
_add("matrix: index_url with a newline", _matrix(_cell(', index_url: "https://x\\n"')), "control character")
_add("matrix: find_links with a NUL", _matrix(_cell(', find_links: ["x\\0"]')), "control character")
_add("matrix: runs_on a mapping", _matrix(_cell(", runs_on: {a: 1}")), "runs_on must be a string")
_add("matrix: exclude a mapping", _matrix("stacks: {a: {pins: {jax: 0.6.0}}}\nexclude: {stack: a}\n"), "exclude must be a list")
_add("matrix: exclude stack a list", _matrix("stacks: {a: {pins: {jax: 0.6.0}}}\nexclude: [{stack: [a]}]\n"), "exclude names unknown stack")
_add("matrix: exclude device unknown", _matrix("stacks: {a: {pins: {jax: 0.6.0}}}\nexclude: [{device: fpga}]\n"), "is not one of")
_add("matrix: exclude entry a string", _matrix("stacks: {a: {pins: {jax: 0.6.0}}}\nexclude: [a]\n"), "must be a mapping")
_add("matrix: defaults a list", _matrix("defaults: [1]\n"), "defaults must be a mapping")
_add("matrix: default device a list", _matrix("defaults: {device: [cpu]}\n"), "is not one of")
_add("matrix: validate a bad matrix", (["validate", "{F}"], {"m.yaml": _cell(", timeout_s: false").encode()}), "timeout_s")

# --- known-issues files -----------------------------------------------------------------------------
_add("issues: not UTF-8", _validate(b"issues:\n  - id: \xc3\x28\n"), "not UTF-8")
_add("issues: binary", _validate(b"\x00\x01\x02issues"), "")
_add("issues: alias bomb", _validate("issues: " + _BOMB.replace("\n", "\n  ")), "")
_add("issues: a mapping", _validate("issues: {a: 1}\n"), "'issues' must be a list")
_add("issues: entry a number", _validate("issues: [1]\n"), "must be a mapping")
_add("issues: id a list", _validate(_issue({"id: x": "id: [x]"})), "'id' must be a non-empty string")
_add("issues: id empty", _validate(_issue({"id: x": "id: ''"})), "'id' must be a non-empty string")
_add("issues: id with a newline", _validate(_issue({"id: x": 'id: "x\\n"'})), "control character")
_add("issues: tests a mapping", _validate(_issue({"tests: [suites/]": "tests: {a: 1}"})), "'tests' must be")
_add("issues: tests a number", _validate(_issue({"tests: [suites/]": "tests: [1]"})), "'tests' must be")
_add("issues: tests empty", _validate(_issue({"tests: [suites/]": "tests: []"})), "'tests' must be")
_add("issues: test id with a NUL", _validate(_issue({"tests: [suites/]": 'tests: ["suites/\\0"]'})), "control character")
_add("issues: expect a list", _validate(_issue({"expect: fail": "expect: [fail]"})), "is not a failing outcome")
_add("issues: expect a mapping", _validate(_issue({"expect: fail": "expect: {fail: 1}"})), "is not a failing outcome")
_add("issues: expect pass", _validate(_issue({"expect: fail": "expect: pass"})), "is not a failing outcome")
_add("issues: when a list", _validate(_issue(add="    when: [jax]\n")), "'when' must map")
_add("issues: when spec a list", _validate(_issue(add="    when: {jax: ['>=1']}\n")), "is not a PEP 440 specifier")
_add("issues: when spec a number", _validate(_issue(add="    when: {jax: 1}\n")), "is not a PEP 440 specifier")
_add("issues: when spec with a newline", _validate(_issue(add='    when: {jax: ">=1\\n"}\n')), "is not a PEP 440 specifier")
_add("issues: when package a number", _validate(_issue(add="    when: {1: '>=1'}\n")), "is not a package name")
_add("issues: when package a list key", _validate(_issue(add="    when:\n      ? [jax]\n      : '>=1'\n")), "a key must be a plain name")
_add("issues: unknown device", _validate(_issue(add="    devices: [fpga]\n")), "device 'fpga' is not one of")
_add("issues: devices a mapping", _validate(_issue(add="    devices: {cpu: 1}\n")), "'devices' must be a list")
_add("issues: device a number", _validate(_issue(add="    devices: [1]\n")), "is not one of")
_add("issues: match a list", _validate(_issue(add="    match: [x]\n")), "match must be a regex string")
_add("issues: match not a regex", _validate(_issue(add="    match: '('\n")), "match is not a valid regex")
_add("issues: match a huge repeat", _validate(_issue(add="    match: 'a{99999999999999}'\n")), "match is not a valid regex")
_add("issues: link a number", _validate(_issue({"link: https://github.com/x/y/issues/1": "link: 1"})), "'link' must be a non-empty string")
_add("issues: link with a space", _validate(_issue({"link: https://github.com/x/y/issues/1": "link: 'https://x y'"})), "link must be an https://")
_add("issues: link javascript", _validate(_issue({"link: https://github.com/x/y/issues/1": "link: 'javascript:alert(1)'"})), "link must be an https://")
_add("issues: reason a list", _validate(_issue({"reason: r": "reason: [r]"})), "'reason' must be a non-empty string")
_add("issues: reason null", _validate(_issue({"reason: r": "reason: null"})), "'reason' must be a non-empty string")
_add("issues: unknown key", _validate(_issue(add="    severity: high\n")), "unknown key 'severity'")
_add("issues: list key in an entry", _validate(_issue(add="    ? [a]\n    : 1\n")), "a key must be a plain name")
_add("issues: duplicate id", _validate(_ISSUE + _ISSUE.replace("issues:\n", "")), "duplicate expectation id")
_add("issues: top-level list", _validate("- 1\n"), "must be a mapping")
_add("issues: run with a bad --expectations", (["run", "--cell", "jax060-cpu", "--expectations", "{F}", "--out", "{T}/o"],
                                               {"k.yaml": _issue(add="    devices: [fpga]\n").encode()}), "fpga")

# --- results files -----------------------------------------------------------------------------------
_add("results: binary", (["report", "{F}", "--out", "{T}/out"], {"a.jsonl": b"\x7fELF\x02\x01\x01\x00\x00\x00\n\x00"}), "not JSON")
_add("results: not UTF-8", _results(raw_lines=b'{"$report_type": "TestStart", "nodeid": "\xff"}\n'), "not JSON")
_add("results: nested 100000 deep", _results(raw_lines=b"[" * 100000 + b"]" * 100000 + b"\n"), "nested too deeply")
_add("results: observations 100 deep", _results(_report_call(seams_observations=json.loads("{\"a\":" * 100 + "1" + "}" * 100))), "nested deeper")
_add("results: report type a list", _results({"$report_type": ["TestStart"]}), "'$report_type' must be a string")
_add("results: report type a number", _results({"$report_type": 5}), "'$report_type' must be a string")
_add("results: unknown record", _results({"$report_type": "Bogus"}), "unknown record type")
_add("results: a JSON array line", _results(raw_lines=b"[1, 2]\n"), "not a results record")
_add("results: a null line", _results(raw_lines=b"null\n"), "not a results record")
_add("results: duration a string", _results(_report_call(duration="slow")), "duration must be a number")
_add("results: duration a bool", _results(_report_call(duration=True)), "duration must be a number")
_add("results: user_properties a mapping", _results(_report_call(user_properties={"seams": 1})), "user_properties must be a list")
_add("results: user_properties a bare name", _results(_report_call(user_properties=[["seams"]])), "[name, value] pairs")
_add("results: user_properties a string", _results(_report_call(user_properties=["seams"])), "[name, value] pairs")
_add("results: seams a list", _results(_report_call(user_properties=[["seams", [1]]])), "needs a raw outcome")
_add("results: seams raw unknown", _results(_report_call(seams_raw="sometimes")), "needs a raw outcome")
_add("results: seams raw a list", _results(_report_call(seams_raw=["fail"])), "needs a raw outcome")
_add("results: seams message a number", _results(_report_call(seams_message=5)), "seams.message must be a string")
_add("results: seams error_type a mapping", _results(_report_call(seams_error_type={})), "seams.error_type must be a string")
_add("results: seams observations a list", _results(_report_call(seams_observations=[1])), "seams.observations must be an object")
_add("results: when unknown", _results(_report_call(when="later")), "TestReport without nodeid/when")
_add("results: nodeid a number", _results(_report_call(nodeid=5)), "TestReport without nodeid/when")
_add("results: TestStart nodeid a list", _results({"$report_type": "TestStart", "nodeid": ["x"]}), "TestStart without a nodeid")
_add("results: RunInfo versions numbers", _results({"$report_type": "RunInfo", "schema_version": 1, "versions": {"jax": 6}}), "versions must map")
_add("results: RunInfo versions a list", _results({"$report_type": "RunInfo", "schema_version": 1, "versions": ["jax"]}), "bad RunInfo record")
_add("results: CellStart pins a list", _results(start={**_START, "pins": ["jax"]}), "bad CellStart record")
_add("results: CellStart pin a number", _results(start={**_START, "pins": {"jax": 6}}), "bad CellStart record")
_add("results: CellStart device unknown", _results(start={**_START, "device": "fpga"}), "bad CellStart record")
_add("results: CellStart cell a list", _results(start={**_START, "cell": ["a"]}), "bad CellStart record")
_add("results: Collected count a string", _results({"$report_type": "Collected", "count": "3"}), "bad Collected record")
_add("results: Collected count a bool", _results({"$report_type": "Collected", "count": True}), "bad Collected record")
_add("results: TestCrash returncode a string", _results({"$report_type": "TestCrash", "nodeid": "x", "returncode": "x"}), "bad TestCrash record")
_add("results: TestTimeout timeout a string", _results({"$report_type": "TestTimeout", "nodeid": "x", "timeout_s": "x"}), "bad TestTimeout record")
_add("results: CellEnd status unknown", _results({**_END, "status": "great"}), "bad CellEnd record")
_add("results: first record not CellStart", (["report", "{F}", "--out", "{T}/out"],
                                              {"a.jsonl": json.dumps(_END).encode() + b"\n"}), "must begin with a CellStart")
_add("results: two CellStarts", _results(_START), "a second CellStart")
_add("results: empty file", (["report", "{F}", "--out", "{T}/out"], {"a.jsonl": b""}), "empty results file")
_add("results: a folder with no results", (["report", "{T}", "--out", "{T}/out"], {}), "no results files")

# --- diff inputs -------------------------------------------------------------------------------------
_add("diff: binary", _diff(b"\x00\x01\x02"), "not JSON")
_add("diff: not UTF-8", _diff(b'{"schema_version": 1, "cases": "\xff"}'), "not JSON")
_add("diff: nested 100000 deep", _diff(b"[" * 100000 + b"]" * 100000), "nested too deeply")
_add("diff: a list", _diff([1, 2]), "not a schema-1 report.json")
_add("diff: schema a string", _diff(_report_with(schema_version="1")), "not a schema-1 report.json")
_add("diff: cases a mapping", _diff(_report_with(cases={})), "cases: {} is not of type 'array'")
_add("diff: cells a mapping", _diff(_report_with(cells={})), "cells: {} is not of type 'array'")
_add("diff: case a number", _diff(_report_with(cases=[1])), "cases/0: 1 is not of type 'object'")
_add("diff: case id a number", _diff(_report_with(cases__0__id=1)), "cases/0/id: 1 is not of type")
_add("diff: results a list", _diff(_report_with(cases__0__results=[])), "cases/0/results: [] is not of type 'object'")
_add("diff: result a number", _diff(_report_with(cases__0__results={"a-cpu": 1})), "cases/0/results/a-cpu: 1 is not of type")
_add("diff: verdict a number", _diff(_report_with(cases__0__results={"a-cpu": {"raw": "pass", "verdict": 1}})), "cases/0/results/a-cpu/verdict: 1 is not one of")
_add("diff: observations a list", _diff(_report_with(cases__0__results={"a-cpu": {"raw": "pass", "verdict": "ok", "observations": [1]}})),
     "observations: [1] is not of type")
_add("diff: cell a string", _diff(_report_with(cells=["a-cpu"])), "cells/0: 'a-cpu' is not of type 'object'")
_add("diff: cell name a number", _diff(_report_with(cells__0__cell=1)), "cells/0/cell: 1 is not of type")
_add("diff: cell expectation a list", _diff(_report_with(cells__0__expectation=[1])), "cells/0/expectation: [1] is not of type")
_add("diff: cell pins a list", _diff(_report_with(cells__0__pins=["jax"])), "cells/0/pins: ['jax'] is not of type")
_add("diff: result for an unknown cell", _diff(_report_with(cases__0__results={"b-cpu": {"raw": "pass", "verdict": "ok"}})),
     "cell 'b-cpu' is not among the report's cells")
_add("diff: raw outcome unknown", _diff(_report_with(cases__0__results={"a-cpu": {"raw": "meh", "verdict": "ok"}})), "is not one of")
_add("diff: counts a string", _diff(_report_with(counts={"ok": "1"})), "counts/ok")
_add("diff: generated_at missing", _diff({k: v for k, v in _GOOD_REPORT.items() if k != "generated_at"}), "generated_at")
_add("history: a report of the wrong shape", (["history", "{F}", "{G}", "--out", "{T}/h"],
                                              {"bad.json": json.dumps(_report_with(cells={})).encode(),
                                               "good.json": json.dumps(_GOOD_REPORT).encode()}), "is not of type")

# --- bisect ------------------------------------------------------------------------------------------
_add("bisect: unknown parameter", _bisect(SHARD.replace("[base]", "[bse]")), "declares no such parameter")
_add("bisect: parameter on an unparametrized test", _bisect(UNPARAM + "[base]"), "not parametrized")
_add("bisect: unclosed parameter", _bisect(SHARD.replace("[base]", "[base")), "not a pytest node id")
_add("bisect: id with a newline", _bisect(SHARD + "\n"), "unknown test id")
_add("bisect: id outside the checkout", _bisect("../../etc/passwd::x"), "unknown test id")
_add("bisect: --from-report not JSON", (["bisect", "--from-report", "{F}", "--cell", "a-cpu", "--case", "x"],
                                        {"r.json": b"\xff\x00"}), "not JSON")
_add("bisect: --from-report wrong shape", (["bisect", "--from-report", "{F}", "--cell", "a-cpu", "--case", "x"],
                                           {"r.json": json.dumps(_report_with(cases={})).encode()}), "is not of type")

_add("bisect: --subdir leaving the repository", _bisect(SHARD, "--commits", "--repo", "{T}", "--subdir", "../x"),
     "name a folder inside --repo")

# --- numbers longer than Python converts (4300 digits): bad input wherever the number is parsed ----------
_DIGITS = "0." + "9" * 5000
_add("matrix: a pin of 5000 digits", _matrix(f"include:\n  - {{name: a-cpu, pins: {{jax: '{_DIGITS}'}}}}\n"), "more than 4300 digits")
_add("results: a pin of 5000 digits", _results(_report_call(), start={**_START, "pins": {"jax": _DIGITS}}), "more than 4300 digits")
_add("bisect: --good of 5000 digits", (["bisect", SHARD, "--package", "jax", "--good", _DIGITS, "--bad", "0.6.0"], {}),
     "more than 4300 digits")
_add("bisect: --from-report with a pin of 5000 digits",
     (["bisect", "--from-report", "{F}", "--cell", "a-cpu", "--case", SHARD, "--good", "0.5.3"],
      {"r.json": json.dumps(_report_with(cells__0__pins={"jax": _DIGITS}, cases__0__id=SHARD)).encode()}),
     "more than 4300 digits")

# --- a path longer than the file system takes (ENAMETOOLONG), for every kind of path option -------------
_LONG = "{T}/" + "x" * 5000
_add("validate: a file name of 5000 characters", (["validate", _LONG], {}), "File name too long")
_add("matrix: --matrix of 5000 characters", (["matrix", "--matrix", _LONG], {}), "File name too long")
_add("report: a results path of 5000 characters", (["report", _LONG, "--out", "{T}/o"], {}), "File name too long")
_add("history: --out of 5000 characters", (["history", "{F}", "--out", _LONG], {"r.json": json.dumps(_GOOD_REPORT).encode()}),
     "File name too long")
_add("diff: --markdown of 5000 characters", (["diff", "{F}", "{F}", "--markdown", _LONG], {"r.json": json.dumps(_GOOD_REPORT).encode()}),
     "File name too long")
_add("reduce: a script path of 5000 characters", (["reduce", _LONG], {}), "File name too long")

# --- a lone surrogate in a path given in-process (main(argv) from Python; a real argv cannot hold one) --
_SUR = "{T}/x\ud800y"
_add("validate: a file name with a lone surrogate", (["validate", _SUR], {}), "lone surrogate")
_add("matrix: --matrix with a lone surrogate", (["matrix", "--matrix", _SUR], {}), "lone surrogate")
_add("report: --out with a lone surrogate", (["report", "{F}", "--out", _SUR], _results(_report_call())[1]), "lone surrogate")
_add("history: --out with a lone surrogate", (["history", "{F}", "--out", _SUR], {"r.json": json.dumps(_GOOD_REPORT).encode()}),
     "lone surrogate")
_add("diff: --markdown with a lone surrogate", (["diff", "{F}", "{F}", "--markdown", _SUR],
                                                {"r.json": json.dumps(_GOOD_REPORT).encode()}), "lone surrogate")
_add("reduce: a script path with a lone surrogate", (["reduce", _SUR], {}), "lone surrogate")
_add("run: --out with a lone surrogate", (["run", "--cell", "jax060-cpu", "--build-only", "--out", _SUR], {}),
     "lone surrogate")
_add("news: --out with a lone surrogate", (["news", "{F}", "{F}", "--dry-run", "--out", _SUR],
                                           {"r.json": json.dumps(_GOOD_REPORT).encode()}), "lone surrogate")

# --- a -j worker that stops on bad input: one `error:` line (the worker's reason, what finished), exit 2 --
_TWO_CELLS = b"include:\n  - {name: a-cpu, pins: {jax: 0.6.0}}\n  - {name: b-cpu, pins: {jax: 0.6.0}}\n"
_add("run -j 2: one cell's results file is a folder", (["run", "--matrix", "{F}", "-j", "2", "--build-only", "--out", "{T}/o"],
                                                       {"m.yaml": _TWO_CELLS, "o/results/b-cpu.jsonl/x": b""}),
     "b-cpu: ")

# --- news --repo: what gh gets as --repo=VALUE is OWNER/NAME, never an option or a path ------------------
for _repo in ("--help", "-R", "o/r --title x", "../../x", "https://github.com/o/r", "o/r\n"):
    _add(f"news: --repo {_repo!r}", (["news", "{F}", "{F}", "--dry-run", f"--repo={_repo}", "--out", "{T}/n"],
                                     {"r.json": json.dumps(_GOOD_REPORT).encode()}), "give OWNER/NAME")

# --- ambiguous options (issue 31): refused in one line, never a silent choice --------------------------
_JAX_TREE = {"pyproject.toml": b'[project]\nname = "jax"\nversion = "0.6.0"\n', "jax/__init__.py": b"",
             "jax/version.py": b'_version = "0.6.0"\n'}
_add("run: --with holds a package twice", (["run", "--sweep", "jax==0.6.0", "--with", "flax==0.10.0", "--with",
                                           "flax==0.10.1", "--build-only", "--out", "{T}/o"], {}), "names flax twice")
_add("run: --with gives a package a source twice", (["run", "--cell", "jax060-cpu", "--with", "jax={T}", "--with",
                                                     "jax={T}", "--build-only", "--out", "{T}/o"], _JAX_TREE),
     "more than once")
_add("run: --with gives a package a source and a version", (["run", "--sweep", "jax==0.6.0", "--with", "jax={T}",
                                                             "--with", "jax==0.6.0", "--build-only", "--out", "{T}/o"],
                                                            _JAX_TREE), "both a source and a version")
_add("run: --pair for a package the cell lacks", (["run", "--cell", "jax060-cpu", "--with", "jax={T}", "--pair",
                                                   "torch==2.0.0", "--build-only", "--out", "{T}/o"], _JAX_TREE),
     "has no torch")
_add("run: --cell twice", (["run", "--cell", "jax060-cpu", "--cell", "jax060-cpu", "--build-only", "--out", "{T}/o"], {}),
     "given more than once")
_add("run: --pair twice", (["run", "--cell", "jax060-cpu", "--with", "jax={T}", "--pair", "jaxlib==0.6.0", "--pair",
                            "jaxlib==0.6.1", "--build-only", "--out", "{T}/o"], _JAX_TREE), "names jaxlib twice")

# --- output folders ----------------------------------------------------------------------------------
_add("report: --out names a file", (["report", "{G}", "--out", "{F}"],
                                    {"file.txt": b"x", "a.jsonl": json.dumps(_START).encode() + b"\n"}), "is a file, not a folder")
_add("run: --out names a file", (["run", "--cell", "jax060-cpu", "--out", "{F}"], {"file.txt": b"x"}), "is a file, not a folder")
_add("run: --out under a file", (["run", "--cell", "jax060-cpu", "--out", "{F}/sub"], {"file.txt": b"x"}), "")
_add("diff: --markdown into a file's child", (["diff", "{F}", "{F}", "--markdown", "{F}/sub/d.md"],
                                              {"good.json": json.dumps(_GOOD_REPORT).encode()}), "cannot write")
