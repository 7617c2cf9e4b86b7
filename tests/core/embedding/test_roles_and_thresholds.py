"""Corpus and boundary roles; semantic thresholds with a persisted per-model override."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chunkbench_core.embedding import (
    boundary_model_id,
    clear_semantic_threshold,
    resolve_roles,
    semantic_threshold,
    semantic_threshold_overrides,
    set_semantic_threshold,
)
from chunkbench_core.embedding.thresholds import thresholds_path
from chunkbench_core.errors import ConfigError, EmbeddingError


def test_threshold_defaults_come_from_the_registry():
    assert semantic_threshold("all-minilm-l6-v2") == 0.3
    assert semantic_threshold("nomic-embed-text-v2-moe") == 0.6
    assert semantic_threshold_overrides() == {}


def test_override_is_persisted_and_read_by_another_process(tmp_path):
    assert set_semantic_threshold("multilingual-e5-small", 0.85) == 0.85
    assert semantic_threshold("multilingual-e5-small") == 0.85
    assert semantic_threshold("all-minilm-l6-v2") == 0.3  # per model
    assert json.loads(thresholds_path().read_text()) == {"multilingual-e5-small": 0.85}
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


def test_corrupt_override_file_is_reported_by_name():
    path = thresholds_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"semantic_thresholds\.json: cannot read"):
        semantic_threshold("all-minilm-l6-v2")


def test_roles_resolve_separately_and_record_provenance(monkeypatch):
    roles = resolve_roles("multilingual-e5-small")
    assert roles.corpus.id == "multilingual-e5-small"
    assert roles.boundary.id == "all-minilm-l6-v2"  # registry default, not the corpus model
    assert roles.boundary_threshold == 0.3 and roles.boundary_threshold_source == "registry"

    monkeypatch.setenv("CHUNKBENCH_BOUNDARY_MODEL", "multilingual-e5-small")
    set_semantic_threshold("multilingual-e5-small", 0.9)
    roles = resolve_roles("all-minilm-l6-v2")
    provenance = roles.provenance()
    assert provenance["corpus_model"] == "all-minilm-l6-v2"
    assert provenance["boundary_model"] == "multilingual-e5-small"
    assert provenance["boundary_threshold"] == 0.9 and provenance["boundary_threshold_source"] == "override"
    assert provenance["corpus_document_prefix"] == ""
    # an explicit boundary model wins over the environment
    assert boundary_model_id("nomic-embed-text-v2-moe") == "nomic-embed-text-v2-moe"
    monkeypatch.setenv("CHUNKBENCH_BOUNDARY_MODEL", "no-such-model")
    with pytest.raises(EmbeddingError, match="no-such-model"):
        resolve_roles("all-minilm-l6-v2")
