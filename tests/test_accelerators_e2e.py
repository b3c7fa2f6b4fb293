"""Accelerator cells on this CPU machine, with the real wheels: --build-only through the CLI, and the
claimed-but-broken device drill with the real libtpu and jax's real CUDA plugin.

Kept small for CI (cold cache): --build-only runs on jax060-cpu (its wheels other e2e tests fetch
anyway); the drills add libtpu 0.0.13 (jax[tpu]==0.6.0) and the jax-cuda12 plugin + PJRT wheels
without NVIDIA's CUDA wheels (a few hundred MB, not the 4 GB of jax[cuda12])."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.run.backend import _GRACE_S

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parent.parent


def _cli(*args: str, env: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def _matrix(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text("schema: 1\ndescription: drill\n" + text)
    return path


def _records(out: Path, cell: str) -> list[dict]:
    return [json.loads(ln) for ln in (out / "results" / f"{cell}.jsonl").read_text().splitlines()]


def _left_running(env_marker: str) -> list[str]:
    """Processes still running from an env folder (the probe and anything it started)."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout.splitlines()
    return [ln for ln in out if env_marker in ln and "ps -eo" not in ln]


def test_build_only_verifies_a_cell_through_the_cli_and_runs_nothing(tmp_path):
    proc = _cli("run", "--build-only", "--cell", "jax060-cpu", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    kinds = [r["$report_type"] for r in _records(tmp_path, "jax060-cpu")]
    assert kinds == ["CellStart", "EnvVerified", "CellEnd"]
    assert "env verified, not run: --build-only" in (tmp_path / "report.md").read_text()


def test_build_only_an_accelerator_recipe_that_does_not_resolve_is_an_env_error_with_uvs_reason(tmp_path, monkeypatch):
    monkeypatch.delenv("SEAMS_ASSUME_DEVICE", raising=False)
    matrix = _matrix(tmp_path, "include:\n  - {name: gone-tpu, device: tpu, pins: {jax: 0.5.4}}\n")
    proc = _cli("run", "--build-only", "--matrix", str(matrix), "--out", str(tmp_path / "o"))
    assert proc.returncode == 1
    end = _records(tmp_path / "o", "gone-tpu")[-1]
    assert end["status"] == "env-error" and end["reason"].startswith("uv: ")
    assert "jax[tpu]==0.5.4" in end["reason"] or "jax==0.5.4" in end["reason"], end["reason"]


@pytest.mark.parametrize("cell_env,want", [
    # libtpu finds no chip, asks the GCE metadata server, and retries it: the deadline ends it
    # (off GCE, as here; on a GCE machine without a TPU the server may answer and libtpu fail sooner)
    ("", "tpu backend did not start: "),
    # told it is not on GCE, libtpu fails at once with its own reason
    ("    env: {TPU_SKIP_MDS_QUERY: '1'}\n", "tpu backend did not start: "),
])
def test_a_claimed_tpu_whose_runtime_cannot_start_is_one_env_error_line_within_the_deadline(tmp_path, cell_env, want):
    matrix = _matrix(tmp_path, "include:\n  - name: drill-tpu\n    device: tpu\n    pins: {jax: 0.6.0}\n" + cell_env)
    args = ("run", "--matrix", str(matrix), "--out", str(tmp_path / "o"), "--no-report")
    assert _cli(*args, "--build-only").returncode == 0  # the env first, so the drill times only the backend
    t = time.monotonic()
    proc = _cli(*args, env={"SEAMS_ASSUME_DEVICE": "tpu", "SEAMS_BACKEND_TIMEOUT_S": "20"})
    took = time.monotonic() - t
    assert proc.returncode == 1
    end = _records(tmp_path / "o", "drill-tpu")[-1]
    assert end["status"] == "env-error" and end["reason"].startswith(want), end["reason"]
    assert "\n" not in end["reason"]
    if "no answer within" in end["reason"]:  # hung: the reason says where
        assert not cell_env and "no answer within 20 s (stuck in initialize_pjrt_plugin" in end["reason"]
    else:
        assert "no answer" not in end["reason"] and len(end["reason"]) > len(want)
    assert took < 20 + _GRACE_S + 30, f"took {took:.0f} s"  # deadline, grace, harness start and env reuse
    assert not _left_running("drill-tpu-"), "a probe outlived the run"


def test_a_claimed_gpu_whose_cuda_cannot_start_is_one_env_error_line(tmp_path):
    matrix = _matrix(tmp_path, "include:\n  - name: drill-gpu\n    device: gpu\n    pins: {jaxlib: 0.6.0}\n"
                               "    extras: ['jax==0.6.0', 'jax-cuda12-plugin==0.6.0', 'jax-cuda12-pjrt==0.6.0']\n")
    args = ("run", "--matrix", str(matrix), "--out", str(tmp_path / "o"), "--no-report")
    assert _cli(*args, "--build-only").returncode == 0
    proc = _cli(*args, env={"SEAMS_ASSUME_DEVICE": "gpu", "SEAMS_BACKEND_TIMEOUT_S": "30"})
    assert proc.returncode == 1
    end = _records(tmp_path / "o", "drill-gpu")[-1]
    assert end["status"] == "env-error" and end["reason"].startswith("gpu backend did not start: "), end["reason"]
    assert "no answer" not in end["reason"] and "\n" not in end["reason"]
    assert not _left_running("drill-gpu-")
