"""bisect's probe cache remembers only definite answers, under a key holding all they depend on."""

from __future__ import annotations

import pytest

from harness.bisect import probe as probe_mod
from harness.bisect.probe import Answer, Prober, definite
from harness.cells.cell import Cell

BASE = Cell(name="jax060-cpu", device="cpu", pins={"jax": "0.6.0", "jaxlib": "0.6.0"})
TEST = "suites/x/test_y.py::test_z"

TRANSIENT = [Answer("0.6.1", "skip", "incomplete", reason="the probe was killed (SIGKILL)"),
             Answer("0.6.1", "skip", "timeout"),
             Answer("0.6.1", "skip", "incomplete", reason="no closing CellEnd record"),
             Answer("0.6.1", "skip", "env-error", reason="uv: Failed to fetch: connection reset"),
             Answer("0.6.1", "skip", "env-error", reason="uv installing x was killed")]
DEFINITE = [Answer("0.6.1", "good", "pass"), Answer("0.6.1", "bad", "fail"), Answer("0.6.1", "bad", "crash"),
            Answer("0.6.1", "skip", "skip", reason="api absent"),
            Answer("0.6.1", "skip", "env-error", reason="uv: No solution found when resolving dependencies")]


@pytest.fixture
def prober(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAMS_BISECT_CACHE", str(tmp_path / "cache"))
    answers: list[Answer] = []
    calls: list[str] = []

    def fake_run(self, cell, version):
        calls.append(version)
        return answers.pop(0)

    monkeypatch.setattr(Prober, "_run_test", fake_run)

    def make(base: Cell = BASE) -> Prober:
        return Prober(base, "jax", TEST, "fail", {}, tmp_path / "probes")

    return make, answers, calls


@pytest.mark.parametrize("ans", TRANSIENT, ids=lambda a: f"{a.raw}:{a.reason[:20]}")
def test_a_transient_answer_is_tried_again_and_never_cached(prober, ans):
    make, answers, calls = prober
    answers += [ans, ans]
    assert not definite(ans)
    assert make().probe("0.6.1").raw == ans.raw and calls == ["0.6.1", "0.6.1"], "retried once in the bisection"
    answers.append(Answer("0.6.1", "good", "pass"))
    assert make().probe("0.6.1").raw == "pass" and len(calls) == 3, "a later bisection probes again"


@pytest.mark.parametrize("ans", DEFINITE, ids=lambda a: f"{a.raw}:{a.reason[:20]}")
def test_a_definite_answer_is_cached_once(prober, ans):
    make, answers, calls = prober
    answers.append(ans)
    assert definite(ans) and make().probe("0.6.1").raw == ans.raw
    again = make().probe("0.6.1")
    assert again.cached and again.raw == ans.raw and calls == ["0.6.1"]


def test_the_key_holds_the_code_the_cell_env_and_the_cache_survives_damage(prober, monkeypatch, tmp_path):
    make, answers, calls = prober
    answers += [Answer("0.6.1", "good", "pass")] * 4
    make().probe("0.6.1")
    make(Cell(name="jax060-cpu", device="cpu", pins=BASE.pins, env={"XLA_FLAGS": "--xla_foo"})).probe("0.6.1")
    assert len(calls) == 2, "another cell variable is another answer"
    monkeypatch.setattr(probe_mod, "_code_digest", lambda: "edited-suite")
    make().probe("0.6.1")
    assert len(calls) == 3, "an edited suite or in-cell harness is another answer"
    for f in (tmp_path / "cache").iterdir():
        f.write_text("{not json")
    make().probe("0.6.1")
    assert len(calls) == 4, "a damaged cache entry is probed again, not a crash"
