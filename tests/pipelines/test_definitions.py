import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey

from chunkbench_core.chunking import STRATEGIES
from chunkbench_pipelines.definitions import SETTINGS, defs
from chunkbench_pipelines.partitions import runnable_corpus_models, strategy_by_model
from tests.pipelines.support.environment import environment_settings

ROOT = Path(__file__).resolve().parents[2]


def test_definitions_load_with_the_asset_graph_of_the_design():
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {"source_documents", "parsed_documents", "chunk_collections", "experiment_results",
                    "leaderboard", "benchmark_report", "generated_questions", "question_sets"}
    partitions = graph.get(AssetKey("chunk_collections")).partitions_def
    assert partitions.get_partition_keys() == strategy_by_model(runnable_corpus_models(SETTINGS)).get_partition_keys()
    for partitioned in ("chunk_collections", "experiment_results"):
        assert graph.get(AssetKey(partitioned)).partitions_def == partitions
    for unpartitioned in ("source_documents", "parsed_documents", "leaderboard", "benchmark_report",
                          "generated_questions", "question_sets"):
        assert graph.get(AssetKey(unpartitioned)).partitions_def is None
    assert graph.get(AssetKey("experiment_results")).parent_keys == {AssetKey("chunk_collections"),
                                                                     AssetKey("question_sets")}
    assert not graph.get(AssetKey("question_sets")).is_executable  # reported by a sensor
    assert graph.get(AssetKey("leaderboard")).parent_keys == {AssetKey("experiment_results")}


def test_every_asset_has_a_description_group_and_kinds():
    for spec in defs.resolve_all_asset_specs():
        assert spec.description, spec.key
        assert spec.group_name and spec.group_name != "default", spec.key
        assert spec.kinds, spec.key


def test_partition_keys_are_strategy_by_corpus_model():
    keys = defs.resolve_asset_graph().get(AssetKey("chunk_collections")).partitions_def.get_partition_keys()
    assert "all-minilm-l6-v2|fixed_size" in keys
    assert "all-minilm-l6-v2|recursive" in keys


def test_only_models_runnable_in_the_environment_are_partitions():
    from chunkbench_core.settings import Settings
    from chunkbench_pipelines.partitions import runnable_corpus_models

    assert runnable_corpus_models(Settings.load({})) == ["all-minilm-l6-v2", "multilingual-e5-small"]
    assert runnable_corpus_models(Settings.load({"OPENAI_API_KEY": "sk-x"})) == [
        "all-minilm-l6-v2", "multilingual-e5-small", "text-embedding-3-small", "text-embedding-3-large"]
    assert "nomic-embed-text-v2-moe" in runnable_corpus_models(
        Settings.load({"CHUNKBENCH_OPENAI_COMPATIBLE_URL": "http://127.0.0.1:11434/v1"}))


# what the code location offers, loaded as `dagster dev` loads it: a fresh process with its environment
PARTITION_KEYS = """
from dagster import AssetKey
from chunkbench_core.chunking import STRATEGIES
from chunkbench_pipelines.definitions import defs
graph = defs.resolve_asset_graph()
for name in ("chunk_collections", "experiment_results"):
    print(name, ",".join(graph.get(AssetKey(name)).partitions_def.get_partition_keys()))
"""


def _loaded_partition_keys(tmp_path, **env: str) -> dict[str, set[str]]:
    clean = {k: v for k, v in os.environ.items() if k not in (
        "OPENAI_API_KEY", "CHUNKBENCH_OPENAI_COMPATIBLE_URL", "CHUNKBENCH_MODELS")}
    result = subprocess.run([sys.executable, "-c", PARTITION_KEYS], cwd=ROOT, capture_output=True, text=True,
                            timeout=300, env={**clean, "DAGSTER_HOME": str(tmp_path), **env})
    assert result.returncode == 0, result.stderr
    return {line.split()[0]: set(line.split()[1].split(",")) for line in result.stdout.splitlines()}


@pytest.mark.slow
def test_loaded_partitions_without_and_with_an_openai_key(tmp_path):
    without = _loaded_partition_keys(tmp_path)
    assert without["chunk_collections"] == without["experiment_results"]
    models = {key.split("|")[0] for key in without["chunk_collections"]}
    assert models == {"all-minilm-l6-v2", "multilingual-e5-small"}
    assert len(without["chunk_collections"]) == 2 * len(STRATEGIES.names())

    with_key = _loaded_partition_keys(tmp_path, OPENAI_API_KEY="sk-test-not-a-real-key")
    models = {key.split("|")[0] for key in with_key["experiment_results"]}
    assert models == {"all-minilm-l6-v2", "multilingual-e5-small", "text-embedding-3-small",
                      "text-embedding-3-large"}
    assert with_key["chunk_collections"] >= without["chunk_collections"]
    assert "text-embedding-3-small|semantic" in with_key["chunk_collections"]


@pytest.mark.slow
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

    resources = build_resources(environment_settings())
    assert "sk-test" not in repr(resources)
    assert "sk-test" not in repr(resources["embeddings"].provider_settings())


def _dg(*args: str, home: Path) -> subprocess.CompletedProcess:
    dg = Path(sys.executable).with_name("dg")
    return subprocess.run([str(dg), *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "DAGSTER_HOME": str(home), "NO_COLOR": "1"})


@pytest.mark.slow
def test_dg_check_defs_and_list_defs_load_the_project(tmp_path):
    (tmp_path / "dagster.yaml").write_text("", encoding="utf-8")
    check = _dg("check", "defs", home=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "All definitions loaded successfully" in check.stdout + check.stderr
    listed = _dg("list", "defs", "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    defs_json = json.loads(listed.stdout)
    assert {a["asset_key"] for a in defs_json["assets"]} == {
        "source_documents", "parsed_documents", "chunk_collections", "experiment_results", "leaderboard",
        "benchmark_report", "question_sets", "generated_questions"}
    assert "benchmark_everything" in {j["name"] for j in defs_json["jobs"]}


def test_the_code_location_has_one_name_for_dagster_dev_dg_and_cli_runs():
    import tomllib

    import yaml

    from chunkbench_pipelines.runner import REPOSITORY_LABEL

    workspace = yaml.safe_load((ROOT / "workspace.yaml").read_text(encoding="utf-8"))
    [entry] = workspace["load_from"]
    dg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["dg"]["project"]
    assert entry["python_module"]["location_name"] == dg["code_location_name"] == REPOSITORY_LABEL.split("@")[1]
