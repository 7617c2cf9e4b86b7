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
from dataclasses import dataclass

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

from chunkbench_core.provenance import staleness
from chunkbench_core.stages import collection_settings
from chunkbench_core.storage.results_db import ResultsDB
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


@dataclass(frozen=True)
class StaleBuild:
    """A collection to rebuild: its partition, variant ('' = default), the run config that rebuilds it, and why."""

    partition_key: str
    variant: str
    run_config: dict
    reason: str

    def run_key(self, prefix: str, current: str) -> str:
        return f"{prefix}-{current}:{self.partition_key}" + (f":{self.variant}" if self.variant else "")


def _rebuild_config(row: dict) -> dict:
    """Run config that rebuilds the collection of ``row`` with the settings it was requested with."""
    settings = json.loads(row["settings"]) if row.get("settings") else {}
    config = {k: settings[k] for k in ("chunk_size", "chunk_overlap") if k in settings}
    config.update(json.loads(row["options"]) if row.get("options") else {})
    if not config:
        return {}
    return {"ops": {"chunk_collections": {"config": config}, "experiment_results": {"config": config}}}


def stale_partitions(instance, workspace: WorkspaceResource,
                     embeddings: EmbeddingResource) -> tuple[str, list[StaleBuild]]:
    """(parsed corpus fingerprint, every collection to rebuild).

    Every variant of every partition counts (sweep sizes, chunker options), not only the last
    one built: a collection is stale when it was built from another parsed corpus or with other
    settings than the same request gives now (a changed threshold or boundary model in force);
    a partition whose default collection was never built is stale too.
    """
    current = workspace.parsed_store().manifest_fingerprint()
    if not current:
        return current, []
    results = ResultsDB(workspace.results_dir())
    rows = results.query("SELECT * FROM collections").to_dict("records")
    by_partition: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        by_partition.setdefault((row["strategy"], row["corpus_model"]), []).append(row)
    home = workspace.home_dir()
    stale: list[StaleBuild] = []
    for model in embeddings.available_models():
        for strategy in strategy_partitions.get_partition_keys():
            key = str(partition_key(strategy, model))
            built = by_partition.get((strategy, model), [])
            if not any((r.get("variant") or "") == "" for r in built):
                stale.append(StaleBuild(key, "", {}, "never built"))
            for row in sorted(built, key=lambda r: r.get("variant") or ""):
                settings = json.loads(row["settings"]) if row.get("settings") else {}
                options = json.loads(row["options"]) if row.get("options") else {}
                chunker = {k: v for k, v in options.items() if k != "boundary_model"}
                boundary_id, threshold, source = embeddings.boundary_in_force(strategy, options.get("boundary_model"),
                                                                              home)
                params = {k: settings[k] for k in ("chunk_size", "chunk_overlap") if k in settings}
                wanted = collection_settings(strategy, params, chunker, settings.get("overflow", "error"),
                                             boundary_id, threshold, source)
                reason = staleness(row, current, wanted)
                if reason:
                    stale.append(StaleBuild(key, row.get("variant") or "", _rebuild_config(row), reason))
    return current, stale


@sensor(job=chunk_and_evaluate_job, minimum_interval_seconds=30, default_status=DefaultSensorStatus.STOPPED,
        description="Rebuilds every collection (every variant) built from an older parsed corpus or with "
                    "other settings than those in force (a changed threshold or boundary model).")
def parsed_corpus_sensor(context: SensorEvaluationContext, workspace: WorkspaceResource, embeddings: EmbeddingResource):
    current, stale = stale_partitions(context.instance, workspace, embeddings)
    if not stale:
        return SkipReason("every partition is built from the current parsed corpus" if current else "nothing parsed yet")
    return SensorResult(run_requests=[
        RunRequest(partition_key=build.partition_key, run_key=build.run_key("corpus", current),
                   run_config=build.run_config,
                   tags={"chunkbench/corpus_fingerprint": current, "chunkbench/variant": build.variant or "default",
                         **provider_tags(embeddings, build.partition_key)})
        for build in stale
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
