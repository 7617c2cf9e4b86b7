"""VectorStore against real local Qdrant: the embedded engine (qdrant-edge) and qdrant-client's local mode.

Both run the same contract: collection naming, uuid5 ids, payload, exact replacement,
filtered search, neighbor fetch. qdrant-client's local mode runs the same client code
as server mode, without a server.
"""

from __future__ import annotations

import uuid
import warnings

import numpy as np
import pytest

from chunkbench_core.chunking.base import Chunk, make_chunk_id
from chunkbench_core.errors import VectorStoreError
from chunkbench_core.storage import vector_store
from chunkbench_core.storage.vector_store import (
    VectorStore,
    chunk_payload,
    collection_name,
    point_id,
    split_collection_name,
)

DIM = 16
NAME = collection_name("fixed_size", "nomic-embed-text:v2/moe")


def chunk(document: str, index: int, text: str | None = None) -> Chunk:
    return Chunk(
        chunk_id=make_chunk_id("fixed_size", document, index),
        document=document,
        strategy="fixed_size",
        chunk_index=index,
        start=index * 100,
        end=index * 100 + 90,
        text=text or f"{document} chunk {index}",
        token_count=20,
        content_type="paragraph",
        heading_path=["Intro", f"Part {index}"],
        parent_id=None if index % 2 else f"parent-{index}",
    )


def corpus(sizes: dict[str, int]) -> list[Chunk]:
    return [chunk(doc, i) for doc, n in sizes.items() for i in range(n)]


