"""README, --help and .ci/run stay in step with the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()


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
    used = set(re.findall(r"python -m harness ([a-z]\w*)", README))
    listed = set(re.findall(r"^    (\w+)\s", helptext, re.M))
    assert used <= listed, f"README mentions {sorted(used - listed)} that --help does not list"


def _commands_section() -> str:
    return README.split("## Commands", 1)[1].split("\n## ", 1)[0]


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
