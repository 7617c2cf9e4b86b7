"""The plain functions behind `chunkbench health` and `chunkbench collections`."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from chunkbench_core.chunking.base import Chunk, make_chunk_id
from chunkbench_core.embedding import ProviderSettings, builtin_registry
from chunkbench_core.errors import VectorStoreError
from chunkbench_core.storage.operations import (
    duckdb_check,
    health,
    list_collections,
    preview_chunks,
    wipe_collections,
)
from chunkbench_core.storage.vector_store import VectorStore, collection_name

MODEL = "all-minilm-l6-v2"


def fill(store: VectorStore, strategy: str, documents: dict[str, int]) -> str:
    name = collection_name(strategy, MODEL)
    chunks = [
        Chunk(make_chunk_id(strategy, doc, i), doc, strategy, i, i, i + 1, f"{doc} {i}", 1)
        for doc, n in documents.items()
        for i in range(n)
    ]
    vectors = np.random.default_rng(0).standard_normal((len(chunks), 384)).astype(np.float32)
    store.ensure_collection(name, 384)
    store.replace_points(name, chunks, vectors)
    return name


@pytest.fixture()
def store(tmp_path):
    with VectorStore(local_root=tmp_path / "qdrant") as s:
        yield s


def test_list_preview_and_wipe(store):
    fixed = fill(store, "fixed_size", {"a.md": 3, "b.md": 2})
    recursive = fill(store, "recursive", {"a.md": 1})
    infos = {i.name: i for i in list_collections(store)}
    assert set(infos) == {fixed, recursive}
    assert (infos[fixed].points, infos[fixed].dimension, infos[fixed].strategy, infos[fixed].model) == (
        5,
        384,
        "fixed_size",
        MODEL,
    )

    preview = preview_chunks(store, "fixed_size", MODEL, "a.md")
    assert [(p["chunk_index"], p["text"]) for p in preview] == [(0, "a.md 0"), (1, "a.md 1"), (2, "a.md 2")]
    assert len(preview_chunks(store, "fixed_size", MODEL, "a.md", limit=2)) == 2
    with pytest.raises(VectorStoreError, match="holds no chunks of document 'c.md'"):
        preview_chunks(store, "fixed_size", MODEL, "c.md")

    assert wipe_collections(store, [recursive], keep_collection=True) == {recursive: 1}
    assert store.count(recursive) == 0
    with pytest.raises(VectorStoreError, match="no collection named 'nope'"):
        wipe_collections(store, ["nope"])
    assert wipe_collections(store) == {fixed: 5, recursive: 0}
    assert list_collections(store) == []


def test_health_reports_every_component(store, tmp_path):
    fill(store, "fixed_size", {"a.md": 1})
    database = tmp_path / "chunkbench.duckdb"
    con = duckdb.connect(str(database))
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    con.close()
    checks = {c.component: c for c in health(store, database, ProviderSettings(), builtin_registry())}
    assert checks["qdrant"].ok and "1 collection(s)" in checks["qdrant"].detail
    assert checks["duckdb"].ok and "1 table(s)" in checks["duckdb"].detail
    assert checks["provider:local:minilm_onnx"].ok and "384 dimensions" in checks["provider:local:minilm_onnx"].detail
    assert not checks["provider:openai"].ok and "OPENAI_API_KEY" in checks["provider:openai"].detail
    compatible = checks["provider:openai_compatible"]
    assert not compatible.ok and "CHUNKBENCH_OPENAI_COMPATIBLE_URL" in compatible.detail
    assert not compatible.configured and not checks["provider:openai"].configured
    assert checks["qdrant"].configured and checks["provider:local:minilm_onnx"].configured
    assert duckdb_check(tmp_path / "missing.duckdb").ok  # not created yet is not an error


def test_health_of_unreachable_endpoints(tmp_path):
    from tests.core.embedding.openai_server import free_port

    port = free_port()
    with VectorStore(url=f"http://127.0.0.1:{port}", timeout=2) as server:
        settings = ProviderSettings(compatible_base_url=f"http://127.0.0.1:{port}/v1")
        checks = {c.component: c for c in health(server, tmp_path / "x.duckdb", settings, builtin_registry())}
    assert not checks["qdrant"].ok and f"127.0.0.1:{port}" in checks["qdrant"].detail
    key = f"provider:openai_compatible:http://127.0.0.1:{port}/v1"
    assert not checks[key].ok and f"embedding server 127.0.0.1:{port} (model " in checks[key].detail
    assert "could not be reached" in checks[key].detail and "check that the server runs" in checks[key].detail
    assert checks[key].configured  # configured but broken: a failure


def test_health_probes_a_working_compatible_server(tmp_path):
    from tests.core.embedding.openai_server import FaultProxy

    proxy = FaultProxy()  # a real HTTP server speaking the OpenAI API, vectors of its own
    try:
        settings = ProviderSettings(compatible_base_url=proxy.base_url)
        with VectorStore(local_root=tmp_path / "qdrant") as store:
            checks = {c.component: c for c in health(store, tmp_path / "x.duckdb", settings, builtin_registry())}
    finally:
        proxy.stop()
    check = checks[f"provider:openai_compatible:{proxy.base_url}"]
    assert check.ok and "answers; it does not list nomic-embed-text-v2-moe (1 model(s))" in check.detail
