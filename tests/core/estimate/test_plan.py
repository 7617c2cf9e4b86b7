"""The estimate of a real run from the state on disk (parsed tokens counted once, what the embedding cache holds),
the actuals taken from the stage clock, the run_estimates row, and a build's index time as if nothing were cached
(measured on a cold cache, derived on a warm one)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from chunkbench_core.embedding import Embedder, builtin_registry, get_model
from chunkbench_core.embedding.local import MEMO
from chunkbench_core.estimate.calibration import CalibrationStore, EngineRate, engine_key
from chunkbench_core.estimate.predict import DocumentSize
from chunkbench_core.estimate.plan import (
    TOKENS_FILE,
    PlannedPartition,
    RunSettings,
    corpus_documents,
    estimate_partitions,
    estimate_row,
    parsed_tokens,
    partition_actual,
    stored_rates,
)
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.stages.collections import BuildRequest, build_collection
from chunkbench_core.stages.spec import CollectionRequest, SpecContext, resolve_collection
from chunkbench_core.storage.corpus import ParsedStore, scan_corpus
from chunkbench_core.storage.embedding_cache import EmbeddingCache
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore

MODEL = "all-minilm-l6-v2"
TEXT = " ".join(f"Sentence {i} says the harbour of Quelm floods {i % 5} times in week {i}." for i in range(120))


def minilm_rate() -> EngineRate:
    return EngineRate(engine_key(get_model(MODEL)), 0.004, 0.0002, tokens_per_cl100k=1.2, warmup_seconds=0.3)


def parsed(name: str, text: str) -> ParsedDocument:
    return ParsedDocument(document=name, markdown=text, tree=TreeNode(node_type="document"), units=[], parser="test")


def test_parsed_tokens_are_counted_once_and_unparsed_documents_go_by_size(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text(TEXT, encoding="utf-8")
    (corpus / "b.txt").write_text(TEXT * 2, encoding="utf-8")
    sources = scan_corpus(corpus)
    store = ParsedStore(tmp_path / "parsed", "v1")
    store.put(sources[0], parsed("a.md", TEXT), None)
    documents = {d.document: d for d in corpus_documents(store, sources)}
    assert documents["a.md"].parsed and documents["a.md"].tokens and documents["a.md"].tokens > 1000
    assert not documents["b.txt"].parsed and documents["b.txt"].tokens is None
    kept = json.loads((tmp_path / "parsed" / TOKENS_FILE).read_text())
    assert list(kept.values()) == [documents["a.md"].tokens]
    counted: list[str] = []
    again = parsed_tokens(store, sources, count=lambda text: counted.append(text) or 1)
    assert counted == [] and again == {"a.md": documents["a.md"].tokens}  # read from the file, not counted again


def test_estimate_counts_what_the_cache_holds_and_groups_by_sizes(tmp_path):
    spec = get_model(MODEL)
    embedder = Embedder(spec, cache=EmbeddingCache(tmp_path / "cache.sqlite"))
    texts = [f"chunk {i} of the harbour notes" for i in range(40)]
    embedder.embed(texts[:30], "document")  # 30 of the 40 texts of the last build are cached
    documents = [DocumentSize("notes.md", 40_000, 8000, True)]
    partitions = [
        PlannedPartition(MODEL, "fixed_size", 192, 48, None, {"notes.md": texts}),
        PlannedPartition(MODEL, "recursive", 256, 32, None, {}),
    ]
    estimate = estimate_partitions(
        documents,
        partitions,
        {MODEL: minilm_rate()},
        RunSettings(n_questions=30, dimensions={MODEL: 384}),
        unchanged=["notes.md"],
        embedder_for=lambda _m: embedder,
        calibration=CalibrationStore(tmp_path),
    )
    fixed, recursive = estimate.partitions
    assert (fixed.strategy, recursive.strategy) == ("fixed_size", "recursive")  # the run's order
    assert fixed.cached == round(fixed.texts * 0.75) and recursive.cached == 0
    assert estimate.total > 0 and set(estimate.warmup_seconds) == {MODEL}
    row = estimate_row(
        estimate, batch="2026-12-01T19:00:00Z", benchmark="sample", actual={"total_seconds": estimate.total * 2}
    )
    assert row["ratio"] == pytest.approx(2.0) and row["texts_cached"] == fixed.cached
    assert json.loads(row["estimate"])["partitions"][0]["strategy"] == "fixed_size"
    embedder.cache.close()


def test_partition_actuals_come_from_the_stage_clock():
    before = {"chunking": 1.0, "boundary": 0.5, "embedding": 2.0, "indexing": 0.2, "retrieval": 0.0}
    after = {"chunking": 4.0, "boundary": 2.5, "embedding": 12.0, "indexing": 1.2, "retrieval": 3.0}
    actuals = {a.stages: a.seconds for a in partition_actual(MODEL, "semantic", before, after, 20.0)}
    assert actuals[("embedding",)] == pytest.approx(10.0)
    assert actuals[("boundary",)] == pytest.approx(2.0)
    assert actuals[("chunking", "context", "indexing")] == pytest.approx(3.0 + 1.0 - 2.0)
    assert actuals[("retrieval",)] == pytest.approx(3.0)
    assert actuals[("overhead",)] == pytest.approx(20.0 - 14.0 - 3.0)


def test_index_time_is_measured_on_a_cold_cache_and_derived_on_a_warm_one(tmp_path):
    spec = resolve_collection(
        CollectionRequest("fixed_size", MODEL, chunk_size=40, chunk_overlap=0), SpecContext(builtin_registry())
    )
    documents = [parsed("notes.md", TEXT)]
    embedder = Embedder(get_model(MODEL), cache=EmbeddingCache(tmp_path / "cache.sqlite"))
    results = ResultsDB(tmp_path / "results")
    rates = {MODEL: minilm_rate()}
    with VectorStore(local_root=tmp_path / "qdrant") as store:
        MEMO.clear()
        first = build_collection(BuildRequest(spec, documents, rates=rates), embedder, None, store, results)
        MEMO.clear()
        second = build_collection(BuildRequest(spec, documents, rates=rates), embedder, None, store, results)
    assert first.index_time_source == "measured" and first.index_seconds_uncached == first.index_seconds
    assert second.index_time_source == "derived"
    row = results.read("index_costs", spec.rows_key)[0]
    assert row["index_time_source"] == "derived" and row["cached_texts"] == second.n_retrieved
    added = minilm_rate().seconds(second.n_retrieved, row["embedded_tokens"])
    assert row["index_seconds_uncached"] == pytest.approx(second.index_seconds + added, rel=1e-6)
    results.ensure_database()
    board = results.query("SELECT index_time_source FROM index_costs")
    assert list(board["index_time_source"]) == ["derived"]
    embedder.cache.close()


def test_stored_rates_read_without_timing(tmp_path):
    spec = get_model(MODEL)
    assert stored_rates(tmp_path, [spec]) == {}
    store = CalibrationStore(tmp_path)
    store.save_rate(replace(minilm_rate(), key=engine_key(spec)))
    assert stored_rates(tmp_path, [spec])[MODEL].seconds_per_text == 0.004
