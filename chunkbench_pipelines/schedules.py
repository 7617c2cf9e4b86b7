"""Scheduled sweeps, defined in code, off by default (turn them on in the UI).

- ``nightly_parse`` / ``nightly_stale_partitions`` / ``nightly_reports``: parse the corpus,
  rebuild every partition built from an older parsed corpus, refresh the reports.
- ``neighbor_sweep``: the strategies neighbor expansion applies to (registered with
  ``neighbor_expansion``: fixed_size) with neighbors (0,0), (1,1), (2,2), (3,3), each level a
  separate experiment run, tagged and recorded in provenance.
- ``chunk_size_sweep``: the strategies registered as ``sweepable`` (fixed_size and recursive) at
  several chunk sizes (128..1024 cl100k tokens, overlap 1/8 of the size), each size its own
  collection and experiment run. Sizes above the corpus model's window are left out (the model
  would silently truncate them).
"""

from dagster import (
    AssetKey,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from chunkbench_core.chunking import STRATEGIES

from .jobs import chunk_and_evaluate_job, evaluate_job, parse_documents_job, refresh_reports_job
from .partitions import partition_key, split_key
from .resources import EmbeddingResource, WorkspaceResource
from .sensors import provider_tags, stale_partitions

NEIGHBOR_LEVELS = ((0, 0), (1, 1), (2, 2), (3, 3))
SWEEP_SIZES = (128, 256, 512, 1024)

nightly_parse = ScheduleDefinition(
    name="nightly_parse", job=parse_documents_job, cron_schedule="0 1 * * *",
    default_status=DefaultScheduleStatus.STOPPED, description="Parse new or changed documents every night.")

nightly_reports = ScheduleDefinition(
    name="nightly_reports", job=refresh_reports_job, cron_schedule="0 5 * * *",
    default_status=DefaultScheduleStatus.STOPPED, description="Refresh the leaderboard and report every night.")


@schedule(job=chunk_and_evaluate_job, cron_schedule="0 2 * * *", default_status=DefaultScheduleStatus.STOPPED,
          description="Rebuild every partition whose collection was built from an older parsed corpus.")
def nightly_stale_partitions(context: ScheduleEvaluationContext, workspace: WorkspaceResource,
                             embeddings: EmbeddingResource):
    current, stale = stale_partitions(context.instance, workspace, embeddings)
    if not stale:
        return SkipReason("no stale partition")
    return [RunRequest(partition_key=b.partition_key, run_key=b.run_key("nightly", current), run_config=b.run_config,
                       tags={"chunkbench/variant": b.variant or "default", **provider_tags(embeddings, b.partition_key)})
            for b in stale]


def _stamp(context: ScheduleEvaluationContext) -> str:
    return context.scheduled_execution_time.strftime("%Y%m%dT%H%M")


@schedule(job=evaluate_job, cron_schedule="0 3 * * 6", default_status=DefaultScheduleStatus.STOPPED,
          description="fixed_size (the strategies neighbor expansion applies to) with neighbor expansion "
                      "(0,0)..(3,3), one experiment run per level.")
def neighbor_sweep(context: ScheduleEvaluationContext, embeddings: EmbeddingResource):
    built = context.instance.get_materialized_partitions(AssetKey("chunk_collections"))
    available = set(embeddings.available_models())
    expanded = set(STRATEGIES.with_capability("neighbor_expansion"))
    keys = sorted(k for k in built if split_key(k)[0] in expanded and split_key(k)[1] in available)
    if not keys:
        return SkipReason(f"no {' or '.join(sorted(expanded)) or 'expandable'} collection has been built yet")
    return [
        RunRequest(
            partition_key=k,
            run_key=f"neighbors-{_stamp(context)}:{k}:{prev}-{nxt}",
            run_config={"ops": {"experiment_results": {"config": {"neighbor_prev": prev, "neighbor_next": nxt}}}},
            tags={"chunkbench/sweep": "neighbors", "chunkbench/neighbors": f"-{prev}/+{nxt}",
                  **provider_tags(embeddings, k)},
        )
        for k in keys for prev, nxt in NEIGHBOR_LEVELS
    ]


@schedule(job=chunk_and_evaluate_job, cron_schedule="0 4 * * 0", default_status=DefaultScheduleStatus.STOPPED,
          description="fixed_size and recursive (the sweepable strategies) at chunk sizes 128..1024, each size its "
                      "own collection and run.")
def chunk_size_sweep(context: ScheduleEvaluationContext, embeddings: EmbeddingResource):
    requests = []
    for model in embeddings.available_models():
        window = embeddings.spec(model).max_input_tokens
        for strategy in STRATEGIES.with_capability("sweepable"):
            for size in SWEEP_SIZES:
                if size > window:
                    continue
                overlap = size // 8
                config = {"config": {"chunk_size": size, "chunk_overlap": overlap}}
                requests.append(RunRequest(
                    partition_key=partition_key(strategy, model),
                    run_key=f"sizes-{_stamp(context)}:{strategy}|{model}:{size}",
                    run_config={"ops": {"chunk_collections": config, "experiment_results": config}},
                    tags={"chunkbench/sweep": "chunk_size", "chunkbench/chunk_size": str(size),
                          "chunkbench/chunk_overlap": str(overlap), "chunkbench/provider": embeddings.spec(model).provider},
                ))
    return requests or SkipReason("no available corpus model")


ALL_SCHEDULES = [nightly_parse, nightly_stale_partitions, nightly_reports, neighbor_sweep, chunk_size_sweep]
