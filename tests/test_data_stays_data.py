"""Untrusted input stays data (issue 31): a hostile string in ANY field of a results file or a report.json
never executes, wherever the harness puts it (a standalone script, a Run block, a filed issue, bisect's argv).

The fields are enumerated from the schemas (harness/schema/*.json, the results schema's `$defs/seams` for the
plugin's payload), not listed by hand: every field gets its own examples. Hypothesis draws the hostile value
(a coding cookie, newlines and other line separators - U+2028, U+0085, \\f, \\v -, NUL, quotes, `$(...)`,
option-looking words, fence breakers) around payloads that would create a canary file if they ran. Then what
was generated is RUN in a scratch folder: every repro/*.py with python, every ```sh block with bash (the
tools it calls stubbed, recording their argv), every ```python block of a filed issue with python, and
`news --dry-run` with bisect's argv parsed by bisect's own parser. Checked: no canary anywhere, nothing
written outside the output folder, no exit 3, and every pytest/harness/bisect argv holds the id after `--`.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from markdown_it import MarkdownIt  # noqa: E402

from harness.cli import build_parser, main  # noqa: E402
from harness.paths import REPO  # noqa: E402
from harness.report.standalone import HEADER_LINES  # noqa: E402
from tests.results_fixtures import PVARY, SHARD, case  # noqa: E402

SCHEMAS = REPO / "harness" / "schema"
CANARY = "seams_canary"
KEY, VALUE, ITEM = "KEY", "VALUE", "ITEM"  # a mapping's key, a mapping's value, a list's item
EXAMPLES = settings(max_examples=2, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

# What would run if a value became code: Python that writes the canary, shell that writes it (a builtin
# redirection: the Run block's PATH holds only stubs), and the same in UTF-7 behind a coding cookie.
_PY = f"open({CANARY!r},'w')"
_SH = f"echo x >{CANARY}"
# A coding cookie on line 1 or 2 makes Python decode the lines after it: under raw_unicode_escape the
# printable text `\u000a` is a newline, so a second value holding it becomes a line of code.
_STAGE2 = '\\u000aopen("' + CANARY + '","w")#'
PAYLOADS = [
    "coding:raw_unicode_escape", "# -*- coding: raw_unicode_escape -*-", "coding=unicode_escape", "coding:utf-7",
    f"x'{_STAGE2}'", _STAGE2, f"coding:raw_unicode_escape {_STAGE2}", "\\x0a" + _PY,
    *(f"{sep}{_PY}{sep}" for sep in ("\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0c", "\x0b", "\x00", "\x1c")),
    f"'; {_SH}; '", f'"; {_SH}; "', f"$({_SH})", f"`{_SH}`", f"\n{_SH}\n", f"'\n{_SH}\n#'", f"\\\n{_SH}",
    f"'''\n{_PY}\n'''", f'"""\n{_PY}\n"""', f"'); {_PY}; ('", f'"); {_PY}; ("', f"{{{_PY}}}",
    f"--script=/bin/sh -c '{_SH}'", "--script=PROGRAM", "-p", "--rootdir=/", "--help", "-", "--",
    f"\n```\n{_SH}\n```\n", f"\n```sh\n{_SH}\n```\n", f"</summary></details>\n\n```sh\n{_SH}\n```\n",
    f"</script><script>{_PY}</script>", f"<!-- {_SH}", "\ud800", "\x1b]0;x\x07\x1b[2J",
    # Markdown and HTML that would be a link, an image or a tag in a rendered page or filed issue
    f"![x](https://{CANARY}.invalid/p.png)", f"[x](javascript:{CANARY})", f'<img src="https://{CANARY}.invalid/p.png">',
    f"<a href='{CANARY}'>x</a>", f"[x]: https://{CANARY}.invalid\n[x]", f"<https://{CANARY}.invalid>",
]
hostile = st.one_of(
    st.builds(lambda a, p, b: a + p + b, st.text(max_size=3), st.sampled_from(PAYLOADS), st.text(max_size=3)),
    # inside a real case id with a core, so the script is still exported: the parameter carries the payload
    st.builds(lambda p: SHARD.replace("[base]", f"[base{p}]"), st.sampled_from(PAYLOADS)),
    st.text(alphabet=st.sampled_from(list("\n\r\x85\u2028\u2029\x00\x0b\x0c'\"`$;|&<>(){}#\\- =:x")), max_size=12),
)


def _deref(root: dict, node: dict) -> dict:
    while "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def schema_fields(root: dict, node: dict, path: tuple = ()) -> Iterator[tuple]:
    """Every place a value can sit in a document of this schema: a leaf, a mapping's key or value, a list's item."""
    node = _deref(root, node)
    types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    for key, sub in (node.get("properties") or {}).items():
        yield from schema_fields(root, sub, path + (key,))
    extra = node.get("additionalProperties")
    if "object" in types or "properties" in node or isinstance(extra, dict):
        yield path + (KEY,)
        if isinstance(extra, dict) and (extra.get("properties") or "$ref" in extra):
            yield from schema_fields(root, extra, path + (VALUE,))
        else:
            yield path + (VALUE,)
    elif "array" in types:
        items = node.get("items")
        if isinstance(items, dict) and ("properties" in _deref(root, items)):
            yield from schema_fields(root, items, path + (ITEM,))
        else:
            yield path + (ITEM,)
    elif "properties" not in node:
        yield path


def put(doc: Any, path: tuple, value: Any) -> None:
    """Set value at path, making (or taking the first of) whatever the path walks through."""
    head, rest = path[0], path[1:]
    if head == KEY:
        first = next((k for k in doc if not k.startswith("$")), None)  # a record keeps its $report_type
        doc[value] = doc.pop(first) if first is not None else "0.6.0"
        return
    if head == ITEM:
        if not doc:
            doc.append({} if rest else value)
        if not rest:
            doc[0] = value
            return
        doc[0] = doc[0] if isinstance(doc[0], dict) else {}
        return put(doc[0], rest, value)
    if head == VALUE:  # a record keeps its $report_type here too
        head = next((k for k in doc if not k.startswith("$")), None) or "jax"
    if not rest:
        doc[head] = value
        return
    if not isinstance(doc.get(head), (dict, list)):
        doc[head] = [] if rest[0] == ITEM else {}
    put(doc[head], rest, value)


RESULTS_SCHEMA = json.loads((SCHEMAS / "results-v1.json").read_text())
REPORT_SCHEMA = json.loads((SCHEMAS / "report-v1.json").read_text())
RESULTS_FIELDS = [(b["properties"]["$report_type"]["const"],) + f
                  for b in RESULTS_SCHEMA["oneOf"] if "const" in b["properties"]["$report_type"]
                  for f in schema_fields(RESULTS_SCHEMA, b)]
RESULTS_FIELDS += [("TestReport", "seams") + f for f in schema_fields(RESULTS_SCHEMA, RESULTS_SCHEMA["$defs"]["seams"])]
REPORT_FIELDS = list(schema_fields(REPORT_SCHEMA, REPORT_SCHEMA))

CELL = "jax060-cpu"
ENV = {"PJRT_DEVICE": "CPU", "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
# A record of each kind, for a field of a kind the baseline cell does not write.
EXTRA_RECORDS = {
    "TestCrash": {"nodeid": PVARY, "returncode": -6, "signal": "SIGABRT", "stderr_tail": "abort", "phase": "exit"},
    "PhaseTimeout": {"phase": "exit", "timeout_s": 60, "stderr_tail": "hung"},
    "TestTimeout": {"nodeid": PVARY, "timeout_s": 5, "stack": "frame"},
    "EnvError": {"cell": CELL, "reason": "uv failed"},
    "EnvVerified": {"cell": CELL, "reason": "verified", "versions": {"jax": "0.6.0"}},
    "CellSkipped": {"cell": CELL, "reason": "no tpu"},
    "StaleExpectation": {"id": "jax-1"},
    "Resumed": {"remaining": 1, "after": "xdist's workers died and left tests unrun", "nodeids": [PVARY]},
}
KNOWN = f"""issues:
  - id: jax-28260
    tests: ["{SHARD}"]
    when: {{jax: ">=0.6.0"}}
    expect: fail
    match: "linearized"
    link: https://github.com/jax-ml/jax/issues/28260
    reason: vma check
