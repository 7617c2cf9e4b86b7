"""Sensors, schedules and automation conditions, evaluated with real contexts against a temporary corpus and a
real instance (the conditions with Dagster's evaluate_automation_conditions, tick after tick with its cursor)."""

import datetime
import json

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    build_schedule_context,
    build_sensor_context,
    evaluate_automation_conditions,
    materialize,
)

from tests.pipelines.support.partitions import LOCAL_ASSETS
from chunkbench_pipelines.definitions import defs
from chunkbench_pipelines.partitions import partition_key
from chunkbench_pipelines.schedules import NEIGHBOR_LEVELS, chunk_size_sweep, neighbor_sweep
from chunkbench_pipelines.sensors import corpus_sensor, question_sets_sensor

from .support.tides import MODEL, TIDES, tides_benchmark

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning")  # raised inside evaluate_automation_conditions

REPOSITORY = defs.get_repository_def()
SATURDAY = datetime.datetime(2026, 11, 28, 3, 0, tzinfo=datetime.timezone.utc)


@pytest.fixture()
def setup(tmp_path):
    tides = tides_benchmark(tmp_path)
    corpus, questions, resources = tides.corpus, tides.questions, tides.resources
    (tmp_path / "dagster_home").mkdir()
    instance = DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    yield {"corpus": corpus, "questions": questions, "resources": resources, "instance": instance}
    instance.dispose()


def tick(sensor, setup, cursor=None):
    context = build_sensor_context(instance=setup["instance"], cursor=cursor, resources=setup["resources"],
                                   definitions=defs)
    return sensor.evaluate_tick(context)


def test_corpus_sensor_requests_a_parse_on_add_change_and_delete(setup):
    first = tick(corpus_sensor, setup)
    assert len(first.run_requests) == 1 and first.run_requests[0].tags["chunkbench/added"] == "1"
    again = tick(corpus_sensor, setup, first.cursor)
    assert again.run_requests == [] and "unchanged" in again.skip_message

    (setup["corpus"] / "new.md").write_text("another document", encoding="utf-8")
    added = tick(corpus_sensor, setup, again.cursor or first.cursor)
    assert added.run_requests[0].tags["chunkbench/added"] == "1"
    (setup["corpus"] / "tides.md").write_text(TIDES + "\nMore text.\n", encoding="utf-8")
    changed = tick(corpus_sensor, setup, added.cursor)
    assert changed.run_requests[0].tags["chunkbench/changed"] == "1"
    (setup["corpus"] / "new.md").unlink()
    deleted = tick(corpus_sensor, setup, changed.cursor)
    assert deleted.run_requests[0].tags["chunkbench/deleted"] == "1"
    assert len({r.run_requests[0].run_key for r in (first, added, changed, deleted)}) == 4


def evaluate(setup, cursor=None):
    """One tick of the automation sensor, as the daemon runs it."""
    return evaluate_automation_conditions(defs, setup["instance"], cursor=cursor)


def requested(result, asset: str) -> set[str]:
    return {str(k) for k in result.get_requested_partitions(AssetKey(asset))}


def parse(setup):
    assert materialize(LOCAL_ASSETS, selection=["source_documents", "parsed_documents"], instance=setup["instance"],
                       resources=setup["resources"]).success


def build(setup, asset, key):
    assert materialize(LOCAL_ASSETS, selection=[asset], partition_key=key, instance=setup["instance"],
                       resources=setup["resources"]).success


def test_collections_are_rebuilt_when_the_parsed_corpus_changes_not_when_it_is_parsed_again(setup):
    every = set(defs.resolve_asset_graph().get(AssetKey("chunk_collections")).partitions_def.get_partition_keys())
    tick = evaluate(setup)
    assert requested(tick, "chunk_collections") == set()  # nothing parsed yet
    parse(setup)
    tick = evaluate(setup, tick.cursor)
    assert requested(tick, "chunk_collections") == every  # a first parsed corpus: every partition
    tick = evaluate(setup, tick.cursor)
    assert requested(tick, "chunk_collections") == set()  # handled
    parse(setup)  # the same files again: the parsed corpus's data version is unchanged
    tick = evaluate(setup, tick.cursor)
    assert requested(tick, "chunk_collections") == set()
    (setup["corpus"] / "tides.md").write_text(TIDES + "\nThe tide tables are printed each January.\n", encoding="utf-8")
    parse(setup)
    tick = evaluate(setup, tick.cursor)
    assert requested(tick, "chunk_collections") == every


def test_experiments_follow_their_collection_and_reports_follow_results(setup):
    parse(setup)
    tick = evaluate(setup)
    tick = evaluate(setup, tick.cursor)
    key = partition_key("fixed_size", MODEL)
    build(setup, "chunk_collections", key)
    tick = evaluate(setup, tick.cursor)
    assert requested(tick, "experiment_results") == {str(key)}  # that partition only
    assert requested(tick, "leaderboard") == set()
    build(setup, "experiment_results", key)
    tick = evaluate(setup, tick.cursor)
    assert tick.get_num_requested(AssetKey("leaderboard")) == 1
    assert tick.get_num_requested(AssetKey("benchmark_report")) == 1
    assert requested(tick, "experiment_results") == set()


