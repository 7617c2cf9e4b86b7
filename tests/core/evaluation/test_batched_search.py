"""The batched search finds what one search per question finds, through the real embedded vector store: the same
chunks, ranks and scores, ties (identical vectors) broken by chunk_id, with and without a document filter, in
blocks small enough to split the chunks as well as the questions."""

from __future__ import annotations

import numpy as np
import pytest

from chunkbench_core.chunking.base import Chunk, make_chunk_id
from chunkbench_core.errors import ConfigError
from chunkbench_core.evaluation.experiment import search_stable
from chunkbench_core.evaluation.search import (
    SearchSettings,
    StoredVectors,
    candidate_rows,
    score_margin,
    search_many,
    unit_rows,
)
from chunkbench_core.storage.vector_store import VectorStore

N_CHUNKS, DIMENSION = 3000, 32
COLLECTION = "fixed_size__toy_collection"


def _corpus() -> tuple[list[Chunk], np.ndarray]:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((N_CHUNKS, DIMENSION)).astype(np.float32)
    vectors[10:40] = vectors[9]  # thirty chunks with one vector: tied scores for every question
    vectors[50:55] = vectors[49] * 3  # the same direction at another length: tied after normalization
    vectors[60] = vectors[61] + 1e-6  # all but tied
    chunks = [
        Chunk(
            make_chunk_id("fixed_size", f"doc{i % 40:02d}.txt", i // 40),
            f"doc{i % 40:02d}.txt",
            "fixed_size",
            i // 40,
            i,
            i + 10,
            f"text {i}",
            3,
        )
        for i in range(N_CHUNKS)
    ]
    return chunks, vectors


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    chunks, vectors = _corpus()
    with VectorStore(local_root=tmp_path_factory.mktemp("qdrant")) as store:
        store.ensure_collection(COLLECTION, DIMENSION)
        store.replace_points(COLLECTION, chunks, vectors)
        yield store, vectors


def _questions(vectors: np.ndarray) -> tuple[np.ndarray, list[str | None]]:
    rng = np.random.default_rng(9)
    queries = rng.standard_normal((120, DIMENSION)).astype(np.float32)
    queries[:20] = vectors[9] + 0.05 * queries[:20]  # the tied chunks on top
    queries[20:25] = vectors[49]  # five chunks of one direction tied first
    queries[25:30] = vectors[60]
    documents: list[str | None] = [None] * 60 + [f"doc{i % 40:02d}.txt" for i in range(60)]
    documents[-1] = "not-a-document.txt"  # nothing to find: no hits, as a filtered search finds none
    return queries, documents


def _one_at_a_time(store: VectorStore, queries, documents, top_k):
    return [
        [(h.chunk_id, h.rank, h.score, h.start) for h in search_stable(store, COLLECTION, q, top_k, d)]
        for q, d in zip(queries, documents)
    ]


def _batched(hits):
    return [[(h.payload["chunk_id"], h.rank, h.score, h.payload["start"]) for h in row] for row in hits]


@pytest.mark.parametrize("top_k", [1, 5, 40])
@pytest.mark.parametrize("block_mb", [1, 64])
def test_batched_search_equals_one_search_per_question(store, top_k, block_mb):
    store, vectors = store
    queries, documents = _questions(vectors)
    expected = _one_at_a_time(store, queries, documents, top_k)
    got = _batched(search_many(store, COLLECTION, queries, top_k, documents, SearchSettings(block_mb=block_mb)))
    assert got == expected
    ties = [row for row in expected[:20] if len({score for _, _, score, _ in row}) < len(row)]
    assert top_k == 1 or ties  # the comparison covered tied scores


def test_column_blocks_give_the_same_candidates(store):
    """A block smaller than one question's row of scores splits the chunks too: the candidates are the same."""
    store, vectors = store
    queries, _ = _questions(vectors)
    stored = StoredVectors.read(store, COLLECTION)

    whole = candidate_rows(unit_rows(queries), stored.vectors, 5, score_margin(DIMENSION), N_CHUNKS * 200)
    cut = candidate_rows(unit_rows(queries), stored.vectors, 5, score_margin(DIMENSION), 700)  # 5 blocks a row
    assert [sorted(c.tolist()) for c in cut] == [sorted(c.tolist()) for c in whole]


@pytest.mark.parametrize("n_chunks", [3, 13])
def test_blocks_reusing_one_buffer_keep_each_blocks_own_scores(n_chunks):
    """Every block's scores are written into the same memory: the candidates are each question's best chunks all
    the same, with fewer chunks than k (every chunk a candidate) and with a question's chunks split into blocks of
    6, 6 and 1."""
    rng = np.random.default_rng(3)
    matrix = unit_rows(rng.standard_normal((n_chunks, 8)).astype(np.float32))
    queries = unit_rows(rng.standard_normal((7, 8)).astype(np.float32))
    found = candidate_rows(queries, matrix, 5, score_margin(8), 6)
    expected = [np.argsort(-(q @ matrix.T), kind="stable")[:5].tolist() for q in queries]
    assert [c.tolist() for c in found] == expected


def test_vectors_are_read_from_the_engine_without_the_copy(store):
    """Without the copy of the vectors beside the collection (a build that died, a server) the engine's own
    vectors give the same hits."""
    store, vectors = store
    queries, documents = _questions(vectors)
    copy = store._vectors_file(COLLECTION)
    assert copy is not None and copy.is_file()
    kept = copy.read_bytes()
    copy.unlink()
    try:
        from_engine = StoredVectors.read(store, COLLECTION)
        assert len(from_engine.point_ids) == N_CHUNKS
        got = _batched(search_many(store, COLLECTION, queries, 5, documents, stored=from_engine))
    finally:
        copy.write_bytes(kept)
    assert got == _one_at_a_time(store, queries, documents, 5)


def test_a_copy_that_does_not_match_the_collection_is_not_used(tmp_path):
    chunks, vectors = _corpus()
    with VectorStore(local_root=tmp_path) as store:
        store.ensure_collection(COLLECTION, DIMENSION)
        store.replace_points(COLLECTION, chunks[:100], vectors[:100])
        copy = store._vectors_file(COLLECTION)
        stale = copy.read_bytes()
        store.replace_points(COLLECTION, chunks[:200], vectors[:200])
        copy.write_bytes(stale)  # the copy of the earlier build: 100 points where the collection holds 200
        assert len(StoredVectors.read(store, COLLECTION).point_ids) == 200
        store.wipe_points(COLLECTION)
        assert not copy.exists()


@pytest.mark.parametrize("bad", [0, -1, 4097, 1.5, True, "64"])
def test_block_size_is_validated(bad):
    with pytest.raises(ConfigError, match="block_mb"):
        SearchSettings(block_mb=bad)


def test_qdrant_client_local_mode_ranks_alike_and_its_runs_search_one_question_at_a_time(tmp_path):
    """qdrant-client's local mode keeps no copy of the vectors (they are read from it) and ranks the candidates as
    its full search does; but it scores with numpy, a filtered search a few units in the 8th digit away from a
    full one, so a run on it searches one question at a time and keeps the scores of a search of its own (the
    embedded engine scores a pair alike in both)."""
    from chunkbench_core.evaluation.experiment import search_all

    chunks, vectors = _corpus()
    chunks, vectors = chunks[:400], vectors[:400]
    with VectorStore(local_root=tmp_path, local_engine="client") as store:
        store.ensure_collection(COLLECTION, DIMENSION)
        store.replace_points(COLLECTION, chunks, vectors)
        assert store._vectors_file(COLLECTION) is None
        queries, documents = _questions(vectors)
        queries, documents = queries[:40], documents[:20] + documents[-20:]
        want = _one_at_a_time(store, queries, documents, 5)
        found, _ = search_all(store, COLLECTION, queries, 5, documents, SearchSettings(), [])
        assert [[(h.chunk_id, h.rank, h.score, h.start) for h in row] for row in found] == want
        # (after a batched query, local mode's own scores move in the 8th digit too)
        got = _batched(search_many(store, COLLECTION, queries, 5, documents))
        assert [[(c, r) for c, r, _, _ in row] for row in got] == [[(c, r) for c, r, _, _ in row] for row in want]
        assert all(abs(g[2] - w[2]) < 1e-6 for a, b in zip(got, want) for g, w in zip(a, b))


def test_a_run_finds_and_scores_alike_batched_or_one_question_at_a_time(store):
    """run_retrieval batched, and again with the store's batched scoring failing (each question then searched
    alone, as before): the same hits, scores and metric values for every question, and an error of the batched
    pass never reaches a question."""
    from chunkbench_core.evaluation.experiment import (
        QueryLatency,
        ResolvedQuestion,
        RetrievalOptions,
        collection_chunks,
        run_retrieval,
    )
    from chunkbench_core.errors import VectorStoreError
    from chunkbench_core.evaluation.questions import Question, Span

    store, vectors = store
    chunks, _ = _corpus()
    queries, _ = _questions(vectors)
    rng = np.random.default_rng(2)
    questions, by_text = [], {}
    for i, vector in enumerate(queries[:80]):
        chunk = chunks[int(rng.integers(0, len(chunks)))]
        references = [Span(chunk.document, chunk.start + 2, chunk.end + 3)] if i % 5 else []
        sources = (chunk.document,) if i % 5 == 0 else ()
        text = f"question {i}"
        questions.append(ResolvedQuestion("set", Question(id=f"q{i}", question=text), references, sources))
        by_text[text] = vector

    class Vectors:  # question vectors made beforehand: this test is about the search, not a model
        def embed(self, texts, purpose, use_cache=True):
            return np.stack([by_text[t] for t in texts])

    def run():
        latency = QueryLatency()
        outcomes = run_retrieval(
            questions,
            Vectors(),
            store,
            COLLECTION,
            RetrievalOptions(top_k=5, chunks=collection_chunks(chunks), latency=latency),
        )
        assert latency.search_seconds > 0
        return [(o.error, [(h.chunk_id, h.rank, h.score) for h in o.retrieved], o.values) for o in outcomes]

    batched = run()

    def refuse(*_args, **_kwargs):
        raise VectorStoreError("the batched scoring failed")

    store.score_candidates = refuse
    try:
        alone = run()
    finally:
        del store.score_candidates
    assert batched == alone
    assert all(error is None for error, _, _ in batched)
    assert sum(values["recall"] is not None for _, _, values in batched) == 64
