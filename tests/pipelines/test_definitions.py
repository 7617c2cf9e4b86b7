import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import AssetKey, Definitions

from chunkbench_core.chunking import STRATEGIES
from chunkbench_pipelines.definitions import defs
from chunkbench_pipelines.partitions import runnable_corpus_models, strategy_by_model
from chunkbench_pipelines.scope import dagster_name
from tests.pipelines.support.environment import environment_settings

ROOT = Path(__file__).resolve().parents[2]
ASSETS = {
    "source_documents",
    "parsed_documents",
    "chunk_collections",
    "experiment_results",
    "leaderboard",
    "benchmark_report",
    "generated_questions",
    "question_sets",
}
SETTINGS = environment_settings(measured_rates=False)  # the settings in force when Dagster loads the code location
PREFIX = dagster_name(SETTINGS.benchmark)  # the configured benchmark's (others may be registered in the home too)


def key(name: str) -> AssetKey:
    return AssetKey([PREFIX, name])


def test_importing_the_code_location_builds_nothing_until_dagster_asks():
    """The module holds a function Dagster calls (``@dg.definitions``): importing it reads no settings, builds no
    asset and opens nothing; each call builds the definitions of the settings in force then."""
    import chunkbench_pipelines.definitions as module
    from dagster.components.definitions import LazyDefinitions

    assert isinstance(module.defs, LazyDefinitions)
    assert not any(isinstance(value, Definitions) for value in vars(module).values())
    assert defs() is not defs()  # loaded when asked: a reload sees a benchmark registered since


def test_definitions_load_with_the_asset_graph_of_the_design():
    graph = defs().resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys() if k.path[0] == PREFIX}
    assert keys == {f"{PREFIX}/{name}" for name in ASSETS}
    assert all(len(k.path) == 2 for k in graph.get_all_asset_keys())  # every asset belongs to a benchmark
    partitions = graph.get(key("chunk_collections")).partitions_def
    assert partitions.get_partition_keys() == strategy_by_model(runnable_corpus_models(SETTINGS)).get_partition_keys()
    for partitioned in ("chunk_collections", "experiment_results"):
        assert graph.get(key(partitioned)).partitions_def == partitions
    for unpartitioned in (
        "source_documents",
        "parsed_documents",
        "leaderboard",
        "benchmark_report",
        "generated_questions",
        "question_sets",
    ):
        assert graph.get(key(unpartitioned)).partitions_def is None
    assert graph.get(key("experiment_results")).parent_keys == {key("chunk_collections"), key("question_sets")}
    assert not graph.get(key("question_sets")).is_executable  # reported by a sensor
    assert graph.get(key("leaderboard")).parent_keys == {key("experiment_results")}


def test_every_benchmark_has_its_own_assets_jobs_sensors_and_schedules(tmp_path):
    """Benchmarks registered in the results root plus the configured one, each its own part of the graph."""
    from chunkbench_core.benchmarks import register_benchmark
    from chunkbench_core.settings import Settings
    from chunkbench_pipelines.definitions import build_definitions

    home = tmp_path / "home"
    corpus = tmp_path / "hr-docs"
    corpus.mkdir()
    register_benchmark(Settings.load({"CHUNKBENCH_HOME": str(home), "CHUNKBENCH_CORPUS": str(corpus)}))
    (home / "benchmarks" / "broken").mkdir()
    (home / "benchmarks" / "broken" / "benchmark.json").write_text("{", encoding="utf-8")
    settings = Settings.load({"CHUNKBENCH_HOME": str(home)})  # the sample, never run
    import pytest

    with pytest.warns(UserWarning, match="broken.*not a benchmark record"):
        definitions = build_definitions(settings)
    graph = definitions.resolve_asset_graph()
    assert {k.path[0] for k in graph.get_all_asset_keys()} == {"sample", "hr_docs"}  # '-' is not allowed in keys
    hr = graph.get(AssetKey(["hr_docs", "chunk_collections"]))
    assert hr.group_name == "hr_docs" and "Benchmark hr-docs" in hr.description and str(corpus) in hr.description
    assert graph.get(AssetKey(["hr_docs", "experiment_results"])).parent_keys == {
        AssetKey(["hr_docs", "chunk_collections"]),
        AssetKey(["hr_docs", "question_sets"]),
    }
    jobs = {j.name: j for j in definitions.resolve_all_job_defs()}
    for prefix in ("sample", "hr_docs"):
        for job in (
            "parse_documents",
            "chunk_and_evaluate",
            "evaluate",
            "refresh_reports",
            "benchmark_everything",
            "neighbor_sweep",
            "chunk_size_sweep",
        ):
            assert f"{prefix}__{job}" in jobs
        everything = jobs[f"{prefix}__benchmark_everything"]
        assert {k.path[0] for k in everything.asset_layer.executable_asset_keys} == {prefix}  # its own assets only
    sensors = {s.name: s for s in definitions.sensors}
    assert set(sensors) == {
        f"{p}__{s}" for p in ("sample", "hr_docs") for s in ("corpus_sensor", "question_sets_sensor", "automation")
    }
    assert {k.path[0] for k in sensors["hr_docs__automation"].asset_selection.resolve(graph)} == {"hr_docs"}
    assert {s.name for s in definitions.schedules} == {
        f"{p}__{s}"
        for p in ("sample", "hr_docs")
        for s in (
            "nightly_parse",
            "nightly_stale_partitions",
            "nightly_reports",
            "neighbor_sweep_weekly",
            "chunk_size_sweep_weekly",
        )
    }


