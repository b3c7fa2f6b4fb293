"""Accelerator cells without the device: --build-only proves each recipe; a claimed device whose
runtime does not start is one env-error line within a deadline, with nothing left running.

Fast tests: a fake env provider (no uv) and, for the backend probe, a fake `jax` package run by the
real probe script in a real interpreter; every way the runtime can fail is one parameter."""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.cells.cell import Cell
from harness.cells.devices import available, runtime_packages
from harness.cells.envs import Env, EnvError
from harness.cells.matrix import load_matrix
from harness.errors import UserError
from harness.judge.apply import apply_expectations
from harness.judge.results import read_results
from harness.paths import MATRICES_DIR
from harness.run import backend
from harness.run.backend import BackendDown, backend_timeout, probe
from harness.run.cellrun import run_cell
from tests.fake_site import fake_site_python

ACCEL = load_matrix(MATRICES_DIR / "accelerators.yaml")


def _env(python: Path = Path(sys.executable), reused: bool = False, versions: dict | None = None) -> Env:
    return Env(python.parent.parent, python, versions or {"jax": "0.6.0", "jaxlib": "0.6.0"}, reused, 0.5)


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture()
def no_claim(monkeypatch):
    monkeypatch.delenv("SEAMS_ASSUME_DEVICE", raising=False)


# --- --build-only -------------------------------------------------------------------------------

@pytest.mark.parametrize("cell", ACCEL.cells, ids=lambda c: c.name)
def test_build_only_reports_every_accelerator_cell_as_env_verified_not_run(tmp_path, cell, no_claim):
    present, _ = available(cell.device)
    got = run_cell(cell, tmp_path / "results" / f"{cell.name}.jsonl", build_only=True,
                   env_provider=lambda _c, _log: _env(versions={"jax": "0.6.0", "libtpu": "0.0.13"}))
    want = "env verified, not run: " + ("--build-only" if present else f"no {cell.device} device")
    assert (got.status, got.reason) == ("skipped", want)
    kinds = [r["$report_type"] for r in _records(got.results)]
    assert kinds == ["CellStart", "EnvVerified", "CellEnd"], "no test may run under --build-only"
    res = read_results(got.results)
    apply_expectations([res], [])
    assert (res.status, res.verdict, res.reason) == ("skipped", "skipped", want)
    assert res.versions()["libtpu"] == "0.0.13", "the report shows what the env check found installed"


def test_build_only_builds_cpu_cells_too_and_says_why_nothing_ran(tmp_path):
    cell = Cell(name="c-cpu", device="cpu", pins={"jax": "0.6.0"})
    got = run_cell(cell, tmp_path / "c.jsonl", build_only=True, env_provider=lambda _c, _l: _env())
    assert got.reason == "env verified, not run: --build-only"


def test_build_only_a_recipe_that_does_not_resolve_is_the_cells_env_error_with_uvs_reason(tmp_path, no_claim):
    cell = ACCEL.cell("jax060-tpu")

    def broken(_c, _log):
        raise EnvError("uv: Because there is no version of libtpu==9.9 and jax[tpu]==0.6.0 depends on it ...")

    got = run_cell(cell, tmp_path / "c.jsonl", build_only=True, env_provider=broken)
    assert got.status == "env-error" and got.reason.startswith("uv: Because there is no version of libtpu")
    res = read_results(got.results)
    apply_expectations([res], [])
    assert res.verdict == "env-error"


def test_build_only_checks_a_reused_env_again(tmp_path, monkeypatch, no_claim):
    """A cached env is verified by this run, not trusted from an older build (runtime packages included)."""
    seen = []

    def fake_verify(python, cell):
        seen.append(cell.name)
        if cell.name == "jax060-tpu":
            raise EnvError("libtpu (tpu runtime): not installed: No package metadata was found for libtpu")
        return {"jax": "0.6.0", "jaxlib": "0.6.0", "jax-cuda12-pjrt": "0.6.0"}

    monkeypatch.setattr("harness.run.cellrun.verify", fake_verify)
    got = run_cell(ACCEL.cell("jax060-tpu"), tmp_path / "c.jsonl", build_only=True,
                   env_provider=lambda _c, _l: _env(reused=True))
    assert seen == ["jax060-tpu"]
    assert got.status == "env-error" and "libtpu (tpu runtime)" in got.reason
    got = run_cell(ACCEL.cell("jax060-gpu"), tmp_path / "g.jsonl", build_only=True,
                   env_provider=lambda _c, _l: _env(reused=True))
    assert _records(got.results)[1]["versions"]["jax-cuda12-pjrt"] == "0.6.0", "what this run's check found"


