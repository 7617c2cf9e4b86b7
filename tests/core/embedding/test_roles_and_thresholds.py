"""The boundary model in force; semantic thresholds and the boundary model persisted in the results database."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chunkbench_core.embedding import (
    boundary_model_id,
    clear_semantic_threshold,
    semantic_threshold,
    semantic_threshold_overrides,
    set_semantic_threshold,
)
from chunkbench_core.embedding.thresholds import (
    clear_default_boundary_model,
    set_default_boundary_model,
    threshold_source,
    thresholds_path,
)
from chunkbench_core.settings import results_dir
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.errors import ConfigError, EmbeddingError


def test_threshold_defaults_come_from_the_registry():
    assert semantic_threshold("all-minilm-l6-v2") == 0.3
    assert semantic_threshold("nomic-embed-text-v2-moe") == 0.6
    assert semantic_threshold_overrides() == {}


def test_override_is_persisted_and_read_by_another_process(tmp_path):
    assert set_semantic_threshold("multilingual-e5-small", 0.85) == 0.85
    assert semantic_threshold("multilingual-e5-small") == 0.85
    assert semantic_threshold("all-minilm-l6-v2") == 0.3  # per model
    # in the results database (shared by the machines sharing CHUNKBENCH_RESULTS_DIR), not a per-machine file
    assert not thresholds_path().exists()
    stored = ResultsDB(results_dir()).query("SELECT setting, value FROM defaults").to_dict("records")
    assert stored == [{"setting": "semantic_threshold:multilingual-e5-small", "value": "0.85"}]
    code = ("from chunkbench_core.embedding import semantic_threshold;"
            "print(semantic_threshold('multilingual-e5-small'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0.85"
    assert clear_semantic_threshold("multilingual-e5-small") is True
    assert clear_semantic_threshold("multilingual-e5-small") is False
    assert semantic_threshold("multilingual-e5-small") == 0.82


@pytest.mark.parametrize("value", [0, -0.1, 1.01, float("nan"), True, "0.5"])
def test_override_values_are_validated(value):
    with pytest.raises(ConfigError, match=r"must be a number in \(0, 1\]"):
        set_semantic_threshold("all-minilm-l6-v2", value)
    assert semantic_threshold_overrides() == {}


def test_override_needs_a_registered_model():
    with pytest.raises(EmbeddingError, match="unknown embedding model 'nope'"):
        set_semantic_threshold("nope", 0.5)


def test_an_older_override_file_is_moved_into_the_results_database():
    path = thresholds_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"multilingual-e5-small": 0.7}), encoding="utf-8")
    assert semantic_threshold("multilingual-e5-small") == 0.7 and threshold_source("multilingual-e5-small") == "override"
    assert not path.exists() and path.with_name(path.name + ".migrated").exists()
    assert semantic_threshold_overrides() == {"multilingual-e5-small": 0.7}


def test_corrupt_override_file_is_reported_by_name():
    path = thresholds_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"semantic_thresholds\.json: cannot read"):
        semantic_threshold("all-minilm-l6-v2")


def test_boundary_model_in_force(monkeypatch):
    assert boundary_model_id() == "all-minilm-l6-v2"  # the registry default
    monkeypatch.setenv("CHUNKBENCH_BOUNDARY_MODEL", "multilingual-e5-small")
    assert boundary_model_id() == "multilingual-e5-small"
    # the results database's default (shared by every machine) wins over one machine's environment
    assert set_default_boundary_model("nomic-embed-text-v2-moe") == "nomic-embed-text-v2-moe"
    assert boundary_model_id() == "nomic-embed-text-v2-moe"
    assert boundary_model_id("all-minilm-l6-v2") == "all-minilm-l6-v2"  # an explicit choice wins
    assert clear_default_boundary_model() is True and boundary_model_id() == "multilingual-e5-small"
    monkeypatch.setenv("CHUNKBENCH_BOUNDARY_MODEL", "no-such-model")
    with pytest.raises(EmbeddingError, match="no-such-model"):
        boundary_model_id()
    with pytest.raises(EmbeddingError, match="unknown embedding model 'nope'"):
        set_default_boundary_model("nope")
