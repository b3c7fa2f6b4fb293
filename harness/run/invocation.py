"""Which invocation a cell ran in: the run id that says which cells belong to "this run".

`tox -e a,b,report` runs each env's command as a child of one tox process (`tox -p` too: its envs
are threads of that process), so the cells of one tox command share their parent, and the
`report` env can ask for exactly those. Outside tox, one `harness run` (with its -j workers) is one
invocation. The id is the owning process's pid with its start time (pids are reused) and the boot
it belongs to; it is recorded in each CellStart as `run_id`. SEAMS_RUN_ID overrides it (a CI job
that runs cells in several commands can give them one id).
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "SEAMS_RUN_ID"


def _process_identity(pid: int) -> str | None:
    """pid@start (clock ticks since boot) on the boot's id; None where /proc cannot say."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        start = stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
    except (OSError, IndexError):
        return None
    return f"{pid}@{start}.{boot}"


def under_tox() -> bool:
    """Whether tox started this process (it sets TOX_ENV_NAME for every env's commands)."""
    return bool(os.environ.get("TOX_ENV_NAME"))


def run_id() -> str | None:
    """This invocation's id: SEAMS_RUN_ID, else tox's (the parent) under tox, else this process's.

    Set into the environment the first time, so the -j workers a run starts share it.
    """
    if os.environ.get(ENV):
        return os.environ[ENV]
    ident = _process_identity(os.getppid()) if under_tox() else _process_identity(os.getpid())
    if ident is None:
        return None
    rid = ("tox-" if under_tox() else "run-") + ident
    os.environ[ENV] = rid
    return rid
