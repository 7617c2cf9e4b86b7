"""What ``chunkbench health`` and ``chunkbench collections ...`` do, as plain functions.

- ``health``: Qdrant, the DuckDB results file, every configured embedding provider;
- ``list_collections`` / ``wipe_collections``: the Qdrant collections of chunkbench;
- ``preview_chunks``: a document's stored chunks for one strategy x corpus model.

Each takes its stores explicitly (the pipeline's resources build them) and returns
plain data; nothing here prints.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Sequence

from chunkbench_core.embedding.admin import HealthCheck, provider_checks
from chunkbench_core.embedding.providers import ProviderSettings
from chunkbench_core.embedding.registry import ModelRegistry
from chunkbench_core.errors import VectorStoreError

from .vector_store import CollectionInfo, VectorStore, collection_name, split_collection_name


def qdrant_check(store: VectorStore) -> HealthCheck:
    started = time.perf_counter()
    try:
        ok, detail = True, store.ping()
    except Exception as exc:  # a health check reports, never raises
        ok, detail = False, str(exc)
    return HealthCheck("qdrant", ok, detail, round((time.perf_counter() - started) * 1000, 1))


def duckdb_check(database: str | os.PathLike[str]) -> HealthCheck:
    """Open the results database read-only for one query (never held: writers may come)."""
    import duckdb

    path = Path(database)
    started = time.perf_counter()
    try:
        if not path.exists():
            con = duckdb.connect(":memory:")
            detail = f"DuckDB {duckdb.__version__} works; {path} does not exist yet (materialize the pipeline)"
        else:
            con = duckdb.connect(str(path), read_only=True)
            counted = con.execute("SELECT count(*) FROM information_schema.tables").fetchone()
            tables = counted[0] if counted else 0
            detail = f"{path}: {tables} table(s)/view(s), DuckDB {duckdb.__version__}"
        try:
            con.execute("SELECT 1").fetchone()
        finally:
            con.close()
        ok = True
    except Exception as exc:
        ok, detail = False, f"{path}: {type(exc).__name__}: {exc}"
    return HealthCheck("duckdb", ok, detail, round((time.perf_counter() - started) * 1000, 1))


def health(
    store: VectorStore,
    duckdb_path: str | os.PathLike[str],
    settings: ProviderSettings,
    registry: ModelRegistry | None = None,
    probe_providers: bool = True,
) -> list[HealthCheck]:
    """Qdrant, DuckDB and each configured embedding provider; every failure says why."""
    return [qdrant_check(store), duckdb_check(duckdb_path), *provider_checks(settings, registry, probe=probe_providers)]


def list_collections(store: VectorStore) -> list[CollectionInfo]:
    """Every collection of the store with its point count and dimension."""
    infos = []
    for name in store.list_collections():
        try:
            infos.append(store.collection_info(name))
        except VectorStoreError as exc:
            parts = split_collection_name(name)
            infos.append(
                CollectionInfo(
                    name, -1, None, parts[0] if parts else None, parts[1] if parts else None, f"unreadable: {exc}"
                )
            )
    return infos


def wipe_collections(
    store: VectorStore,
    names: Sequence[str] | None = None,
    *,
    keep_collection: bool = False,
    only_chunkbench: bool = True,
) -> dict[str, int]:
    """Delete the named collections (all of chunkbench's when ``names`` is None).

    ``keep_collection`` deletes only their points (the collection stays, empty).
    With ``only_chunkbench`` a server's collections whose names chunkbench did not make
    are never touched by a wipe-all. Returns collection -> points removed (-1 = dropped
    without counting).
    """
    if names is None:
        names = [n for n in store.list_collections() if not only_chunkbench or split_collection_name(n)]
    known = set(store.list_collections())
    result: dict[str, int] = {}
    for name in names:
        if name not in known:
            raise VectorStoreError(f"no collection named {name!r}; existing: {', '.join(sorted(known)) or 'none'}")
        if keep_collection:
            result[name] = store.wipe_points(name)
        else:
            try:
                points = store.count(name)
            except VectorStoreError:
                points = -1
            store.delete_collection(name)
            result[name] = points
    return result


def preview_chunks(
    store: VectorStore, strategy: str, model_id: str, document: str, limit: int | None = None
) -> list[dict[str, Any]]:
    """The stored chunks of ``document`` in the strategy x model collection, in order (payloads)."""
    if limit is not None and limit < 1:
        raise VectorStoreError(f"limit must be a positive integer, got {limit}")
    name = collection_name(strategy, model_id)
    chunks = store.document_chunks(name, document, limit=limit)
    if not chunks:
        raise VectorStoreError(
            f"{name} holds no chunks of document {document!r}; check the document name "
            "(as listed in the documents table) and that the partition was materialized"
        )
    return chunks
