"""chunk_collections: one Qdrant collection per strategy x corpus model."""

from dataclasses import dataclass
from typing import Iterator

from dagster import AssetsDefinition, MultiPartitionsDefinition

import numpy as np
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    OpExecutionContext,
    asset,
)

from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.estimate.plan import stored_rates
from chunkbench_core.stages.collections import BuildRequest, build_collection
from chunkbench_core.stages.documents import load_parsed_corpus
from chunkbench_core.stages.spec import resolve_collection

from ..automation import on_parsed_corpus_change
from ..concurrency import pool_slots
from ..config import chunker_config
from ..failures import TRANSIENT_RETRY, corpus_embedder, fail_fast, permanent_errors_fail_fast
from ..metadata import pool_wait as pool_wait_metadata, rounded
from ..partitions import split_key
from ..progress_log import progress_to_run_log
from ..resources import (
    DuckDBResource,
    EmbeddingResource,
    LLMResource,
    QdrantResource,
    StepResources,
    WorkspaceResource,
    spec_context,
)
from ..scope import Scope

VECTOR_COUNT_CHECK = "vector_count_matches_chunks"
INVARIANTS_CHECK = "chunk_invariants"


def token_histogram(counts: list[int], buckets: int = 8) -> str:
    """A markdown table of how many chunks fall in each token-count range."""
    if not counts:
        return "_no chunks_"
    values = np.asarray(counts)
    edges = np.linspace(0, max(int(values.max()), 1), buckets + 1)
    hist, _ = np.histogram(values, bins=edges)
    rows = "".join(
        f"| {int(lo)}-{int(hi)} | {n} | {'#' * int(40 * n / max(hist.max(), 1))} |\n"
        for lo, hi, n in zip(edges, edges[1:], hist)
    )
    return "| tokens | chunks | |\n|---|---|---|\n" + rows


@dataclass(frozen=True)
class BuiltCollection:
    """One collection built: the materialization of its partition (metadata and check results) and the failed
    checks' reasons (empty: every check passed)."""

    result: MaterializeResult
    problems: list[str]


def build_one_collection(
    context: AssetExecutionContext | OpExecutionContext,
    scope: Scope,
    strategy: str,
    corpus_model: str,
    config,
    resources: StepResources,
) -> BuiltCollection:
    """Chunk, embed and store one strategy x corpus model of the benchmark of ``scope`` with the chunking settings
    ``config``: the body of ``chunk_collections``, shared with the chunk-size sweep."""
    duckdb, qdrant, embeddings, llm = resources.duckdb, resources.qdrant, resources.embeddings, resources.llm
    workspace = scope.workspace(resources.workspace)
    embedder = corpus_embedder(embeddings, corpus_model)
    results = scope.results(duckdb)
    with permanent_errors_fail_fast():
        spec = resolve_collection(config.request(strategy, corpus_model), spec_context(workspace, results, embeddings))
        boundary = embeddings.embedder(spec.boundary_model) if spec.boundary_model else None
        uses_llm = spec.strategy_spec.capabilities.llm and llm.configured  # contextual prefixes
        parsed_store = workspace.parsed_store()
        corpus_fingerprint = parsed_store.manifest_fingerprint()
        parser_key, parse_options = parsed_store.manifest_parse()
        request = BuildRequest(
            spec,
            load_parsed_corpus(parsed_store),
            corpus_fingerprint=corpus_fingerprint,
            parse_options=parse_options,
            parser_version=parser_key,
            dagster_run_id=context.run.run_id,
            context=llm.contextual_context() if uses_llm else None,
            llm_prices=llm.prices() if llm.configured else None,
            rates=stored_rates(workspace.home_dir(), [e.spec for e in (embedder, boundary) if e]),
        )
        pools = [
            embeddings.pool(corpus_model),
            embeddings.pool(boundary.spec.id) if boundary else None,
            llm.pool if uses_llm else None,
        ]
        with (
            pool_slots(context, pools, embeddings.pool_limit) as pool_wait,
            scope.qdrant(qdrant) as store,
            progress_to_run_log(context),
        ):
            summary = build_collection(request, embedder, boundary, store, results)
    variant = spec.variant
    check = summary.check
    assert check is not None
    vectors_ok = summary.point_count == summary.n_retrieved
    result: MaterializeResult = MaterializeResult(
        metadata={
            "benchmark": workspace.benchmark_name(),  # a shared Dagster instance holds every benchmark's history
            "collection": summary.collection,
            "corpus_fingerprint": corpus_fingerprint,
            "settings_fingerprint": summary.settings_fingerprint,
            "build": summary.build,  # its chunks stay in the chunks table after a rebuild with other settings
            "chunker_settings": MetadataValue.json(summary.settings),
            **({"context_sources": MetadataValue.json(summary.context_sources)} if summary.context_sources else {}),
            "variant": variant or "default",
            "dagster/row_count": summary.n_chunks,
            "documents": summary.n_documents,
            "points_removed": summary.removed,
            "chunking_params": MetadataValue.json(summary.params),
            **({"boundary_model": summary.boundary_model} if summary.boundary_model else {}),
            "embedded_chunks": summary.n_retrieved,
            "embedding_cache_hit_rate": rounded(summary.cache_hit_rate),
            **pool_wait_metadata(pool_wait),
            "truncated_chunks": check.n_truncated,
            "index_seconds": rounded(summary.index_seconds),
            # what a first build takes (the cached texts' embedding time added back): measured or derived
            "index_seconds_uncached": rounded(
                summary.index_seconds_uncached if summary.index_seconds_uncached is not None else summary.index_seconds
            ),
            "index_time_source": summary.index_time_source,
            "median_chunk_tokens": rounded(float(np.median(summary.token_counts or [0]))),
            "max_chunk_tokens": int(max(summary.token_counts or [0])),
            "chunk_size_histogram": MetadataValue.md(token_histogram(summary.token_counts)),
        },
        check_results=[
            AssetCheckResult(
                check_name=VECTOR_COUNT_CHECK,
                passed=vectors_ok,
                severity=AssetCheckSeverity.ERROR,
                metadata={"points": summary.point_count, "retrievable_chunks": summary.n_retrieved},
            ),
            AssetCheckResult(
                check_name=INVARIANTS_CHECK,
                passed=check.passed,
                severity=AssetCheckSeverity.ERROR,
                metadata={
                    "report": MetadataValue.json(check.to_metadata()),
                    "problems": MetadataValue.md("\n".join(f"- {p}" for p in check.problems()[:20]) or "none"),
                },
            ),
        ],
    )
    # a failed blocking check fails the step with its own explanation (not only "1 blocking asset check
    # failed"); the same chunks fail the same way again, so it is not retried
    problems = (
        []
        if vectors_ok
        else [
            f"{VECTOR_COUNT_CHECK}: the collection holds {summary.point_count} points "
            f"for {summary.n_retrieved} retrievable chunks"
        ]
    )
    problems += [f"{INVARIANTS_CHECK}: {problem}" for problem in check.problems()]
    return BuiltCollection(result, problems)


