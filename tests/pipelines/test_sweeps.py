"""Sweeps on demand through Dagster: the benchmark's sweep jobs run every level or size as its own experiment run,
then the leaderboard and the reports; `chunkbench sweep` runs the same job from the command line."""

from pathlib import Path

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, materialize

from chunkbench_core.errors import ConfigError
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.sweeps import parse_levels, parse_sizes, size_steps
from chunkbench_pipelines.partitions import partition_key

from .support.tides import MODEL, tides_benchmark, tides_definitions, use_environment

BENCHMARK = "tides"


def key(asset: str) -> AssetKey:
    return AssetKey([BENCHMARK, asset])


def by_setting(results: ResultsDB):
    return results.query(
        "SELECT strategy, corpus_model, variant, neighbor_prev, neighbor_next, n_questions, "
        "experiment_run_id FROM leaderboard_by_setting ORDER BY strategy, variant, neighbor_prev"
    )


def materializations(instance, asset: str, partition: str | None = None) -> list:
    records = instance.fetch_materializations(AssetRecordsFilter(asset_key=key(asset)), limit=100).records
    return [r for r in records if partition is None or r.partition_key == partition]


@pytest.fixture()
def graph(tmp_path):
    """The tides benchmark's part of the graph and an instance, nothing built yet."""
    tides = tides_benchmark(tmp_path, benchmark=BENCHMARK)
    definitions, part = tides_definitions(tides, BENCHMARK)
    return {
        "tides": tides,
        "defs": definitions,
        "part": part,
        "instance": DagsterInstance.ephemeral(),
        "results": ResultsDB(tides.home / "benchmarks" / BENCHMARK),
    }


@pytest.fixture()
def parsed(graph):
    """The tides benchmark's part of the graph, its documents parsed (nothing else built yet)."""
    assets = [a for a in graph["part"].assets if hasattr(a, "op")]
    assert materialize(
        assets,
        selection=[key("source_documents"), key("parsed_documents")],
        instance=graph["instance"],
        resources=graph["tides"].resources,
    ).success
    return graph


@pytest.mark.e2e  # runs a sweep job over the graph
def test_the_neighbor_sweep_job_runs_each_level_then_the_reports(parsed):
    instance, results = parsed["instance"], parsed["results"]
    job = parsed["defs"].resolve_job_def(f"{BENCHMARK}__neighbor_sweep")
    config = {"levels": ["0:0", "1:1"], "corpus_models": [MODEL]}
    result = job.execute_in_process(
        instance=instance, run_config={"ops": {f"{BENCHMARK}__sweep_neighbors": {"config": config}}}
    )
    assert result.success
    assert result.dagster_run.tags["chunkbench/sweep"] == "neighbors"
    rows = by_setting(results)
    assert [
        (r.strategy, r.corpus_model, r.neighbor_prev, r.neighbor_next, r.n_questions) for r in rows.itertuples()
    ] == [("fixed_size", MODEL, 0, 0, 1), ("fixed_size", MODEL, 1, 1, 1)]
    # the default collection was built first (it did not exist), once; each level is a materialization of the
    # partition, then the leaderboard and the report follow in the same run
    partition = str(partition_key("fixed_size", MODEL))
    assert len(materializations(instance, "chunk_collections", partition)) == 1
    levels = [
        r.event_log_entry.asset_materialization.metadata["neighbors"].value
        for r in materializations(instance, "experiment_results", partition)
    ]
    assert sorted(levels) == ["-0/+0", "-1/+1"]
    board = materializations(instance, "leaderboard")
    assert len(board) == 1 and board[0].event_log_entry.asset_materialization.metadata["benchmark"].value == BENCHMARK
    assert len(materializations(instance, "benchmark_report")) == 1
    decision_board = (results.root / "reports" / "decision_board.html").read_text(encoding="utf-8")
    assert all(run in decision_board for run in rows["experiment_run_id"])  # the reports list the sweep's runs

    # again: the collection is current, so only the experiments run again (one more run per level)
    assert job.execute_in_process(
        instance=instance, run_config={"ops": {f"{BENCHMARK}__sweep_neighbors": {"config": config}}}
    ).success
    assert len(materializations(instance, "chunk_collections", partition)) == 1
    assert len(materializations(instance, "experiment_results", partition)) == 4


