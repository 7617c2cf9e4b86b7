"""Sensors and schedules, ticked with real contexts against a temporary corpus and a real instance."""

import datetime
import json

import pytest
from dagster import DagsterInstance, build_schedule_context, build_sensor_context, materialize

from chunkbench_pipelines.assets import ALL_ASSETS
from chunkbench_pipelines.definitions import defs
from chunkbench_pipelines.partitions import partition_key
from chunkbench_pipelines.resources import DuckDBResource, EmbeddingResource, LLMResource, QdrantResource, WorkspaceResource
from chunkbench_pipelines.schedules import NEIGHBOR_LEVELS, chunk_size_sweep, neighbor_sweep
from chunkbench_pipelines.sensors import corpus_sensor, parsed_corpus_sensor, question_sets_sensor

MODEL = "all-minilm-l6-v2"
REPOSITORY = defs.get_repository_def()
SATURDAY = datetime.datetime(2026, 11, 28, 3, 0, tzinfo=datetime.timezone.utc)
DOC = "# Tides\n\nThe harbour of Quelm floods twice a day when the spring tide rises above four metres.\n"


@pytest.fixture()
def setup(tmp_path):
    corpus, questions, home = tmp_path / "corpus", tmp_path / "questions", tmp_path / "home"
    corpus.mkdir()
    questions.mkdir()
    (corpus / "tides.md").write_text(DOC, encoding="utf-8")
    (questions / "q.json").write_text(json.dumps({"questions": [{
        "id": "t1", "question": "How often does Quelm flood?",
        "references": [{"document": "tides.md", "content": "floods twice a day"}]}]}), encoding="utf-8")
    workspace = WorkspaceResource(home=str(home), corpus=str(corpus), questions=str(questions))
    resources = {"workspace": workspace, "duckdb": DuckDBResource(folder=str(home)),
                 "qdrant": QdrantResource(local_path=str(home / "qdrant")), "embeddings": EmbeddingResource(), "llm": LLMResource()}
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
    (setup["corpus"] / "tides.md").write_text(DOC + "\nMore text.\n", encoding="utf-8")
    changed = tick(corpus_sensor, setup, added.cursor)
    assert changed.run_requests[0].tags["chunkbench/changed"] == "1"
    (setup["corpus"] / "new.md").unlink()
    deleted = tick(corpus_sensor, setup, changed.cursor)
    assert deleted.run_requests[0].tags["chunkbench/deleted"] == "1"
    assert len({r.run_requests[0].run_key for r in (first, added, changed, deleted)}) == 4


def test_parsed_corpus_sensor_requests_exactly_the_stale_partitions(setup):
    instance, resources = setup["instance"], setup["resources"]
    assert tick(parsed_corpus_sensor, setup).run_requests == []  # nothing parsed yet
    assert materialize(ALL_ASSETS, selection=["source_documents", "parsed_documents"], instance=instance,
                       resources=resources).success
    available = EmbeddingResource().available_models()
    stale = tick(parsed_corpus_sensor, setup).run_requests
    assert MODEL in available
    assert {r.partition_key for r in stale} >= {str(partition_key("fixed_size", MODEL)),
                                                str(partition_key("recursive", MODEL))}
    built = partition_key("fixed_size", MODEL)
    assert materialize(ALL_ASSETS, selection=["chunk_collections"], partition_key=built, instance=instance,
                       resources=resources).success
    after = {r.partition_key for r in tick(parsed_corpus_sensor, setup).run_requests}
    assert str(built) not in after and str(partition_key("recursive", MODEL)) in after

    (setup["corpus"] / "tides.md").write_text(DOC + "\nThe tide tables are printed each January.\n", encoding="utf-8")
    assert materialize(ALL_ASSETS, selection=["source_documents", "parsed_documents"], instance=instance,
                       resources=resources).success
    assert str(built) in {r.partition_key for r in tick(parsed_corpus_sensor, setup).run_requests}


def test_question_sets_sensor_reevaluates_built_partitions(setup):
    instance, resources = setup["instance"], setup["resources"]
    baseline = tick(question_sets_sensor, setup)
    assert baseline.run_requests == [] and baseline.cursor
    assert materialize(ALL_ASSETS, selection=["source_documents", "parsed_documents"], instance=instance,
                       resources=resources).success
    built = partition_key("recursive", MODEL)
    assert materialize(ALL_ASSETS, selection=["chunk_collections"], partition_key=built, instance=instance,
                       resources=resources).success
    assert tick(question_sets_sensor, setup, baseline.cursor).run_requests == []
    (setup["questions"] / "more.json").write_text(json.dumps({"questions": [{
        "id": "t2", "question": "What height must the tide pass?",
        "references": [{"document": "tides.md", "content": "above four metres"}]}]}), encoding="utf-8")
    result = tick(question_sets_sensor, setup, baseline.cursor)
    assert [r.partition_key for r in result.run_requests] == [str(built)]
    assert result.run_requests[0].tags["chunkbench/question_sets"] == "more.json"


def test_neighbor_sweep_requests_one_run_per_level(setup):
    instance, resources = setup["instance"], setup["resources"]
    context = build_schedule_context(instance=instance, resources=resources, repository_def=REPOSITORY,
                               scheduled_execution_time=SATURDAY)
    assert isinstance(neighbor_sweep.evaluate_tick(context).skip_message, str)
    materialize(ALL_ASSETS, selection=["source_documents", "parsed_documents"], instance=instance, resources=resources)
    key = partition_key("fixed_size", MODEL)
    materialize(ALL_ASSETS, selection=["chunk_collections"], partition_key=key, instance=instance, resources=resources)
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
