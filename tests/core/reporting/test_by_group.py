"""Results by group in the reports: the managerial section (tables, counts, flag, sentence, filter) and the
technical report's inspector filter, on the two-format, two-category fixture of the breakdown tests."""

from __future__ import annotations

import re
from typing import Any

import pytest

from chunkbench_core.evaluation.recommendation import RankingSettings
from chunkbench_core.reporting import ReportPaths, write_reports
from chunkbench_core.reporting.data import load_report_data
from chunkbench_core.reporting.inspector import inspector_payload
from chunkbench_core.stages import compare_latest_runs
from chunkbench_core.storage.results_db import ResultsDB
from tests.core.evaluation.breakdown_data import build

from .conftest import read
from .test_browser import ARTIFACTS, Page, browser, chromium  # noqa: F401  (fixtures)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> ResultsDB:
    results = build(tmp_path_factory.mktemp("by-group") / "results", sweep=False)
    compare_latest_runs(results, RankingSettings())
    return results


@pytest.fixture(scope="module")
def reports(results: ResultsDB) -> ReportPaths:
    return write_reports(results, results.root.parent / "reports")


def section(html: str) -> str:
    match = re.search(r"<h2 id='results-by-group'>Results by group</h2>(.*?)<h2>", html, re.DOTALL)
    assert match, "no Results by group section"
    return match.group(1)


def table(html: str, element_id: str) -> list[list[str]]:
    match = re.search(rf"<table id='{element_id}'>.*?<tbody>(.*?)</tbody>", html, re.DOTALL)
    assert match, element_id
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", match.group(1), re.DOTALL)
    cells = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.DOTALL) for row in rows]
    return [[" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in row] for row in cells]


def test_managerial_section_tables_counts_and_sentence(reports: ReportPaths) -> None:
    html = section(read(reports.managerial))
    assert (
        "On pdf documents (5 questions) semantic × minilm ranks first by recall_at_512; on docx documents "
        "(5 questions) recursive × minilm does, as on all questions."
    ) in html
    # rows: group, questions, first by the ranking metric, then one cell per configuration (leaderboard order)
    assert table(html, "groups-format-rank") == [
        ["docx", "5 questions", "recursive × minilm", "0.900 n=5", "0.625 n=4"],
        ["pdf", "5 questions", "semantic × minilm", "0.300 n=5", "0.600 n=5"],
    ]
    assert table(html, "groups-format-precision")[0] == [
        "docx",
        "5 questions",
        "recursive × minilm",
        "0.380 n=5",
        "0.400 n=4",
    ]
    assert table(html, "groups-format-context_tokens")[0][3:] == ["380 n=5", "400 n=4"]
    category = table(html, "groups-category-rank")
    assert category[0][:2] == ["howto", "5 questions"]
    assert ["policy", "3 questions too small to read"] == category[1][:2]
    assert ["(none)", "1 question too small to read"] == category[2][:2]
    assert "(2 categories with 3 questions or fewer are left out: too small to read.)" in html
    assert table(html, "groups-document-rank")[0][0] in {"manual.pdf", "policy.docx"}
    for bad in ("nan", "None", "NaN", "NaT"):
        assert not re.search(rf"\b{bad}\b", re.sub(r"<[^>]+>", " ", html)), bad
    # only the first table shows before a choice is made
    assert html.count("<div class='scroll' data-dimension") == 1


def test_inspector_payload_carries_the_groups(results: ResultsDB) -> None:
    payload = inspector_payload(load_report_data(results), results)
    options = {(o["dimension"], o["group"]): o["n"] for o in payload["groupOptions"]}
    assert options[("format", "pdf")] == 5 and options[("format", "docx")] == 5
    assert options[("category", "policy")] == 4  # the judge-only question too: the inspector shows every question
    assert options[("difficulty", "(none)")] == 1 and options[("document", "manual.pdf")] == 5
    q9 = next(q for q in payload["questions"] if q["id"] == "q9")
    assert q9["groups"]["format"] == ["docx", "pdf"]


def test_managerial_filter_in_the_browser(browser: Any, reports: ReportPaths) -> None:  # noqa: F811  (the fixture imported above, by name)
    view = Page(browser, reports.managerial)
    page = view.page
    page.wait_for_selector("html[data-groups=ready]")
    assert page.locator("#groups-format-rank").is_visible()
    assert page.locator("#groups-category-rank").is_hidden()
    page.select_option("#group-dimension", "category")
    assert page.locator("#groups-category-rank").is_visible() and page.locator("#groups-format-rank").is_hidden()
    assert page.locator("#groups-category-sentence").inner_text().startswith("In category howto (5 questions)")
    page.select_option("#group-metric", "precision")
    assert page.locator("#groups-category-precision").is_visible() and page.locator("#groups-category-rank").is_hidden()
    page.locator("#by-group").screenshot(path=str(ARTIFACTS / "managerial-by-group.png"))
    view.assert_inert(static_scripts=2)
    view.close()


def test_inspector_filters_by_group_in_the_browser(browser: Any, reports: ReportPaths) -> None:  # noqa: F811  (the fixture imported above, by name)
    view = Page(browser, reports.technical)
    page = view.page
    page.wait_for_selector("html[data-inspector=ready]")
    assert page.locator("#question-list li[role=option]").count() == 10
    label = page.locator("#group-filter option", has_text="pdf (5 questions)").first  # format before document
    page.select_option("#group-filter", label.get_attribute("value"))
    assert page.locator("#question-list li[role=option]").count() == 5
    assert page.locator("#inspector-panel").get_attribute("data-question") in {f"s/q{i}" for i in (5, 6, 7, 8, 9)}
    category = page.locator("#group-filter option", has_text="(none) (1 question)").first
    page.select_option("#group-filter", category.get_attribute("value"))  # category (none): q8 alone
    assert page.locator("#question-list li[role=option]").count() == 1
    page.select_option("#group-filter", "")
    assert page.locator("#question-list li[role=option]").count() == 10
    view.assert_inert(static_scripts=3)
    view.close()
