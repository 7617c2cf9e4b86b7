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

from chunkbench_pipelines.definitions import defs
from chunkbench_pipelines.partitions import partition_key
from chunkbench_pipelines.scope import dagster_name

from .support.tides import MODEL, TIDES, tides_benchmark, tides_definitions

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning")  # raised inside evaluate_automation_conditions

SATURDAY = datetime.datetime(2026, 11, 28, 3, 0, tzinfo=datetime.timezone.utc)
BENCHMARK = "tides"


@pytest.fixture()
def setup(tmp_path):
    tides = tides_benchmark(tmp_path, benchmark=BENCHMARK)
    corpus, questions, resources = tides.corpus, tides.questions, tides.resources
    definitions, part = tides_definitions(tides, BENCHMARK)
    (tmp_path / "dagster_home").mkdir()
    instance = DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    yield {
        "corpus": corpus,
        "questions": questions,
        "resources": resources,
        "instance": instance,
        "defs": definitions,
        "part": part,
    }
    instance.dispose()


def key(asset: str) -> AssetKey:
    return AssetKey([BENCHMARK, asset])


def named(setup, kind: str, name: str):
    """The benchmark's sensor or schedule ``name``."""
    return next(d for d in getattr(setup["part"], kind) if d.name == f"{BENCHMARK}__{name}")


def tick(sensor, setup, cursor=None):
    context = build_sensor_context(
        instance=setup["instance"], cursor=cursor, resources=setup["resources"], definitions=setup["defs"]
    )
    return named(setup, "sensors", sensor).evaluate_tick(context)


def test_corpus_sensor_requests_a_parse_on_add_change_and_delete(setup):
    corpus_sensor = "corpus_sensor"
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
    return evaluate_automation_conditions(setup["defs"], setup["instance"], cursor=cursor)


def requested(result, asset: str) -> set[str]:
    return {str(k) for k in result.get_requested_partitions(key(asset))}


def assets(setup) -> list:
    return [a for a in setup["part"].assets if hasattr(a, "op")]  # the materializable ones


def parse(setup):
    assert materialize(
        assets(setup),
        selection=[key("source_documents"), key("parsed_documents")],
        instance=setup["instance"],
        resources=setup["resources"],
    ).success


def build(setup, asset, partition):
    assert materialize(
        assets(setup),
        selection=[key(asset)],
        partition_key=partition,
        instance=setup["instance"],
        resources=setup["resources"],
    ).success


@pytest.mark.e2e  # materializes the graph's assets: the conditions and schedules read their materializations
def test_collections_are_rebuilt_when_the_parsed_corpus_changes_not_when_it_is_parsed_again(setup):
    every = set(setup["defs"].resolve_asset_graph().get(key("chunk_collections")).partitions_def.get_partition_keys())
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


@pytest.mark.e2e  # materializes the graph's assets: the conditions and schedules read their materializations
def test_experiments_follow_their_collection_and_reports_follow_results(setup):
    parse(setup)
    tick = evaluate(setup)
    tick = evaluate(setup, tick.cursor)
    partition = partition_key("fixed_size", MODEL)
    build(setup, "chunk_collections", partition)
    tick = evaluate(setup, tick.cursor)
    assert requested(tick, "experiment_results") == {str(partition)}  # that partition only
    assert requested(tick, "leaderboard") == set()
    build(setup, "experiment_results", partition)
    tick = evaluate(setup, tick.cursor)
    assert tick.get_num_requested(key("leaderboard")) == 1
    assert tick.get_num_requested(key("benchmark_report")) == 1
    assert requested(tick, "experiment_results") == set()


@pytest.mark.e2e  # materializes the graph's assets: the conditions and schedules read their materializations
def test_question_sets_sensor_reports_changes_and_built_partitions_are_reevaluated(setup):
    instance = setup["instance"]
    question_sets_sensor = "question_sets_sensor"
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

    (setup["questions"] / "more.json").write_text(
        json.dumps(
            {
                "questions": [
                    {
                        "id": "t2",
                        "question": "What height must the tide pass?",
                        "references": [{"document": "tides.md", "content": "above four metres"}],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
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
    prefix = dagster_name(Settings.load({}).benchmark)
    loaded = defs()  # as Dagster loads the code location: the definitions of the settings in force
    repository = loaded.get_repository_def()
    sensors = {s.name: s for s in repository.sensor_defs if s.name.startswith(f"{prefix}__")}
    # each benchmark's own, no default automation sensor
    assert set(sensors) == {f"{prefix}__{name}" for name in ("automation", "corpus_sensor", "question_sets_sensor")}
    assert all(s.default_status == DefaultSensorStatus.STOPPED for s in repository.sensor_defs)
    assert all(s.default_status == DefaultScheduleStatus.STOPPED for s in repository.schedule_defs)
    graph = loaded.resolve_asset_graph()
    conditioned = {
        k.to_user_string()
        for k in graph.get_all_asset_keys()
        if k.path[0] == prefix and graph.get(k).automation_condition is not None
    }
    assert conditioned == {
        f"{prefix}/{name}" for name in ("chunk_collections", "experiment_results", "leaderboard", "benchmark_report")
    }


def test_the_switch_starts_the_automation_and_folder_sensors(tmp_path):
    import os
    import subprocess
    import sys

    script = (
        "from chunkbench_pipelines.definitions import defs\n"
        "for s in defs().get_repository_def().sensor_defs: print(s.name, s.default_status.value)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "CHUNKBENCH_AUTOMATION": "on",
            "DAGSTER_HOME": str(tmp_path),
            "CHUNKBENCH_HOME": str(tmp_path / "home"),
            "CHUNKBENCH_BENCHMARK": "mine",
        },
    )
    assert result.returncode == 0, result.stderr
    assert dict(line.split() for line in result.stdout.splitlines()) == {
        "mine__automation": "RUNNING",
        "mine__corpus_sensor": "RUNNING",
        "mine__question_sets_sensor": "RUNNING",
    }


def schedule_tick(setup, name: str):
    context = build_schedule_context(
        instance=setup["instance"],
        resources=setup["resources"],
        repository_def=setup["defs"].get_repository_def(),
        scheduled_execution_time=SATURDAY,
    )
    return named(setup, "schedules", name).evaluate_tick(context)


@pytest.mark.e2e  # materializes the graph's assets: the conditions and schedules read their materializations
def test_weekly_neighbor_sweep_launches_the_sweep_job_over_built_collections(setup):
    assert "no fixed_size collection" in schedule_tick(setup, "neighbor_sweep_weekly").skip_message
    parse(setup)
    build(setup, "chunk_collections", partition_key("fixed_size", MODEL))
    [request] = schedule_tick(setup, "neighbor_sweep_weekly").run_requests
    assert request.run_config == {"ops": {f"{BENCHMARK}__sweep_neighbors": {"config": {"corpus_models": [MODEL]}}}}
    assert request.run_key == "neighbors-20261128T0300"  # one run per week: the job runs every level
    schedule = named(setup, "schedules", "neighbor_sweep_weekly")
    assert schedule.job_name == f"{BENCHMARK}__neighbor_sweep"


def test_weekly_chunk_size_sweep_launches_the_sweep_job_over_available_models(setup):
    [request] = schedule_tick(setup, "chunk_size_sweep_weekly").run_requests
    config = request.run_config["ops"][f"{BENCHMARK}__sweep_chunk_sizes"]["config"]
    assert MODEL in config["corpus_models"]
    assert named(setup, "schedules", "chunk_size_sweep_weekly").job_name == f"{BENCHMARK}__chunk_size_sweep"
