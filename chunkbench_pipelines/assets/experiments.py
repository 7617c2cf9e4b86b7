"""experiment_results: every question retrieved and scored against one partition's collection."""


from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset

from chunkbench_core.evaluation.experiment import DEFAULT_TOP_K
from chunkbench_core.stages import load_parsed_corpus, run_experiment

from ..partitions import split_key, strategy_x_model
from ..resources import DuckDBResource, EmbeddingResource, QdrantResource, WorkspaceResource
from .chunks import chunk_collections


class ExperimentConfig(Config):
    """top_k chunks per question; filter_by_document restricts search to the reference's document."""

    top_k: int = DEFAULT_TOP_K
    filter_by_document: bool = False


@asset(partitions_def=strategy_x_model, group_name="experiments", kinds={"qdrant", "duckdb"}, deps=[chunk_collections],
       description="Per-question evidence metrics and their aggregates for one strategy x corpus model.")
def experiment_results(context: AssetExecutionContext, config: ExperimentConfig, workspace: WorkspaceResource,
                       duckdb: DuckDBResource, qdrant: QdrantResource, embeddings: EmbeddingResource) -> MaterializeResult:
    strategy, corpus_model = split_key(context.partition_key)
    embedder = embeddings.embedder(corpus_model)
    documents = load_parsed_corpus(workspace.parsed_store())
    with qdrant.open() as store:
        summary = run_experiment(strategy, embedder.spec, context.run.run_id, workspace.questions_dir(), documents, embedder,
                                 store, duckdb.results(), top_k=config.top_k,
                                 filter_by_document=config.filter_by_document)
    for error in summary.errors:
        context.log.error(error)
    metrics = {k: float(v) for k, v in summary.metrics.items()}
    return MaterializeResult(metadata={
        "experiment_run_id": summary.experiment_run_id,
        "dagster/row_count": summary.n_questions,
        **{k: v for k, v in metrics.items() if k not in ("n_questions", "n_failed")},
        "question_errors": MetadataValue.md("".join(f"- {e}\n" for e in summary.errors) or "none"),
    })
