import os
import subprocess
import sys
from pathlib import Path

from dagster import AssetKey

from chunkbench_pipelines.definitions import defs
from chunkbench_pipelines.partitions import strategy_x_model

ROOT = Path(__file__).resolve().parents[2]


def test_definitions_load_with_the_asset_graph_of_the_design():
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {"source_documents", "parsed_documents", "chunk_collections", "experiment_results",
                    "leaderboard", "benchmark_report", "generated_questions"}
    for partitioned in ("chunk_collections", "experiment_results"):
        assert graph.get(AssetKey(partitioned)).partitions_def == strategy_x_model
    for unpartitioned in ("source_documents", "parsed_documents", "leaderboard", "benchmark_report",
                          "generated_questions"):
        assert graph.get(AssetKey(unpartitioned)).partitions_def is None
    assert graph.get(AssetKey("experiment_results")).parent_keys == {AssetKey("chunk_collections")}
    assert graph.get(AssetKey("leaderboard")).parent_keys == {AssetKey("experiment_results")}


def test_every_asset_has_a_description_group_and_kinds():
    for spec in defs.resolve_all_asset_specs():
        assert spec.description, spec.key
        assert spec.group_name and spec.group_name != "default", spec.key
        assert spec.kinds, spec.key


def test_partition_keys_are_strategy_by_corpus_model():
    keys = strategy_x_model.get_partition_keys()
    assert "all-minilm-l6-v2|fixed_size" in keys
    assert "all-minilm-l6-v2|recursive" in keys


def test_dagster_cli_validates_the_workspace(tmp_path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    dagster = Path(sys.executable).with_name("dagster")
    result = subprocess.run([str(dagster), "definitions", "validate", "-w", "workspace.yaml"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Validation successful" in result.stdout + result.stderr


def test_secrets_are_env_vars_not_values(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    from chunkbench_pipelines.definitions import build_resources

    resources = build_resources()
    assert "sk-test" not in repr(resources)
    assert "sk-test" not in repr(resources["embeddings"].provider_settings())