@pytest.mark.parametrize("device,pinned,want", [
    ("tpu", ["jax", "jaxlib"], {"libtpu"}),
    ("tpu", ["torch", "torch_xla", "jax"], {"libtpu"}),
    ("tpu", ["torch", "torch_xla"], {"libtpu"}),
    ("gpu", ["jax", "jaxlib"], {"jax-cuda12-pjrt", "jax-cuda12-plugin"}),
    ("cpu", ["jax", "jaxlib"], set()),
])
def test_each_accelerator_recipe_must_bring_its_runtime(device, pinned, want):
    assert set(runtime_packages(device, pinned)) == want


def test_every_accelerator_cell_checks_a_runtime():
    for cell in ACCEL.cells:
        assert runtime_packages(cell.device, list(cell.pins)), f"{cell.name}: its runtime is never checked"


# --- the backend-start probe ----------------------------------------------------------------------

# A fake `jax` in a real interpreter: how its devices() behaves is the fault under test.
_FAKE_JAX = {
    "ok": "def devices(p):\n    return [_D(), _D()]\nclass _D:\n    device_kind = 'TPU v5 lite'\n    platform = 'tpu'\n",
    "init-error": textwrap.dedent("""\
        import sys, types
        xb = types.ModuleType('jax._src.xla_bridge')
        xb._backend_errors = {'tpu': 'ABORTED: The TPU is already in use by process with pid 4242.'}
        sys.modules['jax._src'] = types.ModuleType('jax._src'); sys.modules['jax._src.xla_bridge'] = xb
        def devices(p):
            raise RuntimeError("Unknown backend: 'tpu' requested, but no platforms that are instances of tpu are present")
        """),
    "skipped-backend": textwrap.dedent("""\
        import sys, types
        xb = types.ModuleType('jax._src.xla_bridge')
        xb._backend_errors = {}
        xb._backend_factories = {'cuda': object()}
        def _init_backend(name):
            sys.stderr.write('2026-11-23 12:00:00.1: E external/xla/cuda_platform.cc:51] failed call to cuInit: '
                             'CUDA error: UNKNOWN ERROR (303)\\n')
            raise RuntimeError('FAILED_PRECONDITION: No visible GPU devices.')
        xb._init_backend = _init_backend
        sys.modules['jax._src'] = types.ModuleType('jax._src'); sys.modules['jax._src.xla_bridge'] = xb
        def devices(p):
            raise RuntimeError("Unknown backend: 'gpu' requested")
        """),
    "hang": "import time\ndef initialize_pjrt_plugin():\n    time.sleep(600)\ndef devices(p):\n    initialize_pjrt_plugin()\n",
    "hang-with-child": textwrap.dedent("""\
        import subprocess, sys, time
        def devices(p):
            # a runtime helper holding the chips: it must not outlive the probe
            child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])
            open(__import__('os').environ['SEAMS_TEST_CHILD_PID'], 'w').write(str(child.pid))
            time.sleep(600)
        """),
    "abort": "import os, signal, sys\nsys.stderr.write('F0000 tpu_driver.cc:1] Check failed: chips claimed\\n')\n"
             "sys.stderr.flush()\nos.kill(os.getpid(), signal.SIGABRT)\n",
    "import-error": "raise ImportError('libtpu.so: cannot open shared object file')\n",
    "silent-exit": "import os\nos._exit(0)\n",
    "flood-then-hang": "import sys, time\ndef devices(p):\n    for _ in range(200000):\n"
                       "        sys.stderr.write('W0000 retrying the metadata server ' + 'x' * 200 + '\\n')\n"
                       "    time.sleep(600)\n",
}
# A fake torch_xla for cells without jax: what its runtime reports.
_FAKE_XR = {
    "xla-ok": "def device_type():\n    return 'TPU'\ndef global_runtime_device_count():\n    return 4\n",
    "xla-cpu": "def device_type():\n    return 'CPU'\ndef global_runtime_device_count():\n    return 1\n",
}


