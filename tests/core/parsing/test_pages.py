"""Where each PDF page starts in the parsed markdown, and the pages a span covers."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.parsing import parse
from chunkbench_core.parsing.pages import locate_page_starts, page_of, page_span

from .builders import build_english_pdf, build_text_pdf, fonts_available

needs_fonts = pytest.mark.skipif(not fonts_available(), reason="DejaVu fonts (fonts-dejavu-core) not installed")


def test_page_starts_found_forward_and_blank_pages_take_the_next_start() -> None:
    markdown = "# Intro\n\nFirst page text here.\n\n# Results\n\nSecond page body text.\n\nThird page words."
    pages = [["Intro", "First page text here."], [], ["Results", "Second page body text."], ["Third page words."]]
    starts = locate_page_starts(markdown, pages)
    assert starts == [0, markdown.index("# Results"), markdown.index("# Results"), markdown.index("Third")]
    # the blank page 2 holds no offset: the results heading is on page 3
    assert page_of(starts, markdown.index("Results")) == 3
    assert page_of(starts, 0) == 1
    assert page_span(starts, 0, len(markdown)) == (1, 4)
    assert page_span([], 0, 10) is None


def test_a_line_repeated_on_an_earlier_page_is_not_taken_for_the_later_page() -> None:
    markdown = "Net sales by category rose.\n\nOther words.\n\nNet sales by category fell."
    starts = locate_page_starts(markdown, [["Net sales by category rose."], ["Net sales by category fell."]])
    assert starts[1] == markdown.index("Net sales by category fell")


@needs_fonts
def test_pdf_pages_in_the_parse(tmp_path: Path) -> None:
    path = build_text_pdf(
        tmp_path / "three.pdf",
        [
            "The first page talks about revenue recognition in some detail.",
            "",
            "The third page describes the inventory write-down of the quarter.",
        ],
    )
    document = parse(path)
    assert len(document.page_starts) == 3
    offset = document.markdown.index("inventory write-down")
    assert document.page_span(offset, offset + 10) == (3, 3)
    assert document.page_span(0, len(document.markdown)) == (1, 3)
    # the page starts survive the parsed store's JSON
    again = type(document).from_dict(document.to_dict())
    assert again.page_starts == document.page_starts


@needs_fonts
def test_headings_start_their_page(tmp_path: Path) -> None:
    document = parse(build_english_pdf(tmp_path / "english.pdf"))
    assert len(document.page_starts) == 2
    second = document.page_starts[1]
    assert document.markdown[second:].startswith("## Results") or document.markdown[second:].lstrip("# ").startswith(
        "Results"
    )
    assert document.page_span(document.markdown.index("Fixed-size"), document.markdown.index("Fixed-size") + 5) == (
        1,
        1,
    )


def test_documents_without_pages_have_none(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    path.write_text("# Title\n\nSome text.\n", encoding="utf-8")
    document = parse(path)
    assert document.page_starts == []
    assert document.page_span(0, 5) is None