def vectors_for(chunks: list[Chunk], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((len(chunks), DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(params=["edge", "client"])
def store(request, tmp_path):
    with VectorStore(local_root=tmp_path / "qdrant", local_engine=request.param) as s:
        yield s


def test_names_and_ids():
    assert NAME == "fixed_size__nomic-embed-text-v2-moe_collection"
    assert split_collection_name(NAME) == ("fixed_size", "nomic-embed-text-v2-moe")
    assert split_collection_name("someone_elses") is None
    assert point_id("fixed_size_a_md_000001") == str(uuid.uuid5(uuid.NAMESPACE_URL, "fixed_size_a_md_000001"))


def test_create_payload_and_dimension_check(store):
    store.ensure_collection(NAME, DIM)
    store.ensure_collection(NAME, DIM)  # idempotent
    chunks = corpus({"a.md": 3})
    store.replace_points(NAME, chunks, vectors_for(chunks))
    payloads = store.fetch_by_indices(NAME, "a.md", [0])
    assert payloads == [chunk_payload(chunks[0])]
    assert set(payloads[0]) >= {"document", "chunk_index", "start", "end", "content_type", "parent_id", "heading_path"}
    assert sorted(store.point_ids(NAME)) == sorted(point_id(c.chunk_id) for c in chunks)
    with pytest.raises(VectorStoreError, match=r"holds vectors of dimension 16, the model has 32; wipe"):
        store.ensure_collection(NAME, 32)
    assert store.collection_info(NAME).dimension == DIM


def test_upsert_is_idempotent_and_stale_points_are_removed(store):
    store.ensure_collection(NAME, DIM)
    chunks = corpus({"a.md": 5, "b.md": 4})
    vectors = vectors_for(chunks)
    assert store.replace_points(NAME, chunks, vectors) == {"upserted": 9, "removed": 0}
    assert store.replace_points(NAME, chunks, vectors) == {"upserted": 9, "removed": 0}
    assert store.count(NAME) == 9
    # a.md now yields fewer chunks and b.md is gone
    fewer = corpus({"a.md": 2, "c.md": 1})
    assert store.replace_points(NAME, fewer, vectors_for(fewer, seed=1)) == {"upserted": 3, "removed": 7}
    assert sorted(store.point_ids(NAME)) == sorted(point_id(c.chunk_id) for c in fewer)
    assert store.fetch_by_indices(NAME, "b.md", range(4)) == []
    # the stored text is the new one
    changed = [chunk("a.md", 0, "brand new text"), *fewer[1:]]
    store.replace_points(NAME, changed, vectors_for(changed, seed=2))
    assert store.fetch_by_indices(NAME, "a.md", [0])[0]["text"] == "brand new text"


def test_run_dying_midway_loses_nothing_and_rerun_converges(store, monkeypatch):
    monkeypatch.setattr(vector_store, "UPSERT_BATCH", 10)
    store.ensure_collection(NAME, DIM)
    old = corpus({"a.md": 60})
    store.replace_points(NAME, old, vectors_for(old))
    new = corpus({"a.md": 30, "b.md": 40})
    calls = []

    def dying(real):
        def upsert(self, *args, **kwargs):
            calls.append(1)
            if len(calls) == 2:
                raise RuntimeError("killed midway")
            return real(self, *args, **kwargs)

        return upsert

    for backend in (vector_store._EdgeCollection, vector_store._ClientCollection):
        monkeypatch.setattr(backend, "upsert", dying(backend.upsert))
    with pytest.raises(VectorStoreError, match="killed midway"):
        store.replace_points(NAME, new, vectors_for(new, seed=3))
    ids = set(store.point_ids(NAME))
    assert {point_id(c.chunk_id) for c in old} <= ids  # nothing of the old set was lost
    counts = store.replace_points(NAME, new, vectors_for(new, seed=3))  # the re-run
    assert set(store.point_ids(NAME)) == {point_id(c.chunk_id) for c in new}
    assert counts == {"upserted": 70, "removed": 30}


def test_search_is_exact_cosine_with_optional_document_filter(store):
    store.ensure_collection(NAME, DIM)
    chunks = corpus({"a.md": 30, "b.md": 30})
    vectors = vectors_for(chunks)
    store.replace_points(NAME, chunks, vectors)
    query = vectors[40] + 0.01
    expected = np.argsort(-(vectors @ (query / np.linalg.norm(query))))[:5]
    hits = store.search(NAME, query, 5)
    assert [h.chunk_id for h in hits] == [chunks[i].chunk_id for i in expected]
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert hits[0].score == pytest.approx(float(vectors[expected[0]] @ (query / np.linalg.norm(query))), abs=1e-4)
    filtered = store.search(NAME, query, 5, document="a.md")
    assert len(filtered) == 5 and all(h.payload["document"] == "a.md" for h in filtered)
    only_a = [i for i in np.argsort(-(vectors @ query)) if chunks[i].document == "a.md"][:5]
    assert [h.chunk_id for h in filtered] == [chunks[i].chunk_id for i in only_a]
    assert store.search(NAME, query, 3, document="missing.md") == []
    with pytest.raises(VectorStoreError, match="top_k"):
        store.search(NAME, query, 0)


def test_neighbor_fetch_and_preview(store):
    store.ensure_collection(NAME, DIM)
    chunks = corpus({"a.md": 10, "b.md": 10})
    store.replace_points(NAME, chunks, vectors_for(chunks))
    got = store.fetch_by_indices(NAME, "b.md", [7, -1, 3, 3, 12, 4])
    assert [(p["document"], p["chunk_index"]) for p in got] == [("b.md", 3), ("b.md", 4), ("b.md", 7)]
    assert store.fetch_by_indices(NAME, "b.md", []) == []
    preview = store.document_chunks(NAME, "a.md", limit=4)
    assert [p["chunk_index"] for p in preview] == [0, 1, 2, 3]
    wanted = [chunks[12].chunk_id, "not_stored_000001", chunks[1].chunk_id, chunks[12].chunk_id]
    assert [p["chunk_id"] for p in store.fetch_by_chunk_ids(NAME, wanted)] == [chunks[12].chunk_id, chunks[1].chunk_id]
    assert store.fetch_by_chunk_ids(NAME, []) == []


def test_missing_collection_and_bad_input(store):
    with pytest.raises(VectorStoreError, match="does not exist"):
        store.count("fixed_size__nothing_collection")
    with pytest.raises(VectorStoreError, match="collection name"):
        store.ensure_collection("../escape", DIM)
    store.ensure_collection(NAME, DIM)
    with pytest.raises(VectorStoreError, match="2 chunks but 1 vectors"):
        store.replace_points(NAME, corpus({"a.md": 2}), vectors_for(corpus({"a.md": 1})))


def test_list_wipe_and_delete(store):
    other = collection_name("recursive", "all-minilm-l6-v2")
    for name in (NAME, other):
        store.ensure_collection(name, DIM)
        chunks = corpus({"a.md": 4})
        store.replace_points(name, chunks, vectors_for(chunks))
    assert store.list_collections() == sorted([NAME, other])
    assert store.wipe_points(other) == 4 and store.count(other) == 0
    assert store.delete_collection(NAME) is True
    assert store.delete_collection(NAME) is False
    assert store.list_collections() == [other]


def test_collection_persists_across_stores(tmp_path):
    chunks = corpus({"a.md": 3})
    with VectorStore(local_root=tmp_path) as first:
        first.ensure_collection(NAME, DIM)
        first.replace_points(NAME, chunks, vectors_for(chunks))
    with VectorStore(local_root=tmp_path) as second:
        assert second.count(NAME) == 3
        assert second.search(NAME, vectors_for(chunks)[1], 1)[0].chunk_id == chunks[1].chunk_id


def test_legacy_client_folder_is_reported(tmp_path):
    with VectorStore(local_root=tmp_path, local_engine="client") as old:
        old.ensure_collection(NAME, DIM)
    with VectorStore(local_root=tmp_path) as store:
        with pytest.raises(VectorStoreError, match="qdrant-client's local mode.*wipe it"):
            store.count(NAME)
        store.ensure_collection(NAME, DIM)  # a materialization rebuilds it with the embedded engine
        assert store.count(NAME) == 0


def test_server_mode_errors_name_the_url():
    from tests.core.embedding.openai_server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    with warnings.catch_warnings(), VectorStore(url=url, api_key="secret-key", timeout=2) as store:
        warnings.simplefilter("ignore")  # qdrant-client warns about an api key over plain http
        assert store.mode == "server" and "secret-key" not in repr(store)
        with pytest.raises(VectorStoreError, match=url):
            store.ensure_collection(NAME, DIM)
    with pytest.raises(VectorStoreError, match="QDRANT_URL must start with http"):
        VectorStore(url="localhost:6333")
    with pytest.raises(VectorStoreError, match="needs a Qdrant server url"):
        VectorStore()
