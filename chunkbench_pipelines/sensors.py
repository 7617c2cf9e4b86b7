"""Sensors: react to the corpus folder, the question sets, and new materializations.

- ``corpus_sensor``: a new, changed or deleted file in the corpus folder requests a
  ``parse_documents`` run (parsing is incremental by content hash).
- ``parsed_corpus_sensor``: when the parsed corpus differs from the one a partition was
  built from (or the partition was never built), requests ``chunk_and_evaluate`` for it.
  Re-materializing replaces the partition's points and rows exactly, so a deleted
  document's points and chunk rows disappear.
- ``question_sets_sensor``: a new or changed question set requests ``evaluate`` runs for
  every partition that has a collection.
- ``reports_sensor``: a new experiment result requests ``refresh_reports``.

All are off by default; turn them on in the UI (Automation). Run keys make every request
idempotent: a tick that sees the same state again requests nothing new.
"""

import json

from dagster import (
    AssetKey,
    DefaultSensorStatus,
    EventLogEntry,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    asset_sensor,
    sensor,
)

from chunkbench_core.storage.corpus import corpus_state, diff_states, fingerprint, folder_state, scan_corpus

from .jobs import chunk_and_evaluate_job, evaluate_job, parse_documents_job, refresh_reports_job
from .partitions import partition_key, split_key, strategy_partitions
from .resources import EmbeddingResource, WorkspaceResource


@sensor(job=parse_documents_job, minimum_interval_seconds=30, default_status=DefaultSensorStatus.STOPPED,
        description="Parses the corpus when a document is added, changed or deleted.")
def corpus_sensor(context: SensorEvaluationContext, workspace: WorkspaceResource):
    state = corpus_state(scan_corpus(workspace.corpus_dir()))
    before = json.loads(context.cursor) if context.cursor else {}
    changes = diff_states(before, state)
    if context.cursor is not None and not any(changes.values()):
        return SkipReason("corpus unchanged")
    digest = fingerprint(state)
    return SensorResult(
        run_requests=[RunRequest(run_key=f"corpus-{digest}", tags={
            "chunkbench/corpus_fingerprint": digest,
            **{f"chunkbench/{kind}": str(len(names)) for kind, names in changes.items()},
        })],
        cursor=json.dumps(state, sort_keys=True),
    )


def provider_tags(embeddings: EmbeddingResource, key: str) -> dict[str, str]:
    """A run tag naming the partition's embedding provider, to filter runs by in the UI (limits: concurrency.py)."""
    return {"chunkbench/provider": embeddings.spec(split_key(key)[1]).provider}


def latest_materialization(instance, asset_key: AssetKey, partition: str, benchmark: str | None = None,
                           scan: int = 50):
    """The newest materialization event of one partition of an asset, or None.

    With ``benchmark``: the newest of that benchmark (``benchmark`` metadata; events without it count
    as any benchmark's) among the last ``scan``, since one Dagster instance may serve several benchmarks.
    """
    from dagster import AssetRecordsFilter

    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition]), limit=1 if benchmark is None else scan
    ).records
    for record in records:
        entry = record.event_log_entry
        materialization = entry.asset_materialization
        tagged = materialization.metadata.get("benchmark") if materialization is not None else None
        if benchmark is None or tagged is None or tagged.value == benchmark:
            return entry
    return None


def stale_partitions(instance, workspace: WorkspaceResource, embeddings: EmbeddingResource) -> tuple[str, list[str]]:
    """(parsed corpus fingerprint, partition keys built from another corpus or never built)."""
    current = workspace.parsed_store().manifest_fingerprint()
    if not current:
        return current, []
    stale = []
    for model in embeddings.available_models():
        for strategy in strategy_partitions.get_partition_keys():
            key = partition_key(strategy, model)
            event = latest_materialization(instance, AssetKey("chunk_collections"), str(key),
                                           workspace.benchmark_name())
            built_from = None
            if event is not None and event.asset_materialization is not None:
                value = event.asset_materialization.metadata.get("corpus_fingerprint")
                built_from = value.value if value is not None else None
            if built_from != current:
                stale.append(str(key))
    return current, stale


@sensor(job=chunk_and_evaluate_job, minimum_interval_seconds=30, default_status=DefaultSensorStatus.STOPPED,
        description="Rebuilds every partition whose collection was built from an older parsed corpus.")
def parsed_corpus_sensor(context: SensorEvaluationContext, workspace: WorkspaceResource, embeddings: EmbeddingResource):
    current, stale = stale_partitions(context.instance, workspace, embeddings)
    if not stale:
        return SkipReason("every partition is built from the current parsed corpus" if current else "nothing parsed yet")
    return SensorResult(run_requests=[
        RunRequest(partition_key=key, run_key=f"corpus-{current}:{key}",
                   tags={"chunkbench/corpus_fingerprint": current, **provider_tags(embeddings, key)})
        for key in stale
    ])


@sensor(job=evaluate_job, minimum_interval_seconds=30, default_status=DefaultSensorStatus.STOPPED,
        description="Re-evaluates every built partition when a question set is added or changed.")
def question_sets_sensor(context: SensorEvaluationContext, workspace: WorkspaceResource, embeddings: EmbeddingResource):
    state = folder_state(workspace.questions_dir())
    if context.cursor is None:
        return SensorResult(skip_reason=SkipReason("recorded the current question sets"),
                            cursor=json.dumps(state, sort_keys=True))
    changes = diff_states(json.loads(context.cursor), state)
    if not (changes["added"] or changes["changed"]):
        return SensorResult(skip_reason=SkipReason("no new or changed question set"),
                            cursor=json.dumps(state, sort_keys=True))
    digest = fingerprint(state)
    available = set(embeddings.available_models())
    built = context.instance.get_materialized_partitions(AssetKey("chunk_collections"))
    keys = sorted(k for k in built if split_key(k)[1] in available)
    return SensorResult(
        run_requests=[RunRequest(partition_key=k, run_key=f"questions-{digest}:{k}",
                                 tags={"chunkbench/question_sets": ",".join(changes["added"] + changes["changed"]),
                                       **provider_tags(embeddings, k)})
                      for k in keys],
        cursor=json.dumps(state, sort_keys=True),
    )


@asset_sensor(asset_key=AssetKey("experiment_results"), job=refresh_reports_job, minimum_interval_seconds=30,
              default_status=DefaultSensorStatus.STOPPED,
              description="Rebuilds the leaderboard and report after new experiment results.")
def reports_sensor(context: SensorEvaluationContext, asset_event: EventLogEntry):
    return RunRequest(run_key=f"results-{context.cursor}")


ALL_SENSORS = [corpus_sensor, parsed_corpus_sensor, question_sets_sensor, reports_sensor]
