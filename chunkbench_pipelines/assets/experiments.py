"""experiment_results: every question retrieved and scored against one partition's collection."""

from dataclasses import dataclass, replace
from typing import Iterator

from dagster import (
    AssetsDefinition,
    MultiPartitionsDefinition,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetSpec,
    MaterializeResult,
    MetadataValue,
    OpExecutionContext,
    asset,
)

from chunkbench_core.evaluation.retrieval import ExpansionSettings
from chunkbench_core.retrievers import DEFAULT_RETRIEVER, RETRIEVERS
from chunkbench_core.provenance import check_collection_current, collection_provenance
from chunkbench_core.storage.runs import batch_provenance
from chunkbench_core.stages.collections import read_collection
from chunkbench_core.stages.documents import load_parsed_corpus
from chunkbench_core.stages.experiments import ExperimentRequest, LLMUse, run_experiment
from chunkbench_core.stages.spec import resolve_collection

from ..automation import QUESTION_SETS, on_collection_or_question_sets
from ..concurrency import pool_slots
from ..config import experiment_config
from ..failures import TRANSIENT_RETRY, corpus_embedder, fail_fast, permanent_errors_fail_fast
from ..metadata import headline_metrics, llm_run as llm_run_metadata, pool_wait as pool_wait_metadata, question_counts
from ..partitions import partition_key, split_key
from ..progress_log import progress_to_run_log
from ..resources import STEP_RESOURCE_KEYS, StepResources, spec_context
from ..scope import Scope

METRICS_RANGE_CHECK = "metrics_within_unit_interval"
REFERENCES_CHECK = "question_references_resolve"


def question_sets_spec(scope: Scope) -> AssetSpec:
    """The external asset of one benchmark's question set files (reported by its question sets sensor)."""
    return AssetSpec(
        scope.key(QUESTION_SETS),
        group_name=scope.group,
        kinds={"json"},
        tags=scope.tags(),
        description=scope.describe(
            "The question set files, reported by the question sets sensor when one is added "
            "or changed; experiments read the folder itself."
        ),
    )


def retriever_run_id(experiment_run_id: str, retriever: str) -> str:
    """The id of the run of ``retriever``: the dense one keeps the id it always had, another gets its name."""
    return experiment_run_id if retriever == DEFAULT_RETRIEVER else f"{experiment_run_id}-{retriever}"


@dataclass(frozen=True)
class Evaluated:
    """One experiment run: the materialization of its partition and the failed blocking check's reason."""

    result: MaterializeResult
    problem: str


