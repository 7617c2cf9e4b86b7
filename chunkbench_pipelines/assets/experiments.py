"""experiment_results: every question retrieved and scored against one partition's collection."""

from typing import Iterator

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    MaterializeResult,
    MetadataValue,
    asset,
)

from chunkbench_core.evaluation.retrieval import ExpansionSettings
from chunkbench_core.provenance import check_collection_current, collection_provenance
from chunkbench_core.storage.runs import batch_provenance
from chunkbench_core.stages import (
    chunking_params,
    collection_settings,
    load_parsed_corpus,
    partition_collection,
    read_collection,
    run_experiment,
    strategy_options,
    variant_label,
    variant_options,
)

from ..automation import QUESTION_SETS, on_collection_or_question_sets
from ..concurrency import pool_slots
from ..config import ExperimentConfig
from ..failures import TRANSIENT_RETRY, corpus_embedder, fail_fast, permanent_errors_fail_fast
from ..metadata import headline_metrics, llm_run as llm_run_metadata, pool_wait as pool_wait_metadata
from ..partitions import split_key, strategy_x_model
from ..resources import DuckDBResource, EmbeddingResource, LLMResource, QdrantResource, RankingResource, WorkspaceResource
from .chunks import chunk_collections

METRICS_RANGE_CHECK = "metrics_within_unit_interval"
REFERENCES_CHECK = "question_references_resolve"


question_sets = AssetSpec(
    QUESTION_SETS, group_name="experiments", kinds={"json"},
    description="The question set files (CHUNKBENCH_QUESTIONS), reported by question_sets_sensor when one is added "
                "or changed; experiments read the folder itself.")


@asset(partitions_def=strategy_x_model, group_name="experiments", kinds={"qdrant", "duckdb"},
       deps=[chunk_collections, AssetKey(QUESTION_SETS)], retry_policy=TRANSIENT_RETRY,
       automation_condition=on_collection_or_question_sets(),
       check_specs=[
           AssetCheckSpec(METRICS_RANGE_CHECK, asset="experiment_results", blocking=True,
                          description="Every per-question metric lies in [0, 1]."),
           AssetCheckSpec(REFERENCES_CHECK, asset="experiment_results", blocking=False,
                          description="Every question set loads and every reference resolves to a span of a parsed document."),
       ],
       description="Per-question evidence metrics and their aggregates for one strategy x corpus model.")
def experiment_results(context: AssetExecutionContext, config: ExperimentConfig, workspace: WorkspaceResource,
                       duckdb: DuckDBResource, qdrant: QdrantResource, embeddings: EmbeddingResource,
                       llm: LLMResource, ranking: RankingResource) -> Iterator[MaterializeResult]:
    strategy, corpus_model = split_key(context.partition_key)
    embedder = corpus_embedder(embeddings, corpus_model)
    with permanent_errors_fail_fast():
        params = chunking_params(embedder.spec, config.chunk_size, config.chunk_overlap, config.per_model_window)
        options = strategy_options(strategy, config.chunker_options())
        named_by = variant_options(strategy, options, config.boundary_model)
        variant = variant_label(params, chunking_params(embedder.spec, None, None), named_by)
        # the collection must be the one requested, built from the current parsed corpus (else fail at once)
        boundary_id, threshold, threshold_source = embeddings.boundary_in_force(strategy, config.boundary_model,
                                                                                workspace.home_dir())
        requested = collection_settings(strategy, params, options, config.overflow_mode, boundary_id, threshold,
                                        threshold_source)
        results = duckdb.results()
        built = read_collection(results, strategy, corpus_model, variant)
        parsed_store = workspace.parsed_store()
        check_collection_current(built, partition=context.partition_key, variant=variant,
                                 collection=partition_collection(strategy, corpus_model, variant),
                                 corpus_fingerprint=parsed_store.manifest_fingerprint(), settings=requested)
        assert built is not None
        provenance = {"strategy": strategy, **collection_provenance(built), "neighbor_prev": config.neighbor_prev,
                      "neighbor_next": config.neighbor_next, "dagster_run_id": context.run.run_id,
                      "benchmark": workspace.benchmark_name(),
                      **batch_provenance(dict(context.run.tags))}  # the chunkbench run / backfill it belongs to
        expansion = ExpansionSettings(config.neighbor_prev, config.neighbor_next,
                                      frozenset(config.expansion_strategies))
        documents = load_parsed_corpus(parsed_store)
        pools = [embeddings.pool(corpus_model), llm.pool if llm.configured else None]
        with pool_slots(context, pools, embeddings.pool_limit) as pool_wait, qdrant.open() as store:
            summary = run_experiment(strategy, embedder.spec, context.run.run_id, workspace.questions_dir(), documents,
                                     embedder, store, results, top_k=config.top_k,
                                     filter_by_document=config.filter_by_document, provenance=provenance,
                                     variant=variant, expansion=expansion,
                                     llm_client=llm.client() if llm.configured else None,
                                     llm_settings=llm.settings() if llm.configured else None,
                                     boundary_model=built.get("boundary_model"), budgets=ranking.settings().budgets,
                                     llm_prices=llm.prices())
    # listed at info level: `chunkbench run` prints each problem once in its final summary, not once per partition
    for error in summary.errors:
        context.log.info(f"question problem: {error}")
    yield MaterializeResult(
        metadata={
            "experiment_run_id": summary.experiment_run_id,
            "variant": variant or "default",
            "dagster/row_count": summary.n_questions,
            "judge_only_questions": int(summary.metrics.get("n_judge_only", 0)),
            **headline_metrics(summary.metrics),  # rank and class follow when the leaderboard compares (ranks.py)
            **pool_wait_metadata(pool_wait),
            **({"question_errors": MetadataValue.md("".join(f"- {e}\n" for e in summary.errors))}
               if summary.errors else {}),
            **llm_run_metadata(summary.llm_report),
        },
        check_results=[
            AssetCheckResult(check_name=METRICS_RANGE_CHECK, passed=not summary.out_of_range,
                             severity=AssetCheckSeverity.ERROR,
                             metadata={"out_of_range": MetadataValue.md("\n".join(summary.out_of_range[:20]) or "none")}),
            AssetCheckResult(check_name=REFERENCES_CHECK, passed=not summary.errors, severity=AssetCheckSeverity.WARN,
                             metadata={"errors": len(summary.errors)}),
        ],
    )
    if summary.out_of_range:  # fail with the values, not only "1 blocking asset check failed"; not retried
        raise fail_fast(f"{METRICS_RANGE_CHECK}: {len(summary.out_of_range)} metric values outside [0, 1], e.g. "
                        + "; ".join(summary.out_of_range[:5]))
