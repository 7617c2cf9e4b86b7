"""Provenance read from the collection that was built, and no scoring of a stale collection."""

import json
import math

import pytest
from dagster import DagsterInstance, Definitions, build_schedule_context, validate_run_config

from chunkbench_core.embedding import SharedDefaults
from chunkbench_core.provenance import code_version
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_pipelines.partitions import partition_key
from chunkbench_pipelines.resources import EmbeddingResource
from chunkbench_pipelines.sensors import stale_partitions
from tests.pipelines.support.partitions import tides_graph

from .support.tides import MODEL, tides_benchmark

BENCHMARK = "provenance"
DOC = (
    "# Tides\n\nThe harbour of Quelm floods twice a day when the spring tide rises above four metres. "
    "Boats are moved to the inner basin. The harbour master rings a bell an hour before high water.\n\n"
    "## Storms\n\nWinter storms close the outer pier. The ferry then leaves from the north quay instead.\n"
)


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    tides = tides_benchmark(tmp_path, DOC, BENCHMARK)
    corpus, home, results, resources = tides.corpus, tides.home, tides.results, tides.resources
    workspace = resources["workspace"]
    # the code that reads the benchmark from the environment (the persisted thresholds) agrees with the resources
    monkeypatch.setenv("CHUNKBENCH_BENCHMARK", BENCHMARK)
    monkeypatch.delenv("CHUNKBENCH_RESULTS_DIR", raising=False)
    (tmp_path / "dagster_home").mkdir()
    instance = DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    yield {
        "corpus": corpus,
        "home": home,
        "results": results,
        "resources": resources,
        "instance": instance,
        "workspace": workspace,
        "graph": tides_graph(tides, BENCHMARK),
    }
    instance.dispose()


def run(setup, selection, key=None, config=None):
    """Materialize ``selection``; ``config`` may name more assets than selected (only theirs is passed)."""
    ops = {name: value for name, value in (config or {}).get("ops", {}).items() if name in selection}
    return setup["graph"].materialize(
        selection,
        partition_key=key,
        instance=setup["instance"],
        resources=setup["resources"],
        run_config={"ops": ops} if ops else {},
        raise_on_error=False,
    )


def failure_message(result) -> str:
    return " ".join(str(e.event_specific_data.error.message) for e in result.all_events if e.is_step_failure)


def test_code_version_names_the_commit_in_a_checkout():
    version = code_version()
    assert version.startswith("0.") and "+g" in version  # the tests run from a git checkout


@pytest.mark.e2e  # materializes the graph's assets in Dagster runs
def test_experiment_provenance_comes_from_the_collection_and_its_run(setup):
    assert run(setup, ["source_documents", "parsed_documents"]).success
    key = partition_key("semantic", MODEL)
    config = {
        "ops": {
            name: {"config": {"min_chunk_size": 2, "threshold_mode": "percentile", "percentile": 90.0}}
            for name in ("chunk_collections", "experiment_results")
        }
    }
    built = run(setup, ["chunk_collections"], key, config)
    assert built.success
    results = ResultsDB(setup["results"])
    [row] = results.query("SELECT * FROM collections").to_dict("records")
    settings = json.loads(row["settings"])
    assert row["dagster_run_id"] == built.run_id and row["corpus_fingerprint"]
    assert settings["min_chunk_size"] == 2 and settings["threshold_mode"] == "percentile"
    assert settings["percentile"] == 90.0 and settings["boundary_model"] == MODEL
    # the percentile rule cuts at the document's own distances: no threshold decides these chunks
    assert math.isnan(row["threshold"]) and row["threshold_source"] is None and row["threshold_mode"] == "percentile"
    assert json.loads(row["parse_options"])["persian_digits"] == "ascii"
    assert row["variant"].startswith("opts")  # non-default options build a collection of their own

    evaluated = run(setup, ["experiment_results"], key, config)
    assert evaluated.success, failure_message(evaluated)
    provenance = json.loads(results.query("SELECT provenance FROM experiment_metrics")["provenance"][0])
    assert provenance["collection_run_id"] == built.run_id and provenance["dagster_run_id"] == evaluated.run_id
    assert provenance["boundary_model"] == MODEL and provenance["chunker_settings"]["min_chunk_size"] == 2
    assert provenance["corpus_fingerprint"] == row["corpus_fingerprint"]
    assert provenance["code_version"] == code_version()

    # the same partition without the options is another (never built) collection: refused, not mixed up
    default = run(setup, ["experiment_results"], key)
    assert not default.success and "no build record" in failure_message(default)


