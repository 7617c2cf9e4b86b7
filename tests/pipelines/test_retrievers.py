"""The retriever is config of the experiments asset: one partition's materialization evaluates each listed
retriever over the same collection, as runs of their own, and the leaderboard shows one row per retriever."""

import pytest
from dagster import DagsterInstance

from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_pipelines.partitions import partition_key
from tests.pipelines.support.partitions import tides_graph

from .support.tides import MODEL, tides_benchmark

BENCHMARK = "retrievers"
DOC = (
    "# Tides\n\nThe harbour of Quelm floods twice a day when the spring tide rises above four metres. "
    "Boats are moved to the inner basin. The harbour master rings a bell an hour before high water.\n\n"
    "## Storms\n\nWinter storms close the outer pier. The ferry then leaves from the north quay instead.\n"
)


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    tides = tides_benchmark(tmp_path, DOC, BENCHMARK)
    monkeypatch.setenv("CHUNKBENCH_BENCHMARK", BENCHMARK)
    monkeypatch.delenv("CHUNKBENCH_RESULTS_DIR", raising=False)
    (tmp_path / "dagster_home").mkdir()
    instance = DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    yield {
        "results": tides.results,
        "resources": tides.resources,
        "instance": instance,
        "graph": tides_graph(tides, BENCHMARK),
    }
    instance.dispose()


def run(setup, selection, key=None, config=None):
    ops = {name: {"config": config} for name in selection} if config else {}
    return setup["graph"].materialize(
        selection,
        run_config={"ops": ops} if ops else {},
        partition_key=key,
        instance=setup["instance"],
        resources=setup["resources"],
        raise_on_error=False,
    )


@pytest.mark.e2e  # materializes the graph's assets in Dagster runs
def test_each_listed_retriever_is_a_run_of_its_own_over_the_same_collection(setup):
    assert run(setup, ["source_documents", "parsed_documents"]).success
    key = partition_key("fixed_size", MODEL)
    assert run(setup, ["chunk_collections"], key).success
    evaluated = run(setup, ["experiment_results"], key, {"retrievers": ["dense", "hybrid"]})
    assert evaluated.success
    [materialization] = evaluated.asset_materializations_for_node(setup["graph"].op("experiment_results"))
    metadata = materialization.metadata
    assert metadata["retrievers"].value == "dense, hybrid" and metadata["scope"].value == "shared"
    assert "hybrid/recall" in metadata
    from chunkbench_pipelines.runner import recorded_runs

    assert recorded_runs(evaluated) == [evaluated.run_id, f"{evaluated.run_id}-hybrid"]
    results = ResultsDB(setup["results"])
    results.ensure_database()
    runs = results.query("SELECT experiment_run_id, retriever, scope FROM experiment_metrics ORDER BY retriever")
    assert list(runs.retriever) == ["dense", "hybrid"] and set(runs.scope) == {"shared"}
    assert list(runs.experiment_run_id) == [evaluated.run_id, f"{evaluated.run_id}-hybrid"]
    board = results.query("SELECT retriever FROM leaderboard ORDER BY retriever")
    assert list(board.retriever) == ["dense", "hybrid"]
    refused = run(setup, ["experiment_results"], key, {"retrievers": ["bm42"]})
    assert not refused.success
    # a bad setting fails at once with its reason: no retry (three of them waited about 20 s for the same error)
    events = refused.all_events
    assert not [e for e in events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    [failure] = [e for e in events if e.event_type_value == "STEP_FAILURE"]
    assert "unknown retriever 'bm42'" in failure.step_failure_data.error.message


def test_run_takes_repeated_retrievers_and_refuses_an_unknown_one():
    from chunkbench_pipelines.cli import build_parser
    from chunkbench_pipelines.cli.run_settings import run_settings

    parser = build_parser()
    given = run_settings(parser.parse_args(["run", "--retriever", "dense", "--retriever", "hybrid"]))
    assert given["experiment"] == {"retrievers": ["dense", "hybrid"]}
    with pytest.raises(ValueError, match="unknown retriever 'bm42'"):
        run_settings(parser.parse_args(["run", "--retriever", "bm42"]))