def test_question_sets_sensor_reports_changes_and_built_partitions_are_reevaluated(setup):
    instance = setup["instance"]
    first = tick(question_sets_sensor, setup)
    assert first.asset_events == [] and first.cursor  # the baseline: turning the sensor on re-runs nothing
    same = tick(question_sets_sensor, setup, first.cursor)
    assert same.asset_events == [] and "no new or changed" in same.skip_message
    parse(setup)
    automation = evaluate(setup)
    automation = evaluate(setup, automation.cursor)
    built = partition_key("recursive", MODEL)
    build(setup, "chunk_collections", built)
    build(setup, "experiment_results", built)
    automation = evaluate(setup, automation.cursor)
    assert requested(automation, "experiment_results") == set()

    (setup["questions"] / "more.json").write_text(json.dumps({"questions": [{
        "id": "t2", "question": "What height must the tide pass?",
        "references": [{"document": "tides.md", "content": "above four metres"}]}]}), encoding="utf-8")
    changed = tick(question_sets_sensor, setup, same.cursor or first.cursor)
    [event] = changed.asset_events
    assert event.metadata["added"].value == "more.json"
    instance.report_runless_asset_event(event)  # what the daemon does with a sensor's asset events
    automation = evaluate(setup, automation.cursor)
    assert requested(automation, "experiment_results") == {str(built)}  # only the partition with a collection


def test_automation_is_off_unless_the_one_switch_is_on():
    from dagster import DefaultScheduleStatus, DefaultSensorStatus

    from chunkbench_core.settings import Settings
    from chunkbench_pipelines.automation import sensor_status

    assert sensor_status(Settings.load({}).automation) == DefaultSensorStatus.STOPPED
    assert sensor_status(Settings.load({"CHUNKBENCH_AUTOMATION": "on"}).automation) == DefaultSensorStatus.RUNNING
    assert sensor_status(Settings.load({"CHUNKBENCH_AUTOMATION": "off"}).automation) == DefaultSensorStatus.STOPPED
    sensors = {s.name: s for s in REPOSITORY.sensor_defs}
    assert set(sensors) == {"automation", "corpus_sensor", "question_sets_sensor"}  # no default automation sensor
    assert all(s.default_status == DefaultSensorStatus.STOPPED for s in sensors.values())
    assert all(s.default_status == DefaultScheduleStatus.STOPPED for s in REPOSITORY.schedule_defs)
    graph = defs.resolve_asset_graph()
    conditioned = {k.to_user_string() for k in graph.get_all_asset_keys()
                   if graph.get(k).automation_condition is not None}
    assert conditioned == {"chunk_collections", "experiment_results", "leaderboard", "benchmark_report"}


def test_the_switch_starts_the_automation_and_folder_sensors(tmp_path):
    import os
    import subprocess
    import sys

    script = ("from chunkbench_pipelines.definitions import defs\n"
              "for s in defs.get_repository_def().sensor_defs: print(s.name, s.default_status.value)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "CHUNKBENCH_AUTOMATION": "on", "DAGSTER_HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert dict(line.split() for line in result.stdout.splitlines()) == {
        "automation": "RUNNING", "corpus_sensor": "RUNNING", "question_sets_sensor": "RUNNING"}


def test_neighbor_sweep_requests_one_run_per_level(setup):
    instance, resources = setup["instance"], setup["resources"]
    context = build_schedule_context(instance=instance, resources=resources, repository_def=REPOSITORY,
                               scheduled_execution_time=SATURDAY)
    assert isinstance(neighbor_sweep.evaluate_tick(context).skip_message, str)
    materialize(LOCAL_ASSETS, selection=["source_documents", "parsed_documents"], instance=instance, resources=resources)
    key = partition_key("fixed_size", MODEL)
    materialize(LOCAL_ASSETS, selection=["chunk_collections"], partition_key=key, instance=instance, resources=resources)
    requests = neighbor_sweep.evaluate_tick(build_schedule_context(instance=instance, resources=resources, repository_def=REPOSITORY,
                               scheduled_execution_time=SATURDAY)).run_requests
    levels = [(r.run_config["ops"]["experiment_results"]["config"]["neighbor_prev"],
               r.run_config["ops"]["experiment_results"]["config"]["neighbor_next"]) for r in requests]
    assert levels == list(NEIGHBOR_LEVELS)
    assert all(r.partition_key == str(key) and r.tags["chunkbench/sweep"] == "neighbors" for r in requests)


def test_chunk_size_sweep_covers_sizes_within_each_model_window(setup):
    requests = chunk_size_sweep.evaluate_tick(
        build_schedule_context(instance=setup["instance"], resources=setup["resources"], repository_def=REPOSITORY,
                               scheduled_execution_time=SATURDAY)).run_requests
    minilm = [r for r in requests if r.partition_key.startswith(MODEL + "|")]
    sizes = sorted({(r.partition_key, r.run_config["ops"]["chunk_collections"]["config"]["chunk_size"]) for r in minilm})
    assert sizes == [(f"{MODEL}|{s}", n) for s in ("fixed_size", "recursive") for n in (128, 256)]
    for r in requests:
        chunking = r.run_config["ops"]["chunk_collections"]["config"]
        assert r.run_config["ops"]["experiment_results"]["config"] == chunking
        assert chunking["chunk_overlap"] == chunking["chunk_size"] // 8
