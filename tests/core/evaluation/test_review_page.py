"""The review page of located evidence in headless Debian Chromium, from disk: decide, save, apply.

Needs ``chromium`` and the Python package ``playwright`` driving it (tests/conftest.py: skipped on a laptop
without them, a failure in CI).
"""

from __future__ import annotations

import json

import pytest

from chunkbench_core.evaluation.review import apply_decisions, locate_file, read_decisions, review_page
from tests.conftest import require_executable, require_tool

from .test_locate import DOCUMENTS, write


@pytest.fixture(scope="module")
def browser():
    chromium = require_executable("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_tool(False, "the Python package playwright (pip install playwright==1.65.2; no browser download)")
        raise
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"], headless=True)
        yield instance
        instance.close()


def test_the_review_page_records_decisions_offline_and_they_apply(tmp_path, browser):
    path = write(
        tmp_path,
        "golden.json",
        {
            "name": "golden",
            "questions": [
                {
                    "id": "a",
                    "question": "Cloud <b>growth</b>?",
                    "expected_answer": "Cloud growth was driven by Azure consumption across many regions.",
                },
                {
                    "id": "b",
                    "question": "Net sales?",
                    "expected_answer": "About $82.9 billion.",
                    "labels": {"Source Chunk Type": "Table"},
                    "references": [{"document": "aapl-2023-q3.md"}],
                },
            ],
        },
    )
    locate_file(path, DOCUMENTS)
    page_path, n = review_page(path, tmp_path / "golden.review.html", DOCUMENTS)
    assert n == 2
    html = page_path.read_text(encoding="utf-8")
    assert "<script src" not in html and "<link" not in html  # self-contained
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    errors, requests = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_path.as_uri())
    assert page.locator("section.question").count() == 2
    assert page.locator("section.question h2").first.inner_text() == "a: Cloud <b>growth</b>?"  # text, not markup
    assert "Source Chunk Type: Table" in page.locator("section.question").nth(1).inner_text()
    assert "0 accepted, 0 rejected, 2 undecided" in page.locator("#counts").inner_text()
    page.fill("#threshold", "0.7")
    page.click("#accept-above")  # accepts the sure one (score 1), leaves the scaled figure (0.45)
    page.locator("section.question").nth(1).locator("input[value=reject]").check()
    assert "1 accepted, 1 rejected, 0 undecided" in page.locator("#counts").inner_text()
    with page.expect_download() as info:
        page.click("#save")
    download = info.value
    assert download.suggested_filename == "golden.decisions.json"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    context.close()
    assert errors == [] and all(u.startswith(("file:", "blob:", "data:")) for u in requests)
    decisions = read_decisions(saved)
    assert sorted(decisions.values()) == ["accept", "reject"]
    outcome, _ = apply_decisions(path, decisions)
    assert (outcome.accepted, outcome.rejected, outcome.undecided) == (1, 1, 0)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert "located_by" not in data["questions"][0]["references"][0]
    assert data["questions"][1]["references"] == [{"document": "aapl-2023-q3.md"}]
