"""Rank and class on each experiment partition, once the leaderboard has compared them.

A rank exists only relative to the other configurations, so it is not part of an experiment's
own materialization. The leaderboard asset calls ``report_ranks_on_partitions`` with its ranked
rows; each row becomes an ``AssetObservation`` of that ``experiment_results`` partition (logged
by the leaderboard's run), shown on the partition's page next to its metrics.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from dagster import AssetExecutionContext, AssetKey, AssetObservation, PartitionsDefinition

from chunkbench_core.evaluation.recommendation import class_words

from .partitions import partition_key

EXPERIMENT_RESULTS = "experiment_results"


def rank_observation(row: Mapping[str, Any], asset_key: AssetKey = AssetKey(EXPERIMENT_RESULTS)) -> AssetObservation:
    """The observation of one ranked row (``strategy``, ``corpus_model``, ``rank``, ``class``: its class against
    the best; optional ``experiment_run_id``: the run that was compared, ``lower_bound_vs_best``)."""
    missing = [name for name in ("strategy", "corpus_model", "rank", "class") if row.get(name) is None]
    if missing:
        raise ValueError(f"a ranked row needs {', '.join(missing)}: got {dict(row)}")
    metadata: dict[str, Any] = {"rank": int(row["rank"]), "class": str(row["class"])}
    if row.get("verdict"):
        metadata["verdict"] = str(row["verdict"])
    if row.get("rank_metric") and row.get("rank_mean") is not None and row.get("rank_mean") == row.get("rank_mean"):
        metadata[str(row["rank_metric"])] = round(float(row["rank_mean"]), 3)
    bound = row.get("lower_bound_vs_best")
    if bound is not None and bound == bound:
        metadata["lower_bound_vs_best"] = round(float(bound), 3)
    if row.get("experiment_run_id"):
        metadata["compared_experiment_run_id"] = str(row["experiment_run_id"])
    key = partition_key(str(row["strategy"]), str(row["corpus_model"]))
    return AssetObservation(
        asset_key=asset_key,
        partition=str(key),
        metadata=metadata,
        description=f"rank {metadata['rank']} on the leaderboard, {class_words(metadata['class'], row.get('margin'))}",
    )


def report_ranks_on_partitions(
    context: AssetExecutionContext,
    rows: Iterable[Mapping[str, Any]],
    partitions_def: PartitionsDefinition,
    asset_key: AssetKey = AssetKey(EXPERIMENT_RESULTS),
) -> int:
    """Log each row's rank and class on its experiment partition (of ``asset_key``: the benchmark's
    ``experiment_results``); returns how many were logged.

    Rows of a corpus model that has no partition in this deployment (results kept in DuckDB from
    when it was available) are skipped: their partition is not shown.
    """
    logged = 0
    for row in rows:
        observation = rank_observation(row, asset_key)
        if observation.partition is None or not partitions_def.has_partition_key(observation.partition):
            continue
        context.log_event(observation)
        logged += 1
    return logged