def test_every_asset_has_a_description_group_and_kinds():
    for spec in defs().resolve_all_asset_specs():
        assert spec.description, spec.key
        assert spec.group_name and spec.group_name != "default", spec.key
        assert spec.kinds, spec.key


def test_partition_keys_are_strategy_by_corpus_model():
    keys = defs().resolve_asset_graph().get(key("chunk_collections")).partitions_def.get_partition_keys()
    assert "all-minilm-l6-v2|fixed_size" in keys
    assert "all-minilm-l6-v2|recursive" in keys


def test_only_models_runnable_in_the_environment_are_partitions():
    from chunkbench_core.settings import Settings
    from chunkbench_pipelines.partitions import runnable_corpus_models

    assert runnable_corpus_models(Settings.load({})) == ["all-minilm-l6-v2", "multilingual-e5-small"]
    assert runnable_corpus_models(Settings.load({"OPENAI_API_KEY": "sk-x"})) == [
        "all-minilm-l6-v2",
        "multilingual-e5-small",
        "text-embedding-3-small",
        "text-embedding-3-large",
    ]
    assert "nomic-embed-text-v2-moe" in runnable_corpus_models(
        Settings.load({"CHUNKBENCH_OPENAI_COMPATIBLE_URL": "http://127.0.0.1:11434/v1"})
    )


# what the code location offers, loaded as `dagster dev` loads it: a fresh process with its environment
PARTITION_KEYS = """
from dagster import AssetKey, Definitions
from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.settings import Settings
from chunkbench_pipelines.definitions import defs
graph = defs().resolve_asset_graph()
for name in ("chunk_collections", "experiment_results"):
    print(name, ",".join(graph.get(AssetKey([Settings.from_environment().benchmark, name])).partitions_def.get_partition_keys()))
"""


def _loaded_partition_keys(tmp_path, **env: str) -> dict[str, set[str]]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "CHUNKBENCH_OPENAI_COMPATIBLE_URL", "CHUNKBENCH_MODELS")
    }
    result = subprocess.run(
        [sys.executable, "-c", PARTITION_KEYS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**clean, "DAGSTER_HOME": str(tmp_path), **env},
    )
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
    assert models == {"all-minilm-l6-v2", "multilingual-e5-small", "text-embedding-3-small", "text-embedding-3-large"}
    assert with_key["chunk_collections"] >= without["chunk_collections"]
    assert "text-embedding-3-small|semantic" in with_key["chunk_collections"]


@pytest.mark.slow
def test_dagster_cli_validates_the_workspace(tmp_path):
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    dagster = Path(sys.executable).with_name("dagster")
    result = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Validation successful" in result.stdout + result.stderr


def test_secrets_are_env_vars_not_values(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    from chunkbench_pipelines.definitions import build_resources

    resources = build_resources(environment_settings(measured_rates=False))  # no run: nothing to time
    assert "sk-test" not in repr(resources)
    assert "sk-test" not in repr(resources["embeddings"].provider_settings())


def _dg(*args: str, home: Path) -> subprocess.CompletedProcess:
    dg = Path(sys.executable).with_name("dg")
    return subprocess.run(
        [str(dg), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "DAGSTER_HOME": str(home), "NO_COLOR": "1"},
    )


@pytest.mark.slow
def test_dg_check_defs_and_list_defs_load_the_project(tmp_path):
    (tmp_path / "dagster.yaml").write_text("", encoding="utf-8")
    check = _dg("check", "defs", home=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "All definitions loaded successfully" in check.stdout + check.stderr
    listed = _dg("list", "defs", "--json", home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    defs_json = json.loads(listed.stdout)
    assert {a["asset_key"] for a in defs_json["assets"] if a["asset_key"].startswith(f"{PREFIX}/")} == {
        f"{PREFIX}/{name}" for name in ASSETS
    }
    assert f"{PREFIX}__benchmark_everything" in {j["name"] for j in defs_json["jobs"]}


def test_the_code_location_has_one_name_for_dagster_dev_dg_and_cli_runs():
    import tomllib

    import yaml

    from chunkbench_pipelines.runner import REPOSITORY_LABEL

    workspace = yaml.safe_load((ROOT / "workspace.yaml").read_text(encoding="utf-8"))
    [entry] = workspace["load_from"]
    dg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["dg"]["project"]
    assert entry["python_module"]["location_name"] == dg["code_location_name"] == REPOSITORY_LABEL.split("@")[1]


def test_the_definitions_use_dagster_public_api_only():
    """No import from ``dagster._...``: a private module moves or changes without notice between releases."""
    import ast

    offenders = []
    for path in (ROOT / "chunkbench_pipelines").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.relative_to(ROOT)}:{node.lineno}: {n}" for n in names if n.startswith("dagster._")]
    assert offenders == []