def _fake_python(tmp_path: Path, behaviour: str, ignore_deadline: bool = False) -> Path:
    """An interpreter whose `jax` is the fake one (the probe drops PYTHONPATH, so a wrapper sets it)."""
    site = tmp_path / "site"
    if behaviour in _FAKE_XR:
        (site / "torch_xla").mkdir(parents=True)
        (site / "torch_xla" / "__init__.py").write_text("")
        (site / "torch_xla" / "runtime.py").write_text(_FAKE_XR[behaviour])
    else:
        (site / "jax").mkdir(parents=True)
        (site / "jax" / "__init__.py").write_text(_FAKE_JAX[behaviour])
    exe = tmp_path / "bin" / "python"
    exe.parent.mkdir()
    body = "exec sleep 600" if ignore_deadline else f'PYTHONPATH={site} exec {sys.executable} "$@"'
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


TPU = Cell(name="t-tpu", device="tpu", pins={"jax": "0.6.0"})
GPU = Cell(name="g-gpu", device="gpu", pins={"jax": "0.6.0"})


def test_a_backend_that_starts_is_counted(tmp_path):
    got = probe(_fake_python(tmp_path, "ok"), TPU, {}, 20)
    assert (got.count, got.kinds) == (2, ("TPU v5 lite",))


@pytest.mark.parametrize("behaviour,cell,want", [
    ("init-error", TPU, "tpu backend did not start: ABORTED: The TPU is already in use by process with pid 4242."),
    ("skipped-backend", GPU, "gpu backend did not start: FAILED_PRECONDITION: No visible GPU devices. "
                             "(failed call to cuInit: CUDA error: UNKNOWN ERROR (303))"),
    ("abort", TPU, "tpu backend did not start: the probe died with SIGABRT: F0000 tpu_driver.cc:1] Check failed: chips claimed"),
    ("import-error", TPU, "tpu backend did not start: the probe died with exit 1: "
                          "ImportError: libtpu.so: cannot open shared object file"),
])
def test_a_backend_that_fails_is_one_line_with_the_runtimes_reason(tmp_path, behaviour, cell, want):
    with pytest.raises(BackendDown) as exc:
        probe(_fake_python(tmp_path, behaviour), cell, {}, 20)
    assert exc.value.reason == want and "\n" not in exc.value.reason


XLA_TPU = Cell(name="x-tpu", device="tpu", pins={"torch": "2.9.0", "torch_xla": "2.9.0"})


def test_a_cell_without_jax_asks_torch_xlas_runtime(tmp_path):
    got = probe(_fake_python(tmp_path, "xla-ok"), XLA_TPU, {}, 20)
    assert (got.count, got.kinds) == (4, ("TPU",))


def test_torch_xla_falling_back_to_another_device_is_a_backend_that_did_not_start(tmp_path):
    with pytest.raises(BackendDown, match=r"^tpu backend did not start: torch_xla runtime reports CPU with 1 "
                                          r"devices, not TPU$"):
        probe(_fake_python(tmp_path, "xla-cpu"), XLA_TPU, {}, 20)


def test_a_probe_that_ends_without_answering_says_so(tmp_path):
    with pytest.raises(BackendDown, match=r"^tpu backend did not start: the probe ended without an answer"):
        probe(_fake_python(tmp_path, "silent-exit"), TPU, {}, 20)


