"""Before a gpu/tpu cell's tests: does the device's runtime start at all, within a deadline?

The device probe (harness.cells.devices) only sees that a device *should* be here (/dev/accel*,
/dev/nvidia*, SEAMS_ASSUME_DEVICE). Whether its runtime starts is another matter: libtpu retries the
instance metadata server for minutes, chips may be held by another process, CUDA may fail to
initialise. Left to pytest, that is a 300 s collection hang that never says why. So a probe process
in the cell's env asks for the devices (`jax.devices('tpu')`, or torch_xla's runtime when the cell
has no jax) under a deadline (SEAMS_BACKEND_TIMEOUT_S, default 30 s) and reports the runtime's own
reason when it fails: the backend's init error as jax recorded it, the crash's last telling line, or,
when it hangs, where it hung (faulthandler's stack in the probe, innermost frame first). The probe's
whole process group is killed on the way out, so nothing is left holding the chips.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness import faults, lifeline
from harness.cells.cell import Cell
from harness.cells.startup_env import drop_startup_vars
from harness.errors import UserError
from harness.incell.resultsfile import signal_name

TIMEOUT_ENV = "SEAMS_BACKEND_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 30
_GRACE_S = 5  # after the probe's own deadline (it dumps its stack and exits), the harness kills it
_MARK = "SEAMS-BACKEND "
# What a hang in the runtime's start-up usually is. libtpu that finds no chips of its own asks the GCE
# metadata server for the topology and retries for minutes where there is none (seen with libtpu
# 0.0.13 off GCE); TPU_SKIP_MDS_QUERY=1 (read by jax and libtpu) makes it fail at once instead.
_HANG_HINTS = {"tpu": ": libtpu waits for its chips or the TPU metadata server; off GCE set TPU_SKIP_MDS_QUERY=1 "
                      "in the cell's env"}

# Runs in the cell's interpreter. argv: device, framework (jax|torch_xla), deadline seconds.
# faulthandler dumps every thread's stack and exits at the deadline even if the runtime holds the GIL.
_PROBE = r"""
import faulthandler, json, sys
device, framework, deadline = sys.argv[1], sys.argv[2], float(sys.argv[3])
faulthandler.dump_traceback_later(deadline, exit=True)
def say(**kw):
    print("SEAMS-BACKEND " + json.dumps(kw), flush=True)
if framework == "jax":
    import jax
    try:
        devs = jax.devices(device)
    except Exception as exc:
        reason = str(exc)
        try:  # jax keeps each backend's own init error; when it skipped one, ask it directly
            from jax._src import xla_bridge as xb
            names = {"gpu": ("cuda", "rocm"), "tpu": ("tpu",)}.get(device, (device,))
            errors = getattr(xb, "_backend_errors", {}) or {}
            found = [errors[n] for n in names if n in errors]
            if found:
                reason = found[0]
            else:
                for n in names:
                    if n in getattr(xb, "_backend_factories", {}):
                        try:
                            xb._init_backend(n)
                        except Exception as exc2:
                            reason = str(exc2)
                            break
        except Exception:
            pass
        say(ok=False, reason=reason, error=type(exc).__name__)
        raise SystemExit(0)
    say(ok=True, count=len(devs), kinds=sorted({str(getattr(d, "device_kind", d.platform)) for d in devs}))
else:
    import torch_xla, torch_xla.runtime as xr
    try:
        kind, count = xr.device_type(), xr.global_runtime_device_count()
    except Exception as exc:
        say(ok=False, reason=str(exc), error=type(exc).__name__)
        raise SystemExit(0)
    want = {"gpu": "CUDA", "tpu": "TPU"}.get(device, device.upper())
    if kind != want or count < 1:
        say(ok=False, reason="torch_xla runtime reports %s with %d devices, not %s" % (kind, count, want))
    else:
        say(ok=True, count=count, kinds=[kind])
"""


class BackendDown(Exception):
    """The device's runtime did not start; `reason` is one line, `log` the probe's output tail."""

    def __init__(self, reason: str, log: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.log = log


@dataclass(frozen=True)
class Backend:
    """A runtime that started: how many devices it showed, of which kinds, and how long it took."""

    count: int
    kinds: tuple[str, ...]
    seconds: float


def backend_timeout(given: int | None = None) -> int:
    """The probe's deadline: `given`, else $SEAMS_BACKEND_TIMEOUT_S, else 30 s (UserError if malformed)."""
    if given is not None:
        return given
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise UserError(f"{TIMEOUT_ENV}={text!r}: must be a positive whole number of seconds")


def needs_probe(cell: Cell) -> bool:
    """Accelerator cells are probed; a cpu cell's backend is the host itself."""
    return cell.device != "cpu"


def workers_for_chips(xdist: int, chips: int) -> int:
    """xdist workers for an accelerator cell, one chip each: never more than the devices the backend
    showed (the chip policy numbers chips 0..N-1; a worker past the last one would see no device)."""
    return min(xdist, chips) if xdist and chips > 0 else xdist


def _framework(cell: Cell) -> str:
    pins = {k.replace("_", "-") for k in cell.pins}
    return "jax" if "jax" in pins or "torch-xla" not in pins else "torch_xla"