def evaluate_one(
    context: AssetExecutionContext | OpExecutionContext,
    scope: Scope,
    strategy: str,
    corpus_model: str,
    config,
    resources: StepResources,
    experiment_run_id: str | None = None,
) -> Evaluated:
    """Retrieve and score every question against one collection of the benchmark of ``scope`` (chosen by the
    chunking settings of ``config``, with its retrieval settings): the body of ``experiment_results``, shared with
    the sweeps. ``experiment_run_id``: default the Dagster run's id (a sweep runs several experiments in one
    Dagster run, each with an id of its own that starts with the Dagster run's). Each retriever of the config is
    evaluated over the same collection, as a run of its own (the dense one under ``experiment_run_id``, another
    under ``experiment_run_id-<retriever>``); the metadata are the first retriever's, each other's headline
    metrics prefixed with its name."""
    experiment_run_id = experiment_run_id or context.run.run_id
    duckdb, qdrant, embeddings, llm, ranking = (
        resources.duckdb,
        resources.qdrant,
        resources.embeddings,
        resources.llm,
        resources.ranking,
    )
    if ranking is None:
        raise ValueError("an experiment needs the ranking resource (its context budgets)")
    with permanent_errors_fail_fast():  # an unknown retriever is a bad setting: it fails at once, never retried
        retrievers = RETRIEVERS.check(list(getattr(config, "retrievers", None) or [DEFAULT_RETRIEVER]))
    workspace = scope.workspace(resources.workspace)
    embedder = corpus_embedder(embeddings, corpus_model)
    partition = str(partition_key(strategy, corpus_model))
    with permanent_errors_fail_fast():
        results = scope.results(duckdb)
        spec = resolve_collection(config.request(strategy, corpus_model), spec_context(workspace, results, embeddings))
        # the collection must be the one requested, built from the current parsed corpus (else fail at once)
        built = read_collection(results, spec)
        parsed_store = workspace.parsed_store()
        check_collection_current(
            built,
            partition=partition,
            variant=spec.variant,
            collection=spec.collection,
            corpus_fingerprint=parsed_store.manifest_fingerprint(),
            settings=spec.settings,
        )
        assert built is not None
        provenance = {
            "strategy": strategy,
            **collection_provenance(built),
            "neighbor_prev": config.neighbor_prev,
            "neighbor_next": config.neighbor_next,
            "dagster_run_id": context.run.run_id,
            "benchmark": workspace.benchmark_name(),
            "corpus_sample": parsed_store.manifest_sample(),  # None: the whole corpus
            **batch_provenance(dict(context.run.tags)),
        }  # the chunkbench run / backfill it belongs to
        request = ExperimentRequest(
            spec,
            experiment_run_id,
            workspace.questions_dir(),
            load_parsed_corpus(parsed_store),
            top_k=config.top_k,
            filter_by_document=config.filter_by_document,
            retriever=retrievers[0],
            expansion=ExpansionSettings(
                config.neighbor_prev, config.neighbor_next, frozenset(config.expansion_strategies)
            ),
            provenance=provenance,
            budgets=ranking.settings().budgets,
            llm=LLMUse(
                llm.client() if llm.configured else None, llm.settings() if llm.configured else None, llm.prices()
            ),
        )
        pools = [embeddings.pool(corpus_model), llm.pool if llm.configured else None]
        with (
            pool_slots(context, pools, embeddings.pool_limit) as pool_wait,
            scope.qdrant(qdrant) as store,
            progress_to_run_log(context),
        ):
            summaries = [
                run_experiment(
                    replace(request, retriever=r, experiment_run_id=retriever_run_id(experiment_run_id, r)),
                    embedder,
                    store,
                    results,
                )
                for r in retrievers
            ]
    summary = summaries[0]
    others = {
        f"{r}/{name}": value
        for r, s in zip(retrievers[1:], summaries[1:])
        for name, value in headline_metrics(s.metrics).items()
    }
    out_of_range = [v for s in summaries for v in s.out_of_range]
    variant = spec.variant
    # listed at info level: `chunkbench run` prints each problem once in its final summary, not once per partition
    for error in summary.errors:
        context.log.info(f"question problem: {error}")
    result: MaterializeResult = MaterializeResult(
        metadata={
            "benchmark": workspace.benchmark_name(),
            "experiment_run_id": summary.experiment_run_id,
            "variant": variant or "default",
            "neighbors": f"-{config.neighbor_prev}/+{config.neighbor_next}",
            "retrievers": ", ".join(retrievers),
            **({"experiment_run_ids": ", ".join(s.experiment_run_id for s in summaries)} if len(summaries) > 1 else {}),
            "scope": request.scope,
            "corpus_sample": str(summary.metrics.get("corpus_sample") or ""),
            "dagster/row_count": summary.n_questions,
            "judge_only_questions": int(summary.metrics.get("n_judge_only", 0)),
            **question_counts(summary.metrics),
            **headline_metrics(summary.metrics),  # rank and class follow when the leaderboard compares (ranks.py)
            **others,
            **pool_wait_metadata(pool_wait),
            **(
                {"question_errors": MetadataValue.md("".join(f"- {e}\n" for e in summary.errors))}
                if summary.errors
                else {}
            ),
            **llm_run_metadata(summary.llm_report),
        },
        check_results=[
            AssetCheckResult(
                check_name=METRICS_RANGE_CHECK,
                passed=not out_of_range,
                severity=AssetCheckSeverity.ERROR,
                metadata={"out_of_range": MetadataValue.md("\n".join(out_of_range[:20]) or "none")},
            ),
            AssetCheckResult(
                check_name=REFERENCES_CHECK,
                passed=not summary.errors,
                severity=AssetCheckSeverity.WARN,
                metadata={"errors": len(summary.errors)},
            ),
        ],
    )
    problem = ""
    if out_of_range:  # fail with the values, not only "1 blocking asset check failed"; not retried
        problem = f"{METRICS_RANGE_CHECK}: {len(out_of_range)} metric values outside [0, 1], e.g. " + "; ".join(
            out_of_range[:5]
        )
    return Evaluated(result, problem)


def build_experiment_results(partitions_def: MultiPartitionsDefinition, scope: Scope) -> AssetsDefinition:
    """The ``experiment_results`` asset of one benchmark over ``partitions_def``, its run config generated from the
    strategy registry."""
    ExperimentConfig = experiment_config()
    key = scope.key("experiment_results")

    @asset(
        key=key,
        partitions_def=partitions_def,
        group_name=scope.group,
        kinds={"qdrant", "duckdb"},
        deps=[scope.key("chunk_collections"), scope.key(QUESTION_SETS)],
        retry_policy=TRANSIENT_RETRY,
        automation_condition=on_collection_or_question_sets(scope.key(QUESTION_SETS)),
        tags=scope.tags(),
        required_resource_keys=STEP_RESOURCE_KEYS,
        check_specs=[
            AssetCheckSpec(
                METRICS_RANGE_CHECK,
                asset=key,
                blocking=True,
                description="Every per-question metric that is a share (the evidence and budget "
                "metrics, the hallucination verdict) lies in [0, 1].",
            ),
            AssetCheckSpec(
                REFERENCES_CHECK,
                asset=key,
                blocking=False,
                description="Every question set loads and every reference resolves to a span of a parsed document.",
            ),
        ],
        description=scope.describe(
            "Per-question evidence metrics and their aggregates for one strategy × corpus model."
        ),
    )
    def experiment_results(
        context: AssetExecutionContext,
        config: ExperimentConfig,  # type: ignore[valid-type]  # a class made at run time from the strategy registry (Dagster reads this annotation)
    ) -> Iterator[MaterializeResult]:
        strategy, corpus_model = split_key(context.partition_key)
        evaluated = evaluate_one(context, scope, strategy, corpus_model, config, StepResources.of(context))
        yield evaluated.result
        if evaluated.problem:
            raise fail_fast(evaluated.problem)

    return experiment_results
