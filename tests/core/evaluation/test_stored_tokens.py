"""Chunk tokens stored with a collection's build: read back, they give the budget metrics the values of encoding.

The build encodes every chunk's cl100k tokens once and stores them beside its chunk rows (``chunk_tokens``); a run
reads them (``read_build_tokens``) and the budget metrics use them instead of encoding the texts again. Real
DuckDB in a temporary folder, real Qdrant engine, the real tokenizer.
"""

from __future__ import annotations

import numpy as np
import pytest

from chunkbench_core.chunking.base import Chunk, make_chunk_id
from chunkbench_core.evaluation import budget
from chunkbench_core.evaluation.experiment import (
    ResolvedQuestion,
    RetrievalOptions,
    collection_chunks,
    run_retrieval,
)
from chunkbench_core.evaluation.questions import Question, Span
from chunkbench_core.evaluation.retrieval import RetrievedChunk
from chunkbench_core.stages.collections import read_build_chunks, read_build_tokens
from chunkbench_core.storage.history import build_rows_key
from chunkbench_core.storage.records import ChunkRecord, CollectionBuild, now
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore, collection_name
from chunkbench_core.tokens import cl100k, encode_many, ids_bytes

DOCUMENT = "notes.md"
ENGLISH = "The harbour ferry leaves the north pier at seven every morning and returns at dusk."
PERSIAN = "کشتی بندر هر روز ساعت هفت صبح از اسکله شمالی حرکت می‌کند و غروب بازمی‌گردد."
EMPTY = ""
MIXED = "Tickets: ۱۲ ریال — paid on board by the purser; «کرایه» rises in winter."
TEXTS = [ENGLISH, PERSIAN, EMPTY, MIXED]
ROWS_KEY = "fixed_size__all-minilm-l6-v2"
BUILD = "b1"


