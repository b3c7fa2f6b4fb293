"""Small git repositories of a tiny pure-Python package (`seamtoy`), for the source and commit tests.

The history is seeded: a regression lands at a known commit, one commit does not build, a side
branch is merged with a merge commit, and releases are tagged `seamtoy-vX.Y.Z`. Every commit has
its own timestamp (one minute apart) so dates and orders are stable.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "seamtoy"
version = "{version}"
requires-python = ">=3.9"

[tool.setuptools]
packages = ["seamtoy"]
"""
GOOD_CODE = "def double(x):\n    return 2 * x\n"
BAD_CODE = "def double(x):\n    return 2 * x + (1 if x == 3 else 0)  # an off-by-one for 3\n"
# A case the drills folder hands to real cells (tests/drills/test_seamtoy.py).
CASE = "tests/drills/test_seamtoy.py::test_double"


@dataclass
class ToyRepo:
    path: Path
    first_parent: list[str] = field(default_factory=list)  # oldest first, the good tag's commit first
    regression: str = ""     # the commit that introduced the bug
    unbuildable: list[str] = field(default_factory=list)
    merge: str = ""


def git(repo: Path, *args: str, when: int = 0) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    stamp = f"{1_700_000_000 + when * 60} +0000"
    env.update(GIT_AUTHOR_NAME="Toy", GIT_AUTHOR_EMAIL="toy@example.com", GIT_COMMITTER_NAME="Toy",
               GIT_COMMITTER_EMAIL="toy@example.com", GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp,
               GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def make_toy_repo(path: Path, n_commits: int = 12, bad_at: int = 7, broken_at: tuple[int, ...] = (5,),
                  merge_at: int | None = 3) -> ToyRepo:
    """A repo: tag seamtoy-v1.0.0 at commit 0, then n_commits first-parent commits (1..n), the
    regression at bad_at, pyproject broken at broken_at (fixed by the next commit), a merged side
    branch at merge_at, tag seamtoy-v1.1.0 at the last one."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "seamtoy").mkdir()
    (path / "README.md").write_text("seamtoy\n")
    (path / "pyproject.toml").write_text(PYPROJECT.format(version="1.0.0"))
    (path / "seamtoy" / "__init__.py").write_text(GOOD_CODE)
    (path / "docs").mkdir()
    (path / "docs" / "big.txt").write_text("not needed by a build\n")
    toy = ToyRepo(path)
    t = 0

    def commit(msg: str) -> str:
        nonlocal t
        t += 1
        git(path, "add", "-A", when=t)
        git(path, "commit", "-q", "-m", msg, when=t)
        return git(path, "rev-parse", "HEAD")

    toy.first_parent.append(commit("seamtoy 1.0.0"))
    git(path, "tag", "seamtoy-v1.0.0")
    for i in range(1, n_commits + 1):
        code = BAD_CODE if i >= bad_at else GOOD_CODE
        if merge_at == i:
            git(path, "checkout", "-q", "-b", "side")
            (path / "seamtoy" / "side.py").write_text("SIDE = 1\n")
            commit("side: add side.py")
            (path / "seamtoy" / "side.py").write_text("SIDE = 2\n")
            commit("side: bump")
            git(path, "checkout", "-q", "main")
            t += 1
            git(path, "merge", "-q", "--no-ff", "-m", f"Merge pull request #{100 + i} from toy/side", "side", when=t)
            toy.merge = git(path, "rev-parse", "HEAD")
            toy.first_parent.append(toy.merge)
            continue
        (path / "seamtoy" / "__init__.py").write_text(code + f"# revision {i}\n")
        broken = i in broken_at
        (path / "pyproject.toml").write_text(PYPROJECT.format(version="1.0.0") + ("[[[ not toml\n" if broken else ""))
        subject = f"change {i}" + (" (#%d)" % (200 + i) if i % 2 == 0 else "")
        body = f"\n\nCOPYBARA_INTEGRATE_REVIEW=https://github.com/toy/seamtoy/pull/{300 + i} from toy:c{i}" if i == bad_at else ""
        sha = commit(subject + body)
        toy.first_parent.append(sha)
        if broken:
            toy.unbuildable.append(sha)
        if i == bad_at:
            toy.regression = sha
    git(path, "tag", "seamtoy-v1.1.0")
    return toy
