"""repro/: for each result that is news or a known bug, CASE.md (the issue body, harness.report.issue_body)
and, for a fail/error/crash whose scenario has a core, CASE.py (harness.report.standalone); the
harness route's install line and `harness run` selection, the same in the report page and bisect."""

from __future__ import annotations

import ast
import re
import shlex
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from harness.cells.cell import RUNTIME_REQUIREMENTS
from harness.judge.testids import read_suite_module
from harness.paths import REPO
from harness.report.grammar import is_package_name, is_version, pip_words
from harness.report.issue_body import fence, issue_body, md_line, scrub_paths, title
from harness.report.standalone import (NoStandalone, export_script, redact_url, run_env, source_notes, source_placeholder,
                                       shown_pip_words, standalone_install_line)
from harness.safeio import atomic_write, dumps_strict

_SKIP = {"ok", "skipped"}
# Repro files per report (news first, then known bugs, report order within each): a default run's op
# cases are thousands of known bugs, 10 KB of CASE.md each. `report --reduce` lifts it (None): every
# failing result is to get its reduced script, so every one needs its full one first.
MAX_REPROS = 500


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


def scenario_source(nodeid: str) -> str | None:
    """What the case checks: its core in suites/<family>/cores.py (the test around it only hands it
    a fixture), else the test function's own source."""
    from harness.report.standalone import NoStandalone, find_core

    try:
        target = find_core(nodeid)
    except NoStandalone:
        return test_source(nodeid)
    read = read_suite_module(target.module.replace(".", "/") + ".py")  # parsed once per file version: a
    if read is None:  # report --reduce writes thousands of repros, and cores.py is hundreds of lines
        return test_source(nodeid)
    text, tree = read
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == target.function:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            return "\n".join(text.splitlines()[start - 1:node.end_lineno])
    return test_source(nodeid)


def since_for(report: dict[str, Any], case_id: str | None, cell: str) -> str | None:
    """Since when a case fails in a cell, as the report's "Since which release" says it: the release
    line the cell is on, where the case fails from a release at or before the cell's."""
    for row in report.get("since") or []:
        if row.get("case") != case_id or row.get("kind", "line") != "line" or not row.get("first_bad"):
            continue
        cells, versions = row["cells"], row.get("versions") or []
        if cell in cells and row["first_bad"] in versions and versions.index(row["first_bad"]) <= cells.index(cell):
            last = f" (last good {row['last_good']})" if row.get("last_good") else " (the oldest tested)"
            return f"{row['package']} {row['first_bad']}{last}"
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


def harness_install_line(install_line: str, cell: dict[str, Any] | None = None) -> str:
    """The pip line for running a case through pytest and the harness plugin: the cell's pins
    (index URLs redacted, sources of `cell` as placeholders) plus every package the plugin and the
    suites import. The one line that `harness report`, `bisect` and the issue bodies print. Derived
    from the parsed words of install_line (or the pins), never copied (harness.report.grammar)."""
    cell = {**(cell or {}), "install_line": install_line}
    return shlex.join(shown_pip_words(pip_words(cell), cell) + list(RUNTIME_REQUIREMENTS))


def shown_install_line(install_line: str, cell: dict[str, Any]) -> str:
    """The cell's own pip line as a page shows it: URLs redacted, local sources as placeholders."""
    cell = {**cell, "install_line": install_line}
    return shlex.join(shown_pip_words(pip_words(cell), cell))


def _sweep_spec(source: str) -> str | None:
    """The spec of a command-line sweep from a cell's source (`--sweep 'jax>=0.6,<0.7':0`)."""
    if not source.startswith("--sweep "):
        return None
    text = re.sub(r":\d+$", "", source[len("--sweep "):])
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        try:
            text = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return None
    return text if isinstance(text, str) else None


