"""report.html in a real browser: pytest-playwright driving Debian's chromium (no browser download).

Reports are built from synthetic results files in the real format (harness/report/synthetic.py),
never from real cells. Screenshots of the main views are written to reports/screenshots/ (or
$SEAMS_SCREENSHOTS) as artefacts; docs/report.md shows two of them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("pytest_playwright", reason="pytest-playwright is not installed (pip install -e '.[test]')")

from harness.report.command import report_command  # noqa: E402
from harness.report.synthetic import EAGER_AOT, JAX_SWEEP, LINEARIZE, sweep_cell_name, write_jax_sweep_results  # noqa: E402

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = Path(__file__).resolve().parent.parent
SHOTS = Path(os.environ.get("SEAMS_SCREENSHOTS") or ROOT / "reports" / "screenshots")
WIDTH, HEIGHT = 1600, 1000
BASE = f"{LINEARIZE}[base]"
VERSION_ORDER = [sweep_cell_name(v) for v in JAX_SWEEP]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's chromium, never a downloaded one; skip (with the reason) where it is absent."""
    if not CHROMIUM:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": ["--no-sandbox", "--disable-gpu"]}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": WIDTH, "height": HEIGHT}}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """A merged jax sweep report (0.4.38..0.10.2) with a baseline: last night lacked 0.10.2 and one case."""
    tmp = tmp_path_factory.mktemp("sweep")
    old = write_jax_sweep_results(tmp / "old", JAX_SWEEP[:-1], drop={"0.6.0": f"{LINEARIZE}[pcast]"})
    report_command(old, tmp / "old-out")
    report_command(write_jax_sweep_results(tmp / "results"), tmp / "out", baseline=tmp / "old-out" / "report.json")
    return tmp / "out" / "report.html"


