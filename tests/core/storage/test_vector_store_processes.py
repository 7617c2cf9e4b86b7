"""Parallel partition runs: separate processes, real local stores, one shared embedding cache."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from chunkbench_core.chunking.base import make_chunk_id
from chunkbench_core.errors import VectorStoreError
from chunkbench_core.storage.embedding_cache import EmbeddingCache
from chunkbench_core.storage.vector_store import VectorStore, collection_name

PROJECT = Path(__file__).resolve().parents[3]

# One partition's work: chunk, embed with the corpus model through the shared cache,
# replace the collection. Waits for the "go" file so both processes run at once.
MATERIALIZE = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from chunkbench_core.chunking.base import Chunk, make_chunk_id
    from chunkbench_core.embedding import Embedder, get_model
    from chunkbench_core.storage.embedding_cache import EmbeddingCache
    from chunkbench_core.storage.vector_store import VectorStore, collection_name

    root, cache_path, strategy, model, go = sys.argv[1:6]
    spec = get_model(model)
    chunks = []
    for doc in ("volcano.md", "bakery.md"):
        for i in range(120):
            # the first 60 texts of each document are the same in both partitions
            text = f"{doc} paragraph {i}: lava, harbours and sourdough loaves" + (f" ({strategy})" if i >= 60 else "")
            chunks.append(Chunk(make_chunk_id(strategy, doc, i), doc, strategy, i, i * 90, i * 90 + 80, text, 18))
    Path(go + "." + strategy).touch()
    while not Path(go).exists():
        time.sleep(0.01)
    with EmbeddingCache(cache_path) as cache, VectorStore(local_root=root) as store:
        embedder = Embedder(spec, cache=cache)
        vectors = embedder.embed([c.text for c in chunks], "document")
        name = collection_name(strategy, spec.id)
        store.ensure_collection(name, spec.dimension)
        counts = store.replace_points(name, chunks, vectors)
        hits = store.search(name, vectors[5], 1, document="volcano.md")
        print(json.dumps({**counts, "count": store.count(name), "top": hits[0].chunk_id,
                          "embedded": embedder.usage.embedded}))
""")

HOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from chunkbench_core.storage.vector_store import VectorStore
    root, name, ready, seconds = sys.argv[1:5]
    with VectorStore(local_root=root) as store:
        store.count(name)
        Path(ready).touch()
        time.sleep(float(seconds))
""")


def run_python(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for(path: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


@pytest.mark.slow
def test_two_processes_materialize_two_collections_at_once(tmp_path):
    root, cache_path, go = tmp_path / "qdrant", tmp_path / "cache.sqlite", tmp_path / "go"
    model = "all-minilm-l6-v2"
    workers = {
        s: run_python(MATERIALIZE, str(root), str(cache_path), s, model, str(go)) for s in ("fixed_size", "recursive")
    }
    for strategy in workers:
        wait_for(Path(f"{go}.{strategy}"))
    go.touch()
    results = {}
    for strategy, process in workers.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        results[strategy] = json.loads(out.strip().splitlines()[-1])
    for strategy, result in results.items():
        assert result["count"] == result["upserted"] == 240 and result["removed"] == 0
        assert result["top"] == make_chunk_id(strategy, "volcano.md", 5)
    with VectorStore(local_root=root) as store:
        assert store.list_collections() == [collection_name("fixed_size", model), collection_name("recursive", model)]
    with EmbeddingCache(cache_path) as cache:
        assert cache.stats()[0].vectors == 360  # every distinct text of both processes, stored once


@pytest.mark.slow
def test_a_locked_collection_is_waited_for_then_reported(tmp_path):
    root, ready = tmp_path / "qdrant", tmp_path / "ready"
    name = collection_name("fixed_size", "all-minilm-l6-v2")
    with VectorStore(local_root=root) as store:
        store.ensure_collection(name, 8)
    holder = run_python(HOLD, str(root), name, str(ready), "2")
    try:
        wait_for(ready)
        with VectorStore(local_root=root, lock_timeout_seconds=0) as impatient:
            with pytest.raises(VectorStoreError, match="another process holds this collection open"):
                impatient.count(name)
        started = time.monotonic()
        with VectorStore(local_root=root, lock_timeout_seconds=60) as patient:
            assert patient.count(name) == 0  # opened once the other process let go
        assert time.monotonic() - started < 60
    finally:
        holder.communicate(timeout=60)
    assert holder.returncode == 0
