"""Damaged state and a full disk are permanent failures: the assets' RetryPolicy never retries them.

Through Dagster with the real embedded stores: the experiment of a partition whose collection was damaged
fails once (no retry), naming the collection and that it was moved aside; building the partition's
collection again, then its experiment, succeeds. A full disk met where nothing named it yet (an
``OSError`` ENOSPC) fails at once as one line naming the folder.
"""

from __future__ import annotations

import errno
import json
import os

import pytest
from dagster import DagsterEventType, DagsterInstance, Failure

from chunkbench_core.errors import CorruptStateError, StorageFullError
from chunkbench_core.storage.vector_store import collection_name
from chunkbench_pipelines.definitions import build_resources
from chunkbench_pipelines.failures import ERROR_KIND, permanent_errors_fail_fast
from chunkbench_pipelines.partitions import partition_key
from tests.pipelines.support.environment import environment_settings
from tests.pipelines.support.partitions import environment_graph

MODEL = "all-minilm-l6-v2"
KEY = partition_key("fixed_size", MODEL)


@pytest.fixture()
def built(tmp_path, monkeypatch):
    """A partition built and scored once (in an ephemeral instance)."""
    corpus, questions = tmp_path / "corpus", tmp_path / "questions"
    corpus.mkdir()
    questions.mkdir()
    (corpus / "rivers.md").write_text("# Rivers\n\nThe Almo river floods its valley every April.\n", encoding="utf-8")
    (corpus / "mills.md").write_text("# Mills\n\nThe Halden mill ground barley until 1952.\n", encoding="utf-8")
    (questions / "set.json").write_text(
        json.dumps(
            {
                "questions": [
                    {
                        "id": "m1",
                        "question": "What did the Halden mill grind?",
                        "references": [{"document": "mills.md", "content": "ground barley until 1952"}],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    for name, value in {
        "CHUNKBENCH_HOME": tmp_path / "home",
        "CHUNKBENCH_CORPUS": corpus,
        "CHUNKBENCH_QUESTIONS": questions,
        "CHUNKBENCH_BENCHMARK": "permanent",
    }.items():
        monkeypatch.setenv(name, str(value))
    for name in (
        "QDRANT_URL",
        "CHUNKBENCH_OPENAI_COMPATIBLE_URL",
        "CHUNKBENCH_LLM_MODEL",
        "CHUNKBENCH_MODELS",
        "OPENAI_API_KEY",
        "CHUNKBENCH_BOUNDARY_MODEL",
        "CHUNKBENCH_RESULTS_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    instance = DagsterInstance.ephemeral()
    resources = build_resources(environment_settings())
    assert (
        environment_graph()
        .materialize(["source_documents", "parsed_documents"], instance=instance, resources=resources)
        .success
    )
    assert (
        environment_graph()
        .materialize(
            ["chunk_collections", "experiment_results"], partition_key=KEY, instance=instance, resources=resources
        )
        .success
    )
    return instance, resources, environment_settings().qdrant_dir / collection_name("fixed_size", MODEL)


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_a_damaged_collection_fails_its_experiment_once_and_its_rebuild_repairs_it(built):
    instance, resources, folder = built
    vectors = next(folder.glob("segments/*/vector_storage/vectors/chunk_0.mmap"))
    os.truncate(vectors, 16)

    result = environment_graph().materialize(
        ["experiment_results"], partition_key=KEY, instance=instance, resources=resources, raise_on_error=False
    )
    kinds = [e.event_type for e in result.all_events]
    failures = [e for e in result.all_events if e.is_step_failure]
    assert not result.success and len(failures) == 1
    assert DagsterEventType.STEP_UP_FOR_RETRY not in kinds and DagsterEventType.STEP_RESTARTED not in kinds
    data = failures[0].step_failure_data.user_failure_data
    assert data.metadata[ERROR_KIND].value == "CorruptStateError"
    assert str(folder) in data.description and "moved aside" in data.description and "\n" not in data.description
    assert not folder.exists() and list(folder.parent.glob(f"{folder.name}.corrupt-*"))

    again = environment_graph().materialize(
        ["chunk_collections", "experiment_results"], partition_key=KEY, instance=instance, resources=resources
    )
    assert again.success and folder.is_dir()


@pytest.mark.parametrize(
    "error",
    [
        CorruptStateError("/x/tables/chunks/a.parquet cannot be read: moved aside", "/x/tables/chunks/a.parquet"),
        StorageFullError("not enough free space in /x for the collection c: 1.0 MB free", "/x", None, 10**6),
    ],
)
def test_damaged_state_and_a_full_disk_fail_at_once_with_their_kind(error):
    with pytest.raises(Failure) as info, permanent_errors_fail_fast():
        raise error
    assert info.value.allow_retries is False and info.value.description == str(error)
    assert info.value.metadata[ERROR_KIND].value == type(error).__name__


def test_a_full_disk_no_step_named_yet_fails_at_once_naming_the_folder(tmp_path):
    target = tmp_path / "tables" / "chunks" / "a.parquet"
    target.parent.mkdir(parents=True)
    with pytest.raises(Failure) as info, permanent_errors_fail_fast():
        raise OSError(errno.ENOSPC, "No space left on device", str(target))
    assert info.value.allow_retries is False
    assert info.value.metadata[ERROR_KIND].value == "StorageFullError"
    assert f"not enough free space in {target.parent}" in info.value.description
