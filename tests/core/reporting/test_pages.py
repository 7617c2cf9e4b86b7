"""The pages as a reader sees them, in headless Debian Chromium at 1,280 px: nothing runs off the right edge,
no word is broken inside, 20 configurations get 20 colours that stay apart, and each configuration has one
label across the three reports. On 20 configurations with long names (wide_fixture) and on the fixtures of
the other report tests. Screenshots go to ``test-artifacts/reports/``.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from chunkbench_core.labels import SEPARATOR, configuration_label
from chunkbench_core.reporting import ReportPaths, plots, write_reports
from chunkbench_core.reporting.data import load_report_data
from chunkbench_core.storage.results_db import ResultsDB

from . import wide_fixture
from .test_browser import ARTIFACTS, browser, chromium  # noqa: F401  (fixtures)

WIDTH = 1280

#: every word (letters, digits, underscores) of the visible text whose characters sit on more than one line
BROKEN_WORDS = r"""() => {
  const broken = [];
  const range = document.createRange();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const word = /[\p{L}\p{N}_]+/gu;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest("script, style, select, option") || !parent.getClientRects().length) continue;
    for (const m of node.textContent.matchAll(word)) {
      if (m[0].length < 2 || m[0].length > 40) continue;  // a hash or a path longer than a line may break
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (tops.size > 1) broken.push(m[0] + " (in " + parent.tagName.toLowerCase() + ")");
    }
  }
  return broken;
}"""

#: how far the page can scroll sideways (0: nothing runs off the right edge)
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"

#: key -> every text shown for it (elements marked with the configuration's key)
LABELS = """() => {
  const out = {};
  document.querySelectorAll("[data-configuration]").forEach(e => {
    (out[e.getAttribute("data-configuration")] = out[e.getAttribute("data-configuration")] || []).push(e.textContent);
  });
  return out;
}"""


@pytest.fixture(scope="module")
def wide_results(tmp_path_factory: pytest.TempPathFactory) -> ResultsDB:
    return wide_fixture.build(tmp_path_factory.mktemp("wide") / "results")


@pytest.fixture(scope="module")
def wide_reports(wide_results: ResultsDB) -> ReportPaths:
    return write_reports(wide_results, wide_results.root.parent / "reports")


@pytest.fixture()
def open_page(browser: Any) -> Iterator[Any]:  # noqa: F811  (the fixture imported above, by name)
    contexts = []

    def opener(path: Path, ready: str | None = None) -> Any:
        context = browser.new_context(viewport={"width": WIDTH, "height": 900})
        contexts.append(context)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        if ready:
            page.wait_for_selector(f"html[{ready}=ready]")
        page.wait_for_load_state("load")
        page.errors = errors
        return page

    yield opener
    for context in contexts:
        context.close()


READY = {"managerial": "data-groups", "technical": "data-inspector", "decision_board": "data-board"}


def _pages(reports: ReportPaths) -> list[tuple[str, Path, str]]:
    return [(name, path, READY[name]) for name, path in reports.as_dict().items()]


def test_no_page_runs_off_the_right_edge_at_1280_px(
    open_page: Any, wide_reports: ReportPaths, extended_reports: ReportPaths
) -> None:
    for fixture, reports in (("wide", wide_reports), ("extended", extended_reports)):
        for name, path, ready in _pages(reports):
            page = open_page(path, ready)
            assert page.evaluate(OVERFLOW) <= 0, f"{fixture} {name} scrolls sideways"
            assert page.errors == []
            if fixture == "wide":
                page.screenshot(path=str(ARTIFACTS / f"wide-{name}.png"), full_page=True)
    # the wide tables are wider than the page and scroll inside their own box
    page = open_page(wide_reports.managerial, READY["managerial"])
    boxes = page.evaluate("""() => [...document.querySelectorAll('.scroll')].filter(b => b.getClientRects().length)
        .map(b => ({id: (b.querySelector('table') || {}).id, inner: b.scrollWidth, outer: b.clientWidth}))""")
    scrolling = {b["id"] for b in boxes if b["inner"] > b["outer"]}
    assert "groups-format-rank" in scrolling, boxes
    board = open_page(wide_reports.decision_board, READY["decision_board"])
    for cell in board.locator("#heatmap button").all()[:8]:  # stage 2: eight candidates side by side
        cell.click()
    assert board.evaluate(OVERFLOW) <= 0
    board.screenshot(path=str(ARTIFACTS / "wide-decision_board-stage2.png"), full_page=True)


def test_no_word_is_broken_inside(open_page: Any, wide_reports: ReportPaths, extended_reports: ReportPaths) -> None:
    for reports in (wide_reports, extended_reports):
        for name, path, ready in _pages(reports):
            page = open_page(path, ready)
            page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
            assert page.evaluate(BROKEN_WORDS) == [], name


def test_the_check_for_broken_words_finds_one(open_page: Any, wide_reports: ReportPaths) -> None:
    """The glossary as it was (``word-break: break-all`` in a narrow column) breaks words, and the check says so."""
    page = open_page(wide_reports.managerial, READY["managerial"])
    page.add_style_tag(content="dl.kv dd{word-break:break-all}")
    assert page.evaluate(BROKEN_WORDS)


def _lab(color: str) -> tuple[float, float, float]:
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(color[i : i + 2], 16) / 255) for i in (1, 3, 5))
    x, y, z = (
        (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047,
        0.2126729 * r + 0.7151522 * g + 0.0721750 * b,
        (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883,
    )
    f = [v ** (1 / 3) if v > 216 / 24389 else (24389 / 27 * v + 16) / 116 for v in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def test_twenty_configurations_get_twenty_colours_that_stay_apart(
    open_page: Any, wide_results: ResultsDB, wide_reports: ReportPaths
) -> None:
    assert len(plots.PALETTE) == 20
    closest = min(math.dist(_lab(a), _lab(b)) for a, b in itertools.combinations(plots.PALETTE, 2))
    assert closest >= 30, closest  # CIELAB distance: 10 is already easy to tell apart side by side
    # the quality-vs-cost plot: one colour per configuration, the recommended one a star (shape, not colour)
    points, metric, axis = plots.frontier_points(load_report_data(wide_results).board)
    assert len(points) == 20
    figure = plots.frontier_figure(points, metric, axis)
    markers = [line for line in figure.axes[0].get_lines() if line.get_marker() in (*plots.MARKERS, "*")]
    assert len({line.get_color() for line in markers}) == 20
    stars = [line for line in markers if line.get_marker() == "*"]
    assert len(stars) == 1 and stars[0].get_markeredgecolor() == "black"
    recommended = next(i for i, p in enumerate(points) if p.recommended)
    assert stars[0] is markers[recommended]
    # the decision board's trend chart: the same colours, one per configuration
    page = open_page(wide_reports.decision_board, READY["decision_board"])
    fills = page.evaluate(
        "() => [...document.querySelectorAll('#trend rect[width=\"10\"]')].map(r => r.getAttribute('fill'))"
    )
    assert len(fills) == 20 and set(fills) == set(plots.PALETTE)
    page.locator("#trend").screenshot(path=str(ARTIFACTS / "wide-trend.png"))


def test_one_label_per_configuration_across_the_three_reports(open_page: Any, wide_reports: ReportPaths) -> None:
    expected = wide_fixture.labels()
    assert (
        expected["contextual_retrieval|all-minilm-l6-v2"] == "contextual_retrieval (heading context) × all-minilm-l6-v2"
    )
    shown: dict[str, set[str]] = {}
    for name, path, ready in _pages(wide_reports):
        page = open_page(path, ready)
        if name == "technical":  # the inspector's comparison table names every configuration too
            page.locator("#strategy-picker [role=tab]").nth(3).click()
        found = page.evaluate(LABELS)
        assert set(found) == set(expected), name  # every configuration is named in every report
        for key, texts in found.items():
            shown.setdefault(key, set()).update(" ".join(t.split()) for t in texts)
        text = page.evaluate("() => document.body.innerText")
        for strategy, model in wide_fixture.CONFIGURATIONS:  # no other spelling of a configuration
            for other in (" | ", " · ", " / ", " x ", "|"):
                assert f"{strategy}{other}{model}" not in text, (name, strategy, other, model)
    assert shown == {key: {label} for key, label in expected.items()}
    # the plots are labelled by the same function
    points, _, _ = plots.frontier_points(
        load_report_data(ResultsDB(wide_reports.managerial.parent.parent / "results")).board
    )
    assert {p.label for p in points} == set(expected.values())


def test_the_label_function() -> None:
    assert SEPARATOR == " × "
    assert configuration_label("fixed_size", "all-minilm-l6-v2") == "fixed_size × all-minilm-l6-v2"
    assert (
        configuration_label("contextual_retrieval", "m", {"context_sources": {"headings": 3}})
        == "contextual_retrieval (heading context) × m"
    )
    assert configuration_label("fixed_size", "m", {}, "size256_overlap32") == "fixed_size × m [size256_overlap32]"


def test_managerial_leaves_out_dollar_columns_of_zeros_and_p_values_have_three_decimals(
    wide_reports: ReportPaths,
) -> None:
    managerial = wide_reports.managerial.read_text(encoding="utf-8")
    assert "$0.0000" not in managerial and "index $" not in managerial
    assert "Nothing here costs money" in managerial
    technical = wide_reports.technical.read_text(encoding="utf-8")
    table = re.search(r"<table id=.tests.>(.*?)</table>", technical, re.DOTALL)
    assert table
    headers = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table.group(1))]
    columns = [headers.index("p vs best (one-sided)"), headers.index("p (Holm)")]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(1))]
    p_values = [row[i] for row in rows if row for i in columns]
    assert len(p_values) == 40
    assert all(re.fullmatch(r"[01]\.\d{3}|&lt; 0\.001|–", p) for p in p_values), p_values
    assert any(p != "–" for p in p_values)


def test_the_decision_board_follows_the_ranking_and_its_n_can_be_read(
    open_page: Any, wide_reports: ReportPaths, tmp_path: Path
) -> None:
    """Stage two's default candidates (the three best cells) list equal values in the leaderboard's order, as the
    heat map does, not in the order the runs were recorded (on the demo, recursive ran before element, which
    ranks above it on the same mean), and the n under each heat-map value is drawn in the cell's own colour: the
    tables' grey on the dark cells was unreadable."""
    import json

    from chunkbench_core.reporting.html import json_script

    html = wide_reports.decision_board.read_text(encoding="utf-8")
    start = html.index('<script type="application/json" id="board-data">')
    end = html.index("</script>", start) + len("</script>")
    data = json.loads(html[html.index(">", start) + 1 : end - len("</script>")])
    data["rows"].reverse()  # the runs recorded in the other order
    board = tmp_path / "decision_board.html"
    board.write_text(html[:start] + json_script("board-data", data) + html[end:], encoding="utf-8")
    page = open_page(board, "data-board")
    page.select_option("#metric-picker", "mrr")  # on the wide fixture, several configurations tie on MRR
    heat = page.locator("#heatmap tbody tr").evaluate_all("rows => rows.map(r => r.dataset.config)")
    values = page.evaluate("""() => Object.fromEntries(chunkbench.readJson('board-data').rows.map(r =>
        [r.strategy + '\\u001f' + r.model + '\\u001f' + (r.variant || ''), r.metrics.mrr]))""")
    picked = page.locator("#candidates tbody tr").evaluate_all("rows => rows.map(r => r.dataset.cell)")
    picked = [next(c for c in heat if cell.endswith(c)) for cell in picked]
    best = sorted(heat, key=lambda c: (-values[c], heat.index(c)))[:3]
    assert len({values[c] for c in best}) < 3, values  # a tie among the three: the order must follow the ranking
    assert picked == best, (picked, heat)
    # the candidates carry the n their means are over, as the heat map's cells do
    headers = page.locator("#candidates thead th").all_inner_texts()
    assert "n" in headers
    counts = page.locator("#candidates tbody tr").evaluate_all(
        "(rows, i) => rows.map(r => r.cells[i].innerText)", headers.index("n")
    )
    assert counts and all(c.isdigit() and int(c) > 0 for c in counts), counts
    colours = page.locator("#heatmap tbody button").evaluate_all(
        "cells => cells.map(c => [getComputedStyle(c).color, getComputedStyle(c.querySelector('.ci')).color])"
    )
    assert colours and all(cell == n for cell, n in colours), colours