def test_a_runtime_flooding_its_log_while_it_hangs_is_still_one_line_at_the_deadline(tmp_path):
    with pytest.raises(BackendDown) as exc:
        probe(_fake_python(tmp_path, "flood-then-hang"), TPU, {}, 3)
    assert exc.value.reason.startswith("tpu backend did not start: no answer within 3 s (stuck in devices")
    assert len(exc.value.log) <= 4000


def test_a_backend_that_hangs_is_stopped_at_its_deadline_saying_where(tmp_path):
    t = time.monotonic()
    with pytest.raises(BackendDown) as exc:
        probe(_fake_python(tmp_path, "hang"), TPU, {}, 2)
    assert time.monotonic() - t < 2 + backend._GRACE_S
    assert exc.value.reason.startswith("tpu backend did not start: no answer within 2 s "
                                       "(stuck in initialize_pjrt_plugin (__init__.py:3)")
    assert "TPU_SKIP_MDS_QUERY=1" in exc.value.reason and "SEAMS_BACKEND_TIMEOUT_S" in exc.value.reason


def test_a_probe_deaf_to_its_own_deadline_is_killed_by_the_harness(tmp_path, monkeypatch):
    monkeypatch.setattr(backend, "_GRACE_S", 1)
    t = time.monotonic()
    with pytest.raises(BackendDown, match=r"no answer within 1 s \(no stack: the probe was killed\)"):
        probe(_fake_python(tmp_path, "ok", ignore_deadline=True), TPU, {}, 1)
    assert time.monotonic() - t < 5


def test_a_hung_backend_leaves_no_process_behind(tmp_path):
    pidfile = tmp_path / "child.pid"
    with pytest.raises(BackendDown):
        probe(_fake_python(tmp_path, "hang-with-child"), TPU, {"SEAMS_TEST_CHILD_PID": str(pidfile)}, 2)
    pid = int(pidfile.read_text())
    for _ in range(50):  # the group was SIGKILLed; the zombie is reaped by init shortly after
        try:
            os.kill(pid, 0)
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                break
        except (ProcessLookupError, FileNotFoundError):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the runtime's helper process {pid} outlived the probe")


@pytest.mark.parametrize("value", ["0", "-3", "soon", "1.5"])
def test_a_bad_backend_deadline_is_one_line_of_bad_input(monkeypatch, value):
    monkeypatch.setenv("SEAMS_BACKEND_TIMEOUT_S", value)
    with pytest.raises(UserError, match="SEAMS_BACKEND_TIMEOUT_S"):
        backend_timeout()


def test_a_claimed_device_whose_backend_hangs_is_the_cells_env_error_and_pytest_never_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAMS_ASSUME_DEVICE", "tpu")
    python = _fake_python(tmp_path, "hang")
    t = time.monotonic()
    got = run_cell(ACCEL.cell("jax060-tpu"), tmp_path / "r" / "c.jsonl", env_provider=lambda _c, _l: _env(python),
                   backend_timeout_s=2)
    assert time.monotonic() - t < 2 + backend._GRACE_S + 2
    assert got.status == "env-error" and got.reason.startswith("tpu backend did not start: no answer within 2 s")
    assert [r["$report_type"] for r in _records(got.results)] == ["CellStart", "EnvError", "CellEnd"]
    res = read_results(got.results)
    apply_expectations([res], [])
    assert (res.verdict, res.reason) == ("env-error", got.reason)


# --- device scoping of expectations ---------------------------------------------------------------

def test_every_known_issue_says_which_devices_it_applies_to():
    """A failure seen on CPU must not silently become the expectation on a TPU: each known issue
    names its devices ([cpu] for XLA:CPU behaviour, all three for a cause in Python code)."""
    from harness.judge.expectations import DEFAULT_PATH, load_expectations

    for exp in load_expectations(DEFAULT_PATH):
        assert exp.devices, f"{exp.source}: {exp.id} has no `devices:`; write where it applies, e.g. [cpu]"