def build_chunk_collections(partitions_def: MultiPartitionsDefinition, scope: Scope) -> AssetsDefinition:
    """The ``chunk_collections`` asset of one benchmark over ``partitions_def``, its run config generated from the
    strategy registry."""
    ChunkerConfig = chunker_config()
    key = scope.key("chunk_collections")

    # the strategies whose chunks cover the text (a capability of their registration), named in the check
    covering = "/".join(n for n in STRATEGIES.names() if STRATEGIES[n].capabilities.covers_text) or "no strategy"

    @asset(
        key=key,
        partitions_def=partitions_def,
        group_name=scope.group,
        kinds={"qdrant", "duckdb"},
        deps=[scope.key("parsed_documents")],
        tags=scope.tags(),
        retry_policy=TRANSIENT_RETRY,
        automation_condition=on_parsed_corpus_change(),
        check_specs=[
            AssetCheckSpec(
                VECTOR_COUNT_CHECK,
                asset=key,
                blocking=True,
                description="The collection holds exactly one point per chunk of the partition.",
            ),
            AssetCheckSpec(
                INVARIANTS_CHECK,
                asset=key,
                blocking=True,
                description="No empty chunk; offsets rebuild the text; the chunks of "
                f"{covering} cover every non-whitespace character; no embedded text exceeds "
                "the corpus model's window (unless overflow: truncate).",
            ),
        ],
        description=scope.describe(
            "The corpus chunked by one strategy and embedded by one corpus model, stored in Qdrant."
        ),
    )
    def chunk_collections(
        context: AssetExecutionContext,
        config: ChunkerConfig,  # type: ignore[valid-type]  # a class made at run time from the strategy registry (Dagster reads this annotation)
        workspace: WorkspaceResource,
        duckdb: DuckDBResource,
        qdrant: QdrantResource,
        embeddings: EmbeddingResource,
        llm: LLMResource,
    ) -> Iterator[MaterializeResult]:
        strategy, corpus_model = split_key(context.partition_key)
        built = build_one_collection(
            context, scope, strategy, corpus_model, config, StepResources(workspace, duckdb, qdrant, embeddings, llm)
        )
        yield built.result
        if built.problems:
            raise fail_fast("; ".join(built.problems))

    return chunk_collections