def probe(python: Path, cell: Cell, env: dict[str, str], timeout_s: int | None = None) -> Backend:
    """Start the cell's device runtime in a throwaway process; BackendDown (one line) if it fails."""
    deadline = backend_timeout(timeout_s)
    argv = [str(python), "-c", _PROBE, cell.device, _framework(cell), str(deadline)]
    # The caller's start-up variables (LD_PRELOAD, PYTHONSTARTUP ...) stay out, as for the cell's pytest.
    child_env = {**drop_startup_vars(dict(os.environ))[0], **cell.run_env(), **env, "PYTHONUNBUFFERED": "1"}
    child_env.pop("VIRTUAL_ENV", None)
    child_env.pop("PYTHONPATH", None)
    # Starting the client is the question, not its memory: without this jax's GPU client reserves
    # 75% of the GPU's memory as it starts (released when the probe exits).
    child_env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    start = time.monotonic()
    try:
        return _probe(argv, cell, child_env, deadline, start)
    except OSError as exc:  # the machine refused the probe process or its output files (EAGAIN, EMFILE, ENOSPC)
        where = f" ({exc.filename})" if exc.filename else ""
        raise BackendDown(f"{cell.device} backend not probed: could not start the probe: "
                          f"{exc.strerror or exc}{where}") from None


def _probe(argv: list[str], cell: Cell, child_env: dict[str, str], deadline: int, start: float) -> Backend:
    # Output goes to files, of which only the tails are read: a runtime that floods its log for the
    # whole deadline costs disk in a temporary file, not the harness's memory.
    faults.point("open", "probe output")
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        faults.point("spawn", argv[0])
        proc = subprocess.Popen(lifeline.wrap(argv), stdout=out_f, stderr=err_f, env=child_env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        lifeline.track(proc)
        hung = False
        try:
            proc.wait(timeout=deadline + _GRACE_S)
        except subprocess.TimeoutExpired:  # even faulthandler could not end it (e.g. stuck in the kernel)
            hung = True
        finally:
            lifeline.kill_group(proc)  # the whole group: nothing it started keeps the chips
            lifeline.untrack(proc)
            proc.wait()
        out, err = _tail(out_f), _tail(err_f)
    seconds = time.monotonic() - start
    what = f"{cell.device} backend did not start"
    answer = _answer(out)
    if answer is not None and answer.get("ok"):
        return Backend(int(answer.get("count", 0)), tuple(answer.get("kinds") or ()), seconds)
    log = (err or "")[-4000:]
    if answer is not None:
        raise BackendDown(f"{what}: {_one_line(str(answer.get('reason') or answer.get('error')), err)}", log)
    if hung or "Timeout (" in (err or ""):
        hint = _HANG_HINTS.get(cell.device, "")
        raise BackendDown(f"{what}: no answer within {deadline} s ({_stuck_at(err)}){hint}; raise {TIMEOUT_ENV} "
                          f"to tell slow from hung", log)
    if proc.returncode == 0:  # ended normally but never answered (something swallowed the output)
        raise BackendDown(f"{what}: the probe ended without an answer: {_telling(err)}", log)
    how = signal_name(proc.returncode) if proc.returncode < 0 else f"exit {proc.returncode}"
    raise BackendDown(f"{what}: the probe died with {how}: {_telling(err)}", log)


def _tail(f, size: int = 256 * 1024) -> str:
    f.seek(0, os.SEEK_END)
    f.seek(max(0, f.tell() - size))
    return f.read().decode("utf-8", "replace")


def _answer(out: str) -> dict | None:
    for line in reversed((out or "").splitlines()):
        if line.startswith(_MARK):
            try:
                got = json.loads(line[len(_MARK):])
            except ValueError:
                return None
            return got if isinstance(got, dict) else None
    return None


# A runtime's own error log line (glog `E1123 12:00:00.1 123 file.cc:51] msg` or absl's
# `2026-11-23 12:00:00.1: E path/file.cc:51] msg`): its message.
_LOG_LINE = re.compile(r"(?:^[EF]\d{4} |: [EF] )[^\]]*\] (.+)$")


def _one_line(reason: str, err: str) -> str:
    """The runtime's reason on one line, with the runtime's own log line beside it when it adds to it
    (e.g. `failed call to cuInit: ... (303)` next to jax's `No visible GPU devices`)."""
    text = " ".join(reason.split())
    extra = [m.group(1) for ln in (err or "").splitlines() if (m := _LOG_LINE.search(ln.strip()))]
    if extra:
        tail = " ".join(extra[-1].split())
        if tail and tail not in text:
            text = f"{text} ({tail})"
    return text[:500]


def _stuck_at(err: str) -> str:
    """Where the main thread hung, from faulthandler's dump: 'stuck in FUNC (FILE:LINE)'."""
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", err or "")
    for block in blocks:
        if "<string>" not in block and "<module>" not in block:
            continue  # not the main thread's stack
        m = re.search(r'File "([^"]+)", line (\d+) in (\S+)', block)
        if m:
            return f"stuck in {m.group(3)} ({Path(m.group(1)).name}:{m.group(2)})"
    return "no stack: the probe was killed"


def _telling(err: str) -> str:
    """The last line of the probe's stderr that says what went wrong."""
    lines = [ln.strip() for ln in (err or "").splitlines() if ln.strip() and not ln.startswith("  ")]
    for ln in reversed(lines):
        if "Error" in ln or "error" in ln or "Check failed" in ln or "Abort" in ln or ln.startswith(("E", "F")):
            return " ".join(ln.split())[:400]
    return " ".join(lines[-1].split())[:400] if lines else "no output"
