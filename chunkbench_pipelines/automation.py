"""Declarative Automation: which asset updates after what, and the one switch that turns it on.

- ``chunk_collections`` (each partition): rebuilt when the parsed corpus changes (the data version
  of ``parsed_documents`` is the parsed corpus's fingerprint, so re-parsing unchanged files changes
  nothing), and built when a partition is new (a model or strategy added).
- ``experiment_results`` (each partition): after its ``chunk_collections`` partition, or when the
  question sets change (``question_sets`` is an external asset the ``question_sets_sensor`` reports).
- ``leaderboard``: once any experiment partition has new results and none is still running;
  ``benchmark_report`` after it.

Each benchmark has its own automation sensor, over its own assets only.

Sensors remain only for what happens outside Dagster (files in the corpus and question folders);
the sweeps stay schedules. Everything is off unless the settings turn automation on
(``CHUNKBENCH_AUTOMATION=on`` in the environment of the code location, e.g. ``CHUNKBENCH_AUTOMATION=on make ui``): then the automation
sensor and the two folder sensors start running; without it they can be started one by one on
the UI's Automation page. The schedules are always started by hand (they launch whole sweeps).
"""

from __future__ import annotations

from dagster import (
    AssetKey,
    AssetSelection,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
)

QUESTION_SETS = "question_sets"


def sensor_status(automation: bool) -> DefaultSensorStatus:
    """How the automation sensor and the folder sensors start: running only when the settings turn automation on
    (CHUNKBENCH_AUTOMATION=on)."""
    return DefaultSensorStatus.RUNNING if automation else DefaultSensorStatus.STOPPED


def _not_blocked() -> AutomationCondition:
    return ~AutomationCondition.any_deps_in_progress() & ~AutomationCondition.in_progress()


def on_parsed_corpus_change() -> AutomationCondition:
    """A new partition, or the parsed corpus it was built from changed (not merely re-parsed)."""
    corpus_changed = AutomationCondition.any_deps_match(AutomationCondition.data_version_changed())
    return (
        (AutomationCondition.newly_missing() | corpus_changed).since_last_handled()
        & ~AutomationCondition.any_deps_missing()
        & _not_blocked()
    ).with_label("on parsed corpus change")


def on_collection_or_question_sets(question_sets: AssetKey = AssetKey(QUESTION_SETS)) -> AutomationCondition:
    """After the partition's collection is (re)built or the question sets (the asset ``question_sets``) change;
    never before the collection exists."""
    collection_missing = AutomationCondition.any_deps_match(
        AutomationCondition.missing() & ~AutomationCondition.will_be_requested()
    ).ignore(AssetSelection.assets(question_sets))  # question sets not yet reported: the folder is read anyway
    return (
        (AutomationCondition.newly_missing() | AutomationCondition.any_deps_updated()).since_last_handled()
        & ~collection_missing
        & _not_blocked()
    ).with_label("on new collection or question sets")


def on_new_results() -> AutomationCondition:
    """Once any partition upstream has new results and none of them is still running."""
    return (AutomationCondition.any_deps_updated().since_last_handled() & _not_blocked()).with_label("on new results")


def automation_sensor(
    status: DefaultSensorStatus, name: str, target: AssetSelection, benchmark: str
) -> AutomationConditionSensorDefinition:
    """The sensor evaluating the automation conditions of ``target`` (one benchmark's assets)."""
    return AutomationConditionSensorDefinition(
        name,
        target=target,
        default_status=status,
        minimum_interval_seconds=30,
        description=f"Benchmark {benchmark}: evaluates its assets' automation conditions "
        "(see chunkbench_pipelines/automation.py). Off unless CHUNKBENCH_AUTOMATION=on.",
    )