@pytest.fixture(scope="module")
def news_report(tmp_path_factory) -> Path:
    """A report with news: no known issues, so every failure is a regression; and a cell that could not be built."""
    tmp = tmp_path_factory.mktemp("news")
    (tmp / "none.yaml").write_text("issues: []\n")
    files = write_jax_sweep_results(tmp / "results", ("0.5.3", "0.6.0", "0.7.2"))
    broken = tmp / "results" / "jax0438-cpu.jsonl"
    broken.write_text("".join(json.dumps(r) + "\n" for r in [
        {"$report_type": "CellStart", "schema_version": 1, "cell": "jax0438-cpu", "device": "cpu",
         "pins": {"jax": "0.4.38", "jaxlib": "0.4.38"}, "install_line": "pip install jax==0.4.38 jaxlib==0.4.38"},
        {"$report_type": "EnvError", "cell": "jax0438-cpu", "reason": "uv: no wheel for jaxlib 0.4.38 on this platform"},
        {"$report_type": "CellEnd", "complete": True, "status": "env-error", "duration_s": 1.0}]))
    report_command([*files, broken], tmp / "out", tmp / "none.yaml")
    return tmp / "out" / "report.html"


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def _errors(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def _url(page) -> str:
    """The address as the page sees it now (Playwright's page.url follows history.replaceState a beat later)."""
    return page.evaluate("location.href")


def _in_view(box) -> bool:
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= WIDTH and box["y"] + box["height"] <= HEIGHT


def test_sweep_opens_on_the_boundary_in_version_order(page, sweep):
    errors = _errors(page)
    page.goto(sweep.as_uri())
    heads = page.locator("#grid thead th.cellname > div:first-child").all_inner_texts()
    assert heads == VERSION_ORDER
    assert page.locator("#grid thead th.cellname").nth(VERSION_ORDER.index("jax060-cpu")).inner_text().split("\n") == ["jax060-cpu", "jax 0.6.0"]
    assert "Nothing new" in page.locator("#news").inner_text()
    # The "Since which release" row shows the boundary without scrolling on a 1600 px window.
    row = page.locator("#since tr", has_text="test_linearize_transpose[base]")
    assert "fails since 0.6.0 (last good 0.5.3)" in row.inner_text()
    boxes = row.locator("td.s")
    assert boxes.count() == len(JAX_SWEEP)
    first_bad = boxes.nth(JAX_SWEEP.index("0.6.0"))
    assert "b" in first_bad.get_attribute("class").split() and "g" in boxes.nth(JAX_SWEEP.index("0.5.3")).get_attribute("class").split()
    assert _in_view(first_bad.bounding_box()) and _in_view(boxes.nth(len(JAX_SWEEP) - 1).bounding_box())
    # ... and so do the grid's columns on both sides of it, newest release included, with their versions.
    heads_el = page.locator("#grid thead th.cellname")
    for cell in ("jax053-cpu", "jax060-cpu", "jax0102-cpu"):
        assert _in_view(heads_el.nth(VERSION_ORDER.index(cell)).bounding_box()), cell
    # One scrolling area under the header, whatever the header holds (coverage gaps, baseline): no page scrollbar.
    assert page.evaluate("document.documentElement.scrollHeight") <= HEIGHT
    assert page.locator("#detail").is_hidden()  # nothing selected: the grid has the whole width
    assert page.locator("#grid").bounding_box()["width"] > WIDTH - 60
    assert not errors
    _shot(page, "overview")


def test_rows_skipped_everywhere_collapse_to_one_line_per_reason(page, sweep):
    page.goto(sweep.as_uri())
    groups = page.locator("tr.skipgrp")
    assert groups.all_inner_texts() == [
        "▸ 6 cases: not in cell: torch_xla is not installed in this cell\tskipped everywhere",
        "▸ 3 cases: not in cell: torchax is not installed in this cell\tskipped everywhere"]
    rows = page.locator("#grid tbody tr").count()
    groups.first.click()
    assert page.locator("#grid tbody tr").count() == rows + 6
    assert page.locator("#grid td.id", has_text="test_unused_arg[5]").is_visible()


def test_filters_live_in_the_url_and_a_pasted_link_restores_them(page, sweep):
    page.goto(sweep.as_uri())
    page.locator(".badge", has_text="ok").click()
    page.fill("#q", "linearize")
    url = _url(page)
    assert "hide=ok" in url and "q=linearize" in url
    assert page.locator("#grid td.v", has_text="ok").count() == 0
    page.goto("about:blank")
    page.goto(url)  # the link pasted into an issue
    assert page.input_value("#q") == "linearize"
    assert "off" in page.locator(".badge", has_text="ok").get_attribute("class")
    ids = page.locator("#grid tbody td.id").all_inner_texts()
    assert ids and all("linearize" in i for i in ids)
    assert page.locator("#grid td.v", has_text="ok").count() == 0


def test_a_permalink_opens_the_result_with_its_cell_highlighted(page, sweep):
    errors = _errors(page)
    page.goto(f"{sweep.as_uri()}#case={quote(BASE)}&cell=jax060-cpu")
    detail = page.locator("#detail")
    assert detail.is_visible()
    text = detail.inner_text()
    assert BASE in text and "known-bug on jax060-cpu (jax 0.6.0)" in text and "fails since 0.6.0 (last good 0.5.3)" in text
    assert "https://github.com/jax-ml/jax/issues/28260" in text
    sel = page.locator("#grid td.v.sel")
    assert sel.count() == 1
    col = page.locator("#grid thead th.selcol")
    assert col.inner_text().startswith("jax060-cpu")
    # The selected box sits under its column header.
    assert abs(sel.bounding_box()["x"] - col.bounding_box()["x"]) < 2
    assert page.locator("#detail .tl.cur").get_attribute("title") == "0.6.0: failed"
    repro = page.locator("#repro")
    assert repro.get_attribute("href").startswith("repro/jax060-cpu__")
    assert (sweep.parent / repro.get_attribute("href")).is_file()
    assert not errors
    _shot(page, "result")
    page.locator("#close").click()
    assert detail.is_hidden() and "case=" not in _url(page)


def test_clicking_a_result_selects_it_and_updates_the_link(page, sweep):
    page.goto(sweep.as_uri())
    page.locator("#since tr", has_text="compute_on_outside_jit").locator("td.s").nth(JAX_SWEEP.index("0.5.3")).click()
    assert "cell=jax053-cpu" in _url(page) and quote(f"{EAGER_AOT}[compute_on_outside_jit]", safe="") in _url(page).replace("%2F", "%2F")
    assert "known-bug on jax053-cpu" in page.locator("#detail").inner_text()


def test_changed_since_baseline_view(page, sweep):
    page.goto(f"{sweep.as_uri()}#view=changed")
    assert "Changed since baseline" in page.locator("#changes").inner_text()
    assert "0 regressed, 0 fixed, 0 changed, 15 new, 0 gone" in page.locator("#changes").inner_text()
    marked = page.locator("#grid td.v[data-chg]")
    assert marked.count() == 15 and page.locator("#grid td.v:not([data-chg])").count() == 0
    assert page.locator("#grid thead th.cellname").count() == len(VERSION_ORDER)
    _shot(page, "changed")


def test_a_result_gone_since_the_baseline_is_a_ghost_box_in_its_place(page, tmp_path):
    old = write_jax_sweep_results(tmp_path / "old", ("0.5.3", "0.6.0"))
    report_command(old, tmp_path / "old-out")
    new = write_jax_sweep_results(tmp_path / "new", ("0.5.3", "0.6.0"), drop={"0.6.0": f"{LINEARIZE}[pcast]"})
    report_command(new, tmp_path / "out", baseline=tmp_path / "old-out" / "report.json")
    page.goto((tmp_path / "out" / "report.html").as_uri() + "#view=changed")
    assert "1 gone" in page.locator("#changes").inner_text() and "was ok" in page.locator("#changes").inner_text()
    ghost = page.locator("#grid td.gone")
    assert ghost.count() == 1 and ghost.get_attribute("title") == "gone since the baseline (was ok)"
    assert page.locator("#grid tbody td.id").all_inner_texts() == ["test_linearize_transpose[pcast]"]
    col = page.locator("#grid thead th.cellname").nth(1)
    assert col.inner_text().startswith("jax060-cpu") and abs(ghost.bounding_box()["x"] - col.bounding_box()["x"]) < 2


def test_news_comes_first(page, news_report):
    page.goto(news_report.as_uri())
    news = page.locator("#news")
    assert "Regressions (unexpected failures)" in news.inner_text()
    rows = news.locator("tr[data-r]")
    assert rows.count() == 3  # compute_on at 0.5.3, linearize at 0.6.0 and 0.7.2
    assert "Cells that could not be built" in news.inner_text()
    env_row = news.locator("tr[data-c]")
    assert "jax0438-cpu" in env_row.inner_text() and "no wheel for jaxlib 0.4.38" in env_row.inner_text()
    env_row.click()
    assert "case=%28whole+cell%29" in _url(page) and "cell=jax0438-cpu" in _url(page)
    assert "no wheel for jaxlib 0.4.38" in page.locator("#detail").inner_text()
    assert page.locator("#grid td.v.sel[data-c]").count() == 1  # its pseudo-row in the grid, highlighted
    assert page.locator("#grid thead th.cellname > div:first-child").all_inner_texts()[0] == "jax0438-cpu"
    page.keyboard.press("Escape")
    assert page.locator("#detail").is_hidden()
    assert news.bounding_box()["y"] < page.locator("#since").bounding_box()["y"] < page.locator("#gridsec").bounding_box()["y"]
    rows.first.click()
    assert page.locator("#detail").is_visible() and "regression" in page.locator("#detail").inner_text()
    _shot(page, "news")


def test_a_link_to_a_folded_case_unfolds_it(page, sweep):
    case = "suites/call_jax/test_unused_args.py::test_unused_arg[3]"
    page.goto(f"{sweep.as_uri()}#view=grid&case={quote(case)}&cell=jax0101-cpu")
    assert page.locator("#news").is_hidden() and page.locator("#since").is_hidden()  # the grid view alone
    assert page.locator("tr.skipgrp").first.inner_text().startswith("▾ 6 cases")
    sel = page.locator("#grid td.v.sel")
    assert sel.count() == 1 and sel.is_visible()
    assert "skipped on jax0101-cpu (jax 0.10.1)" in page.locator("#detail").inner_text()
    # A link pasted into the same tab (only the fragment changes) opens its view too.
    page.evaluate("location.hash = 'view=news&q=pcast'")
    page.wait_for_function("document.getElementById('q').value === 'pcast'")
    assert page.locator("#news").is_visible() and page.locator("#detail").is_hidden()
    assert page.locator("#grid tbody td.id").all_inner_texts() == ["test_linearize_transpose[pcast]"]


def test_the_history_page_shows_the_timeline_and_links_the_newest_reports_repro(page, tmp_path):
    import subprocess
    import sys

    nights = []
    for i in range(3):
        report_command(write_jax_sweep_results(tmp_path / f"r{i}", ("0.5.3", "0.6.0")), tmp_path / f"n{i}")
        night = tmp_path / f"n{i}" / "report.json"
        doc = json.loads(night.read_text())
        doc["generated_at"] = f"2026-11-2{i}T03:00:00+00:00"  # three nights, not three runs in one second
        night.write_text(json.dumps(doc))
        nights.append(night)
    proc = subprocess.run([sys.executable, "-m", "harness", "history", *map(str, nights), "--out", str(tmp_path / "h")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    page.goto(f"{(tmp_path / 'h' / 'report.html').as_uri()}#case={quote(BASE)}&cell=jax060-cpu")
    detail = page.locator("#detail")
    assert "history (3 nights)" in detail.inner_text()
    assert detail.locator(".hist .tl").count() == 3
    assert "(jax 0.6.0, jaxlib 0.6.0): known-bug" in detail.locator(".hist .tl").last.get_attribute("title")
    href = page.locator("#repro").get_attribute("href")
    assert href.startswith("../n2/repro/") and (tmp_path / "h" / href).resolve().is_file()
