"""The boundary model in force; semantic thresholds and the boundary model persisted in the results database."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chunkbench_core.configuration import shared_defaults_of
from chunkbench_core.embedding import SharedDefaults, boundary_model_id, builtin_registry
from chunkbench_core.errors import ConfigError, EmbeddingError
from chunkbench_core.settings import Settings
from chunkbench_core.storage.results_db import ResultsDB


@pytest.fixture()
def settings(tmp_path) -> Settings:
    return Settings.load({"CHUNKBENCH_HOME": str(tmp_path / "home")})


@pytest.fixture()
def shared(settings) -> SharedDefaults:
    """The shared defaults of the settings' results database (the one in force)."""
    return shared_defaults_of(settings)


def test_threshold_defaults_come_from_the_registry(shared):
    assert shared.threshold("all-minilm-l6-v2") == 0.3
    assert shared.threshold("nomic-embed-text-v2-moe") == 0.6
    assert shared.thresholds() == {}


def test_override_is_persisted_and_read_by_another_process(shared, settings):
    assert shared.set_threshold("multilingual-e5-small", 0.85) == 0.85
    assert shared.threshold("multilingual-e5-small") == 0.85
    assert shared.threshold("all-minilm-l6-v2") == 0.3  # per model
    # in the results database (shared by the machines sharing CHUNKBENCH_RESULTS_DIR), not a per-machine file
    assert not shared.legacy_file.exists()
    stored = ResultsDB(settings.results_dir).query("SELECT setting, value FROM defaults").to_dict("records")
    assert stored == [{"setting": "semantic_threshold:multilingual-e5-small", "value": "0.85"}]
    code = (
        "from chunkbench_core.configuration import shared_defaults_of; "
        "from chunkbench_core.settings import Settings; "
        f"print(shared_defaults_of(Settings.load({{'CHUNKBENCH_HOME': {str(settings.home)!r}}}))"
        ".threshold('multilingual-e5-small'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0.85"
    assert shared.clear_threshold("multilingual-e5-small") is True
    assert shared.clear_threshold("multilingual-e5-small") is False
    assert shared.threshold("multilingual-e5-small") == 0.82


@pytest.mark.parametrize("value", [0, -0.1, 1.01, float("nan"), True, "0.5"])
def test_override_values_are_validated(shared, value):
    with pytest.raises(ConfigError, match=r"must be a number in \(0, 1\]"):
        shared.set_threshold("all-minilm-l6-v2", value)
    assert shared.thresholds() == {}


def test_override_needs_a_registered_model(shared):
    with pytest.raises(EmbeddingError, match="unknown embedding model 'nope'"):
        shared.set_threshold("nope", 0.5)


def test_an_older_override_file_is_moved_into_the_results_database(shared):
    path = shared.legacy_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"multilingual-e5-small": 0.7}), encoding="utf-8")
    assert (
        shared.threshold("multilingual-e5-small") == 0.7
        and shared.threshold_source("multilingual-e5-small") == "override"
    )
    assert not path.exists() and path.with_name(path.name + ".migrated").exists()
    assert shared.thresholds() == {"multilingual-e5-small": 0.7}


def test_corrupt_override_file_is_reported_by_name(shared):
    path = shared.legacy_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"semantic_thresholds\.json: cannot read"):
        shared.threshold("all-minilm-l6-v2")


def test_boundary_model_in_force(shared):
    registry = builtin_registry()
    assert boundary_model_id(None, registry, shared) == "all-minilm-l6-v2"  # the registry default
    # this machine's default (CHUNKBENCH_BOUNDARY_MODEL, from the settings)
    machine = Settings.load({"CHUNKBENCH_BOUNDARY_MODEL": "multilingual-e5-small"}).boundary_model
    assert boundary_model_id(None, registry, shared, machine) == "multilingual-e5-small"
    # the results database's default (shared by every machine) wins over one machine's environment
    assert shared.set_boundary_model("nomic-embed-text-v2-moe") == "nomic-embed-text-v2-moe"
    assert boundary_model_id(None, registry, shared, machine) == "nomic-embed-text-v2-moe"
    assert boundary_model_id("all-minilm-l6-v2", registry, shared, machine) == "all-minilm-l6-v2"  # explicit wins
    assert shared.clear_boundary_model() is True
    assert boundary_model_id(None, registry, shared, machine) == "multilingual-e5-small"
    with pytest.raises(EmbeddingError, match="no-such-model"):
        boundary_model_id(None, registry, shared, "no-such-model")
    with pytest.raises(EmbeddingError, match="unknown embedding model 'nope'"):
        shared.set_boundary_model("nope")