"""


def baseline_records() -> list[dict]:
    """A cell with a failing case that has a core (so a CASE.py is exported) and a passing one."""
    fail = case(SHARD, "fail", "AssertionError: the linearized function differs")
    fail[1]["user_properties"][0][1]["observations"]["falsifying_example"] = "Falsifying example: test_x(\n    x=1,\n)"
    return [{"$report_type": "CellStart", "schema_version": 1, "cell": CELL, "device": "cpu",
             "pins": {"jax": "0.6.0", "jaxlib": "0.6.0"}, "extras": ["optax==0.2.4"], "env": dict(ENV),
             "install_line": "pip install jax==0.6.0 jaxlib==0.6.0 optax==0.2.4", "started_at": "2026-01-01T00:00:00",
             "timeout_s": 900, "source": "matrices/default.yaml:3", "floating": {}},
            {"$report_type": "RunInfo", "schema_version": 1, "versions": {"jax": "0.6.0", "jaxlib": "0.6.0", "numpy": "2.2.6"},
             "python": "3.11.7", "platform": "linux-x86_64", "env": dict(ENV), "devices": {"device_count": 8}, "cell": CELL},
            {"$report_type": "Collected", "count": 2, "nodeids": [SHARD, PVARY], "selection": {"args": []}},
            {"$report_type": "TestStart", "nodeid": SHARD}, *fail[1:], *case(PVARY, "pass"),
            {"$report_type": "CellEnd", "complete": True, "status": "complete", "duration_s": 1.0}]


def hostile_results(field: tuple, value: Any, recs: list[dict] | None = None) -> list[dict]:
    recs = baseline_records() if recs is None else recs
    kind, path = field[0], field[1:]
    if path[:1] == ("seams",):  # the plugin's payload inside the failing TestReport
        target = next(r for r in recs if r["$report_type"] == "TestReport" and r["nodeid"] == SHARD and r["when"] == "call")
        return put(target["user_properties"][0][1], path[1:], value) or recs
    target = next((r for r in recs if r["$report_type"] == kind), None)
    if target is None:
        target = {"$report_type": kind, **copy.deepcopy(EXTRA_RECORDS[kind])}
        recs.insert(-1, target)
    put(target, path, value)
    return recs


class Scratch:
    """A scratch folder: inputs, the output folder, an empty folder things run in, stubs for the Run block."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="seams-data-"))
        self.out, self.cwd, self.stubs = self.root / "out", self.root / "cwd", self.root / "stubs"
        self.cwd.mkdir()
        self.stubs.mkdir()
        self.log = self.stubs / "argv.log"
        for tool in ("python", "python3", "python3.11", "pip", "uv", "gh"):  # record argv, NUL-separated, one line each
            stub = self.stubs / tool
            stub.write_text(f'#!/bin/bash\nprintf "%s\\0" "$0" "$@" >> {self.log}\nprintf "\\n" >> {self.log}\nexit 0\n')
            stub.chmod(0o755)

    def listing(self) -> set[str]:
        return {str(p.relative_to(self.root)) for p in self.root.rglob("*") if self.out not in p.parents and p != self.out}

    def run_python(self, path: Path) -> None:
        subprocess.run([sys.executable, "-I", str(path)], cwd=self.cwd, capture_output=True, timeout=60,
                       env={"PATH": str(self.stubs), "HOME": str(self.cwd)})

    def run_sh(self, text: str) -> None:
        script = self.stubs / "block.sh"
        script.write_text(text, encoding="utf-8", errors="surrogateescape")
        subprocess.run(["/bin/bash", "--noprofile", "--norc", str(script)], cwd=self.cwd, capture_output=True,
                       timeout=60, env={"PATH": str(self.stubs), "HOME": str(self.cwd)})
        script.unlink()

    @staticmethod
    def check_markup(text: str) -> None:
        """By rendering: no link, image or HTML tag in the Markdown carries a value from the input (the
        canary): a value is text, never `[x](URL)`, `![x](URL)`, `<img ...>` or `<https://...>`."""
        for tok in MarkdownIt("commonmark").parse(text):
            if tok.type == "html_block":
                assert not re.search(rf"<[A-Za-z][^>]*{CANARY}", tok.content), tok.content
            for child in tok.children or []:
                if child.type in ("link_open", "image"):
                    target = str(child.attrs.get("href") or child.attrs.get("src") or "")
                    assert CANARY not in target and not target.lower().startswith("javascript:"), target
                elif child.type == "html_inline":
                    assert not re.search(rf"<[A-Za-z][^>]*{CANARY}", child.content), child.content

    def run_markdown(self, text: str) -> None:
        """Every ```sh block with bash and every ```python block with python, as a reader pasting them would;
        and no link, image or tag from the input (check_markup)."""
        self.check_markup(text)
        for tok in MarkdownIt().parse(text):
            if tok.type != "fence":
                continue
            if tok.info.strip() == "sh":
                self.run_sh(tok.content)
            elif tok.info.strip() == "python":
                path = self.stubs / "block.py"
                path.write_text(tok.content, encoding="utf-8", errors="surrogateescape")
                self.run_python(path)
                path.unlink()

    @staticmethod
    def check_script(text: str) -> None:
        """By construction, not by payload: a script's only comments are the fixed header lines (a value
        from the results is a literal, never a comment Python reads a coding cookie from)."""
        comments = [ln for ln in text.splitlines() if ln.lstrip().startswith("#")]
        assert comments == list(HEADER_LINES), comments
        assert text.isascii() or all(ch.isprintable() or ch in "\n\t" for ch in text)

    def check(self, before: set[str]) -> None:
        """Nothing ran (no canary anywhere), nothing was written outside the output folder, every argv
        that ran pytest, the harness or bisect held its positional values after `--`."""
        canaries = [p for p in [*self.root.rglob(CANARY), REPO / CANARY, Path.cwd() / CANARY] if p.exists()]
        assert not canaries, f"generated text executed: {canaries}"
        assert not list(self.cwd.iterdir()), f"written outside --out: {list(self.cwd.iterdir())}"
        assert self.listing() - before <= {"stubs/argv.log"}, self.listing() - before
        for line in (self.log.read_bytes().split(b"\n") if self.log.exists() else []):
            argv = [a.decode("utf-8", "surrogateescape") for a in line.split(b"\0")[:-1]]
            if "pytest" in argv or "harness" in argv and "run" in argv:
                assert "--" in argv, argv

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _no_internal_error(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    assert rc in (0, 1, 2), f"exit {rc}: {err.getvalue()[-2000:]}"
    if rc == 2:
        assert len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
    return rc, out.getvalue()


@pytest.mark.parametrize("field", RESULTS_FIELDS, ids=lambda f: "/".join(map(str, f)))
@EXAMPLES
@given(value=hostile, with_known_issue=st.booleans(), second=st.none() | st.tuples(st.sampled_from(RESULTS_FIELDS), hostile))
def test_a_hostile_results_field_never_runs(field, value, with_known_issue, second):
    """One field hostile (each in turn), sometimes a second one too (a cookie in one, code in another)."""
    s = Scratch()
    try:
        recs = hostile_results(field, value)
        if second is not None:
            recs = hostile_results(second[0], second[1], recs)
        results = s.root / f"{CELL}.jsonl"
        results.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8", errors="surrogatepass")
        known = s.root / "known.yaml"
        known.write_text(KNOWN if with_known_issue else "issues: []\n")  # without one, the install line is line 2
        before = s.listing()
        _no_internal_error(["report", str(results), "--out", str(s.out), "--expectations", str(known)])
        for script in sorted((s.out / "repro").glob("*.py")):
            s.check_script(script.read_text(encoding="utf-8", errors="surrogateescape"))
            s.run_python(script)
        for md in sorted((s.out / "repro").glob("*.md")):
            s.run_markdown(md.read_text(encoding="utf-8", errors="surrogateescape"))
        if (s.out / "report.md").is_file():
            s.check_markup((s.out / "report.md").read_text(encoding="utf-8", errors="surrogateescape"))
        s.check(before)
    finally:
        s.close()


_BASE_REPORT: dict[str, Any] = {}


def base_reports() -> tuple[dict, dict]:
    """(last night, tonight): the baseline cell regressed (ok -> fail) as jax moved 0.5.3 -> 0.6.0."""
    if not _BASE_REPORT:
        s = Scratch()
        try:
            results = s.root / f"{CELL}.jsonl"
            results.write_text("".join(json.dumps(r) + "\n" for r in baseline_records()))
            known = s.root / "known.yaml"
            known.write_text("issues: []\n")
            _no_internal_error(["report", str(results), "--out", str(s.out), "--expectations", str(known)])
            _BASE_REPORT["new"] = json.loads((s.out / "report.json").read_text())
        finally:
            s.close()
        old = copy.deepcopy(_BASE_REPORT["new"])
        old["generated_at"] = "2025-12-31T00:00:00"
        for c in old["cells"]:
            c["pins"] = {"jax": "0.5.3", "jaxlib": "0.5.3"}
            c["versions"] = {**c["versions"], "jax": "0.5.3", "jaxlib": "0.5.3"}
        for k in old["cases"]:
            for r in k["results"].values():
                r.update(raw="pass", verdict="ok", message=None)
        _BASE_REPORT["old"] = old
    return copy.deepcopy(_BASE_REPORT["old"]), copy.deepcopy(_BASE_REPORT["new"])


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


_DEAD_PID = _dead_pid()


class _Bisect:
    """Stands in for news's `harness bisect` subprocess: its argv is parsed by bisect's own parser (a test id
    read as `--script` would run a program), then it answers like a bisect that found nothing."""

    seen: list[list[str]] = []
    returncode = 2

    def __init__(self, argv: list[str], **kw: Any) -> None:
        args = build_parser().parse_args(argv[3:])
        assert args.command == "bisect" and args.script is None, argv
        assert argv[-2] == "--" and args.test_id == argv[-1], argv
        self.pid = _DEAD_PID  # never a live process: a kill aimed at the stand-in reaches nobody
        _Bisect.seen.append(argv)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        return "", "error: stand-in bisect"


@pytest.mark.parametrize("field", REPORT_FIELDS, ids=lambda f: "/".join(map(str, f)))
@EXAMPLES
@given(value=hostile, night=st.sampled_from(["new", "old"]))
def test_a_hostile_report_field_never_runs_in_news(field, value, night, monkeypatch):
    import harness.nightly.filing as filing

    old, new = base_reports()
    put(new if night == "new" else old, field, value)
    s = Scratch()
    try:
        paths = {}
        for name, doc in (("old", old), ("new", new)):
            paths[name] = s.root / f"{name}.json"
            paths[name].write_text(json.dumps(doc), encoding="utf-8", errors="surrogatepass")
        before = s.listing()
        with monkeypatch.context() as m:
            m.setattr(filing.subprocess, "Popen", _Bisect)
            import harness.lifeline as lifeline

            m.setattr(lifeline, "sweep", lambda token, **kw: [])
            _rc, printed = _no_internal_error(["news", str(paths["old"]), str(paths["new"]), "--dry-run", "--max", "1",
                                               "--out", str(s.out)])
        s.run_markdown(printed)
        for issue in sorted(s.out.rglob("issue.md")):
            s.run_markdown(issue.read_text(encoding="utf-8", errors="surrogateescape"))
        s.check(before)
    finally:
        s.close()


def test_every_field_of_both_schemas_is_drawn():
    """The fields come from the schemas: a field added there is drawn here without editing this file."""
    assert ("CellStart", "install_line") in RESULTS_FIELDS and ("TestReport", "nodeid") in RESULTS_FIELDS
    assert ("TestReport", "seams", "observations", "falsifying_example") in RESULTS_FIELDS
    assert ("CellStart", "sources", VALUE, "location") in RESULTS_FIELDS
    assert ("cases", ITEM, "id") in REPORT_FIELDS and ("cells", ITEM, "run_env", KEY) in REPORT_FIELDS
    assert ("cases", ITEM, "results", VALUE, "expectation", "link") in REPORT_FIELDS
    print(f"{len(RESULTS_FIELDS)} results fields, {len(REPORT_FIELDS)} report fields")


def test_a_coding_cookie_in_the_case_id_and_code_in_the_install_line_do_not_run(tmp_path):
    """The drill of issue 31: the id's parameter holds `coding:raw_unicode_escape` (line 1 of the old header)
    and the install line `\\u000a` + code (line 2), which that cookie turned into a line of its own."""
    s = Scratch()
    try:
        cookie = SHARD.replace("[base]", "[base coding:raw_unicode_escape]")
        recs = hostile_results(("CellStart", "install_line"), f"pip install jax==0.6.0 'x{_STAGE2}'")
        for r in recs:
            if r.get("nodeid") == SHARD:
                r["nodeid"] = cookie
        (s.root / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        (s.root / "k.yaml").write_text("issues: []\n")
        before = s.listing()
        _no_internal_error(["report", str(s.root / "r.jsonl"), "--out", str(s.out), "--expectations", str(s.root / "k.yaml")])
        scripts = sorted((s.out / "repro").glob("*.py"))
        assert scripts, "the case still has its standalone script"
        for script in scripts:
            s.check_script(script.read_text())
            s.run_python(script)
        s.check(before)
    finally:
        s.close()


# --- Matrices, known issues, API ranges and the command line: input kinds of their own -----------------------
#
# A matrix reaches generated text through the cells `harness run` makes of it (CellStart: name, pins, extras,
# env, install line, index, runs_on, source); a known-issues file and an API-ranges file through the report's
# expectations and api-drift messages; a command-line value through whatever that command writes or runs.
# Each field (from the loaders' own key sets) and each value-taking option (from the commands' own parsers)
# is drawn hostile; the command runs in-process with the machine sealed (no network, no uv: nothing is
# built), cells on a device this machine lacks (tpu: recorded and skipped, never run), the harness's caches
# inside the output folder; then what was generated is run as above.

import errno as _errno  # noqa: E402
import socket as _socket  # noqa: E402

import yaml  # noqa: E402

from harness.cells import matrix as _matrix  # noqa: E402
from harness.judge import apis as _apis  # noqa: E402
from harness.judge import expectations as _expectations  # noqa: E402

_SHAPES = {"pins": "map", "env": "map", "when": "map", "extras": "list", "find_links": "list", "devices": "list",
           "tests": "list", "exclude": "list"}


def _kind_fields(prefix: tuple, keys: set[str]) -> Iterator[tuple]:
    for key in sorted(keys):
        shape = _SHAPES.get(key)
        if shape == "map":
            yield prefix + (key, KEY)
            yield prefix + (key, VALUE)
        elif shape == "list":
            yield prefix + (key, ITEM)
        else:
            yield prefix + (key,)


MATRIX_FIELDS = [*_kind_fields((), _matrix._TOP_KEYS - {"defaults", "stacks", "include"}), ("stacks", KEY),
                 *_kind_fields(("stacks", VALUE), _matrix._STACK_KEYS), *_kind_fields(("defaults",), _matrix._DEFAULT_KEYS),
                 *_kind_fields(("include", ITEM), _matrix._INCLUDE_KEYS)]
ISSUE_FIELDS = [("known-issues",) + f for f in _kind_fields(("issues", ITEM), _expectations._KEYS)]
API_FIELDS = [("api-ranges",) + f for f in _kind_fields(("apis", ITEM), _apis._KEYS)]

BASE_MATRIX = {"schema": 1, "description": "hostile", "defaults": {"device": "tpu", "timeout_s": 60, "env": {"JAX_PLATFORMS": "cpu"}},
               "stacks": {"s1": {"pins": {"jax": "0.6.0"}}}, "devices": ["tpu"], "exclude": [],
               "include": [{"name": "h-tpu", "device": "tpu", "pins": {"jax": "0.6.0", "jaxlib": "0.6.0"},
                            "extras": ["optax==0.2.4"], "env": {"XLA_FLAGS": "--x"}, "timeout_s": 60,
                            "index_url": "https://pypi.org/simple", "find_links": ["https://example.org/wheels"],
                            "runs_on": "self-hosted"}]}
BASE_ISSUES = yaml.safe_load(KNOWN)
BASE_ISSUES["issues"][0]["devices"] = ["cpu"]
BASE_APIS = {"apis": [{"api": "jax.lax.pvary", "package": "jax", "shipped": ">=0.6.0", "evidence": "tags",
                       "link": "https://github.com/jax-ml/jax/blob/main/CHANGELOG.md", "note": "n"}]}


def _yaml_bytes(doc: Any) -> bytes:
    return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")


@contextlib.contextmanager
def _sealed(monkeypatch: pytest.MonkeyPatch, s: Scratch, bisect_stand_in: bool = False) -> Iterator[None]:
    """No network, no uv, no device, the harness's caches in the output folder, bisections by stand-in."""
    import harness.cells.envs as envs
    import harness.lifeline as lifeline
    import harness.nightly.filing as filing
    from harness.cells.envs import EnvError

    def no_network(*_a: Any, **_k: Any) -> None:
        raise OSError(_errno.ENETUNREACH, "the network is sealed in this test")

    def no_uv() -> str:
        raise EnvError("uv is sealed in this test")

    with monkeypatch.context() as m:
        m.setattr(_socket.socket, "connect", no_network)
        m.setattr(_socket, "create_connection", no_network)
        m.setattr(envs, "uv_executable", no_uv)
        if bisect_stand_in:  # news's bisections (the subprocess module's Popen: only while news runs)
            m.setattr(filing.subprocess, "Popen", _Bisect)
            m.setattr(lifeline, "sweep", lambda token, **kw: [])
        for var in ("TPU_ACCELERATOR_TYPE", "SEAMS_ASSUME_DEVICE", "SEAMS_WITH", "SEAMS_RUN_ID"):
            m.delenv(var, raising=False)
        m.setenv("GIT_ALLOW_PROTOCOL", "file")
        m.setenv("GIT_TERMINAL_PROMPT", "0")
        for var, sub in (("SEAMS_ENVS_DIR", "envs"), ("SEAMS_REPOS_DIR", "repos"), ("SEAMS_BISECT_CACHE", "cache")):
            m.setenv(var, str(s.out / ".caches" / sub))
        yield


def _refused_or_done(argv: list[str]) -> tuple[int, str]:
    """_no_internal_error, where a value argparse refuses (exit 2, one line) is a refusal too."""
    try:
        return _no_internal_error(argv)
    except SystemExit as exc:
        assert exc.code in (0, 2), f"exit {exc.code}"
        return int(exc.code or 0), ""


def _run_generated(s: Scratch, printed: str = "") -> None:
    """Run what a command generated: every script with python, every Markdown file's sh/python blocks."""
    s.run_markdown(printed)
    for script in sorted(s.out.rglob("repro/*.py")):
        s.check_script(script.read_text(encoding="utf-8", errors="surrogateescape"))
        s.run_python(script)
    for md in sorted(p for p in s.out.rglob("*.md") if ".caches" not in p.parts):
        s.run_markdown(md.read_text(encoding="utf-8", errors="surrogateescape"))


def _graft(s: Scratch, start: dict) -> Path:
    """The baseline failing cell with `start` (a CellStart `harness run` wrote) as its record: a report of it
    exports a script and a Run block built from the matrix's values."""
    recs = baseline_records()
    recs[0] = start
    recs[1]["cell"] = start.get("cell", CELL)
    path = s.out / "grafted" / "cell.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8", errors="surrogatepass")
    return path


@pytest.mark.parametrize("field", MATRIX_FIELDS, ids=lambda f: "/".join(map(str, f)))
@EXAMPLES
@given(value=hostile)
def test_a_hostile_matrix_field_never_runs(field, value, monkeypatch):
    s = Scratch()
    try:
        doc = copy.deepcopy(BASE_MATRIX)
        put(doc, field, value)
        matrix, known = s.root / "m.yaml", s.root / "known.yaml"
        matrix.write_bytes(_yaml_bytes(doc))
        known.write_text(KNOWN)
        before = s.listing()
        with _sealed(monkeypatch, s):
            rc, _ = _refused_or_done(["run", "--matrix", str(matrix), "--out", str(s.out), "-j", "1",
                                      "--expectations", str(known), "--", "suites/shard_map"])
            _refused_or_done(["matrix", "--matrix", str(matrix), "--format", "github"])
            for results in sorted((s.out / "results").glob("*.jsonl")):
                start = json.loads(results.read_text(encoding="utf-8", errors="surrogatepass").splitlines()[0])
                _refused_or_done(["report", str(_graft(s, start)), "--out", str(s.out / "grafted" / "report"),
                                  "--expectations", str(known)])
        if rc != 2:  # the matrix was taken: its values reached an exported script and a Run block
            assert list((s.out / "grafted" / "report" / "repro").glob("*.py")), "no script exported"
        _run_generated(s)
        s.check(before)
    finally:
        s.close()


@pytest.mark.parametrize("field", ISSUE_FIELDS + API_FIELDS, ids=lambda f: "/".join(map(str, f)))
@EXAMPLES
@given(value=hostile)
def test_a_hostile_known_issue_or_api_range_field_never_runs(field, value, monkeypatch):
    s = Scratch()
    try:
        issues, apis = copy.deepcopy(BASE_ISSUES), copy.deepcopy(BASE_APIS)
        put(issues if field[0] == "known-issues" else apis, field[1:], value)
        known, ranges = s.root / "known.yaml", s.root / "apis"
        ranges.mkdir()
        known.write_bytes(_yaml_bytes(issues))
        (ranges / "jax.yaml").write_bytes(_yaml_bytes(apis))
        results = s.root / f"{CELL}.jsonl"
        results.write_text("".join(json.dumps(r) + "\n" for r in baseline_records()))
        before = s.listing()
        with _sealed(monkeypatch, s):
            monkeypatch.setenv("SEAMS_APIS", str(ranges))
            _refused_or_done(["report", str(results), "--out", str(s.out), "--expectations", str(known)])
            _refused_or_done(["validate", str(known)])
        _run_generated(s)
        s.check(before)
    finally:
        s.close()


# Every value-taking option and positional of the commands that generate text or argv, from their parsers.
CLI_COMMANDS = ("report", "bisect", "news", "reduce", "run")
# Values that are code by design, never generated from data: bisect --script runs the program it names.
CLI_CODE = {("bisect", "--script")}


def _subparsers() -> dict[str, Any]:
    import argparse

    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def cli_slots() -> list[tuple[str, str]]:
    slots = []
    for command in CLI_COMMANDS:
        for action in _subparsers()[command]._actions:
            if action.nargs == 0 or action.dest == "help":
                continue
            name = action.option_strings[-1] if action.option_strings else action.dest
            if (command, name) not in CLI_CODE:
                slots.append((command, name))
    return slots


CLI_SLOTS = cli_slots()


def _as_path(s: Scratch, value: str, content: bytes | None) -> str:
    """A path-valued option's hostile value as a file name in the scratch inputs (holding `content`), or
    raw where it cannot name a file there."""
    if content is None or not value or "\x00" in value or "/" in value or value in (".", "..") or len(value.encode("utf-8", "surrogatepass")) > 200:
        return value
    folder = s.root / "in"
    folder.mkdir(exist_ok=True)
    try:
        path = folder / value
        path.write_bytes(content)
    except (OSError, UnicodeEncodeError):
        return value
    return str(path)


def _cli_argv(s: Scratch, command: str, slot: str, value: str) -> list[str]:
    old, new = base_reports()
    files = {"results": "".join(json.dumps(r) + "\n" for r in baseline_records()).encode(), "known": KNOWN.encode(),
             "old": json.dumps(old).encode(), "new": json.dumps(new).encode(), "matrix": _yaml_bytes(BASE_MATRIX),
             "script": b"import sys\nsys.exit(1)\n"}
    inputs = s.root / "base"
    inputs.mkdir(exist_ok=True)
    for name, content in files.items():
        (inputs / name).write_bytes(content)
    f = {name: str(inputs / name) for name in files}
    out = str(s.out)
    base = {
        "report": {"results": [f["results"]], "--out": [out], "--expectations": [f["known"]], "--baseline": [f["old"]]},
        "bisect": {"--from-report": [f["new"]], "--cell": [CELL], "--case": [SHARD], "--out": [f"{out}/b"],
                   "--markdown": [f"{out}/b.md"], "--good": ["0.5.3"]},
        "news": {"old": [f["old"]], "new": [f["new"]], "--max": ["1"], "--out": [out], "--repo": ["o/r"]},
        "reduce": {"scripts": [f["script"]], "--cell": [CELL], "--budget": ["5"]},
        "run": {"--matrix": [f["matrix"]], "--out": [out], "--expectations": [f["known"]], "--jobs": ["1"]},
    }[command]
    contents = {"results": files["results"], "scripts": files["script"], "old": files["old"], "new": files["new"],
                "--baseline": files["old"], "--from-report": files["new"], "--expectations": files["known"],
                "--matrix": files["matrix"]}
    if slot in ("--out", "--markdown", "--report-dir"):  # where the user asks the output to go: inside out
        value = f"{out}/{value}" if value and "\x00" not in value else value
    else:
        value = _as_path(s, value, contents.get(slot))
    base[slot] = [value]
    if slot == "test_id":  # --case would win over it
        del base["--case"]
    argv = [command]
    positional = [v for k in base if not k.startswith("-") and k != "pytest_args" and k != "test_id" for v in base[k]]
    for key, values in base.items():
        if key.startswith("-"):
            for v in values:
                argv.append(f"{key}={v}" if v.startswith("-") else key)
                if not v.startswith("-"):
                    argv.append(v)
    if command == "news":
        argv.append("--dry-run")
    argv += positional
    if "test_id" in base:
        argv.append(base["test_id"][0])
    if "pytest_args" in base:
        argv += ["--", base["pytest_args"][0]]
    return argv


@pytest.mark.parametrize("slot", CLI_SLOTS, ids=lambda s: f"{s[0]} {s[1]}")
@EXAMPLES
@given(value=hostile)
def test_a_hostile_command_line_value_never_runs(slot, value, monkeypatch):
    """Each option value of report, bisect, news --dry-run, reduce and run (and their positionals) hostile in
    turn: the command ends 0, 1 or 2 (one line), nothing it generated runs anything, nothing lands outside
    the scratch folder."""
    s = Scratch()
    try:
        argv = _cli_argv(s, *slot, value.replace("\x00", ""))  # argv cannot hold NUL
        before = s.listing()
        with _sealed(monkeypatch, s, bisect_stand_in=slot[0] == "news"):
            _rc, printed = _refused_or_done(argv)
        # news and bisect print Markdown (CI tees it into a page); the others print terminal lines
        _run_generated(s, printed if slot[0] in ("news", "bisect") else "")
        s.check(before)
    finally:
        s.close()


# Odd text a str argv can hold in-process (main(argv) from Python) but a real command line cannot, or can:
# a lone surrogate (not surrogateescape's \udc80-\udcff range: no file system encoding takes it), a
# surrogateescape'd byte, a right-to-left override, a newline.
ODD_TEXT = ["x\ud800y", "\udfff", "a\udcffb", "\u202eevil", "a\nb"]


@pytest.mark.parametrize("slot", CLI_SLOTS, ids=lambda s: f"{s[0]} {s[1]}")
@pytest.mark.parametrize("odd", ODD_TEXT, ids=ascii)
def test_odd_text_in_any_command_line_value_is_never_an_internal_error(slot, odd, monkeypatch):
    """Each value of report, bisect, news --dry-run, reduce and run holding a lone surrogate (or other odd text)
    in turn, given in-process: exit 0, 1 or 2 in one line, never 3 (a lone surrogate in a path was exit 3:
    UnicodeEncodeError from the file system call)."""
    s = Scratch()
    try:
        argv = _cli_argv(s, *slot, odd)
        with _sealed(monkeypatch, s, bisect_stand_in=slot[0] == "news"):
            _refused_or_done(argv)
    finally:
        s.close()


def test_every_input_kind_and_option_is_drawn():
    """The fields and options come from the loaders and parsers: one added there is drawn here."""
    assert ("include", ITEM, "env", KEY) in MATRIX_FIELDS and ("stacks", VALUE, "pins", VALUE) in MATRIX_FIELDS
    assert ("known-issues", "issues", ITEM, "link") in ISSUE_FIELDS and ("api-ranges", "apis", ITEM, "evidence") in API_FIELDS
    for slot in [("report", "--baseline"), ("bisect", "test_id"), ("bisect", "--with"), ("news", "--commits"),
                 ("reduce", "--passes-in"), ("run", "--with"), ("run", "pytest_args"), ("run", "--cell")]:
        assert slot in CLI_SLOTS, slot
    print(f"{len(MATRIX_FIELDS)} matrix fields, {len(ISSUE_FIELDS) + len(API_FIELDS)} known-issue/API-range fields, "
          f"{len(CLI_SLOTS)} command-line values")