def test_cpu_only_behaviours_do_not_follow_a_cell_onto_an_accelerator():
    from harness.judge.expectations import DEFAULT_PATH, find_expectation, load_expectations

    exps = load_expectations(DEFAULT_PATH)
    nodeid = "suites/compute_on/test_properties.py::test_host_multiply_next_to_a_device_multiply_keeps_the_host_placement"
    assert find_expectation(exps, nodeid, {"jax": "0.6.0"}, "cpu") is not None
    for device in ("gpu", "tpu"):
        assert find_expectation(exps, nodeid, {"jax": "0.6.0"}, device) is None


@pytest.mark.parametrize("pins,want", [
    ({"jax": "0.6.0", "jaxlib": "0.6.0"}, "jax[tpu]==0.6.0"),
    ({"torch": "2.9.0", "torch_xla": "2.9.0", "jax": "0.7.1"}, "jax==0.7.1"),
])
def test_a_torch_xla_tpu_cell_takes_libtpu_from_torch_xla_not_from_jax(pins, want):
    reqs = Cell(name="x-tpu", device="tpu", pins=pins).requirements()
    assert want in reqs
    assert ("torch_xla[tpu]==2.9.0" in reqs) == ("torch_xla" in pins)


def test_the_nightly_proves_every_accelerator_recipe_on_a_cpu_runner():
    import yaml

    doc = yaml.safe_load((Path(__file__).resolve().parent.parent / ".github/workflows/nightly.yml").read_text())
    job = doc["jobs"]["recipe"]
    assert job["runs-on"] == "ubuntu-latest" and job["needs"] == "expand"
    runs = [s for s in job["steps"] if "run" in s and "harness run" in s["run"]]
    assert len(runs) == 1 and "--build-only --matrix matrices/accelerators.yaml" in runs[0]["run"]
    assert "${{" not in runs[0]["run"], "matrix values reach the shell only through env"
    assert "recipe_cells" in doc["jobs"]["expand"]["outputs"]


def test_a_parallel_worker_gets_build_only_too(tmp_path):
    from harness.run.parallel import _worker_argv

    argv = _worker_argv(ACCEL.cell("jax060-tpu"), tmp_path, tmp_path / "k", None, False, [], 0, True)
    assert "--build-only" in argv and argv.index("--build-only") < argv.index("--")


def test_build_only_with_pytest_arguments_is_one_line_of_bad_input(tmp_path):
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--build-only", "--cell", "jax060-cpu",
                           "--out", str(tmp_path), "--", "-k", "linearize"],
                          cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--build-only runs no tests" in proc.stderr
    assert not (tmp_path / "results").exists() or not list((tmp_path / "results").iterdir())


# --- the env check of the device's runtime (a fake site-packages, the real check script) -----------



JAX = {"jax": ("0.6.0", "__version__ = '0.6.0'\n")}


@pytest.mark.parametrize("libtpu,want", [
    (None, r"^libtpu \(tpu runtime\): not installed"),
    (("0.0.13", "raise OSError('libtpu.so: cannot open shared object file')\n"),
     r"^libtpu \(tpu runtime\): import libtpu failed: OSError: libtpu.so: cannot open shared object file$"),
])
def test_an_env_without_a_working_device_runtime_is_an_env_error(tmp_path, libtpu, want):
    from harness.cells.envs import verify

    python = fake_site_python(tmp_path, {**JAX, **({"libtpu": libtpu} if libtpu else {})})
    with pytest.raises(EnvError, match=want):
        verify(python, Cell(name="t-tpu", device="tpu", pins={"jax": "0.6.0"}))


def test_a_gpu_env_without_jaxs_cuda_plugin_is_an_env_error(tmp_path):
    from harness.cells.envs import verify

    python = fake_site_python(tmp_path, {**JAX, "jax-cuda12-plugin": ("0.6.0", "")})
    with pytest.raises(EnvError, match=r"^jax-cuda12-pjrt \(gpu runtime\): not installed"):
        verify(python, Cell(name="g-gpu", device="gpu", pins={"jax": "0.6.0"}))


