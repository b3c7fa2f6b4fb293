"""repro/: for each result that is news or a known bug, CASE.md (the issue body, harness.report.issue_body)
and, for a fail/error/crash whose scenario has a core, CASE.py (harness.report.standalone); the
harness route's install line and `harness run` selection, the same in the report page and bisect."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path
from typing import Any, Sequence

from harness.cells.cell import RUNTIME_REQUIREMENTS
from harness.judge.testids import read_suite_module
from harness.paths import REPO
from harness.report.issue_body import fence, issue_body, scrub_paths, title
from harness.report.standalone import NoStandalone, export_script, redact_url, run_env, standalone_install_line
from harness.safeio import atomic_write, dumps_strict

_SKIP = {"ok", "skipped"}
MAX_REPROS = 500  # repro files per report (the first ones in report order)


def test_source(nodeid: str) -> str | None:
    """The source of the test function a node id names (from this checkout), if it can be found."""
    name = nodeid.partition("::")[2].split("[")[0].split("::")[-1]
    read = read_suite_module(nodeid)
    if read is None:
        return None
    text, tree = read
    lines = text.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            return "\n".join(lines[start - 1:node.end_lineno])
    return None


def safe_name(text: str) -> str:
    """A file-name-safe version of a test id."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:150]


def fenced(text: str, lang: str = "") -> list[str]:
    """A fenced block the text can neither close nor hide control characters in (issue_body.fence)."""
    return fence(text, lang)


def shell_word(value: str) -> str:
    """One shell word for value, always on one line: shlex quoting, or bash's $'...' with escapes when
    value holds a newline or another control character (a quoted newline pasted after a `#` comment,
    or into a terminal, would start a command of its own)."""
    if value.isprintable():
        return shlex.quote(value)
    out = []
    for ch in value:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append("".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass")))
    return "$'" + "".join(out) + "'"


def printable(value: str) -> str:
    """value for a Markdown line: newlines and control characters shown escaped, never acted on."""
    return "".join(ch if ch.isprintable() else ("\\n" if ch == "\n" else f"\\x{ord(ch):02x}") for ch in value)


def command_line(env: dict[str, Any], argv: list[str]) -> str:
    """A one-line shell command with every value quoted: spaces, `$(...)` and newlines paste safely."""
    assigns = [f"{k}={shell_word(str(v))}" for k, v in env.items() if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k))]
    return " ".join(assigns + [shell_word(str(a)) for a in argv])


# Raw outcomes a standalone script can reproduce (a timeout or env-error is no script's exit status).
FAILING_RAW = {"fail", "error", "crash"}


def harness_install_line(install_line: str) -> str:
    """The pip line for running a case through pytest and the harness plugin: the cell's pins
    (index URLs redacted) plus every package the plugin and the suites import. The one line that
    `harness report`, `bisect` and the issue bodies print."""
    try:
        words = shlex.split(install_line)
    except ValueError:
        words = []
    if words[:2] != ["pip", "install"]:
        return "# " + shlex.quote(install_line)  # a tampered results file: shown, never run
    return shlex.join([redact_url(w) if "://" in w else w for w in words] + list(RUNTIME_REQUIREMENTS))


def cell_selection(cell: dict[str, Any]) -> list[str]:
    """The `harness run` options that make this cell again: its matrix file or its sweep."""
    source = str(cell.get("source") or "")
    if source.startswith("--sweep "):
        return ["--sweep", source[len("--sweep "):]]
    path = source.rsplit(":", 1)[0] if re.search(r":\d+$", source) else source
    if not path:
        return []
    try:
        rel = Path(path).resolve().relative_to(REPO)
    except ValueError:
        return ["--matrix", Path(path).name]  # outside the checkout: the file's name, not the machine path
    return ["--matrix", rel.as_posix()]


def script_for(case_id: str | None, cell: dict[str, Any], r: dict[str, Any]) -> str | None:
    """The standalone reproducer of a failing result, or None (not failing, or no scenario core)."""
    if not case_id or r.get("raw") not in FAILING_RAW:
        return None
    try:
        return export_script(case_id, cell, r.get("expectation"))
    except NoStandalone:
        return None  # no core for this scenario yet: the harness-based repro stays


def repro_markdown(case_id: str | None, cell: dict[str, Any], r: dict[str, Any], script: str | None = None,
                   script_name: str = "repro.py", *, moved: Sequence[str] = (), bisection: str | None = None,
                   marker: str | None = None, verdict_line: str | None = None, appendix: bool = True) -> str:
    """The issue body for one result (harness.report.issue_body), with the scenario's source and its
    observations appended when `appendix` (repro/CASE.md; a filed issue stays short)."""
    env = run_env(cell)
    run_lines = []
    if case_id:
        run = command_line(env, ["python", "-m", "pytest", "-p", "no:cacheprovider", case_id])
        again = command_line({}, ["python", "-m", "harness", "run", *cell_selection(cell), "--cell", str(cell["cell"]),
                                  "--", case_id])  # one line: a newline in the id must not end the comment
        run_lines = [run, f"# or, building the same env: {again}"]
    body = issue_body(case_id, cell, r, script=script, script_name=script_name,
                      standalone_install=standalone_install_line(cell),
                      harness_install=harness_install_line(str(cell.get("install_line") or "")),
                      harness_run=run_lines, moved=moved, bisection=bisection, marker=marker, verdict_line=verdict_line)
    if not appendix:
        return body
    out = [f"# {title(case_id, cell, r)}", "", body]
    src = test_source(case_id) if case_id else None
    if src:
        out += ["### The scenario", "", *fenced(src, "python"), ""]
    obs = r.get("observations") or {}
    if obs:
        out += ["### Observations", "", "<details><summary>observations</summary>", "",
                *fenced(scrub_paths(dumps_strict(obs, indent=1)[:20000]), "json"), "", "</details>", ""]
    return "\n".join(out)


def repro_files(report: dict[str, Any], limit: int = MAX_REPROS) -> list[tuple[str | None, str, dict[str, Any], str]]:
    """(case id, cell, result, file name) for each result that gets a repro file, in writing order."""
    from harness.report.model import iter_results  # here: harness.report imports this module

    out = []
    for case_id, cell, r in iter_results(report):
        if r["verdict"] in _SKIP:
            continue
        if len(out) >= limit:
            break
        out.append((case_id, cell, r, f"{safe_name(cell)}__{safe_name(case_id or 'cell')}.md"))
    return out


def write_repros(report: dict[str, Any], out_dir: Path, limit: int = MAX_REPROS) -> int:
    """Write one repro per result that is not ok or skipped (at most `limit`): CASE.md, and beside it
    CASE.py, the standalone script, where the scenario has one; returns how many."""
    cells = {c["cell"]: c for c in report["cells"]}
    out_dir.mkdir(parents=True, exist_ok=True)
    files = repro_files(report, limit)
    for case_id, cell, r, name in files:
        stem = name.removesuffix(".md")
        script = script_for(case_id, cells[cell], r)
        if script is not None:
            atomic_write(out_dir / f"{stem}.py", script, durable=False)
        atomic_write(out_dir / name, repro_markdown(case_id, cells[cell], r, script, f"{stem}.py"), durable=False)
    return len(files)
