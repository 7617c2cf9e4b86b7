"""Chunk vectors in Qdrant: one collection per strategy x corpus model (LLD 5.2).

Server mode (``url``) is how users scale out; the embedded default is
qdrant-client's local mode. A local store is locked by one process at a time, so
each collection gets its own local folder: partitions running in parallel
processes never share a lock.

Re-materializing a partition replaces its points exactly: new points are upserted
under deterministic ids (uuid5 of the chunk id), then every point of the collection
that is not in the new set is deleted. A run that dies midway leaves the old
points, and the re-run converges to the new set.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from chunkbench_core.chunking.base import Chunk
from chunkbench_core.embedding.registry import sanitize_model_id
from chunkbench_core.errors import VectorStoreError

UPSERT_BATCH = 256


def collection_name(strategy: str, model_id: str) -> str:
    """``{strategy}__{sanitized model id}_collection`` (LLD 5.2)."""
    return f"{strategy}__{sanitize_model_id(model_id)}_collection"


def point_id(chunk_id: str) -> str:
    """Deterministic point id: uuid5(NAMESPACE_URL, chunk_id)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, chunk_id))


def chunk_payload(chunk: Chunk) -> dict[str, Any]:
    """Chunk metadata stored with the vector (the embedded text itself is not stored)."""
    return {
        "chunk_id": chunk.chunk_id,
        "document": chunk.document,
        "strategy": chunk.strategy,
        "chunk_index": chunk.chunk_index,
        "start": chunk.start,
        "end": chunk.end,
        "text": chunk.text,
        "token_count": chunk.token_count,
        "content_type": chunk.content_type,
        "heading_path": list(chunk.heading_path),
        "parent_id": chunk.parent_id,
    }


@dataclass
class SearchHit:
    rank: int
    score: float
    payload: dict[str, Any]

    @property
    def chunk_id(self) -> str:
        return self.payload["chunk_id"]


class VectorStore:
    """Qdrant access for chunkbench. Use as a context manager so local locks are released."""

    def __init__(self, url: str | None = None, api_key: str | None = None, local_root: str | Path | None = None,
                 timeout: int = 60) -> None:
        if not url and not local_root:
            raise VectorStoreError("VectorStore needs a Qdrant server url or a local_root folder for local mode")
        self.url = url or None
        self.api_key = api_key or None
        self.local_root = Path(local_root) if local_root else None
        self.timeout = timeout
        self._clients: dict[str, Any] = {}

    @property
    def mode(self) -> str:
        return "server" if self.url else "local"

    def __enter__(self) -> "VectorStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for client in self._clients.values():
            try:
                client.close()
            except Exception:  # closing is best effort
                pass
        self._clients.clear()

    def client(self, collection: str):
        from qdrant_client import QdrantClient

        key = "server" if self.url else collection
        if key not in self._clients:
            try:
                if self.url:
                    self._clients[key] = QdrantClient(url=self.url, api_key=self.api_key, timeout=self.timeout)
                else:
                    assert self.local_root is not None
                    path = self.local_root / collection
                    path.mkdir(parents=True, exist_ok=True)
                    self._clients[key] = QdrantClient(path=str(path))
            except Exception as exc:
                where = self.url or str(self.local_root / collection)  # type: ignore[operator]
                raise VectorStoreError(f"cannot open Qdrant at {where}: {exc}") from exc
        return self._clients[key]

    def ensure_collection(self, collection: str, dimension: int) -> None:
        from qdrant_client import models

        client = self.client(collection)
        if client.collection_exists(collection):
            size = client.get_collection(collection).config.params.vectors.size  # type: ignore[union-attr]
            if size != dimension:
                raise VectorStoreError(
                    f"collection {collection} holds vectors of dimension {size}, the model has {dimension}; "
                    "wipe the collection (chunkbench collections wipe) or fix the registry entry"
                )
            return
        client.create_collection(
            collection, vectors_config=models.VectorParams(size=dimension, distance=models.Distance.COSINE)
        )
        if self.url:  # payload indexes matter on a server; local mode ignores them
            client.create_payload_index(collection, "document", models.PayloadSchemaType.KEYWORD)
            client.create_payload_index(collection, "chunk_index", models.PayloadSchemaType.INTEGER)

    def replace_points(self, collection: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> dict[str, int]:
        """Make the collection hold exactly ``chunks``; returns counts upserted and removed."""
        from qdrant_client import models

        if len(chunks) != len(vectors):
            raise VectorStoreError(f"{collection}: {len(chunks)} chunks but {len(vectors)} vectors")
        client = self.client(collection)
        wanted = [point_id(c.chunk_id) for c in chunks]
        for begin in range(0, len(chunks), UPSERT_BATCH):
            client.upsert(
                collection,
                points=[
                    models.PointStruct(id=wanted[i], vector=vectors[i].tolist(), payload=chunk_payload(chunks[i]))
                    for i in range(begin, min(begin + UPSERT_BATCH, len(chunks)))
                ],
                wait=True,
            )
        stale = sorted(set(self.point_ids(collection)) - set(wanted))
        for begin in range(0, len(stale), UPSERT_BATCH):
            client.delete(collection, points_selector=models.PointIdsList(points=stale[begin : begin + UPSERT_BATCH]))
        return {"upserted": len(wanted), "removed": len(stale)}

    def point_ids(self, collection: str) -> list[str]:
        client = self.client(collection)
        ids: list[str] = []
        offset = None
        while True:
            points, offset = client.scroll(collection, limit=1024, offset=offset, with_payload=False, with_vectors=False)
            ids.extend(str(p.id) for p in points)
            if offset is None:
                return ids

    def count(self, collection: str) -> int:
        return self.client(collection).count(collection, exact=True).count

    def search(self, collection: str, vector: np.ndarray, top_k: int, document: str | None = None) -> list[SearchHit]:
        from qdrant_client import models

        query_filter = None
        if document is not None:
            query_filter = models.Filter(
                must=[models.FieldCondition(key="document", match=models.MatchValue(value=document))]
            )
        try:
            response = self.client(collection).query_points(
                collection, query=vector.tolist(), limit=top_k, query_filter=query_filter, with_payload=True
            )
        except Exception as exc:
            raise VectorStoreError(f"search in {collection} failed: {exc}") from exc
        return [SearchHit(rank=i + 1, score=float(p.score), payload=dict(p.payload or {}))
                for i, p in enumerate(response.points)]

    def fetch_by_indices(self, collection: str, document: str, indices: Iterable[int]) -> list[dict[str, Any]]:
        """Payloads of the chunks of ``document`` with the given chunk_index values (neighbor fetch)."""
        from qdrant_client import models

        wanted = sorted(set(int(i) for i in indices if i >= 0))
        if not wanted:
            return []
        points, _ = self.client(collection).scroll(
            collection,
            scroll_filter=models.Filter(must=[
                models.FieldCondition(key="document", match=models.MatchValue(value=document)),
                models.FieldCondition(key="chunk_index", match=models.MatchAny(any=wanted)),
            ]),
            limit=len(wanted),
            with_payload=True,
            with_vectors=False,
        )
        return sorted((dict(p.payload or {}) for p in points), key=lambda p: p["chunk_index"])
