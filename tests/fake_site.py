"""A fake interpreter for env checks: the real Python, seeing only the given distributions beside the
stdlib (shared by the accelerator runtime check's and the matrix's import_may_fail tests)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path


def fake_site_python(tmp_path: Path, dists: dict[str, tuple[str, str]]) -> Path:
    """An interpreter whose site holds `dists`: name -> (version, module source or '' for no module)."""
    site = tmp_path / "site"
    for name, (version, source) in dists.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        if source:
            mod = site / name.replace("-", "_")
            mod.mkdir()
            (mod / "__init__.py").write_text(source)
    exe = tmp_path / "bin" / "python"
    exe.parent.mkdir()
    exe.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe
