import dataclasses
import json

import pytest

from chunkbench_core.chunking import ModelWindow, check_chunks, make_chunker
from chunkbench_core.tokens import TokenIndex
from chunkbench_core.chunking.window import fit_spans, model_token_counts
from chunkbench_core.errors import ChunkingError

from .helpers import doc, topic_embed, words_counter

TEXT = "# Title\n\nOne two three four five six. Seven eight nine ten.\n\nEleven twelve thirteen."


def test_fit_spans_splits_only_what_is_over_the_window():
    window = ModelWindow(max_tokens=7, count_tokens=words_counter)
    spans = [(0, 7), (9, len(TEXT))]
    fitted = fit_spans(TEXT, TokenIndex(TEXT), spans, window)
    assert fitted[0] == (0, 7)
    assert all(words_counter([TEXT[s:e]])[0] <= 7 for s, e in fitted)
    assert " ".join(TEXT[s:e] for s, e in fitted[1:]).split() == TEXT[9:].split()


def test_task_prefix_is_counted():
    window = ModelWindow(max_tokens=7, count_tokens=words_counter, task_prefix="search_document: ")
    assert window.counts(["a b"]) == [5]


def test_a_window_no_text_fits_is_an_error():
    window = ModelWindow(max_tokens=2, count_tokens=words_counter)  # the two specials fill it
    with pytest.raises(ChunkingError, match="cannot fit .* choose a corpus model with a larger window"):
        fit_spans(TEXT, TokenIndex(TEXT), [(0, 7)], window)


@pytest.mark.parametrize(
    "counter,message",
    [
        (lambda texts: [1], "returned 1 counts for 2 texts"),
        (lambda texts: [1.5, 2.0], "non-integer count"),
        (lambda texts: [-1, 1], "negative count"),
        (lambda texts: 1 / 0, "count_model_tokens failed: ZeroDivisionError"),
    ],
)
def test_bad_token_counters_fail(counter, message):
    with pytest.raises(ChunkingError, match=message):
        model_token_counts(counter, ["a", "b"])


def test_model_window_is_validated():
    with pytest.raises(ChunkingError, match="max_tokens must be a positive integer"):
        ModelWindow(max_tokens=0, count_tokens=words_counter)
    with pytest.raises(ChunkingError, match="count_tokens must be a callable"):
        ModelWindow(max_tokens=10, count_tokens=None)  # type: ignore[arg-type]  # a wrong type on purpose: the check is what is tested


# -- check_chunks -------------------------------------------------------------------------------
def fixed(size=6, overlap=0):
    return make_chunker("fixed_size", chunk_size=size, chunk_overlap=overlap).chunk(doc(TEXT))


def test_a_good_run_passes():
    report = check_chunks(fixed(), {"doc.md": TEXT}, 100, words_counter)
    assert report.passed and report.problems() == [] and report.coverage_checked
    assert report.n_window_checked == report.n_chunks > 0
    json.dumps(report.to_metadata())


def test_overflow_fails_and_names_the_setting_or_is_counted_when_truncation_is_allowed():
    report = check_chunks(fixed(size=12), {"doc.md": TEXT}, 8, words_counter)
    assert not report.passed and report.n_overflows > 0
    (problem,) = report.problems()
    assert "exceed the corpus model window of 8 tokens" in problem
    assert "lower chunk_size (cl100k tokens) to about" in problem and "overflow: truncate" in problem
    allowed = check_chunks(fixed(size=12), {"doc.md": TEXT}, 8, words_counter, overflow="truncate")
    assert allowed.passed and allowed.n_truncated == report.n_overflows


def test_task_prefix_and_contextual_prefix_count_towards_the_window():
    chunks = make_chunker("contextual_retrieval", chunk_size=6, chunk_overlap=0).chunk(doc(TEXT))
    longest = max(words_counter([c.embedded_text])[0] for c in chunks)
    assert check_chunks(chunks, {"doc.md": TEXT}, longest, words_counter).passed
    assert not check_chunks(chunks, {"doc.md": TEXT}, longest, words_counter, task_prefix="search_document: ").passed
    report = check_chunks(chunks, {"doc.md": TEXT}, longest - 1, words_counter)
    assert "shorten the contextual prefix" in report.problems()[0]


def test_semantic_overflows_say_to_pass_the_window():
    chunks = make_chunker("semantic", chunk_size=100, chunk_overlap=0, embed=topic_embed({})).chunk(doc(TEXT))
    report = check_chunks(chunks, {"doc.md": TEXT}, 5, words_counter)
    assert "give semantic the corpus model window (window=ModelWindow(...))" in report.problems()[0]


def test_every_broken_rule_is_reported():
    chunks = fixed(size=4)
    broken = [
        dataclasses.replace(chunks[0], text="   "),
        dataclasses.replace(chunks[1], start=chunks[1].start + 1),
        dataclasses.replace(chunks[2], chunk_id=chunks[1].chunk_id),
        dataclasses.replace(chunks[3], parent_id="nowhere"),
        dataclasses.replace(chunks[4], document="missing.md"),
    ]
    report = check_chunks(broken, {"doc.md": TEXT}, 100, words_counter)
    assert not report.passed
    assert report.empty == [chunks[0].chunk_id]
    assert chunks[0].chunk_id in report.offset_mismatches and chunks[1].chunk_id in report.offset_mismatches
    assert report.duplicate_ids == [chunks[1].chunk_id]
    assert report.dangling_parents == [chunks[3].chunk_id]
    assert report.unknown_documents == ["missing.md"]
    assert len(report.problems()) == 6  # the five above and the coverage hole of the dropped chunk


def test_coverage_finds_a_missing_chunk_for_fixed_and_recursive_only():
    for strategy in ("fixed_size", "recursive"):
        chunks = make_chunker(strategy, chunk_size=6, chunk_overlap=0).chunk(doc(TEXT))
        missing = chunks.pop(1)
        report = check_chunks(chunks, {"doc.md": TEXT}, 100, words_counter)
        assert not report.passed and report.n_uncovered_chars == len("".join(missing.text.split()))
        assert report.uncovered["doc.md"][0][0] == missing.start + len(missing.text) - len(missing.text.lstrip())
    chunks = make_chunker("contextual_retrieval", chunk_size=6, chunk_overlap=0).chunk(doc(TEXT))
    assert check_chunks(chunks[1:], {"doc.md": TEXT}, 100, words_counter).coverage_checked is False


def test_a_document_without_any_fixed_size_chunk_is_uncovered():
    report = check_chunks(fixed(), {"doc.md": TEXT, "other.md": "text"}, 100, words_counter)
    assert report.uncovered == {"other.md": [(0, 4)]}


def test_parents_are_not_counted_against_the_window():
    chunker = make_chunker(
        "semantic_parent_child",
        chunk_size=6,
        chunk_overlap=0,
        embed=topic_embed({}),
        window=ModelWindow(8, words_counter),
    )
    chunks = chunker.chunk(doc(TEXT))
    assert any(words_counter([c.text])[0] > 8 for c in chunks if c.role == "parent")
    report = check_chunks(chunks, {"doc.md": TEXT}, 8, words_counter)
    assert report.passed and report.n_window_checked == sum(c.role == "child" for c in chunks)


def test_bad_check_settings():
    with pytest.raises(ChunkingError, match="overflow must be one of error, truncate"):
        check_chunks([], {}, 10, words_counter, overflow="drop")
    with pytest.raises(ChunkingError, match="max_model_tokens must be a positive integer"):
        check_chunks([], {}, 0, words_counter)


def test_real_minilm_window_on_chroma_chatlogs(chroma_docs, minilm):
    chatlogs = chroma_docs["chatlogs"]
    markdown = {chatlogs.document: chatlogs.markdown}
    chunks = make_chunker("fixed_size", chunk_size=250, chunk_overlap=0).chunk(chatlogs)
    report = check_chunks(chunks, markdown, 256, minilm.count_word_pieces)
    assert not report.passed and report.n_overflows > 0 and report.max_model_tokens_seen > 256
    assert check_chunks(chunks, markdown, 256, minilm.count_word_pieces, overflow="truncate").passed
    window = ModelWindow(256, minilm.count_word_pieces, model_id="all-minilm-l6-v2")
    semantic = make_chunker("semantic", chunk_size=250, chunk_overlap=0, window=window, embed=topic_embed({})).chunk(
        chatlogs
    )
    assert check_chunks(semantic, markdown, 256, minilm.count_word_pieces).passed
