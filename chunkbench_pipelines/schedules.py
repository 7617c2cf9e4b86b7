"""Scheduled work of one benchmark, defined in code, off by default (turn them on in the UI). Each benchmark has
its own (named ``<benchmark>__nightly_parse``, ...), acting on its own assets only.

- ``nightly_parse`` / ``nightly_stale_partitions`` / ``nightly_reports``: parse the corpus,
  rebuild every partition built from an older parsed corpus, refresh the reports.
- ``neighbor_sweep_weekly``: the neighbor sweep job (sweeps.py) with its defaults, levels (0,0) to (3,3), over
  the corpus models whose expandable collections have been built.
- ``chunk_size_sweep_weekly``: the chunk-size sweep job (128..1024 tokens) over every available corpus model.

The same sweeps run on demand: ``chunkbench sweep`` or the sweep jobs' launchpad.
"""

from __future__ import annotations

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.sweeps import NEIGHBOR_LEVELS, SWEEP_SIZES

from .jobs import BenchmarkJobs
from .partitions import split_key
from .resources import EmbeddingResource, WorkspaceResource
from .scope import Scope
from .sensors import provider_tags, stale_partitions
from .sweeps import CHUNK_SIZE_SWEEP, NEIGHBOR_SWEEP

__all__ = ["NEIGHBOR_LEVELS", "SWEEP_SIZES", "build_schedules"]


def _stamp(context: ScheduleEvaluationContext) -> str:
    return context.scheduled_execution_time.strftime("%Y%m%dT%H%M")


def build_schedules(scope: Scope, jobs: BenchmarkJobs, sweep_jobs: list) -> list:
    """The schedules of the benchmark of ``scope`` (its jobs and its sweep jobs)."""
    of = scope.of_benchmark("")

    nightly_parse = ScheduleDefinition(
        name=scope.name("nightly_parse"),
        job=jobs.parse_documents,
        cron_schedule="0 1 * * *",
        default_status=DefaultScheduleStatus.STOPPED,
        description=of + "Parse new or changed documents every night.",
    )

    nightly_reports = ScheduleDefinition(
        name=scope.name("nightly_reports"),
        job=jobs.refresh_reports,
        cron_schedule="0 5 * * *",
        default_status=DefaultScheduleStatus.STOPPED,
        description=of + "Refresh the leaderboard and report every night.",
    )

    @schedule(
        name=scope.name("nightly_stale_partitions"),
        job=jobs.chunk_and_evaluate,
        cron_schedule="0 2 * * *",
        default_status=DefaultScheduleStatus.STOPPED,
        description=of + "Rebuild every partition whose collection was built from an older parsed corpus.",
    )
    def nightly_stale_partitions(
        context: ScheduleEvaluationContext, workspace: WorkspaceResource, embeddings: EmbeddingResource
    ):
        current, stale = stale_partitions(context.instance, scope.workspace(workspace), embeddings)
        if not stale:
            return SkipReason("no stale partition")
        return [
            RunRequest(
                partition_key=b.partition_key,
                run_key=b.run_key("nightly", current),
                run_config=b.run_config(scope),
                tags={"chunkbench/variant": b.variant or "default", **provider_tags(embeddings, b.partition_key)},
            )
            for b in stale
        ]

    schedules = [nightly_parse, nightly_stale_partitions, nightly_reports]
    neighbor_job, size_job = sweep_jobs

    @schedule(
        name=scope.name(f"{NEIGHBOR_SWEEP}_weekly"),
        job=neighbor_job,
        cron_schedule="0 3 * * 6",
        default_status=DefaultScheduleStatus.STOPPED,
        description=of + "The neighbor sweep (0:0 to 3:3) every week, over the corpus models whose expandable "
        "collections have been built.",
    )
    def neighbor_sweep(context: ScheduleEvaluationContext, embeddings: EmbeddingResource):
        built = context.instance.get_materialized_partitions(scope.key("chunk_collections"))
        available = set(embeddings.available_models())
        expanded = set(STRATEGIES.with_capability("neighbor_expansion"))
        models = sorted(
            {split_key(k)[1] for k in built if split_key(k)[0] in expanded and split_key(k)[1] in available}
        )
        if not models:
            return SkipReason(f"no {' or '.join(sorted(expanded)) or 'expandable'} collection has been built yet")
        return RunRequest(
            run_key=f"neighbors-{_stamp(context)}",
            run_config={"ops": {scope.name("sweep_neighbors"): {"config": {"corpus_models": models}}}},
            tags={"chunkbench/trigger": "schedule"},
        )

    @schedule(
        name=scope.name(f"{CHUNK_SIZE_SWEEP}_weekly"),
        job=size_job,
        cron_schedule="0 4 * * 0",
        default_status=DefaultScheduleStatus.STOPPED,
        description=of + "The chunk-size sweep (128 to 1,024 tokens) every week, over every available corpus model.",
    )
    def chunk_size_sweep(context: ScheduleEvaluationContext, embeddings: EmbeddingResource):
        models = embeddings.available_models()
        if not models:
            return SkipReason("no available corpus model")
        return RunRequest(
            run_key=f"sizes-{_stamp(context)}",
            run_config={"ops": {scope.name("sweep_chunk_sizes"): {"config": {"corpus_models": models}}}},
            tags={"chunkbench/trigger": "schedule"},
        )

    return schedules + [neighbor_sweep, chunk_size_sweep]
