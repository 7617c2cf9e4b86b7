"""Damaged embedded collections: read whole in a child process when in doubt, moved aside, built again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from chunkbench_core.chunking.base import Chunk, make_chunk_id
from chunkbench_core.errors import CorruptStateError
from chunkbench_core.storage import integrity, vector_store
from chunkbench_core.storage.vector_store import VectorStore, _EdgeCollection, collection_name

PROJECT = Path(__file__).resolve().parents[3]
NAME = collection_name("fixed_size", "all-minilm-l6-v2")


def corpus(n: int = 120) -> list[Chunk]:
    return [
        Chunk(
            make_chunk_id("fixed_size", "a.md", i),
            "a.md",
            "fixed_size",
            i,
            i * 10,
            i * 10 + 9,
            f"chunk number {i} about harbours",
            6,
        )
        for i in range(n)
    ]


def vectors(n: int = 120, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 16)).astype(np.float32)


def build(root: Path, n: int = 120) -> list[str]:
    with VectorStore(local_root=root) as store:
        store.ensure_collection(NAME, 16)
        store.replace_points(NAME, corpus(n), vectors(n))
        return [h.chunk_id for h in store.search(NAME, vectors(n)[3], 3)]


def vector_file(root: Path) -> Path:
    return next((root / NAME).glob("segments/*/vector_storage/vectors/chunk_0.mmap"))


def trust_as_is(root: Path) -> None:
    """Record the collection's files as chunkbench left them (damage that keeps sizes and times: bit rot)."""
    use = _EdgeCollection.use_file(root / NAME)
    use.write_text(json.dumps({"state": "closed", "signature": _EdgeCollection.signature(root / NAME)}))


@pytest.fixture
def probes(monkeypatch):
    calls: list[Path] = []
    real = vector_store.probe_collection

    def counting(path, *args, **kwargs):
        calls.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(vector_store, "probe_collection", counting)
    return calls


def test_a_collection_closed_by_chunkbench_is_opened_without_a_probe(tmp_path, probes):
    build(tmp_path)
    with VectorStore(local_root=tmp_path) as store:
        assert store.count(NAME) == 120
    assert probes == []
    state = json.loads(_EdgeCollection.use_file(tmp_path / NAME).read_text())
    assert state["state"] == "closed" and state["signature"]


def test_an_unchecked_or_changed_collection_is_read_whole_once_then_trusted(tmp_path, probes):
    build(tmp_path)
    _EdgeCollection.use_file(tmp_path / NAME).unlink()  # as a collection written by an older chunkbench
    with VectorStore(local_root=tmp_path) as store:
        assert store.count(NAME) == 120
    with VectorStore(local_root=tmp_path) as store:
        assert store.count(NAME) == 120
    assert probes == [tmp_path / NAME]
    os.utime(vector_file(tmp_path))  # touched behind chunkbench's back
    with VectorStore(local_root=tmp_path) as store:
        assert store.count(NAME) == 120
    assert len(probes) == 2


def test_damage_met_while_reading_moves_the_collection_aside_and_the_next_build_makes_it_again(tmp_path, caplog):
    expected = build(tmp_path)
    os.truncate(vector_file(tmp_path), 100)
    trust_as_is(tmp_path)  # no probe: the damage is met by the search itself
    with VectorStore(local_root=tmp_path) as store:
        with pytest.raises(CorruptStateError) as raised:
            store.search(NAME, vectors()[3], 3)
    error = raised.value
    assert NAME in str(error) and "chunk_collections" in str(error) and "\n" not in str(error)
    assert error.moved_to and Path(error.moved_to).is_dir() and integrity.CORRUPT_MARK in error.moved_to
    assert any(NAME in r.getMessage() for r in caplog.records)
    with VectorStore(local_root=tmp_path) as store:
        assert store.list_collections() == []  # the moved folder is not a collection
    assert build(tmp_path) == expected


def test_a_crash_prone_collection_is_found_in_a_child_process_and_this_process_lives(tmp_path):
    build(tmp_path)
    # a holder dies with the collection open (its in-use record says "open")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import sys, time
        from chunkbench_core.storage.vector_store import VectorStore
        store = VectorStore(local_root={str(tmp_path)!r})
        store.count({NAME!r})
        print("open", flush=True)
        time.sleep(600)
    """),
        ],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    assert holder.stdout.readline().strip() == "open"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=60)
    tracker = next((tmp_path / NAME).glob("segments/*/mutable_id_tracker.mappings"))
    with open(tracker, "r+b") as handle:  # garbage sizes: the engine aborts on allocating them
        handle.write(os.urandom(tracker.stat().st_size))
    started = time.monotonic()
    with VectorStore(local_root=tmp_path) as store:
        with pytest.raises(CorruptStateError, match="moved aside"):
            store.count(NAME)
        store.ensure_collection(NAME, 16)  # a build creates it anew
        assert store.count(NAME) == 0
    assert time.monotonic() - started < 120


def test_verify_collection_checks_the_points_the_build_stored(tmp_path):
    build(tmp_path)
    with VectorStore(local_root=tmp_path) as store:
        assert store.verify_collection(NAME, expected_points=120, deep=True) == 120
        with pytest.raises(CorruptStateError, match="holds 120 points where its build stored 121"):
            store.verify_collection(NAME, expected_points=121)
    assert list(tmp_path.glob(f"{NAME}{integrity.CORRUPT_MARK}*"))


def test_deleting_a_damaged_collection_needs_no_engine(tmp_path):
    build(tmp_path)
    os.truncate(vector_file(tmp_path), 0)
    with VectorStore(local_root=tmp_path) as store:
        assert store.delete_collection(NAME)
        assert store.list_collections() == []
    assert not _EdgeCollection.use_file(tmp_path / NAME).exists()
