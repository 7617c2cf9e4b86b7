"""Page metrics: top-k chunks against the pages the evidence is cited on; null, never 0, without pages."""

from __future__ import annotations

import pytest

from chunkbench_core.evaluation.metric_registry import METRICS, Scored, score
from chunkbench_core.evaluation.page_metrics import (
    page_hit,
    page_recall,
    page_reciprocal_rank,
)
from chunkbench_core.evaluation.questions import Question, Reference, Span
from chunkbench_core.evaluation.retrieval import RetrievedChunk


def test_page_formulas() -> None:
    pages = [("a.pdf", 3), ("a.pdf", 7)]
    chunks = [("b.pdf", 1, 1), ("a.pdf", 2, 3), ("a.pdf", 9, 9)]
    assert page_hit(chunks, pages) == 1.0
    assert page_recall(chunks, pages) == 0.5
    assert page_reciprocal_rank(chunks, pages) == pytest.approx(1 / 2)
    assert page_hit([("a.pdf", 4, 6)], pages) == 0.0 and page_reciprocal_rank([("a.pdf", 4, 6)], pages) == 0.0
    # a chunk spanning pages 6-7 falls on page 7
    assert page_recall([("a.pdf", 6, 7), ("a.pdf", 1, 3)], pages) == 1.0
    # a cited document whose chunks have no pages (DOCX, or a collection built before pages): null, never 0
    assert page_hit([("a.pdf", None, None)], pages) is None
    assert page_recall([("a.pdf", None, None)], pages) is None
    # b.pdf is not cited: its missing pages do not matter, its chunk is simply not on a cited page
    assert page_reciprocal_rank([("b.pdf", None, None), ("a.pdf", 3, 3)], pages) == 0.5
    assert page_hit(chunks, []) is None


def _hit(rank: int, document: str, pages: tuple[int, int] | None) -> RetrievedChunk:
    return RetrievedChunk(
        rank,
        f"c{rank}",
        document,
        0,
        10,
        1.0,
        page_start=pages[0] if pages else None,
        page_end=pages[1] if pages else None,
    )


def test_page_metrics_are_registered_beside_the_document_metrics() -> None:
    for name, run_name in (
        ("page_hit", "page_hit_rate"),
        ("page_recall", "page_recall"),
        ("page_reciprocal_rank", "page_mrr"),
    ):
        assert METRICS[name].run_name == run_name and "leaderboard" in METRICS[name].views
    cited = Question(
        "q1",
        "How many?",
        references=(Reference("filings/a.pdf", "x", page=3),),
        documents=("b",),
        document_pages=(("b", 2),),
    )
    scored = Scored(
        "k1",
        cited,
        (Span("filings/a.pdf", 0, 1),),
        (_hit(1, "filings/b.pdf", (2, 2)), _hit(2, "filings/a.pdf", (4, 4))),
        (),
        2,
        documents=("filings/a.pdf", "filings/b.pdf"),
    )
    docx = Question("q2", "What?", documents=("notes.docx",))  # no page cited: page metrics do not apply
    scored_docx = Scored("k2", docx, (), (_hit(1, "notes.docx", None),), (), 1, documents=("notes.docx",))
    paged = [METRICS[n] for n in ("page_hit", "page_recall", "page_reciprocal_rank", "doc_hit")]
    first, second = score([scored, scored_docx], paged)
    assert first == {"page_hit": 1.0, "page_recall": 0.5, "page_reciprocal_rank": 1.0, "doc_hit": 1.0}
    assert second["page_hit"] is None and second["page_recall"] is None and second["doc_hit"] == 1.0


def test_chunk_pages_are_read_from_the_payload() -> None:
    chunk = RetrievedChunk.from_payload(
        {"chunk_id": "c", "document": "a.pdf", "start": 0, "end": 5, "page_start": 2, "page_end": 3}
    )
    assert (chunk.page_start, chunk.page_end) == (2, 3)
    old = RetrievedChunk.from_payload(
        {"chunk_id": "c", "document": "a.pdf", "start_offset": 0, "end_offset": 5, "page_start": float("nan")}
    )
    assert old.page_start is None and old.page_end is None
