"""The collections stage: chunk the parsed corpus, embed the chunks, replace the collection, record the build.

Behind the ``chunk_collections`` asset: :func:`build_collection` takes a :class:`BuildRequest` (a resolved
:class:`~chunkbench_core.stages.spec.CollectionSpec`, the parsed documents and what they were parsed
from) and the stores, and returns a :class:`CollectionSummary` with what the blocking checks need. The
chunks, the build record, the cost and the embedding usage go through the results store as typed
records (``ResultsDB.record_build``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from chunkbench_core.chunking import Chunk, Chunker
from chunkbench_core.chunking.base import check_unique_ids
from chunkbench_core.chunking.checks import ChunkCheckReport, check_chunks
from chunkbench_core.chunking.window import ModelWindow
from chunkbench_core.embedding import Embedder
from chunkbench_core.errors import ChunkbenchError, ChunkingError
from chunkbench_core.estimate.index_time import EmbeddingPass, UncachedIndexTime, uncached_index_seconds
from chunkbench_core.evaluation.cost import LLMPrices, embedding_usd, llm_usd
from chunkbench_core.labels import configuration_label
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.progress import Tracker, add_time, characters, inner, scope, timed
from chunkbench_core.provenance import BuildFacts, collection_row, context_source_counts, settings_fingerprint
from chunkbench_core.redaction import describe_error, redact
from chunkbench_core.storage.history import build_rows_key
from chunkbench_core.storage.records import ChunkRecord, CollectionBuild, IndexCostRecord, UsageRecord, now
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.space import chunk_rows_bytes
from chunkbench_core.storage.vector_store import VectorStore, point_id
from chunkbench_core.tokens import count_tokens, encode_many, ids_bytes, ids_from_bytes

from .spec import CollectionSpec, model_window


def build_chunker(
    spec: CollectionSpec,
    window: ModelWindow | None,
    boundary: Embedder | None = None,
    context: Callable[[str, str], str] | None = None,
) -> Chunker:
    """The collection's chunker: its sizes and options, the corpus model's window, and what the strategy needs.

    Boundary embeddings (semantic strategies) come from the BOUNDARY model, never the corpus model; the
    threshold is the one the spec resolved (the run config's, else the boundary model's in force).
    """
    strategy = spec.strategy_spec
    embed: Callable[[Any], Any] | None = None
    if strategy.capabilities.boundary_model:
        if boundary is None:
            raise ChunkingError(f"{spec.strategy} needs a boundary embedding model and none was given")

        def embed_units(texts: Any, model: Embedder = boundary) -> Any:
            with timed("boundary"), inner("boundary model"):  # inside chunking, which reports per document
                return model.embed(list(texts), "document")

        embed = embed_units
    return strategy.build(
        spec.chunk_size, spec.chunk_overlap, spec.chunker_options(), window=window, embed=embed, context=context
    )


@dataclass(frozen=True)
class BuildRequest:
    """One collection build: the resolved ``spec``, the parsed ``documents`` and what they were parsed from
    (``corpus_fingerprint``, ``parse_options``, ``parser_version``), the Dagster run, and for strategies that
    write contexts with an LLM its ``context`` source and its prices."""

    spec: CollectionSpec
    documents: Sequence[ParsedDocument]
    corpus_fingerprint: str = ""
    parse_options: dict[str, Any] | None = None
    parser_version: str | None = None
    dagster_run_id: str | None = None
    context: Callable[[str, str], str] | None = None
    llm_prices: LLMPrices | None = None
    rates: Mapping[str, Any] | None = None  # model id -> its calibrated EngineRate (the uncached index time)


@dataclass
class CollectionSummary:
    collection: str
    n_documents: int
    n_chunks: int
    upserted: int
    removed: int
    token_counts: list[int]
    params: dict[str, Any]
    point_count: int = 0
    n_retrieved: int = 0
    cache_hit_rate: float = 0.0
    check: ChunkCheckReport | None = None
    boundary_model: str | None = None
    index_seconds: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)
    context_sources: dict[str, int] = field(default_factory=dict)
    build: str = ""  # the build's key in the chunks table (provenance.build_fingerprint)
    index_seconds_uncached: float | None = None  # as if nothing had been cached (estimate.index_time)
    index_time_source: str = "measured"

    @property
    def settings_fingerprint(self) -> str:
        return settings_fingerprint(self.settings)


def chunk_corpus(spec: CollectionSpec, chunker: Chunker, documents: Sequence[ParsedDocument]) -> list[Chunk]:
    """Every document's chunks; a failure names the document (a bug's text redacted before it is shown)."""
    if not documents:
        raise ChunkingError(
            "no parsed documents to chunk: materialize parsed_documents first, or check that the corpus "
            "folder (CHUNKBENCH_CORPUS) holds documents that parse"
        )
    chunks: list[Chunk] = []
    tracker = Tracker(
        "chunking", len(documents), unit="documents", weights=[len(document.markdown) for document in documents]
    )
    with tracker.heartbeat():  # a line every few seconds even while one huge document is chunked
        for done, document in enumerate(documents):
            tracker.step(done)
            tracker.begin(f"{document.document}, {characters(len(document.markdown))}")
            try:
                chunks.extend(chunker.chunk(document))
            except ChunkbenchError:
                raise
            except Exception as exc:
                message = f"{spec.strategy} failed on {document.document}: {describe_error(exc)}"
                raise ChunkingError(message) from (exc if redact(str(exc)) == str(exc) else None)
        tracker.step(len(documents))
    check_unique_ids(chunks, configuration_label(spec.strategy, spec.corpus_model))  # before anything is embedded
    return chunks


def build_collection(
    request: BuildRequest, embedder: Embedder, boundary: Embedder | None, store: VectorStore, results: ResultsDB
) -> CollectionSummary:
    """Chunk every document, embed the retrievable chunks with the corpus model, replace the collection.

    Parent chunks (semantic_parent_child) are stored in ``chunks`` for context but are not
    embedded or searched. The summary carries what the blocking checks need: the points in
    the collection after the replacement and the invariant report (offsets, emptiness,
    coverage, the corpus model's window with ``overflow`` "error" or "truncate").
    A ``collections`` row records what the collection was built from (chunkbench_core.provenance).
    """
    with scope(configuration_label(request.spec.strategy, request.spec.model.id)):
        return _build_collection(request, embedder, boundary, store, results)


def _build_collection(
    request: BuildRequest, embedder: Embedder, boundary: Embedder | None, store: VectorStore, results: ResultsDB
) -> CollectionSummary:
    started = time.perf_counter()
    spec, model = request.spec, request.spec.model
    window = model_window(model)
    # every strategy fits what it embeds into the window; "truncate" lets size-driven chunks overflow knowingly
    fit = None if spec.overflow == "truncate" and spec.strategy_spec.chunker.size_driven else window
    chunker = build_chunker(spec, fit, boundary, request.context)
    with timed("chunking"):  # the boundary model's pass included: it decides where chunks end
        chunks = chunk_corpus(spec, chunker, request.documents)
        report = check_chunks(
            chunks,
            {d.document: d.markdown for d in request.documents},
            model.max_input_tokens,
            window.count_tokens,
            spec.overflow,
            task_prefix=model.document_prefix,
        )
    retrieved = [c for c in chunks if c.is_retrieved]
    # room for the collection and the build's rows first: no embedding time is spent on a build that cannot be stored
    store.check_space(
        spec.collection,
        retrieved,
        model.dimension,
        also={results.tables_dir: chunk_rows_bytes((c.text, c.text_to_embed) for c in chunks)},
    )
    with timed("embedding"):
        vectors = embedder.embed([c.text_to_embed for c in retrieved], "document")
    indexing = time.perf_counter()
    usage = [UsageRecord(spec.strategy, model.id, "chunks", embedder.last_usage.as_row())]
    if boundary is not None:
        usage.append(UsageRecord(spec.strategy, model.id, "boundary", boundary.usage.as_row()))
    store.ensure_collection(spec.collection, model.dimension)
    counts = store.replace_points(spec.collection, retrieved, vectors)
    # every chunk's cl100k tokens, encoded once here and stored with the build: each run's budget metrics read
    # them instead of encoding the texts again (a run is a process of its own), and the cost below counts them
    encoded = encode_many([c.text for c in chunks])
    text_tokens = {c.chunk_id: len(ids) for c, ids in zip(chunks, encoded)}
    token_ids = [ids_bytes(ids) for ids in encoded]
    del encoded  # the arrays: their bytes are what is stored
    stamp = now()
    chunker_params = chunker.params()
    params_json = json.dumps(
        {**chunker_params, "overflow": spec.overflow, "boundary_model": spec.boundary_model},
        sort_keys=True,
        default=str,
    )
    sources = context_source_counts([c.context_source for c in retrieved])
    built = collection_row(
        BuildFacts(
            collection=spec.collection,
            strategy=spec.strategy,
            corpus_model=model.id,
            variant=spec.variant,
            settings=spec.settings,
            options=spec.variant_options,
            chunker_params=chunker_params,
            context_sources=sources,
            parse_options=request.parse_options,
            parser_version=request.parser_version,
            corpus_fingerprint=request.corpus_fingerprint,
            n_documents=len(request.documents),
            n_chunks=len(chunks),
            dagster_run_id=request.dagster_run_id,
            built_at=stamp,
        )
    )
    # each build's rows under a key of their own: other settings add a build, the same settings replace it
    results.record_build(
        CollectionBuild(
            rows_key=spec.rows_key,
            chunks_key=build_rows_key(spec.rows_key, built["build"]),
            collection=built,
            usage=usage,
            chunks=[
                ChunkRecord.of(
                    c,
                    corpus_model=model.id,
                    variant=spec.variant,
                    build=built["build"],
                    chunking_params=params_json,
                    at=stamp,
                    point_id=point_id(c.chunk_id) if c.is_retrieved else None,
                )
                for c in chunks
            ],
            token_ids=token_ids,
        )
    )
    index_seconds = time.perf_counter() - started
    add_time("indexing", time.perf_counter() - indexing)
    point_count = store.count(spec.collection)
    cost = index_cost_record(
        IndexInputs(
            spec,
            chunks,
            retrieved,
            embedder,
            boundary,
            index_seconds,
            point_count,
            request.context,
            request.llm_prices,
            request.rates,
            text_tokens,
        )
    )
    results.record_index_cost(spec.rows_key, cost)
    return CollectionSummary(
        collection=spec.collection,
        n_documents=len(request.documents),
        n_chunks=len(chunks),
        upserted=counts["upserted"],
        removed=counts["removed"],
        token_counts=[c.token_count for c in chunks],
        params=chunker_params,
        point_count=point_count,
        n_retrieved=len(retrieved),
        cache_hit_rate=embedder.last_usage.hit_rate,
        check=report,
        boundary_model=spec.boundary_model,
        settings=spec.settings,
        context_sources=sources,
        index_seconds=index_seconds,
        build=built["build"],
        index_seconds_uncached=cost.index_seconds_uncached,
        index_time_source=cost.index_time_source,
    )


@dataclass(frozen=True)
class IndexInputs:
    """What the cost of one build is computed from."""

    spec: CollectionSpec
    chunks: Sequence[Chunk]
    retrieved: Sequence[Chunk]
    embedder: Embedder
    boundary: Embedder | None
    index_seconds: float
    point_count: int
    context: Any = None
    llm_prices: LLMPrices | None = None
    rates: Mapping[str, Any] | None = None
    #: cl100k tokens of each chunk's own text by chunk id (encoded once for the build's stored token ids)
    text_tokens: Mapping[str, int] | None = None


def uncached_time(inputs: IndexInputs, embedded_tokens: int) -> UncachedIndexTime:
    """The build's index time had nothing been cached: the cached texts of the corpus model's pass (and of the
    boundary model's) at the engine's calibrated rate, else at the time per text this build showed."""
    rates = inputs.rates or {}
    usage = inputs.embedder.last_usage
    passes = [
        EmbeddingPass(
            usage.unique_texts,
            min(usage.cache_hits, usage.unique_texts),
            float(embedded_tokens),
            max(0.0, usage.seconds),
            rates.get(inputs.spec.model.id),
        )
    ]
    if inputs.boundary is not None:
        b = inputs.boundary.usage
        rate = rates.get(inputs.boundary.spec.id)
        tokens = b.prompt_tokens / rate.tokens_per_cl100k if rate is not None else float(b.prompt_tokens)
        passes.append(
            EmbeddingPass(b.unique_texts, min(b.cache_hits, b.unique_texts), float(tokens), max(0.0, b.seconds), rate)
        )
    return uncached_index_seconds(inputs.index_seconds, passes)


def index_cost_record(inputs: IndexInputs) -> IndexCostRecord:
    """What building this collection took (see evaluation.cost).

    Tokens are cl100k tokens of every embedded text, cached or not (what a first build costs;
    the boundary model's are the tokens its provider reported); contextual_retrieval's LLM
    calls count every context, cached or not, with the tokens the ``context`` source counted.
    ``storage_bytes`` estimates the collection as float32 vectors plus the payload texts.
    """
    spec, model, boundary, context = inputs.spec, inputs.spec.model, inputs.boundary, inputs.context
    counted = inputs.text_tokens or {}
    embedded_tokens = sum(
        counted[c.chunk_id] if c.embedded_text is None and c.chunk_id in counted else count_tokens(c.text_to_embed)
        for c in inputs.retrieved
    )
    boundary_tokens = 0
    boundary_price = 0.0
    if boundary is not None:
        boundary_tokens = boundary.usage.prompt_tokens if boundary.spec.provider != "local" else 0
        boundary_price = boundary.spec.price_per_mtok
    contexts = int(getattr(context, "contexts", 0) or 0)
    context_in = int(getattr(context, "input_tokens", 0) or 0)
    context_out = int(getattr(context, "output_tokens", 0) or 0)
    embedding = embedding_usd(embedded_tokens, model.price_per_mtok, boundary_tokens, boundary_price)
    contextual = llm_usd(context_in, context_out, inputs.llm_prices or LLMPrices())
    payload_bytes = sum(len(c.text.encode("utf-8")) for c in inputs.retrieved)
    uncached = uncached_time(inputs, embedded_tokens)
    return IndexCostRecord(
        strategy=spec.strategy,
        corpus_model=model.id,
        variant=spec.variant,
        collection=spec.collection,
        n_chunks=len(inputs.chunks),
        n_embedded=len(inputs.retrieved),
        embedded_tokens=embedded_tokens,
        boundary_tokens=boundary_tokens,
        index_seconds=inputs.index_seconds,
        context_calls=contexts,
        context_input_tokens=context_in,
        context_output_tokens=context_out,
        embedding_usd=embedding,
        context_usd=contextual,
        index_usd=embedding + contextual,
        points=inputs.point_count,
        storage_bytes=inputs.point_count * model.dimension * 4 + payload_bytes,
        index_seconds_uncached=uncached.seconds,
        index_time_source=uncached.source,
        cached_texts=uncached.cached_texts,
    )


def read_collection(results: ResultsDB, spec: CollectionSpec) -> dict[str, Any] | None:
    """The ``collections`` row of the collection (its last build), or None."""
    rows = results.read("collections", spec.rows_key)
    return rows[0] if rows else None


def read_build_chunks(
    results: ResultsDB, rows_key: str, build: str | None = None
) -> tuple[str | None, list[dict[str, Any]]]:
    """The chunk rows of one build of a collection (``rows_key``: CollectionSpec.rows_key), and that build.

    ``build`` None: the build the collection holds now (its ``collections`` row; the legacy rows of a
    collection built before builds were kept).
    """
    if build is None:
        rows = results.read("collections", rows_key)
        build = rows[0].get("build") if rows else None
        build = build if isinstance(build, str) and build else None
    return build, results.read("chunks", build_rows_key(rows_key, build))


def read_build_tokens(
    results: ResultsDB, rows_key: str, build: str | None, chunk_rows: Sequence[Mapping[str, Any]]
) -> dict[str, np.ndarray]:
    """The cl100k token ids a build stored with its chunks (``chunk_rows``: its rows, :func:`read_build_chunks`),
    by chunk text: what a run's budget metrics use instead of encoding the texts again. Empty for a build made
    before they were stored (its runs encode the texts, as before); an id row whose text length differs from its
    chunk row's is left out (that text is encoded)."""
    stored = results.read_values("chunk_tokens", build_rows_key(rows_key, build), ("chunk_id", "n_chars", "token_ids"))
    if not stored:
        return {}
    by_chunk = {chunk_id: (n_chars, ids) for chunk_id, n_chars, ids in stored}
    tokens: dict[str, np.ndarray] = {}
    for row in chunk_rows:
        found, text = by_chunk.get(row.get("chunk_id")), row.get("text")
        if found is not None and isinstance(text, str) and found[1] is not None and found[0] == len(text):
            tokens[text] = ids_from_bytes(found[1])
    return tokens
