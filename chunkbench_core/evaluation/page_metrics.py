"""Page metrics: do the top-k chunks fall on the pages the evidence is cited on?

Question sets over filings often cite their evidence as a page of a document (FinanceBench's
``evidence_page_num``). Each chunk knows the pages it spans (``page_start``..``page_end``, 1-based), so a
chunk *meets* a cited page (document, page) when it is of that document and its page range holds the page.
With P the question's cited pages and the top-k chunks in rank order:

- ``page_hit@k = 1`` if some top-k chunk meets a page of P, else 0;
- ``page_recall@k`` = share of the pages of P that some top-k chunk meets;
- ``page_mrr@k`` = 1 / rank of the first top-k chunk that meets a page of P (0 when none does).

A document without pages (DOCX, Markdown, text) cannot be scored on pages: when a top-k chunk of a cited
document has no page range (a document without pages, or a collection built before chunks knew their pages),
the value is None, never 0. Each function takes plain tuples, so a whole run can be scored as arrays later.
"""

from __future__ import annotations

from collections.abc import Sequence

#: a chunk as the page metrics see it: (document, first page, last page); pages None when unknown
ChunkPages = tuple[str, "int | None", "int | None"]
#: a cited page: (document, 1-based page)
CitedPage = tuple[str, int]


def _meets(chunk: ChunkPages, pages: Sequence[CitedPage]) -> set[CitedPage]:
    document, first, last = chunk
    if first is None or last is None:
        return set()
    return {(d, p) for d, p in pages if d == document and first <= p <= last}


def _unknown(chunks: Sequence[ChunkPages], pages: Sequence[CitedPage]) -> bool:
    """A top-k chunk of a cited document without a page range: the pages cannot be scored."""
    cited = {d for d, _ in pages}
    return any(d in cited and (first is None or last is None) for d, first, last in chunks)


def page_hit(chunks: Sequence[ChunkPages], pages: Sequence[CitedPage]) -> float | None:
    """page_hit@k: 1 if a top-k chunk meets a cited page, else 0; None when the pages cannot be scored."""
    if not pages or _unknown(chunks, pages):
        return None
    return 1.0 if any(_meets(c, pages) for c in chunks) else 0.0


def page_recall(chunks: Sequence[ChunkPages], pages: Sequence[CitedPage]) -> float | None:
    """page_recall@k: share of the cited pages that a top-k chunk meets."""
    if not pages or _unknown(chunks, pages):
        return None
    met: set[CitedPage] = set()
    for chunk in chunks:
        met |= _meets(chunk, pages)
    return len(met) / len(set(pages))


def page_reciprocal_rank(chunks: Sequence[ChunkPages], pages: Sequence[CitedPage]) -> float | None:
    """page_mrr@k: 1 / rank of the first top-k chunk that meets a cited page (0 when none does)."""
    if not pages or _unknown(chunks, pages):
        return None
    for rank, chunk in enumerate(chunks, start=1):
        if _meets(chunk, pages):
            return 1.0 / rank
    return 0.0