def corpus() -> list[Chunk]:
    chunks, offset = [], 0
    for index, text in enumerate(TEXTS):
        chunk_id = make_chunk_id("fixed_size", DOCUMENT, index)
        chunks.append(Chunk(chunk_id, DOCUMENT, "fixed_size", index, offset, offset + len(text), text, len(text) // 4))
        offset += len(text) + 1
    return chunks


def record(results: ResultsDB, chunks: list[Chunk], token_ids: list[bytes] | None = None, build: str = BUILD) -> None:
    """One build's rows as the collections stage records them (its token ids when given)."""
    at = now()
    results.record_build(
        CollectionBuild(
            rows_key=ROWS_KEY,
            chunks_key=build_rows_key(ROWS_KEY, build),
            chunks=[
                ChunkRecord.of(c, corpus_model="m", variant="", build=build, chunking_params="{}", point_id=None, at=at)
                for c in chunks
            ],
            collection={"build": build},
            usage=[],
            token_ids=token_ids or [],
        )
    )


def stored(chunks: list[Chunk]) -> list[bytes]:
    return [ids_bytes(ids) for ids in encode_many([c.text for c in chunks])]


def contexts(chunks: list[Chunk]) -> list[list[RetrievedChunk]]:
    """Every chunk in a context of its own and all of them in one (so every budget cuts one of them)."""

    def retrieved(c: Chunk, rank: int) -> RetrievedChunk:
        return RetrievedChunk(rank, c.chunk_id, c.document, c.start, c.end, 1.0, c.chunk_index, text=c.text)

    return [[retrieved(c, 1)] for c in chunks] + [[retrieved(c, i + 1) for i, c in enumerate(chunks)]]


BUDGETS = (1, 2, 3, 5, 8, 13, 21, 34, 55)  # small: each chunk is crossed by several budgets


@pytest.fixture()
def encodings(monkeypatch):
    """The texts the budget metrics encode (every call of the threaded encoder), starting with nothing remembered."""
    seen: list[str] = []

    def encode(texts):
        seen.extend(texts)
        return encode_many(texts)

    budget.forget_tokens()
    monkeypatch.setattr(budget, "encode_many", encode)
    yield seen
    budget.forget_tokens()


def test_stored_ids_read_back_are_the_encoded_ids(tmp_path):
    results, chunks = ResultsDB(tmp_path), corpus()
    record(results, chunks, stored(chunks))
    build, rows = read_build_chunks(results, ROWS_KEY, BUILD)
    tokens = read_build_tokens(results, ROWS_KEY, build, rows)
    assert set(tokens) == set(TEXTS)
    for text in TEXTS:
        assert tokens[text].tolist() == cl100k().encode_ordinary(text)
    assert len(tokens[EMPTY]) == 0 and len(tokens[PERSIAN]) > len(PERSIAN.split())  # cl100k splits Persian letters


def test_stored_ids_give_exactly_the_metric_values_of_encoding(tmp_path, encodings):
    results, chunks = ResultsDB(tmp_path), corpus()
    record(results, chunks, stored(chunks))
    build, rows = read_build_chunks(results, ROWS_KEY, BUILD)
    tokens = read_build_tokens(results, ROWS_KEY, build, rows)
    asked = contexts(chunks)
    references = [[Span(DOCUMENT, c.start + 3, c.end)] for c in chunks] + [[Span(DOCUMENT, 0, chunks[-1].end)]]

    encoded = budget.batch_budget_scores(asked, references, BUDGETS)
    cuts = {(t, n): budget.prefix_characters(t, n) for t in TEXTS for n in range(60)}
    assert set(encodings) == set(TEXTS)  # nothing remembered: every text encoded once

    budget.forget_tokens()
    encodings.clear()
    assert budget.remember_tokens(tokens, (c.text for context in asked for c in context)) == len(TEXTS)
    given = budget.batch_budget_scores(asked, references, BUDGETS)
    assert encodings == []  # every text's tokens came from the build
    assert given == encoded
    assert {(t, n): budget.prefix_characters(t, n) for t in TEXTS for n in range(60)} == cuts
    # a chunk crossing a budget counts for part of its text (Persian cut between whole characters)
    persian = TEXTS.index(PERSIAN)  # its context of its own
    assert 0 < given[persian]["recall_at_5"] < given[persian]["recall_at_55"]
    assert 0 < cuts[(PERSIAN, 5)] < len(PERSIAN)


def test_a_build_without_ids_reads_none_and_its_run_encodes(tmp_path, encodings):
    results, chunks = ResultsDB(tmp_path), corpus()
    record(results, chunks)  # as a build made before the ids were stored
    build, rows = read_build_chunks(results, ROWS_KEY, BUILD)
    assert read_build_tokens(results, ROWS_KEY, build, rows) == {}
    assert read_build_tokens(results, ROWS_KEY, None, []) == {}  # the legacy rows of a collection
    assert budget.remember_tokens({}, TEXTS) == 0
    scores = budget.batch_budget_scores(contexts(chunks), [[Span(DOCUMENT, 0, 10)]] * (len(chunks) + 1), BUDGETS)
    assert set(encodings) == set(TEXTS) and len(scores) == len(chunks) + 1


def test_a_rebuild_replaces_its_ids_and_never_keeps_another_writes(tmp_path):
    results, chunks = ResultsDB(tmp_path), corpus()
    record(results, chunks, stored(chunks))
    record(results, chunks, stored(chunks))  # the same build again: replaced, nothing duplicated
    folder = results.tables_dir / "chunk_tokens"
    assert sorted(p.name for p in folder.glob("*.parquet") if not p.name.startswith("_")) == [
        f"{build_rows_key(ROWS_KEY, BUILD)}.parquet"
    ]
    assert int(results.query("SELECT count(*) FROM chunk_tokens").iloc[0, 0]) == len(chunks)
    record(results, chunks, stored(chunks), build="b2")  # another build: its own ids beside
    assert results.query(
        "SELECT build, count(*) AS n FROM chunk_tokens GROUP BY build ORDER BY build"
    ).values.tolist() == [
        ["b1", len(chunks)],
        ["b2", len(chunks)],
    ]
    record(results, chunks)  # b1 written again without ids: the earlier ids are gone with it
    _, rows = read_build_chunks(results, ROWS_KEY, BUILD)
    assert read_build_tokens(results, ROWS_KEY, BUILD, rows) == {}
    with pytest.raises(ValueError, match="one per chunk"):
        record(results, chunks, stored(chunks)[:2])


def test_an_id_row_whose_text_length_differs_from_its_chunk_row_is_left_out(tmp_path):
    results, chunks = ResultsDB(tmp_path), corpus()
    ids = stored(chunks)
    record(results, chunks, ids)
    # the chunk rows written again with another English text (as if the write of the ids had been lost)
    changed = [*chunks]
    changed[0] = Chunk(chunks[0].chunk_id, DOCUMENT, "fixed_size", 0, 0, 10, "Other text", 2)
    at = now()
    results.write(
        "chunks",
        build_rows_key(ROWS_KEY, BUILD),
        [
            ChunkRecord.of(
                c, corpus_model="m", variant="", build=BUILD, chunking_params="{}", point_id=None, at=at
            ).row()
            for c in changed
        ],
    )
    _, rows = read_build_chunks(results, ROWS_KEY, BUILD)
    tokens = read_build_tokens(results, ROWS_KEY, BUILD, rows)
    assert set(tokens) == {PERSIAN, EMPTY, MIXED}


class Vectors:
    """Question vectors made beforehand (a stand-in for the query model)."""

    load_seconds = 0.0

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def embed(self, texts, purpose, use_cache=True):  # noqa: ARG002 - the Embedder's signature
        return np.stack([self.vectors[t] for t in texts])


def test_run_retrieval_with_the_builds_ids_scores_the_same_without_encoding(tmp_path, encodings):
    chunks = [c for c in corpus() if c.text]  # an empty chunk is never embedded
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((len(chunks), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    questions, asked = [], {}
    for i, c in enumerate(chunks):
        text = f"question {i}"
        questions.append(ResolvedQuestion("set", Question(id=f"q{i}", question=text), [Span(DOCUMENT, c.start, c.end)]))
        asked[text] = vectors[i]
    results = ResultsDB(tmp_path / "results")
    record(results, chunks, stored(chunks))
    build, rows = read_build_chunks(results, ROWS_KEY, BUILD)
    tokens = read_build_tokens(results, ROWS_KEY, build, rows)
    name = collection_name("fixed_size", "all-minilm-l6-v2")
    with VectorStore(local_root=tmp_path / "qdrant") as store:
        store.ensure_collection(name, 8)
        store.replace_points(name, chunks, vectors)

        def run(**options):
            budget.forget_tokens()
            encodings.clear()
            outcomes = run_retrieval(
                questions,
                Vectors(asked),  # type: ignore[arg-type]  # a stand-in embedder
                store,
                name,
                RetrievalOptions(top_k=2, chunks=collection_chunks(chunks), budgets=(2, 4, 16, 64), **options),
            )
            return [(o.values, o.budget_scores) for o in outcomes], list(encodings)

        encoded, encoded_texts = run()
        given, given_texts = run(token_ids=tokens)
    assert set(encoded_texts) == {c.text for c in chunks}
    assert given_texts == []
    assert given == encoded
    assert any(0 < scores["recall_at_2"] < 1 for _, scores in given)  # a chunk crossing a budget


def test_a_damaged_ids_file_is_moved_aside_and_the_run_encodes(tmp_path, caplog):
    import logging

    from chunkbench_core.storage import integrity

    results, chunks = ResultsDB(tmp_path), corpus()
    record(results, chunks, stored(chunks))
    bad = results.tables_dir / "chunk_tokens" / f"{build_rows_key(ROWS_KEY, BUILD)}.parquet"
    bad.write_bytes(bad.read_bytes()[: bad.stat().st_size // 2])  # cut short, as a full disk or a crash leaves it
    caplog.set_level(logging.WARNING, logger="chunkbench")
    _, rows = read_build_chunks(results, ROWS_KEY, BUILD)
    assert read_build_tokens(results, ROWS_KEY, BUILD, rows) == {}
    assert not bad.exists() and integrity.quarantined_files(results.tables_dir)
    assert any("moved aside" in r.getMessage() for r in caplog.records)
    record(results, chunks, stored(chunks))  # the build again writes them
    assert len(read_build_tokens(results, ROWS_KEY, BUILD, rows)) == len(TEXTS)
