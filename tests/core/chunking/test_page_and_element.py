"""The page and element strategies, and the document header every strategy can put in front of its chunks."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.chunking import STRATEGIES, ModelWindow, check_chunks, make_chunker
from chunkbench_core.chunking.element import document_elements
from chunkbench_core.parsing import parse
from chunkbench_core.parsing.context import document_header
from chunkbench_core.parsing.models import Unit
from chunkbench_core.tokens import count_tokens

from .helpers import bag_of_words_embed, doc, words_counter

FINANCIAL = Path(__file__).resolve().parents[2] / "fixtures" / "financial"


@pytest.fixture(scope="module")
def report():
    return parse(FINANCIAL / "2023 Q3 ACME.pdf")


def test_page_makes_one_chunk_per_page_when_pages_fit(report):
    chunks = make_chunker("page", chunk_size=4000, chunk_overlap=0).chunk(report)
    assert [(c.page_start, c.page_end) for c in chunks] == [(n, n) for n in range(1, len(report.page_starts) + 1)]
    assert all(report.markdown[c.start : c.end] == c.text for c in chunks)
    assert "".join(report.markdown.split()) == "".join("".join(c.text for c in chunks).split())


def test_page_splits_a_page_only_past_the_ceiling_and_never_across_pages(report):
    window = ModelWindow(120, words_counter, model_id="fake")
    chunks = make_chunker("page", chunk_size=4000, chunk_overlap=0, window=window).chunk(report)
    assert len(chunks) > len(report.page_starts)
    assert all(c.page_start == c.page_end for c in chunks)
    assert max(words_counter([c.text])[0] for c in chunks) <= 120
    small = make_chunker("page", chunk_size=100, chunk_overlap=0).chunk(report)
    assert all(c.page_start == c.page_end and c.token_count <= 100 for c in small)


def test_page_falls_back_to_sections_without_pages():
    text = "Intro line.\n\n# First\n\nOne paragraph.\n\n## Second\n\nTwo paragraphs.\n\nAnd more."
    chunks = make_chunker("page", chunk_size=200, chunk_overlap=0).chunk(doc(text))
    assert [c.text for c in chunks] == [
        "Intro line.",
        "# First\n\nOne paragraph.",
        "## Second\n\nTwo paragraphs.\n\nAnd more.",
    ]
    assert all(c.page_start is None for c in chunks)


def test_element_kinds_and_tables_kept_apart_with_their_title(report):
    kinds = [e.kind for e in document_elements(report)]
    assert {"title", "narrative", "table"} <= set(kinds)
    chunks = make_chunker("element", chunk_size=400, chunk_overlap=0).chunk(report)
    tables = [c for c in chunks if c.content_type == "table_row"]
    assert tables and all(report.markdown[c.start : c.end] == c.text for c in chunks)
    first = tables[0]
    assert first.text.startswith("## PART I") or "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS" in first.text
    for chunk in chunks:  # a chunk of text never holds a table row, and the reverse
        rows = [u for u in report.units if u.content_type == "table_row" and chunk.start <= u.start < chunk.end]
        assert bool(rows) == (chunk.content_type == "table_row"), chunk.text[:80]
    assert max(c.token_count for c in chunks) <= 400


def test_element_titles_start_chunks_and_lists_are_their_own_kind():
    text = (
        "# Leave\n\nStaff take 27 days of leave a year.\n\n- one\n- two\n\n# Travel\n\n"
        "Trains are booked two weeks early."
    )
    paragraphs = [
        ("Staff take 27 days of leave a year.", ["Leave"]),
        ("- one\n- two", ["Leave"]),
        ("Trains are booked two weeks early.", ["Travel"]),
    ]
    units = [Unit("paragraph", p, text.index(p), text.index(p) + len(p), path) for p, path in paragraphs]
    document = doc(text, units=units)
    assert [e.kind for e in document_elements(document)] == ["title", "narrative", "list", "title", "narrative"]
    chunks = make_chunker("element", chunk_size=200, chunk_overlap=0).chunk(document)
    assert [c.text for c in chunks] == [
        "# Leave\n\nStaff take 27 days of leave a year.\n\n- one\n- two",
        "# Travel\n\nTrains are booked two weeks early.",
    ]


@pytest.mark.parametrize("strategy", STRATEGIES.names())
def test_every_strategy_puts_the_document_header_in_front_and_counts_it(strategy, report):
    header = document_header(report)
    window = ModelWindow(160, words_counter, model_id="fake")
    size = 120
    chunker = make_chunker(
        strategy, chunk_size=size, chunk_overlap=20, embed=bag_of_words_embed, window=window, document_context=True
    )
    chunks = chunker.chunk(report)
    assert chunks and chunker.params()["document_context"] is True
    for chunk in chunks:
        assert report.markdown[chunk.start : chunk.end] == chunk.text and header not in chunk.text
        assert chunk.embedded_text.startswith(header + "\n\n") and chunk.embedded_text.endswith(chunk.text)
    report_check = check_chunks(chunks, {report.document: report.markdown}, 160, words_counter)
    assert report_check.passed, report_check.problems()
    if STRATEGIES[strategy].chunker.size_driven and strategy != "contextual_retrieval":
        assert max(count_tokens(c.embedded_text) for c in chunks) <= size + 1
    plain = make_chunker(
        strategy, chunk_size=size, chunk_overlap=20, embed=bag_of_words_embed, window=window, document_context=False
    ).chunk(report)
    assert all(c.embedded_text is None or not c.embedded_text.startswith(header) for c in plain)
