"""The run estimate: texts per strategy (checked against the real chunkers), stages, cache, parsing, the table."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from chunkbench_core.datasets import CHROMA_CORPORA
from chunkbench_core.estimate.calibration import REMOTE, CalibrationStore, EngineKey, EngineRate
from chunkbench_core.estimate.errors import EstimateError
from chunkbench_core.estimate.predict import (
    LONG_RUN_SECONDS,
    DocumentSize,
    Learnt,
    LLMTiming,
    ObservedBuild,
    PipelineTiming,
    ParseRate,
    RunShape,
    StoreTiming,
    cache_coverage,
    cheaper_options,
    document_tokens,
    documents_from_parsed,
    duration,
    estimate_run,
    load_parse_rates,
    parse_rates_from_records,
    render_estimate,
    sample_size_within,
    save_parse_rates,
    strategy_work,
    text_keys,
)
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.tokens import count_tokens


def rate(
    model: str, per_text: float = 0.01, per_token: float = 0.0005, warmup: float = 1.0, machine: str = "cpu"
) -> EngineRate:
    return EngineRate(EngineKey(model, "engine", "1", machine), per_text, per_token, 1.0, warmup)


RATES = {"fast": rate("fast"), "slow": rate("slow", 0.05, 0.0025, 2.0)}


def docs(*tokens: int, parsed: bool = True) -> list[DocumentSize]:
    return [DocumentSize(f"d{i}.md", t * 4, t, parsed) for i, t in enumerate(tokens)]


def chroma(name: str) -> ParsedDocument:
    text = (CHROMA_CORPORA / f"{name}.md").read_text(encoding="utf-8")
    return ParsedDocument(document=f"{name}.md", markdown=text, tree=TreeNode("document"), units=[], parser="test")


@pytest.fixture(scope="module")
def real_documents() -> list[ParsedDocument]:
    """Long plain documents (two Chroma corpora) and short sectioned ones (the sample corpus, parsed)."""
    from chunkbench_core.datasets import SAMPLE_CORPUS
    from chunkbench_core.parsing import parse

    documents = [chroma("state_of_the_union"), chroma("chatlogs")]
    for path in sorted(SAMPLE_CORPUS.iterdir()):
        parsed = parse(path)
        parsed.document = path.name
        documents.append(parsed)
    return documents


@pytest.fixture(scope="module")
def minilm():
    from chunkbench_core.embedding import Embedder, get_model

    return Embedder(get_model("all-minilm-l6-v2"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "strategy",
    [
        "fixed_size",
        "recursive",
        "contextual_retrieval",
        "semantic",
        "semantic_parent_child",
        "structural",
        "cluster_semantic",
        "page",
        "element",
    ],
)
def test_predicted_texts_are_close_to_what_the_real_chunkers_make(strategy, real_documents, minilm):
    from chunkbench_core.chunking import STRATEGIES
    from chunkbench_core.stages.spec import model_window

    params = {"chunk_size": 192, "chunk_overlap": 48}  # MiniLM's default sizes
    tokens = [d.tokens for d in documents_from_parsed(real_documents)]
    predicted = strategy_work(strategy, tokens, **params)
    before = minilm.usage.texts
    spec = STRATEGIES[strategy]
    # the strategies' defaults, as a run builds them (the semantic ones cut at the document's own percentile)
    chunker = spec.build(
        params["chunk_size"],
        params["chunk_overlap"],
        {},
        window=model_window(minilm.spec),
        embed=lambda texts: minilm.embed(list(texts), "document"),
    )
    retrieved = [c for d in real_documents for c in chunker.chunk(d) if c.is_retrieved]
    boundary = minilm.usage.texts - before
    assert predicted.texts == pytest.approx(len(retrieved), rel=0.01 if strategy == "fixed_size" else 0.2)
    embedded = sum(count_tokens(c.text_to_embed) for c in retrieved)
    assert predicted.tokens == pytest.approx(embedded, rel=0.01 if strategy == "fixed_size" else 0.1)
    assert predicted.boundary_texts == pytest.approx(boundary, rel=0.3, abs=0)


def test_size_driven_arithmetic():
    work = strategy_work("fixed_size", [1000, 100, 0], 200, 50)
    # 1000 tokens: windows of 200 every 150 tokens -> ceil(950 / 150) = 7 chunks, 6 overlaps repeated
    assert work.texts == 7 + 1
    assert work.tokens == 1000 + 6 * 50 + 100
    assert work.boundary_texts == 0
    semantic = strategy_work("semantic", [1000], 200, 50)
    assert semantic.texts == math.ceil(1000 / 160)  # groups 80% full, no overlap
    assert semantic.boundary_texts == 50 and semantic.boundary_tokens == 1000  # 20-token sentences, each once
    contextual = strategy_work("recursive", [1000], 200, 50)
    with_llm = strategy_work("contextual_retrieval", [1000], 200, 50, llm_context=True)
    assert with_llm.texts == contextual.texts
    assert with_llm.tokens == contextual.tokens + 60 * contextual.texts  # an LLM context on each
    unknown = strategy_work("brand_new", [1000], 200, 50)
    assert "unknown strategy" in unknown.source
    with pytest.raises(EstimateError, match="chunk_overlap"):
        strategy_work("fixed_size", [1000], 200, 200)
    with pytest.raises(EstimateError, match="chunk_size"):
        strategy_work("fixed_size", [1000], 0, 0)


def test_a_recorded_build_replaces_the_shape():
    observed = ObservedBuild(
        "semantic", 200, 50, corpus_tokens=10_000, n_embedded=30, embedded_tokens=10_000, boundary_texts=500
    )
    work = strategy_work("semantic", [5000, 15000], 200, 50, observed=observed)
    assert work.texts == 60 and work.tokens == 20_000 and work.boundary_texts == 1000
    assert work.source == "recorded build"
    other_size = strategy_work("semantic", [5000, 15000], 256, 50, observed=observed)
    assert other_size.source == "shape"


def shape(**kwargs) -> RunShape:
    defaults = dict(
        corpus_models=["fast", "slow"],
        strategies=["fixed_size", "semantic", "structural"],
        chunk_size=200,
        chunk_overlap=50,
        n_questions=30,
        boundary_model="fast",
        dimensions={"fast": 384, "slow": 384},
    )
    return RunShape(**{**defaults, **kwargs})


def test_stages_add_up_and_the_slow_model_costs_more():
    estimate = estimate_run(docs(20_000, 5_000, 40_000), shape(), RATES)
    assert [(p.corpus_model, p.strategy) for p in estimate.partitions] == [
        ("fast", "fixed_size"),
        ("fast", "semantic"),
        ("fast", "structural"),
        ("slow", "fixed_size"),
        ("slow", "semantic"),
        ("slow", "structural"),
    ]
    for p in estimate.partitions:
        assert p.total == pytest.approx(sum(p.seconds.values()))
        assert p.seconds == p.raw_seconds  # no correction given
    fast, slow = (estimate.partitions[0], estimate.partitions[3])
    assert fast.texts == slow.texts
    assert slow.seconds["embedding"] == pytest.approx(5 * fast.seconds["embedding"])
    assert estimate.parsing_seconds == 0 and estimate.documents_to_parse == {}
    assert estimate.total == pytest.approx(
        sum(p.total for p in estimate.partitions) + 1.0 + 2.0 + estimate.finishing_seconds
    )
    timing = PipelineTiming()
    assert estimate.finishing_seconds == timing.finishing_seconds + timing.finishing_seconds_per_partition * 6
    bare = estimate_run(
        docs(20_000, 5_000, 40_000),
        replace(
            shape(),
            pipeline=PipelineTiming(
                partition_overhead_seconds=0, finishing_seconds=0, finishing_seconds_per_partition=0
            ),
        ),
        RATES,
    )
    assert bare.total == pytest.approx(
        estimate.total - 6 * timing.partition_overhead_seconds - estimate.finishing_seconds
    )
    by_model = estimate.by_model()
    assert by_model["slow"] > 3 * by_model["fast"]


def test_boundary_sentences_are_paid_once_per_run():
    estimate = estimate_run(docs(20_000), shape(), RATES)
    semantic_fast, structural_fast = estimate.partitions[1], estimate.partitions[2]
    semantic_slow = estimate.partitions[4]
    assert semantic_fast.boundary_texts == 1000 and semantic_fast.boundary_cached == 0
    assert semantic_fast.seconds["boundary"] > 0
    # the same sentences, the same boundary model: the embedding cache serves them after the first time
    for later in (structural_fast, semantic_slow):
        assert later.boundary_cached == later.boundary_texts and later.seconds["boundary"] == 0
    without_cache = estimate_run(docs(20_000), shape(cache_enabled=False), RATES)
    assert all(p.seconds["boundary"] > 0 for p in without_cache.partitions if p.strategy != "fixed_size")


def test_cached_texts_shorten_the_embedding_only():
    cold = estimate_run(docs(20_000), shape(strategies=["fixed_size"]), RATES)
    texts = cold.partitions[0].texts
    warm = estimate_run(
        docs(20_000),
        shape(strategies=["fixed_size"]),
        RATES,
        Learnt(cached={("fast", "fixed_size"): texts // 2, ("slow", "fixed_size"): 10 * texts}),
    )
    half, full = warm.partitions
    assert half.cached == texts // 2 and full.cached == texts  # never more than the texts
    assert half.seconds["embedding"] == pytest.approx(cold.partitions[0].seconds["embedding"] / 2, rel=0.01)
    assert full.seconds["embedding"] == 0
    assert half.seconds["indexing"] == cold.partitions[0].seconds["indexing"]  # every point is written anyway
    by_callable = estimate_run(
        docs(20_000),
        shape(strategies=["fixed_size"]),
        RATES,
        Learnt(cached=lambda model, strategy, n: n if model == "fast" else 0),
    )
    assert [p.cached for p in by_callable.partitions] == [texts, 0]


def test_retrieval_grows_with_points_and_questions_are_embedded_once_per_model():
    store = StoreTiming(seconds_per_query=0.0, seconds_per_searched_point=1e-4)
    pipeline = PipelineTiming(experiment_seconds=0.7, seconds_per_question=0.01)
    estimate = estimate_run(
        docs(50_000), replace(shape(strategies=["fixed_size", "semantic"]), store=store, pipeline=pipeline), RATES
    )
    fixed, semantic = estimate.partitions[0], estimate.partitions[1]
    question_embedding = RATES["fast"].seconds(30, 30 * 20)
    scoring = 0.7 + 30 * 0.01
    assert fixed.raw_seconds["retrieval"] == pytest.approx(30 * 1e-4 * fixed.texts + question_embedding + scoring)
    assert semantic.raw_seconds["retrieval"] == pytest.approx(30 * 1e-4 * semantic.texts + scoring)
    with_llm = estimate_run(
        docs(50_000),
        replace(shape(strategies=["fixed_size"]), store=store, pipeline=pipeline, llm=LLMTiming(seconds_per_call=2.0)),
        RATES,
    )
    assert with_llm.partitions[0].raw_seconds["retrieval"] == pytest.approx(
        fixed.raw_seconds["retrieval"] + 2 * 30 * 2.0
    )


def test_llm_contexts_are_paid_by_the_first_model_only():
    estimate = estimate_run(
        docs(20_000),
        replace(shape(strategies=["contextual_retrieval"]), llm=LLMTiming(seconds_per_call=1.5, answers=False)),
        RATES,
    )
    first, second = estimate.partitions
    assert first.context_calls > 0
    assert first.seconds["context"] == pytest.approx(first.context_calls * 1.5)
    assert second.seconds["context"] == 0
    headings = estimate_run(docs(20_000), shape(strategies=["contextual_retrieval"]), RATES)
    assert headings.partitions[0].context_calls == 0 and headings.partitions[0].tokens < first.tokens


def test_parsing_counts_only_documents_not_parsed_yet():
    documents = [
        DocumentSize("a.pdf", 2_000_000),
        DocumentSize("b.pdf", 500_000),
        DocumentSize("c.docx", 100_000),
        DocumentSize("d.md", 8_000, 2_000, parsed=True),
    ]
    estimate = estimate_run(documents, shape(strategies=["fixed_size"]), RATES)
    assert estimate.documents_to_parse == {"pdf": 2, "docx": 1}
    assert estimate.parsing_seconds == pytest.approx((0.3 + 2.0 * 2) + (0.3 + 2.0 * 0.5) + (0.2 + 1.0 * 0.1))
    assert estimate.tokens_guessed == 3
    recorded = {"pdf": ParseRate("pdf", 1.0, 0.0, "recorded", 5)}
    faster = estimate_run(documents, shape(strategies=["fixed_size"]), RATES, Learnt(parse_rates=recorded))
    assert faster.parsing_seconds == pytest.approx(2.0 + 0.2 + 0.1)


def test_file_sizes_stand_in_for_tokens_using_what_the_parsed_files_gave():
    documents = [
        DocumentSize("a.pdf", 1_000_000, 20_000, parsed=True),
        DocumentSize("b.pdf", 3_000_000),
        DocumentSize("c.xyz", 1_000),
    ]
    tokens, guessed = document_tokens(documents)
    assert tokens == [20_000, pytest.approx(60_000), pytest.approx(100)]  # 0.02 tokens a byte, as a.pdf gave
    assert guessed == 2


def test_corrections_multiply_each_stage_and_the_raw_seconds_stay():
    key = RATES["slow"].key.id
    estimate = estimate_run(
        docs(20_000),
        shape(strategies=["fixed_size"]),
        RATES,
        Learnt(corrections=lambda k, stage: 2.0 if (k, stage) == (key, "embedding") else 1.0),
    )
    fast, slow = estimate.partitions
    assert slow.seconds["embedding"] == pytest.approx(2 * slow.raw_seconds["embedding"])
    assert fast.seconds["embedding"] == fast.raw_seconds["embedding"]
    assert slow.seconds["indexing"] == slow.raw_seconds["indexing"]


def test_missing_rates_and_empty_runs_are_refused_with_what_to_do():
    with pytest.raises(EstimateError, match="no calibrated rate for slow"):
        estimate_run(docs(1000), shape(), {"fast": RATES["fast"]})
    with pytest.raises(EstimateError, match="boundary_model"):
        estimate_run(docs(1000), shape(boundary_model=None), RATES)
    with pytest.raises(EstimateError, match="no corpus model"):
        shape(corpus_models=[])
    with pytest.raises(EstimateError, match="n_questions"):
        shape(n_questions=-1)


def test_remote_models_have_no_warmup():
    remote = EngineRate(EngineKey("api", "openai", "m@host", REMOTE), 0.0, 1 / 25_000, source="default")
    estimate = estimate_run(docs(1000), shape(corpus_models=["api"], strategies=["fixed_size"]), {"api": remote})
    assert estimate.warmup_seconds == {}


def test_durations_read_like_a_person_says_them():
    assert duration(0.2) == "under 1 s"
    assert duration(44.6) == "45 s"
    assert duration(6 * 60 + 10) == "6 min"
    assert duration(3600 + 20 * 60) == "1 h 20 min"
    assert duration(2 * 3600) == "2 h"
    assert duration(27 * 3600) == "1 day 3 h"
    assert duration(float("nan")) == "unknown"


def test_the_table_and_the_cheaper_options_of_a_long_run():
    documents = docs(*([6_000] * 40))
    estimate = estimate_run(documents, shape(), RATES)
    assert estimate.total > LONG_RUN_SECONDS
    text = render_estimate(estimate, n_evidence_documents=5)
    lines = text.splitlines()
    assert lines[0] == "expected time on this machine:"
    assert "corpus model" in lines[1] and "cached" in lines[1]
    assert any(line.split()[:2] == ["slow", "semantic"] for line in lines)
    assert f"total: about {duration(estimate.total)}" in text
    advice = cheaper_options(estimate, n_evidence_documents=5)
    assert advice is not None and advice in text
    share = round(100 * estimate.by_model()["slow"] / estimate.total)
    assert f"slow takes {share}% of it (without it: --corpus-model fast" in advice
    n = sample_size_within(estimate, LONG_RUN_SECONDS, 5)
    assert n is not None and 5 <= n < 40
    assert f"--sample-documents {n}" in advice
    short = estimate_run(docs(2_000), shape(), RATES)
    assert short.total < LONG_RUN_SECONDS
    assert cheaper_options(short) is None and "Cheaper" not in render_estimate(short)


def test_no_sample_is_offered_when_the_evidence_alone_is_too_big():
    estimate = estimate_run(docs(*([6_000] * 40)), shape(), RATES)
    assert sample_size_within(estimate, LONG_RUN_SECONDS, n_evidence_documents=39) is None
    advice = cheaper_options(estimate, n_evidence_documents=39)
    assert "--sample-documents N" in advice


def test_cache_coverage_probes_the_real_embedding_cache(tmp_path):
    import numpy as np

    from chunkbench_core.storage.embedding_cache import EmbeddingCache

    cache = EmbeddingCache(tmp_path)
    namespace = "model@test"
    cache.register(namespace, "model", "{}")
    previous = {"a.md": ["alpha one", "alpha two"], "b.md": ["beta one", "beta two"], "gone.md": ["old"]}
    held = text_keys(["alpha one", "alpha two", "beta one"], prefix="passage: ")
    cache.put_many(namespace, [(k, np.ones(4, dtype=np.float32)) for k in held], 4)

    def count_cached(keys: list[str]) -> int:
        return len(cache.get_many(namespace, keys, 4))

    tokens = {"a.md": 100.0, "b.md": 100.0, "new.md": 200.0}
    # a.md and b.md unchanged: 3 of their 4 texts cached, and they are half of the corpus's tokens
    share = cache_coverage(previous, tokens, ["a.md", "b.md"], count_cached, prefix="passage: ")
    assert share == pytest.approx(0.75 * 0.5)
    assert cache_coverage(previous, tokens, ["a.md", "b.md"], count_cached) == 0  # keys carry the prefix
    assert cache_coverage(previous, tokens, [], count_cached, prefix="passage: ") == 0
    cache.close()


def test_parse_rates_are_fitted_on_recorded_parses_and_kept(tmp_path):
    rows = [
        {"document": f"r{i}.pdf", "size_bytes": mb * 1_000_000, "parse_seconds": 0.5 + 1.5 * mb}
        for i, mb in enumerate((0.2, 1.0, 2.5, 3.8))
    ]
    rows += [
        {"document": "x.docx", "size_bytes": 1000, "parse_seconds": 0.1},  # too few docx to fit
        {"document": "bad.pdf", "size_bytes": None, "parse_seconds": 1.0},
    ]
    rates = parse_rates_from_records(rows)
    assert set(rates) == {"pdf"}
    assert rates["pdf"].seconds_per_document == pytest.approx(0.5)
    assert rates["pdf"].seconds_per_mb == pytest.approx(1.5)
    store = CalibrationStore(tmp_path)
    save_parse_rates(store, "cpu", rates)
    assert load_parse_rates(store, "cpu") == rates
    assert load_parse_rates(store, "another cpu") == {}


def test_the_suggested_sample_says_what_it_keeps_and_a_refused_one_is_not_suggested():
    estimate = estimate_run(docs(*([6_000] * 40)), shape(), RATES)
    n = sample_size_within(estimate, LONG_RUN_SECONDS)
    asked: list[int] = []

    def keeps(size: int) -> str:
        asked.append(size)
        return f"{size} of 40 documents; it keeps 7 of 30 questions, those whose evidence lies in its documents"

    advice = cheaper_options(estimate, tell_sample=keeps)
    assert asked == [n]
    assert (
        f"--sample-documents {n} ({n} of 40 documents; it keeps 7 of 30 questions, those whose evidence lies "
        "in its documents)"
    ) in advice

    def refuses(size: int) -> str:
        raise EstimateError("a sample of that size cannot hold the evidence of any question")

    advice = cheaper_options(estimate, tell_sample=refuses)
    assert f"--sample-documents {n}" not in advice and "--sample-documents N" in advice
