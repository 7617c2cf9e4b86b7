"""Invariants of every strategy over parsed fixtures, Persian text and the Chroma corpora.

For every chunk: a deterministic id ``{strategy}_{safe_doc}_{index:06d}``, indices in
document order, ``markdown[start:end] == text``, no empty chunk, a valid content type,
parents named where the strategy has them; the window check passes with the real
MiniLM tokenizer (256 word pieces); fixed_size/recursive cover every non-whitespace
character; two runs give identical chunks.
"""

from __future__ import annotations

import pytest

from chunkbench_core.chunking import STRATEGIES, ModelWindow, check_chunks, make_chunk_id, make_chunker
from chunkbench_core.parsing.models import CONTENT_TYPES, ParsedDocument

from .helpers import CHROMA_NAMES, SMALL_CHROMA, bag_of_words_embed

MINILM_WINDOW = 256
SIZE, OVERLAP = 192, 48  # stages.default_chunk_size for MiniLM's window, and its overlap


def chunk_all(strategy: str, documents: list[ParsedDocument], minilm, size: int = SIZE, overlap: int = OVERLAP):
    window = ModelWindow(MINILM_WINDOW, minilm.count_word_pieces, model_id="all-minilm-l6-v2")
    chunker = make_chunker(strategy, chunk_size=size, chunk_overlap=overlap, window=window, embed=bag_of_words_embed)
    return [c for d in documents for c in chunker.chunk(d)]


def assert_invariants(strategy: str, documents: list[ParsedDocument], chunks, minilm, overflow: str = "error"):
    by_document: dict[str, list] = {d.document: [] for d in documents}
    for c in chunks:
        by_document[c.document].append(c)
    for name, own in by_document.items():
        assert [c.chunk_index for c in own] == list(range(len(own)))
        assert [c.chunk_id for c in own] == [make_chunk_id(strategy, name, i) for i in range(len(own))]
    ids = {c.chunk_id for c in chunks}
    for c in chunks:
        assert c.strategy == strategy and c.content_type in CONTENT_TYPES
        assert c.token_count > 0 and isinstance(c.heading_path, list)
        assert (c.parent_id is not None) == (c.role == "child") and (c.parent_id is None or c.parent_id in ids)
        if strategy == "contextual_retrieval":
            assert c.embedded_text.endswith("\n\n" + c.text) and c.context_source == "headings"
        else:
            assert c.embedded_text is None
    report = check_chunks(
        chunks, {d.document: d.markdown for d in documents}, MINILM_WINDOW, minilm.count_word_pieces, overflow=overflow
    )
    assert report.passed, report.problems()
    assert report.coverage_checked == (strategy in STRATEGIES.with_capability("covers_text"))
    return report


@pytest.mark.parametrize("strategy", STRATEGIES.names())
def test_parsed_fixtures(strategy, sample_docs, built_fixture_docs, minilm):
    documents = sample_docs + built_fixture_docs
    chunks = chunk_all(strategy, documents, minilm)
    assert_invariants(strategy, documents, chunks, minilm)
    assert [c.to_dict() for c in chunk_all(strategy, documents, minilm)] == [c.to_dict() for c in chunks]
    if strategy == "structural":
        kinds = {c.content_type for c in chunks}
        assert {"paragraph", "table_row", "qa_pair"} <= kinds


@pytest.mark.parametrize("strategy", STRATEGIES.names())
def test_persian_text_through_every_strategy(strategy, persian_doc, minilm):
    chunks = chunk_all(strategy, [persian_doc], minilm, size=40, overlap=10)
    assert len(chunks) > 1
    assert_invariants(strategy, [persian_doc], chunks, minilm)
    persian = "".join(c.text for c in chunks)
    assert "مرخصی" in persian and "\u200c" in persian  # Persian words and ZWNJ kept intact
    if strategy == "structural":
        assert [c.text for c in chunks if c.content_type == "qa_pair"] == [
            u.text for u in persian_doc.units if u.content_type == "qa_pair"
        ]
        assert all(c.text.startswith("سوال:") for c in chunks if c.content_type == "qa_pair")


@pytest.mark.parametrize("strategy", STRATEGIES.names())
def test_small_chroma_corpora(strategy, chroma_docs, minilm):
    documents = [chroma_docs[n] for n in SMALL_CHROMA]
    chunks = chunk_all(strategy, documents, minilm)
    assert_invariants(strategy, documents, chunks, minilm)
    assert [c.to_dict() for c in chunk_all(strategy, documents, minilm)] == [c.to_dict() for c in chunks]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES.names())
def test_all_chroma_corpora(strategy, chroma_docs, minilm):
    documents = [chroma_docs[n] for n in CHROMA_NAMES]
    chunks = chunk_all(strategy, documents, minilm)
    assert_invariants(strategy, documents, chunks, minilm)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["fixed_size", "recursive"])
@pytest.mark.parametrize("overlap", [0, 125])
def test_chroma_protocol_sizes_cover_everything_and_truncation_is_counted(strategy, overlap, chroma_docs, minilm):
    """The Chroma protocol (250 cl100k tokens, MiniLM) overflows MiniLM's window; with truncate it is counted."""
    documents = [chroma_docs[n] for n in CHROMA_NAMES]
    chunker = make_chunker(strategy, chunk_size=250, chunk_overlap=overlap)
    chunks = [c for d in documents for c in chunker.chunk(d)]
    assert all(c.token_count <= 250 for c in chunks)
    report = assert_invariants(strategy, documents, chunks, minilm, overflow="truncate")
    assert report.n_truncated > 0