def test_an_env_with_its_runtime_reports_the_runtimes_version(tmp_path):
    from harness.cells.envs import verify

    python = fake_site_python(tmp_path, {**JAX, "libtpu": ("0.0.13", "")})
    (tmp_path / "site" / "libtpu").mkdir()
    (tmp_path / "site" / "libtpu" / "__init__.py").write_text("")
    got = verify(python, Cell(name="t-tpu", device="tpu", pins={"jax": "0.6.0"}))
    assert got == {"libtpu": "0.0.13", "jax": "0.6.0"}
    # the same env is fine for a cpu cell: no runtime is asked of it
    assert verify(python, Cell(name="t-cpu", device="cpu", pins={"jax": "0.6.0"})) == {"jax": "0.6.0"}


def test_a_bad_backend_deadline_stops_the_run_before_any_env_is_built(tmp_path):
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--matrix", str(MATRICES_DIR / "accelerators.yaml"),
                           "--cell", "jax060-tpu", "--out", str(tmp_path)],
                          cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "SEAMS_BACKEND_TIMEOUT_S": "soon", "SEAMS_ENVS_DIR": str(tmp_path / "envs")})
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "error: SEAMS_BACKEND_TIMEOUT_S='soon': must be a positive whole number of seconds")
    assert not (tmp_path / "envs").exists()


@pytest.mark.parametrize("device,want", [("gpu", "cuda,cpu"), ("tpu", "tpu,cpu"), ("cpu", None)])
def test_an_accelerator_cell_never_falls_back_to_the_host_quietly(device, want):
    cell = Cell(name=f"c-{device}", device=device, pins={"jax": "0.6.0"})
    assert cell.run_env().get("JAX_PLATFORMS") == want
    mine = Cell(name=f"m-{device}", device=device, pins={"jax": "0.6.0"}, env={"JAX_PLATFORMS": "cuda"})
    assert mine.run_env()["JAX_PLATFORMS"] == "cuda", "a cell's own env wins"


@pytest.mark.parametrize("xdist,chips,want", [(0, 1, 0), (2, 1, 1), (4, 8, 4), (8, 8, 8), (2, 0, 2)])
def test_an_accelerator_cell_never_gets_more_xdist_workers_than_its_backend_has_chips(xdist, chips, want):
    from harness.run.backend import workers_for_chips

    assert workers_for_chips(xdist, chips) == want


def test_every_fault_point_of_the_backend_probe_ends_in_one_line_or_an_answer(tmp_path):
    """SQLite's method on the probe: count its fault points, then fail each one in turn."""
    from harness import faults

    python = _fake_python(tmp_path, "ok")
    faults.arm("count")
    try:
        probe(python, TPU, {}, 20)
        counts = {op: n for op, n in faults.counts().items() if op != "any"}
        assert counts.get("spawn") == 1 and counts.get("open") == 1 and counts.get("kill"), counts
        for op, total in sorted(counts.items()):
            for n in range(1, total + 1):
                faults.arm(f"{op}:{n}")
                try:
                    got = probe(python, TPU, {}, 20)
                except BackendDown as exc:
                    assert op in ("open", "spawn"), f"{op}:{n}: {exc.reason}"
                    assert exc.reason.startswith("tpu backend not probed: could not start the probe: ")
                    assert "injected by SEAMS_FAULT" in exc.reason and "\n" not in exc.reason
                else:
                    assert op == "kill" and got.count == 2, f"{op}:{n}: a refused kill is tried again"
                assert faults.fired(), f"{op}:{n} never fired"
    finally:
        faults.arm(None)


def test_the_callers_start_up_variables_stay_out_of_the_probe(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONHOME", str(tmp_path / "nowhere"))  # would stop the probe's Python starting
    got = probe(_fake_python(tmp_path, "ok"), TPU, {}, 20)
    assert got.count == 2


def test_the_env_check_sees_the_env_not_the_callers_start_up_variables(tmp_path, monkeypatch):
    from harness.cells.envs import verify

    python = fake_site_python(tmp_path, JAX)
    monkeypatch.setenv("PYTHONHOME", str(tmp_path / "nowhere"))  # would stop the check's Python starting
    assert verify(python, Cell(name="c-cpu", device="cpu", pins={"jax": "0.6.0"})) == {"jax": "0.6.0"}
