"""The disk is not a harness bug: a full, read-only or unusable --out is one line and exit 2, nothing stray left.

Full and read-only disks are real: a 64 KiB tmpfs (remounted read-only where needed), which needs
root; elsewhere those tests skip and say why. No mocks of the file system.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness.report.synthetic import write_synthetic_results

REPO = Path(__file__).resolve().parent.parent


def _mount_tmpfs(where: Path, size: str = "64k") -> None:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (a full disk cannot be made otherwise without mocks)")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}")


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    _mount_tmpfs(mnt)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _harness(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *argv], cwd=REPO, capture_output=True, text=True, timeout=300)


def _one_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and ln.startswith("error")]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1, proc.stderr[-2000:]
    return lines[0]


def _stray(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".")]


def test_report_into_a_full_disk_is_one_line_exit_2_and_leaves_no_temp_files(tmp_path, small_disk):
    results = write_synthetic_results(tmp_path / "results", results=2000, cells=2)
    before = [p.read_bytes() for p in results]
    proc = _harness("report", *map(str, results), "--out", str(small_disk / "out"))
    line = _one_error_line(proc)
    assert "No space left on device" in line and "finished results" in line
    assert _stray(small_disk) == []
    assert [p.read_bytes() for p in results] == before  # the inputs are untouched


def test_report_into_a_read_only_disk_is_one_line_exit_2(tmp_path, small_disk):
    (small_disk / "out").mkdir()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    results = write_synthetic_results(tmp_path / "results", results=20, cells=1)
    line = _one_error_line(_harness("report", *map(str, results), "--out", str(small_disk / "out")))
    assert "Read-only file system" in line
    assert _stray(small_disk) == []


def test_run_with_a_read_only_out_stops_before_any_work(small_disk):
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    proc = _harness("run", "--cell", "jax060-cpu", "--out", str(small_disk / "reports"))
    line = _one_error_line(proc)
    assert "Read-only file system" in line and "cell" not in proc.stdout


def test_out_naming_a_file_is_one_line_exit_2(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("x")
    results = write_synthetic_results(tmp_path / "results", results=10, cells=1)
    for argv in (["report", *map(str, results), "--out", str(f)], ["run", "--cell", "jax060-cpu", "--out", str(f)]):
        assert "is a file, not a folder" in _one_error_line(_harness(*argv))


def test_a_missing_out_folder_is_created(tmp_path):
    results = write_synthetic_results(tmp_path / "results", results=10, cells=1)
    out = tmp_path / "not" / "yet" / "there"
    proc = _harness("report", *map(str, results), "--out", str(out))
    assert proc.returncode in (0, 1) and (out / "report.json").exists(), proc.stderr


def test_concurrent_reports_into_one_folder_never_collide(tmp_path):
    """What `tox -p` does: several report writers into one reports/ at once; every file ends whole."""
    out = tmp_path / "reports"
    procs = []
    for i in range(4):
        results = write_synthetic_results(tmp_path / f"r{i}", results=400, cells=2, seed=i)
        procs.append(subprocess.Popen([sys.executable, "-m", "harness", "report", *map(str, results), "--out", str(out)],
                                      cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode in (0, 1) and "Traceback" not in err and "error" not in err.lower(), err
    json.loads((out / "report.json").read_text())  # whole, one writer's
    assert (out / "junit.xml").read_text().rstrip().endswith("</testsuites>")
    assert _stray(out) == []


def test_report_files_share_one_mode(tmp_path):
    results = write_synthetic_results(tmp_path / "results", results=50, cells=1)
    out = tmp_path / "out"
    _harness("report", *map(str, results), "--out", str(out))
    files = [p for p in out.rglob("*") if p.is_file()]
    modes = {stat.S_IMODE(p.stat().st_mode) for p in files}
    assert len(files) > 4 and len(modes) == 1, {str(p.relative_to(out)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    mask = os.umask(0)
    os.umask(mask)
    assert modes == {0o666 & ~mask}


@pytest.mark.e2e
def test_a_run_that_fills_the_disk_is_one_line_exit_2_and_keeps_finished_results(tmp_path):
    """A real cell fills a 12 KiB tmpfs with results mid-run: exit 2, and what finished stays readable."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        # --xdist 0: one process, so results finish before 12 KiB fill up (xdist workers log more first)
        proc = _harness("run", "--cell", "jax060-cpu", "--out", str(disk / "r"), "--xdist", "0", "--",
                        "tests/drills/test_slow.py")
        line = _one_error_line(proc)
        assert "No space left on device" in line
        results = disk / "r" / "results" / "jax060-cpu.jsonl"
        report = _harness("report", str(results), "--out", str(tmp_path / "rep"))
        assert report.returncode == 1, report.stderr  # incomplete is news, never green
        doc = json.loads((tmp_path / "rep" / "report.json").read_text())
        assert doc["counts"].get("ok", 0) >= 1 and doc["counts"].get("incomplete", 0) >= 1, doc["counts"]
        assert _stray(disk / "r" / "results") == []
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
