"""Sensors: what happens outside Dagster (files in the corpus and question folders).

- ``corpus_sensor``: a new, changed or deleted file in the corpus folder requests a
  ``parse_documents`` run (parsing is incremental by content hash).
- ``question_sets_sensor``: a new or changed question set is reported as an update of the
  external asset ``question_sets``; Declarative Automation then re-evaluates every partition that
  has a collection (automation.py).

What follows inside Dagster (collections after the parsed corpus changes, experiments after
their collection, the leaderboard and report after new results) is Declarative Automation, see
automation.py. Off unless CHUNKBENCH_AUTOMATION=on; run keys and cursors make every tick idempotent.
"""

import json

from dagster import (
    AssetKey,
    AssetMaterialization,
    MetadataValue,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from chunkbench_core.storage.corpus import corpus_state, diff_states, fingerprint, folder_state, scan_corpus

from .automation import QUESTION_SETS, automation_sensor, sensor_status
from .jobs import parse_documents_job
from .partitions import partition_key, split_key, strategy_partitions
from .resources import EmbeddingResource, WorkspaceResource


@sensor(job=parse_documents_job, minimum_interval_seconds=30, default_status=sensor_status(),
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


@sensor(minimum_interval_seconds=30, default_status=sensor_status(),
        description="Reports the question sets as updated when one is added or changed (experiments then re-run "
                    "through automation).")
def question_sets_sensor(context: SensorEvaluationContext, workspace: WorkspaceResource):
    state = folder_state(workspace.questions_dir())
    cursor = json.dumps(state, sort_keys=True)
    if context.cursor is None:  # turning the sensor on re-runs nothing: the sets as they are are the baseline
        return SensorResult(skip_reason=SkipReason("recorded the current question sets"), cursor=cursor)
    changes = diff_states(json.loads(context.cursor), state)
    if not (changes["added"] or changes["changed"]):
        return SensorResult(skip_reason=SkipReason("no new or changed question set"), cursor=cursor)
    event = AssetMaterialization(asset_key=QUESTION_SETS, description="question sets added or changed", metadata={
        "folder": MetadataValue.path(str(workspace.questions_dir())),
        "question_sets": len(state),
        "fingerprint": fingerprint(state),
        **{kind: ", ".join(names) for kind, names in changes.items() if names},
    })
    return SensorResult(asset_events=[event], cursor=cursor)


ALL_SENSORS = [corpus_sensor, question_sets_sensor, automation_sensor]
