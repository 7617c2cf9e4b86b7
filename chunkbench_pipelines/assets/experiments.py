"""experiment_results: every question retrieved and scored against one partition's collection."""

from typing import Optional

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
)

from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.embedding import boundary_model_id
from chunkbench_core.evaluation.experiment import DEFAULT_TOP_K
from chunkbench_core.evaluation.retrieval import ExpansionSettings
from chunkbench_core.stages import chunking_params, load_parsed_corpus, run_experiment, variant_label

from ..automation import QUESTION_SETS, on_collection_or_question_sets
from ..concurrency import pool_slots
from ..failures import TRANSIENT_RETRY, corpus_embedder, permanent_errors_fail_fast
from ..metadata import headline_metrics, llm_run as llm_run_metadata, pool_wait as pool_wait_metadata
from ..partitions import split_key, strategy_x_model
from ..resources import DuckDBResource, EmbeddingResource, LLMResource, QdrantResource, RankingResource, WorkspaceResource
from .chunks import chunk_collections

METRICS_RANGE_CHECK = "metrics_within_unit_interval"
REFERENCES_CHECK = "question_references_resolve"


class ExperimentConfig(Config):
    """Retrieval settings of one experiment run.

    top_k: chunks retrieved per question. filter_by_document: search only the document of the
    question's reference (the seeds' protocol) instead of all documents (the Chroma protocol).
    neighbor_prev / neighbor_next: neighbor expansion (0..5), recorded in provenance.
    chunk_size / chunk_overlap: evaluate the sweep collection built with these values
    (empty = the partition's default collection).
    """

    top_k: int = DEFAULT_TOP_K
    filter_by_document: bool = False
    neighbor_prev: int = 0
    neighbor_next: int = 0
    expansion_strategies: list[str] = ["fixed_size"]  # neighbor expansion applies to fixed_size only
    chunk_size: Optional[int] = None
    chunk_overlap: Optional[int] = None
    per_model_window: bool = False  # evaluate the collection chunked at the model's own window (a sweep)


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
                       llm: LLMResource, ranking: RankingResource) -> MaterializeResult:
    strategy, corpus_model = split_key(context.partition_key)
    embedder = corpus_embedder(embeddings, corpus_model)
    with permanent_errors_fail_fast():
        params = chunking_params(embedder.spec, config.chunk_size, config.chunk_overlap, config.per_model_window)
        variant = variant_label(params, chunking_params(embedder.spec, None, None))
        provenance = {"strategy": strategy, "chunking_params": params, "neighbor_prev": config.neighbor_prev,
                      "neighbor_next": config.neighbor_next, "dagster_run_id": context.run.run_id,
                      "benchmark": workspace.benchmark_name()}
        expansion = ExpansionSettings(config.neighbor_prev, config.neighbor_next,
                                      frozenset(config.expansion_strategies))
        documents = load_parsed_corpus(workspace.parsed_store())
        pools = [embeddings.pool(corpus_model), llm.pool if llm.configured else None]
        with pool_slots(context, pools, embeddings.pool_limit) as pool_wait, qdrant.open() as store:
            summary = run_experiment(strategy, embedder.spec, context.run.run_id, workspace.questions_dir(), documents,
                                     embedder, store, duckdb.results(), top_k=config.top_k,
                                     filter_by_document=config.filter_by_document, provenance=provenance,
                                     variant=variant, expansion=expansion,
                                     llm_client=llm.client() if llm.configured else None,
                                     llm_settings=llm.settings() if llm.configured else None,
                                     boundary_model=boundary_model_id() if STRATEGIES[strategy].needs_boundary_embeddings
                                     else None, budgets=ranking.settings().budgets, llm_prices=llm.prices())
    # listed at info level: `chunkbench run` prints each problem once in its final summary, not once per partition
    for error in summary.errors:
        context.log.info(f"question problem: {error}")
    return MaterializeResult(
        metadata={
            "experiment_run_id": summary.experiment_run_id,
            "variant": variant or "default",
            "dagster/row_count": summary.n_questions,
            "judge_only_questions": int(summary.metrics.get("n_judge_only", 0)),
            **headline_metrics(summary.metrics),  # rank and tier follow when the leaderboard compares (ranks.py)
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
