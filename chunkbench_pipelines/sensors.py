"""Sensors: what happens outside Dagster (files in the corpus and question folders).

- ``corpus_sensor``: a new, changed or deleted file in the corpus folder requests a
  ``parse_documents`` run (parsing is incremental by content hash).
- ``question_sets_sensor``: a new or changed question set is reported as an update of the
  external asset ``question_sets``; Declarative Automation then re-evaluates every partition that
  has a collection (automation.py).

What follows inside Dagster (collections after the parsed corpus changes, experiments after
their collection, the leaderboard and report after new results) is Declarative Automation, see
automation.py. Each benchmark has its own sensors (named ``<benchmark>__corpus_sensor``, ...), watching
its own folders. Off unless the settings turn automation on (CHUNKBENCH_AUTOMATION=on: :func:`build_sensors`);
run keys and cursors make every tick idempotent.

``stale_partitions`` lists every collection to rebuild, every variant included (sweep sizes,
chunker options): built from another parsed corpus or with other settings than those in force
now. The ``nightly_stale_partitions`` schedule rebuilds them (automation rebuilds default
partitions only: a variant is not a partition).
"""

import json
from dataclasses import dataclass

from dagster import (
    AssetKey,
    AssetMaterialization,
    MetadataValue,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from chunkbench_core.provenance import staleness
from chunkbench_core.stages.spec import request_of_build, resolve_collection
from chunkbench_core.storage.corpus import corpus_state, diff_states, fingerprint, folder_state, scan_corpus
from chunkbench_core.storage.results_db import ResultsDB

from chunkbench_core.chunking import STRATEGIES

from .automation import QUESTION_SETS, automation_sensor, sensor_status
from .jobs import AssetJob
from .partitions import partition_key, split_key
from .resources import EmbeddingResource, WorkspaceResource, spec_context
from .scope import Scope


def corpus_tick(context: SensorEvaluationContext, workspace: WorkspaceResource):
    """The ``corpus_sensor``'s evaluation: a parse run when a document was added, changed or deleted."""
    state = corpus_state(scan_corpus(workspace.corpus_dir()))
    before = json.loads(context.cursor) if context.cursor else {}
    changes = diff_states(before, state)
    if context.cursor is not None and not any(changes.values()):
        return SkipReason("corpus unchanged")
    digest = fingerprint(state)
    return SensorResult(
        run_requests=[
            RunRequest(
                run_key=f"corpus-{digest}",
                tags={
                    "chunkbench/corpus_fingerprint": digest,
                    **{f"chunkbench/{kind}": str(len(names)) for kind, names in changes.items()},
                },
            )
        ],
        cursor=json.dumps(state, sort_keys=True),
    )


def provider_tags(embeddings: EmbeddingResource, key: str) -> dict[str, str]:
    """A run tag naming the partition's embedding provider, to filter runs by in the UI (limits: concurrency.py)."""
    return {"chunkbench/provider": embeddings.spec(split_key(key)[1]).provider}


@dataclass(frozen=True)
class StaleBuild:
    """A collection to rebuild: its partition, variant ('' = default), the chunking settings it was requested with
    (empty: the defaults), and why."""

    partition_key: str
    variant: str
    chunking: dict
    reason: str

    def run_key(self, prefix: str, current: str) -> str:
        return f"{prefix}-{current}:{self.partition_key}" + (f":{self.variant}" if self.variant else "")

    def run_config(self, scope: Scope) -> dict:
        """The run config that rebuilds it and evaluates it again, addressed to the ops of ``scope``'s benchmark."""
        if not self.chunking:
            return {}
        return {
            "ops": {scope.op(name): {"config": self.chunking} for name in ("chunk_collections", "experiment_results")}
        }


def _rebuild_settings(row: dict) -> dict:
    """The chunking settings the collection of ``row`` was requested with (the launchpad's fields)."""
    settings = json.loads(row["settings"]) if row.get("settings") else {}
    config = {k: settings[k] for k in ("chunk_size", "chunk_overlap") if k in settings}
    config.update(json.loads(row["options"]) if row.get("options") else {})
    return config


def stale_partitions(
    instance, workspace: WorkspaceResource, embeddings: EmbeddingResource
) -> tuple[str, list[StaleBuild]]:
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
    context = spec_context(workspace, results, embeddings)
    stale: list[StaleBuild] = []
    for model in embeddings.available_models():
        for strategy in STRATEGIES.names():
            key = str(partition_key(strategy, model))
            built = by_partition.get((strategy, model), [])
            if not any((r.get("variant") or "") == "" for r in built):
                stale.append(StaleBuild(key, "", {}, "never built"))
            for row in sorted(built, key=lambda r: r.get("variant") or ""):
                wanted = resolve_collection(request_of_build(row), context)  # the same request, as resolved now
                reason = staleness(row, current, wanted.settings)
                if reason:
                    stale.append(StaleBuild(key, row.get("variant") or "", _rebuild_settings(row), reason))
    return current, stale


def question_sets_tick(
    context: SensorEvaluationContext, workspace: WorkspaceResource, asset_key: AssetKey = AssetKey(QUESTION_SETS)
):
    """The ``question_sets_sensor``'s evaluation: the question sets reported as updated when one changed."""
    state = folder_state(workspace.questions_dir())
    cursor = json.dumps(state, sort_keys=True)
    if context.cursor is None:  # turning the sensor on re-runs nothing: the sets as they are are the baseline
        return SensorResult(skip_reason=SkipReason("recorded the current question sets"), cursor=cursor)
    changes = diff_states(json.loads(context.cursor), state)
    if not (changes["added"] or changes["changed"]):
        return SensorResult(skip_reason=SkipReason("no new or changed question set"), cursor=cursor)
    event = AssetMaterialization(
        asset_key=asset_key,
        description="question sets added or changed",
        metadata={
            "folder": MetadataValue.path(str(workspace.questions_dir())),
            "question_sets": len(state),
            "fingerprint": fingerprint(state),
            **{kind: ", ".join(names) for kind, names in changes.items() if names},
        },
    )
    return SensorResult(asset_events=[event], cursor=cursor)


def build_sensors(automation: bool, scope: Scope, parse_job: AssetJob) -> list[SensorDefinition]:
    """The sensors of one benchmark (its folders, its assets); running from the start when ``automation`` is on
    (the settings' CHUNKBENCH_AUTOMATION)."""
    status = sensor_status(automation)
    of = scope.of_benchmark("")

    @sensor(
        name=scope.name("corpus_sensor"),
        job=parse_job,
        minimum_interval_seconds=30,
        default_status=status,
        description=of + "Parses the corpus when a document is added, changed or deleted.",
    )
    def corpus_sensor(context: SensorEvaluationContext, workspace: WorkspaceResource):
        return corpus_tick(context, scope.workspace(workspace))

    @sensor(
        name=scope.name("question_sets_sensor"),
        minimum_interval_seconds=30,
        default_status=status,
        description=of + "Reports the question sets as updated when one is added or changed (experiments then "
        "re-run through automation).",
    )
    def question_sets_sensor(context: SensorEvaluationContext, workspace: WorkspaceResource):
        return question_sets_tick(context, scope.workspace(workspace), scope.key(QUESTION_SETS))

    return [
        corpus_sensor,
        question_sets_sensor,
        automation_sensor(status, scope.name("automation"), scope.selection(), scope.benchmark.name),
    ]
