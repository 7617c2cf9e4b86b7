"""The reports in headless Debian Chromium, opened from disk (file://): plots, inspector, board, XSS.

Needs the executable ``chromium`` (apt-get install chromium) and, for the interactive
checks, the Python package ``playwright`` driving that executable (never a downloaded
browser). Missing either skips on a laptop and fails in CI (tests/conftest.py).
Screenshots go to ``test-artifacts/reports/`` (git-ignored).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from chunkbench_core.reporting import ReportPaths
from tests.conftest import require_executable, require_tool

from .fixtures import XSS_SCRIPT

ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "reports"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

NO_INLINE_HANDLERS = (
    "() => [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length"
)


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_executable("chromium")


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_tool(False, "the Python package playwright (pip install playwright==1.65.2; no browser download)")
        raise
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=chromium, args=FLAGS[1:], headless=True)
        yield instance
        instance.close()


class Page:
    """A page opened from disk that records dialogs, script errors, console errors and network requests."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.context = browser.new_context(viewport={"width": 1300, "height": 900})
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())

    def assert_inert(self, static_scripts: int) -> None:
        assert self.dialogs == [], self.dialogs
        assert self.errors == [], self.errors
        assert [u for u in self.requests if not u.startswith(("file:", "data:"))] == []
        assert self.page.evaluate("() => document.querySelectorAll('script').length") == static_scripts
        assert self.page.evaluate(NO_INLINE_HANDLERS) == 0
        assert self.page.evaluate("() => window.__xss === undefined")

    def shot(self, name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 10_000
        return path

    def close(self) -> None:
        self.context.close()


def _variant(paths: ReportPaths) -> str:
    return "extended" if "extended" in str(paths.managerial) else "base"


def test_managerial_plots_render(browser: Any, any_reports: ReportPaths) -> None:
    view = Page(browser, any_reports.managerial)
    images = view.page.evaluate(
        "() => [...document.images].map(i => ({id: i.id,"
        " ok: i.complete && i.naturalWidth > 100 && i.naturalHeight > 100,"
        " shown: i.getBoundingClientRect().width > 100}))"
    )
    expected = {"metric-bars", "chunk-sizes"} | ({"frontier"} if _variant(any_reports) == "extended" else set())
    assert {i["id"] for i in images} >= expected
    assert all(i["ok"] and i["shown"] for i in images), images
    assert view.page.locator("#recommendation").inner_text().startswith("Recommended:")
    assert XSS_SCRIPT in view.page.locator("#documents").inner_text()  # shown as text
    view.shot(f"managerial-{_variant(any_reports)}")
    view.assert_inert(static_scripts=2)  # the shared helpers and the results-by-group filter
    view.close()


def test_inspector_switches_strategy_on_click(browser: Any, extended_reports: ReportPaths) -> None:
    view = Page(browser, extended_reports.technical)
    page = view.page
    page.wait_for_selector("html[data-inspector=ready]")
    panel = page.locator("#inspector-panel")
    tabs = page.locator("#strategy-picker [role=tab]")
    assert tabs.count() == 5
    first_config = panel.get_attribute("data-config")
    first_chunks = page.locator("#retrieved-chunks .chunk-head").all_inner_texts()
    assert page.locator("#retrieved-chunks mark").count() > 0  # evidence highlighted inside the chunks
    assert page.locator("#generated-answer").inner_text().startswith("Generated answer")
    assert page.locator("#expected-answer").inner_text() == "It is called lava."
    view.shot("technical-extended")

    # a fixed_size configuration other than the first (the tabs follow the comparison's ranks)
    wanted = page.locator("#strategy-picker [role=tab][aria-selected=false][data-config^='fixed_size']").first
    target = tabs.nth(int(wanted.evaluate("t => Array.prototype.indexOf.call(t.parentNode.children, t)")))
    target.click()
    assert target.get_attribute("aria-selected") == "true"
    assert tabs.nth(0).get_attribute("aria-selected") == "false"
    assert panel.get_attribute("data-config") == target.get_attribute("data-config") != first_config
    assert page.locator("#retrieved-chunks .chunk-head").all_inner_texts() != first_chunks
    # fixed_size: its expansion tree has neighbors
    assert "fixed_size" in panel.get_attribute("data-config")
    assert page.locator("#expansion-tree summary", has_text="next").count() > 0
    assert page.locator("#context-chunks .role.neighbor").count() > 0

    page.locator("#question-list li", has_text="secret answer").click()
    assert page.locator("#inspector-question").inner_text() == f"{XSS_SCRIPT} What is the secret answer?"
    assert "<script>alert(1)</script>" in page.locator("#generated-answer").inner_text()
    view.shot("technical-extended-after-click")
    view.assert_inert(static_scripts=3)
    view.close()


def test_inspector_keyboard(browser: Any, base_reports: ReportPaths) -> None:
    view = Page(browser, base_reports.technical)
    page = view.page
    page.wait_for_selector("html[data-inspector=ready]")
    panel = page.locator("#inspector-panel")
    page.locator("#question-filter").focus()
    page.keyboard.press("Tab")  # into the question list (the selected option holds the tab stop)
    assert page.evaluate("() => document.activeElement.id") == "question-0"
    page.keyboard.press("ArrowDown")
    assert page.locator("#question-1").get_attribute("aria-selected") == "true"
    assert panel.get_attribute("data-question") == "basics/q2"
    page.keyboard.press("End")
    assert panel.get_attribute("data-question") == "persian/q4"
    page.keyboard.press("Tab")  # to the configuration picker
    assert page.evaluate("() => document.activeElement.id") == "config-tab-0"
    page.keyboard.press("ArrowRight")
    assert page.locator("#config-tab-1").get_attribute("aria-selected") == "true"
    assert panel.get_attribute("data-config") == page.locator("#config-tab-1").get_attribute("data-config")
    page.keyboard.press("Enter")  # no-op on the selected tab, must not break anything
    # the failed question shows its error (base fixture: recursive × e5-small failed q2)
    page.locator("#question-1").click()
    page.locator("#strategy-picker [role=tab]", has_text="recursive × e5-small").click()
    assert "search timed out" in page.locator("#question-error").inner_text()
    view.shot("technical-base")
    view.assert_inert(static_scripts=3)
    view.close()


def test_decision_board_filters_and_warns(browser: Any, extended_reports: ReportPaths) -> None:
    view = Page(browser, extended_reports.decision_board)
    page = view.page
    page.wait_for_selector("html[data-board=ready]")
    warning = page.locator("#mismatch-warning")
    assert warning.is_visible()
    differences = " ".join(page.locator("#mismatch-warning li").all_inner_texts())
    assert "boundary model" in differences and "neighbor settings" in differences
    assert "corpus model" not in differences  # one of the two things a configuration is made of: never an alarm
    assert "parsed corpus (corpus-older, corpus-current)" in differences  # read from the scored collections
    assert page.locator("#heatmap button").count() >= 10
    # the heat map's rows follow the leaderboard (its colours' order), and each cell shows the n it is over
    shown = page.locator("#heatmap tbody tr").evaluate_all("rows => rows.map(r => r.dataset.config)")
    ranked = page.evaluate("() => Object.keys(chunkbench.readJson('board-data').colors)")
    assert shown == [c for c in ranked if c in shown]
    assert "n=" in page.locator("#heatmap button").first.inner_text()
    trend = page.evaluate(
        "() => { const s = document.getElementById('trend'); const b = s.getBoundingClientRect();"
        " return {w: b.width, h: b.height, circles: s.querySelectorAll('circle').length,"
        " lines: s.querySelectorAll('polyline').length}; }"
    )
    assert trend["w"] > 300 and trend["h"] > 200 and trend["circles"] >= 10 and trend["lines"] >= 1
    badges = page.locator("#run-list .neighbor-badge").all_inner_texts()
    assert "±3/3" in badges and "±0/0" in badges
    view.shot("decision-board-extended")

    page.select_option("#corpus-filter", "minilm")
    assert "corpus model" not in " ".join(page.locator("#mismatch-warning li").all_inner_texts())
    for run in ("r0-boundary-e5", "r2-neighbors-3"):
        page.locator(f'input.run-toggle[data-run="{run}"]').uncheck()
    assert warning.is_hidden()  # like for like now
    assert page.locator("#heatmap thead th").count() == 1 + 3  # r1, r4 (hostile id, shown as text), r3
    assert "r4-<script>alert(1)" in page.locator("#heatmap thead").inner_text()  # text, not an element

    cell = page.locator('#heatmap button[data-run="r1-baseline"]').first
    cell.click()
    assert cell.get_attribute("aria-pressed") == "true"
    assert page.locator("#candidates tbody tr").count() == 1
    page.select_option("#metric-picker", "answer_similarity")
    assert page.locator("#heatmap button").first.inner_text() != ""
    view.shot("decision-board-extended-filtered")
    view.assert_inert(static_scripts=3)
    view.close()


def test_reports_render_with_virtual_time_budget(chromium: str, extended_reports: ReportPaths, tmp_path: Path) -> None:
    """Plain Chromium (no driver): the scripts run from file:// and build the DOM, as a user's browser would."""

    def dump(path: Path) -> str:
        command = [
            chromium,
            *FLAGS,
            f"--user-data-dir={tmp_path / path.stem}",
            "--virtual-time-budget=5000",
            "--dump-dom",
            path.as_uri(),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    board = dump(extended_reports.decision_board)
    assert 'data-board="ready"' in board and board.count("<circle") >= 10 and "<polyline" in board
    technical = dump(extended_reports.technical)
    assert 'data-inspector="ready"' in technical and "<mark" in technical
    assert not re.search(r"<script>alert", technical) and not re.search(r"<script>alert", board)


@pytest.fixture(scope="module")
def large_report(tmp_path_factory: pytest.TempPathFactory) -> ReportPaths:
    import sys

    root = Path(__file__).resolve().parents[3]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        from report_at_scale import build  # the benchmark's results writer: 1,200 questions here
    finally:
        sys.path.remove(str(root / "benchmarks"))
    from chunkbench_core.reporting import write_reports

    folder = tmp_path_factory.mktemp("large-report")
    return write_reports(build(folder, 1200, 1), folder / "reports")


def test_a_large_run_opens_with_a_window_of_questions(browser: Any, large_report: ReportPaths) -> None:
    """A long question list is drawn as a window around the selection; the tables show their first rows and
    say where the rest is. (Load time at 10,000 questions: benchmarks/report_at_scale.py.)"""
    view = Page(browser, large_report.technical)
    page = view.page
    page.wait_for_selector("html[data-inspector=ready]")
    options = page.locator("#question-list li[role=option]")
    assert options.count() == 200
    assert "1000 more question(s)" in page.locator("#question-list").inner_text()
    options.first.click()
    page.keyboard.press("End")  # every question is reachable from the keyboard
    assert page.locator("#inspector-question").inner_text().startswith("Question 1199:")
    assert page.locator("#question-list li[aria-selected=true]").inner_text().startswith("Question 1199:")
    assert "earlier question(s)" in page.locator("#question-list").inner_text()
    page.locator("#question-filter").fill("Question 7:")
    assert page.locator("#question-list li[role=option]").count() == 1
    assert page.locator("#questions tbody tr").count() == 500
    assert "The first 500 of 1,200 rows are shown here" in page.locator(".table-limit").first.inner_text()
    view.assert_inert(static_scripts=3)
    view.close()
