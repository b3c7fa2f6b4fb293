"""Run one of this family's probe functions in a fresh interpreter of the cell and read its answer.

The probe's source goes over `-c` (it imports what it uses itself), so what the test process has
imported already cannot leak into it, and an exported reproducer carries the probe with it.
A probe prints its answer as one line `SEAMS-ANSWER <json>`.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from typing import Any, Callable

TIMEOUT_S = 240  # a fresh interpreter importing torch_xla (15-25 s of CPU) and compiling three functions
MARK = "SEAMS-ANSWER "


def run_fresh(probe: Callable[..., None], *args: Any, what: str, env: dict[str, str] | None = None) -> Any:
    """probe(*args) in a fresh interpreter of this cell (with `env` added to this process's
    environment); its answer, or AssertionError naming the cause."""
    script = inspect.getsource(probe) + f"\n{probe.__name__}(*{args!r})\n"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=TIMEOUT_S,
                          env={**os.environ, **(env or {})}, cwd="/")
    answers = [line for line in proc.stdout.splitlines() if line.startswith(MARK)]
    if proc.returncode or not answers:
        lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
        cause = lines[-1] if lines else "(nothing on stderr)"  # the exception line comes last
        raise AssertionError(f"a fresh process {what} exited {proc.returncode} without its answer: {cause}\n"
                             f"{proc.stderr.strip()[-1500:]}")
    return json.loads(answers[-1].removeprefix(MARK))
