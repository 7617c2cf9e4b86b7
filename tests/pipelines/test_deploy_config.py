"""The deployment configs stay valid: loaded with Dagster's and dagster-k8s's own config types."""

from pathlib import Path

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
ENV = {
    "DAGSTER_PG_HOST": "postgres",
    "DAGSTER_PG_USER": "dagster",
    "DAGSTER_PG_PASSWORD": "secret",
    "DAGSTER_PG_DB": "dagster",
    "DAGSTER_K8S_NAMESPACE": "chunkbench",
    "DAGSTER_PG_URL": "postgresql://x@h/d",
}


def _process(config_type, value):
    from dagster._config import process_config, resolve_to_config_type

    result = process_config(resolve_to_config_type(config_type), value)
    assert result.success, [error.message for error in result.errors]
    return result.value


@pytest.mark.parametrize("path", ["dagster.yaml", "cluster/dagster.yaml"])
def test_the_instance_configs_follow_dagsters_schema(path, monkeypatch):
    from dagster._core.instance.config import dagster_instance_config_schema

    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    _process(dagster_instance_config_schema(), yaml.safe_load((DEPLOY / path).read_text()))


def test_the_kubernetes_run_launcher_config_loads_with_dagster_k8s_types(monkeypatch):
    from dagster_k8s import K8sRunLauncher

    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    launcher = yaml.safe_load((DEPLOY / "dagster.yaml").read_text())["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("dagster_k8s", "K8sRunLauncher")
    config = _process(K8sRunLauncher.config_type(), launcher["config"])
    assert config["job_namespace"] == "chunkbench"
    assert config["env_config_maps"] == ["chunkbench-env"] and config["env_secrets"] == ["chunkbench-secrets"]
    volume = config["volumes"][0]
    assert volume["persistentVolumeClaim"]["claimName"] == "chunkbench-results"
    assert config["volume_mounts"][0]["mountPath"] == "/results"