def _requirements(cell: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(index options, requirement words) of the cell's install line, credentials redacted."""
    words = pip_words(cell)  # parsed words (or the pins), never the recorded text
    options, reqs, i = [], [], 2
    while i < len(words):
        if words[i] in ("--index-url", "--extra-index-url", "--find-links") and i + 1 < len(words):
            options += [words[i], redact_url(words[i + 1])]
            i += 2
            continue
        reqs.append(words[i])
        i += 1
    return options, reqs


def exact_pins_selection(cell: dict[str, Any], package: str | None = None) -> list[str] | None:
    """`harness run` options that make a cell with exactly this cell's pins, as a one-release sweep
    (the default matrix's settings): `--sweep 'jax==0.6.1' --with flax==0.10.0 --sweep-extra optax==0.2.4`.
    None when the cell has no pinned release to sweep."""
    from packaging.version import InvalidVersion, Version

    from harness.cells.releases import paired_pins

    pins = {canonicalize_name(k): v for k, v in (cell.get("pins") or {}).items() if is_package_name(k) and is_version(v)}
    floating = [canonicalize_name(k) for k in (cell.get("floating") or {}) if is_package_name(k)]
    order = [canonicalize_name(package)] if package else []
    order += floating + ["jax", "torch-xla", "torchax", *pins]
    swept = next((p for p in order if p in pins and p != "jaxlib"), None)
    if swept is None:
        return None
    version = pins[swept]
    held = {k: v for k, v in pins.items() if k not in paired_pins(swept, version)}
    options, reqs = _requirements(cell)
    pinned = {f"{k}=={v}" for k, v in pins.items()}
    extras = [r for r in reqs if re.sub(r"\[[^\]]*\]", "", r) not in pinned and " @ " not in r]
    argv = ["--sweep", f"{swept}=={version}"]
    for k, v in held.items():
        argv += ["--with", f"{k}=={v}"]
    for e in extras:
        argv += ["--sweep-extra", e]
    try:
        if any(Version(v).is_prerelease or Version(v).is_devrelease for v in pins.values()):
            argv.append("--pre")
    except InvalidVersion:
        pass
    if "--index-url" in options:
        argv += ["--index-url", options[options.index("--index-url") + 1]]
    return argv


def _source_selection(cell: dict[str, Any]) -> list[str]:
    """`--with PKG=WHERE` (and `--pair`) for each source the cell took a package from: a git source
    at its commit, a local path as its placeholder (source_notes says what it stands for)."""
    from harness.cells.cell import is_url

    argv: list[str] = []
    sources = cell.get("sources") or {}
    for pkg, src in sources.items():
        if not isinstance(src, dict) or not is_package_name(pkg):
            continue
        loc = str(src.get("location") or "")
        where = redact_url(loc) if is_url(loc) else source_placeholder(str(pkg))
        if src.get("kind") == "git":
            if src.get("subdir"):
                continue  # --with cannot say subdir: only the matrix that names it makes this cell
            ref = str(src.get('sha') or src.get('ref') or 'HEAD')
            argv += ["--with", f"{pkg}={where}@{ref if re.fullmatch(r'[A-Za-z0-9_][A-Za-z0-9_./+-]*', ref) else 'REF'}"]
        elif src.get("kind") == "wheel":
            argv += ["--with", f"{pkg}={where}" + ("" if is_url(loc) else f"/{Path(loc).name}")]
        else:
            argv += ["--with", f"{pkg}={where}" + (f"/{src['subdir']}" if src.get("subdir") else "")]
    jaxlib = (cell.get("pins") or {}).get("jaxlib")
    if "jax" in sources and is_version(jaxlib):
        argv += ["--pair", f"jaxlib=={jaxlib}"]  # the binary partner this run paired, not the rule's choice today
    return argv


def cell_selection(cell: dict[str, Any]) -> list[str]:
    """The `harness run` options that make this cell again: its matrix or sweep file, or for a
    command-line sweep the one release it swept (with what it held), then every source it took a
    package from (`--with`, whether the matrix, --with or SEAMS_WITH put it there)."""
    source = str(cell.get("source") or "")
    spec = _sweep_spec(source)
    if spec is not None:
        try:
            package: str | None = Requirement(spec).name
        except InvalidRequirement:
            package = None
        # The spec shown only when it parses as a requirement of printable ASCII (never an option).
        shown = spec if package and spec.isascii() and spec.isprintable() and not spec.startswith("-") else None
        argv = exact_pins_selection(cell, package) or (["--sweep", shown] if shown else [])
    else:
        path = source.rsplit(":", 1)[0] if re.search(r":\d+$", source) else source
        argv = []
        if path:
            try:
                shown = Path(path).resolve().relative_to(REPO).as_posix()
            except (ValueError, OSError):
                shown = Path(path).name  # outside the checkout: the file's name, not the machine path
            # a path of plain characters, never an option or a line break (else the reader names the file)
            argv = ["--matrix", shown if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_./+-]*", shown) else "MATRIX.yaml"]
    return argv + _source_selection(cell)


def selection_notes(cell: dict[str, Any]) -> list[str]:
    """Comment lines under the `harness run` line: what a placeholder stands for, what a floating
    pin resolved to (and the options for exactly those pins), a matrix file outside this checkout."""
    notes = list(source_notes(cell))
    floating = cell.get("floating") or {}
    if floating and not str(cell.get("source") or "").startswith("--sweep "):
        pins = cell.get("pins") or {}
        moved = ", ".join(f"{k}: {w} -> {pins.get(k, '?')}" for k, w in floating.items())
        exact = exact_pins_selection(cell, next(iter(floating)))
        notes.append(f"{cell.get('cell')} floats ({moved} in this run); the matrix resolves it again when run")
        if exact:
            notes.append("exactly these pins: " + command_line({}, ["python", "-m", "harness", "run", *exact]))
    return notes


def script_for(case_id: str | None, cell: dict[str, Any], r: dict[str, Any]) -> str | None:
    """The standalone reproducer of a failing result, or None (not failing, or no scenario core)."""
    if not case_id or r.get("raw") not in FAILING_RAW:
        return None
    try:
        return export_script(case_id, cell, r.get("expectation"),
                             example=(r.get("observations") or {}).get("falsifying_example"), message=r.get("message"))
    except NoStandalone:
        return None  # no core for this scenario yet: the harness-based repro stays


def short_check(case_id: str, r: dict[str, Any]) -> str | None:
    """The one check a failing result's script keeps where it is minimal by construction (an op case's
    run recorded its sample and failure, a coexist case's message names what failed: the exporters
    script_for calls then write the short form), else None (the full script)."""
    from harness.report.standalone_coexist import short_form as coexist_short_form  # they import standalone
    from harness.report.standalone_op import short_form as op_short_form

    op = op_short_form(case_id, (r.get("observations") or {}).get("falsifying_example"), r.get("message"))
    short = op if op is not None else coexist_short_form(case_id, r.get("message"))
    return short.check if short is not None else None


def repro_markdown(case_id: str | None, cell: dict[str, Any], r: dict[str, Any], script: str | None = None,
                   script_name: str = "repro.py", *, moved: Sequence[str] = (), bisection: str | None = None,
                   marker: str | None = None, verdict_line: str | None = None, appendix: bool = True,
                   reduced: str | None = None, reduced_name: str = "repro.min.py", since: str | None = None) -> str:
    """The issue body for one result (harness.report.issue_body), with the scenario's source and its
    observations appended when `appendix` (repro/CASE.md; a filed issue stays short)."""
    env = run_env(cell)
    run_lines = []
    if case_id:
        run = command_line(env, ["python", "-m", "pytest", "-p", "no:cacheprovider", "--", case_id])  # an id is never an option
        again = command_line({}, ["python", "-m", "harness", "run", *cell_selection(cell), "--cell", str(cell["cell"]),
                                  "--", case_id])  # one line: a newline in the id must not end the comment
        run_lines = [run, f"# or, building the same env: {again}"]
        run_lines += [f"# {printable(note)}" for note in selection_notes(cell)]
    body = issue_body(case_id, cell, r, script=script, script_name=script_name,
                      standalone_install=standalone_install_line(cell),
                      harness_install=harness_install_line(str(cell.get("install_line") or ""), cell),
                      harness_run=run_lines, moved=moved, bisection=bisection, marker=marker, verdict_line=verdict_line,
                      reduced=reduced, reduced_name=reduced_name)
    if not appendix:
        return body
    out = [f"# {md_line(title(case_id, cell, r, since))}", "", body]
    src = scenario_source(case_id) if case_id else None
    if src:
        out += ["### The scenario", "", *fenced(src, "python"), ""]
    obs = r.get("observations") or {}
    if obs:
        out += ["### Observations", "", "<details><summary>observations</summary>", "",
                *fenced(scrub_paths(dumps_strict(obs, indent=1)[:20000]), "json"), "", "</details>", ""]
    return "\n".join(out)


def repro_files(report: dict[str, Any], limit: int | None = MAX_REPROS) -> list[tuple[str | None, str, dict[str, Any], str]]:
    """(case id, cell, result, file name) for each result that gets a repro file, in writing order
    (limit None: every one)."""
    wanted = _needing_repro(report)
    # News first: a default run's op cases alone are thousands of known bugs, and a cap that cut in
    # report order left later cells' regressions without a repro. Report order within each group.
    wanted.sort(key=lambda t: t[2]["verdict"] == "known-bug")
    return [(case_id, cell, r, f"{safe_name(cell)}__{safe_name(case_id or 'cell')}.md")
            for case_id, cell, r in wanted[:limit]]


def repro_wanted(report: dict[str, Any]) -> int:
    """How many results would get a repro file without the cap."""
    return len(_needing_repro(report))


def _needing_repro(report: dict[str, Any]) -> list[tuple[str | None, str, dict[str, Any]]]:
    """(case id, cell, result) for each result that is not ok or skipped, in report order."""
    from harness.report.model import iter_results  # here: harness.report imports this module

    return [(case_id, cell, r) for case_id, cell, r in iter_results(report) if r["verdict"] not in _SKIP]


PROGRESS_S = 30.0  # a line at most this often while repros are written (a whole run's are thousands: minutes)


def write_repros(report: dict[str, Any], out_dir: Path, limit: int | None = MAX_REPROS,
                 say: Callable[[str], None] | None = None) -> int:
    """Write one repro per result that is not ok or skipped (at most `limit`; None: all): CASE.md, and beside it
    CASE.py, the standalone script, where the scenario has one; returns how many. `say`: a progress line
    every PROGRESS_S seconds."""
    cells = {c["cell"]: c for c in report["cells"]}
    out_dir.mkdir(parents=True, exist_ok=True)
    files = repro_files(report, limit)
    start = last = time.monotonic()
    for i, (case_id, cell, r, name) in enumerate(files):
        if say is not None and time.monotonic() - last >= PROGRESS_S:
            last = time.monotonic()
            say(f"repro: {i} of {len(files)} written ({last - start:.0f} s)")
        stem = name.removesuffix(".md")
        script = script_for(case_id, cells[cell], r)
        if script is not None:
            atomic_write(out_dir / f"{stem}.py", script, durable=False)
        atomic_write(out_dir / name, repro_markdown(case_id, cells[cell], r, script, f"{stem}.py",
                                                    since=since_for(report, case_id, cell)), durable=False)
    return len(files)
