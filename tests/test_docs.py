"""README (the front door), the docs site, --help and .ci/run stay in step with the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
DOCS = REPO / "docs"
COMMANDS = (DOCS / "commands.md").read_text()
ALL_DOCS = README + "".join(p.read_text() for p in sorted(DOCS.glob("*.md")))


def _quick_start() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    return [ln.split("#", 1)[0].strip() for ln in block.strip().splitlines() if ln.strip()]


def test_quick_start_is_exactly_two_commands():
    cmds = _quick_start()
    assert len(cmds) == 2
    assert cmds[0].endswith("python3 -m harness run")
    assert cmds[1].endswith("python3 -m pytest")


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    test_cmd = _quick_start()[1].split("&&")[-1].strip()
    assert re.search(rf"^{re.escape(test_cmd)}\s*$", ci, re.M), f".ci/run must call {test_cmd!r}"


def test_every_subcommand_in_the_readme_exists_in_help():
    helptext = subprocess.run([sys.executable, "-m", "harness", "--help"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout
    used = set(re.findall(r"python3? -m harness ([a-z]\w*)", ALL_DOCS))
    listed = set(re.findall(r"^    (\w+)\s", helptext, re.M))
    assert used <= listed, f"README or docs/ mention {sorted(used - listed)} that --help does not list"


def _commands_section() -> str:
    return COMMANDS


def test_readme_tox_forms_name_real_envs_and_pass_pytest_args_after_the_dashes():
    import configparser

    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(REPO / "tox.ini")
    envs = {e.strip() for e in cfg["tox"]["env_list"].replace(",", "\n").splitlines() if e.strip()}
    forms = re.findall(r"^(?:\S+=\S+ )*tox (?:-p )?-e (\S+)(.*)$", _commands_section(), re.M)
    assert len(forms) >= 4, forms
    for names, rest in forms:
        assert set(names.split(",")) <= envs, names
        rest = rest.split("#", 1)[0].strip()
        assert not rest or rest.startswith("-- "), f"tox hands what follows -- to pytest: {rest!r}"


def test_readme_run_options_exist_in_run_help():
    helptext = subprocess.run([sys.executable, "-m", "harness", "run", "--help"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout
    line = next(ln for ln in _commands_section().splitlines() if ln.startswith("python -m harness run ["))
    for opt in re.findall(r"\[(-{1,2}[a-z][\w-]*)", line):
        assert re.search(rf"(^|[\s,]){re.escape(opt)}\b", helptext), opt
    for var in set(re.findall(r"SEAMS_[A-Z]+", _commands_section())) - {"SEAMS_REPORTS"}:
        assert var in helptext, var


def test_readme_is_a_front_door():
    """About 200 lines at most: what it is, the Quick start, a first run, the five everyday tasks, links."""
    assert len(README.splitlines()) <= 200
    heads = re.findall(r"^## (.+)$", README, re.M)
    assert heads[:3] == ["Quick start", "A first run in 30 seconds", "Everyday tasks"] and "Docs" in heads
    tasks = README.split("## Everyday tasks", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", tasks, re.S)
    assert len(blocks) == 5 and all(len(b.strip().splitlines()) == 1 for b in blocks), blocks
    for need in ("harness run --cell", "report.html", "harness bisect", "python jax060", "--with jax="):
        assert need in tasks, need


def test_the_first_run_shown_is_the_command_shown():
    """The 30-second first run's output block comes from the command above it (cell and selection agree)."""
    section = README.split("## A first run in 30 seconds", 1)[1].split("\n## ", 1)[0]
    cmd = re.search(r"```sh\n(.*?)\n```", section, re.S).group(1)
    out = re.search(r"```\n(== cell.*?)```", section, re.S).group(1)
    cell = re.search(r"--cell (\S+)", cmd).group(1)
    selection = cmd.split(" -- ", 1)[1].strip()
    assert f"cell 1/1: {cell} " in out and f"selected by {selection} " in out


def test_readme_and_docs_links_reach_files():
    for page, text in [(REPO / "README.md", README), *((p, p.read_text()) for p in sorted(DOCS.glob("*.md")))]:
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:|#", target):
                continue
            assert (page.parent / target.split("#", 1)[0]).exists(), f"{page.name}: {target}"


def _hooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("mkdocs_hooks", REPO / ".ci" / "mkdocs_hooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_links_out_of_docs_are_rewritten_for_the_site():
    pytest.importorskip("mkdocs", reason="the [docs] extra (.ci/run installs it)")
    text = ("[fam](../suites/call_jax/README.md#a) [t](../tests/test_docs.py) [cmd](commands.md) "
            "[gone](../no/such.md) [web](https://x.org/a.md)\n```\n[code](../suites/call_jax/README.md)\n```\n")
    out = _hooks().rewrite_links(text, "page.md", DOCS)
    assert "[fam](suites/call_jax/README.md#a)" in out and "t (`tests/test_docs.py`)" in out
    assert "[cmd](commands.md)" in out and "[gone](../no/such.md)" in out and "[web](https://x.org/a.md)" in out
    assert "[code](../suites/call_jax/README.md)" in out  # fenced code is left as written
    # from a family README (a page suites/<family>/README.md on the site): a link into docs/
    back = _hooks().rewrite_links("[r](../../docs/report.md)", "suites/call_jax/README.md", DOCS)
    assert back == "[r](../../report.md)"


def test_docs_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="the [docs] extra (.ci/run installs it)")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "suites" / "call_jax" / "index.html").exists()  # the family READMEs are pages