@pytest.mark.e2e  # materializes the graph's assets in Dagster runs
def test_experiment_refuses_a_collection_from_another_parsed_corpus_at_once(setup):
    assert run(setup, ["source_documents", "parsed_documents"]).success
    key = partition_key("fixed_size", MODEL)
    assert run(setup, ["chunk_collections"], key).success
    old = setup["workspace"].parsed_store().manifest_fingerprint()
    (setup["corpus"] / "tides.md").write_text(DOC + "\nThe lighthouse was built in 1890.\n", encoding="utf-8")
    assert run(setup, ["source_documents", "parsed_documents"]).success
    new = setup["workspace"].parsed_store().manifest_fingerprint()
    assert new != old
    result = run(setup, ["experiment_results"], key)
    message = failure_message(result)
    assert not result.success and old in message and new in message and str(key) in message
    assert "materialize chunk_collections" in message
    # permanent: one attempt, no retry
    steps = [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    assert steps == []
    assert ResultsDB(setup["results"]).query("SELECT count(*) AS n FROM experiment_metrics")["n"][0] == 0


@pytest.mark.e2e  # materializes the graph's assets in Dagster runs
def test_a_changed_threshold_marks_semantic_partitions_stale(setup):
    """A collection cut by the absolute rule goes stale when its boundary model's threshold changes; one cut at
    the document's own percentile (the default) does not depend on it."""
    assert run(setup, ["source_documents", "parsed_documents"]).success
    key = partition_key("semantic", MODEL)
    absolute = {
        "ops": {
            name: {"config": {"threshold_mode": "absolute"}} for name in ("chunk_collections", "experiment_results")
        }
    }
    assert run(setup, ["chunk_collections"], key).success
    assert run(setup, ["chunk_collections"], key, absolute).success
    assert run(setup, ["experiment_results"], key, absolute).success
    _, stale = stale_partitions(setup["instance"], setup["workspace"], EmbeddingResource())
    assert str(key) not in {b.partition_key for b in stale}

    SharedDefaults(ResultsDB(setup["results"])).set_threshold(MODEL, 0.55)  # chunkbench thresholds set
    _, stale = stale_partitions(setup["instance"], setup["workspace"], EmbeddingResource())
    [build] = [b for b in stale if b.partition_key == str(key)]
    assert "threshold" in build.reason and build.variant.startswith("opts")
    result = run(setup, ["experiment_results"], key, absolute)
    assert not result.success and "threshold 0.3 -> 0.55" in failure_message(result)


@pytest.mark.e2e  # materializes the graph's assets in Dagster runs
def test_the_staleness_schedule_considers_every_variant(setup):
    assert run(setup, ["source_documents", "parsed_documents"]).success
    key = partition_key("fixed_size", MODEL)
    sweep = {
        "ops": {
            n: {"config": {"chunk_size": 64, "chunk_overlap": 8}} for n in ("chunk_collections", "experiment_results")
        }
    }
    assert run(setup, ["chunk_collections"], key).success
    assert run(setup, ["chunk_collections"], key, sweep).success  # the variant is the latest materialization
    # resolves the partitioned run requests against the benchmark's chunk_and_evaluate job
    graph = setup["graph"]
    repository = Definitions.merge(graph.definitions, Definitions(resources=setup["resources"])).get_repository_def()
    nightly_stale_partitions = repository.get_schedule_def(graph.scope.name("nightly_stale_partitions"))
    context = build_schedule_context(
        instance=setup["instance"], resources=setup["resources"], repository_def=repository
    )
    requests = [
        r for r in nightly_stale_partitions.evaluate_tick(context).run_requests or [] if r.partition_key == str(key)
    ]
    assert requests == []

    (setup["corpus"] / "tides.md").write_text(DOC + "\nThe lighthouse was built in 1890.\n", encoding="utf-8")
    assert run(setup, ["source_documents", "parsed_documents"]).success
    context = build_schedule_context(
        instance=setup["instance"], resources=setup["resources"], repository_def=repository
    )
    requests = [
        r for r in nightly_stale_partitions.evaluate_tick(context).run_requests or [] if r.partition_key == str(key)
    ]
    assert sorted(r.tags["chunkbench/variant"] for r in requests) == ["default", "size64_overlap8"]
    variant = [r for r in requests if r.tags["chunkbench/variant"] != "default"][0]
    # addressed to the benchmark's own ops (the run config is checked against its job when the run is launched)
    assert variant.run_config["ops"][graph.op("chunk_collections")]["config"] == {"chunk_size": 64, "chunk_overlap": 8}
    assert variant.run_config["ops"][graph.op("experiment_results")]["config"] == {"chunk_size": 64, "chunk_overlap": 8}
    validate_run_config(repository.get_job(graph.scope.name("chunk_and_evaluate")), variant.run_config)
    assert setup["instance"].get_latest_materialization_event(graph.key("chunk_collections")) is not None