@pytest.mark.e2e  # runs a sweep job over the graph
def test_the_chunk_size_sweep_job_builds_a_collection_per_size(parsed):
    instance, results = parsed["instance"], parsed["results"]
    job = parsed["defs"].resolve_job_def(f"{BENCHMARK}__chunk_size_sweep")
    config = {"sizes": [64, 32], "strategies": ["fixed_size"], "corpus_models": [MODEL]}
    assert job.execute_in_process(
        instance=instance, run_config={"ops": {f"{BENCHMARK}__sweep_chunk_sizes": {"config": config}}}
    ).success
    rows = by_setting(results)
    assert [(r.strategy, r.variant, r.neighbor_prev) for r in rows.itertuples()] == [
        ("fixed_size", "size32_overlap4", 0),
        ("fixed_size", "size64_overlap8", 0),
    ]
    built = results.query("SELECT variant FROM collections ORDER BY variant")["variant"].tolist()
    assert built == ["size32_overlap4", "size64_overlap8"]


def test_a_bad_sweep_config_fails_at_once_naming_the_value(graph):
    """Before anything is built or even parsed."""
    job = graph["defs"].resolve_job_def(f"{BENCHMARK}__neighbor_sweep")
    result = job.execute_in_process(
        instance=graph["instance"],
        raise_on_error=False,
        run_config={
            "ops": {f"{BENCHMARK}__sweep_neighbors": {"config": {"levels": ["1-1"], "corpus_models": [MODEL]}}}
        },
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "neighbor level '1-1': write it as prev:next" in failure.step_failure_data.user_failure_data.description


def test_sweep_plans_are_validated():
    assert parse_levels("0:0, 2:1,0:0") == [(0, 0), (2, 1)]
    assert parse_sizes("512,128,128") == [128, 512]
    for bad, message in (("0:6", "each side must be 0..5"), ("a:b", "write it as prev:next"), ("", "no neighbor")):
        with pytest.raises(ConfigError, match=message):
            parse_levels(bad)
    with pytest.raises(ConfigError, match="must be 16..8192"):
        parse_sizes("8")
    steps, skipped = size_steps(["fixed_size"], [MODEL], [128, 512, 1024], {MODEL: 512})
    assert [s.chunking["chunk_size"] for s in steps] == [128, 512]
    assert skipped == [f"{MODEL}: sizes 1024 left out (above its window of 512 tokens)"]


@pytest.mark.e2e  # runs a sweep job over the graph
def test_chunkbench_sweep_runs_the_job_and_prints_the_levels(tmp_path, monkeypatch, capsys):
    from chunkbench_pipelines.cli import main
    from tests.pipelines.support.environment import run_strategy

    tides = tides_benchmark(tmp_path, benchmark=BENCHMARK)
    use_environment(monkeypatch, tides, BENCHMARK)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    (tmp_path / "dagster_home").mkdir()
    instance = DagsterInstance.get()
    try:
        run_strategy(instance, MODEL)
    finally:
        instance.dispose()
    capsys.readouterr()
    assert main(["sweep", "neighbors", "--levels", "0:0,2:2"]) == 0
    printed = capsys.readouterr().out
    assert f"corpus model: {MODEL} (the default corpus model" in printed
    assert f"benchmark {BENCHMARK}: neighbor sweep (Dagster job {BENCHMARK}__neighbor_sweep)" in printed
    assert f"fixed_size × {MODEL}  neighbors -0/+0" in printed and f"fixed_size × {MODEL}  neighbors -2/+2" in printed
    assert "2 experiment runs" in printed
    instance = DagsterInstance.get()
    try:
        [sweep_run] = [r for r in instance.get_runs() if r.job_name == f"{BENCHMARK}__neighbor_sweep"]
        assert sweep_run.tags["chunkbench/trigger"] == "cli" and sweep_run.tags["chunkbench/benchmark"] == BENCHMARK
    finally:
        instance.dispose()
    with pytest.raises(SystemExit) as exit_code:
        main(["sweep", "chunk-size", "--levels", "1:1"])
    assert exit_code.value.code == 2 and "--levels goes with neighbors" in capsys.readouterr().err


def test_the_sweep_ops_name_a_configuration_as_every_label_does():
    from dagster import MultiPartitionsDefinition, StaticPartitionsDefinition

    from chunkbench_core.benchmarks import Benchmark
    from chunkbench_pipelines.scope import Scope
    from chunkbench_pipelines.sweeps import build_sweep_jobs

    partitions = MultiPartitionsDefinition(
        {"strategy": StaticPartitionsDefinition(["fixed_size"]), "corpus_model": StaticPartitionsDefinition([MODEL])}
    )
    scope = Scope.of(Benchmark(BENCHMARK, Path("corpus"), Path("questions")))
    descriptions = {
        node.name: node.description for job in build_sweep_jobs(partitions, scope) for node in job.graph.node_defs
    }
    assert descriptions[scope.name("sweep_neighbors")] == (
        "Runs every strategy × corpus model at every neighbor level (one experiment run each)."
    )
    assert descriptions[scope.name("sweep_chunk_sizes")] == (
        "Runs every strategy × corpus model at every chunk size (one collection and experiment run each)."
    )
    assert not any(" x " in (text or "") for text in descriptions.values())
