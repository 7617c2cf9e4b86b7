"""Chunk vectors in Qdrant: one collection per strategy x corpus model.

Two ways to run Qdrant, one API:

- **server** (``url``, from QDRANT_URL, + ``api_key`` from QDRANT_API_KEY): the
  official ``qdrant-client``; how users scale out.
- **embedded** (``local_root``, the default under CHUNKBENCH_HOME/qdrant): Qdrant's own
  Rust engine in-process through ``qdrant-edge-py``, one shard folder per collection.
  It has real payload indexes, so a filtered query costs well under a millisecond,
  where qdrant-client's local mode scans in Python (~150 ms at 20k points).
  ``local_engine="client"`` selects qdrant-client's local mode instead (the same
  client code as server mode, without a server).

Every collection: cosine distance, dimension from the registry, point id
uuid5(NAMESPACE_URL, chunk_id), payload = chunk metadata, payload indexes on
``document`` (keyword) and ``chunk_index`` (integer). Searches are exact (no HNSW
approximation) so a benchmark measures the chunks and the model, not the index.

A local store is locked by one process at a time, so each collection has its own
folder: partitions running in parallel processes never share a lock. A process that
finds a collection locked by another waits (``lock_timeout_seconds``) and then fails
with the folder's name.

Re-materializing a partition replaces its points exactly: new points are upserted
under deterministic ids, then every point not in the new set is deleted. A run that
dies midway leaves the old points (plus some new ones); the re-run converges to the
new set. Nothing is lost, nothing stale survives a finished run.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Sequence

import numpy as np

from chunkbench_core.chunking.base import Chunk, check_unique_ids
from chunkbench_core.embedding.registry import sanitize_model_id
from chunkbench_core.errors import CorruptStateError, DuplicateIdError, StorageError, VectorStoreError
from chunkbench_core.progress import Tracker

from .integrity import is_quarantined, one_line, quarantine
from .space import (
    EDGE_EMPTY_BYTES,
    edge_collection_bytes,
    edge_open_bytes,
    edge_points_bytes,
    ensure_space,
    ensure_spaces,
    guard_writes,
    json_bytes,
    storage_error,
)
from .vector_probe import probe_collection

log = logging.getLogger("chunkbench")

UPSERT_BATCH = 256
SCROLL_PAGE = 1024
COLLECTION_SUFFIX = "_collection"
INDEXED_FIELDS = {"document": "keyword", "chunk_index": "integer"}
LocalEngine = Literal["edge", "client"]
LOCAL_ENGINES: tuple[str, ...] = ("edge", "client")
_EDGE_CONFIG = "edge_config.json"
_IN_USE = ".in-use"
_VECTORS = ".vectors.npz"  # the copy of a collection's vectors beside its folder (VectorStore._vectors_file)
REBUILT_BY = "it is built again by its chunk_collections partition (chunkbench run does)"
# what the embedded engine says when a collection's files are damaged (not locked, not full)
_DAMAGE_TEXT = (
    "not readable",
    "gridstore",
    "deserialize",
    "out of bounds",
    "failed to load segment",
    "corrupt",
    "checksum",
    "unexpected end of file",
    "panicked",
    "failed to read segment",
)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def collection_name(strategy: str, model_id: str) -> str:
    """``{strategy}__{sanitized model id}_collection`` (readable, and one per partition)."""
    return f"{strategy}__{sanitize_model_id(model_id)}{COLLECTION_SUFFIX}"


def split_collection_name(name: str) -> tuple[str, str] | None:
    """(strategy, sanitized model id) of a chunkbench collection name, or None for other names."""
    if not name.endswith(COLLECTION_SUFFIX) or "__" not in name:
        return None
    strategy, model = name[: -len(COLLECTION_SUFFIX)].split("__", 1)
    return (strategy, model) if strategy and model else None


def point_id(chunk_id: str) -> str:
    """Deterministic point id: uuid5(NAMESPACE_URL, chunk_id)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, chunk_id))


def chunk_payload(chunk: Chunk) -> dict[str, Any]:
    """Chunk metadata stored with the vector (``embedded_text`` is not stored: the results tables hold it)."""
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
        "page_start": chunk.page_start,
        "page_end": chunk.page_end,
    }


@dataclass
class SearchHit:
    rank: int
    score: float
    payload: dict[str, Any]

    @property
    def chunk_id(self) -> str:
        return self.payload["chunk_id"]


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    points: int
    dimension: int | None
    strategy: str | None
    model: str | None  # the sanitized model id from the name
    location: str


def _validate_name(collection: str) -> None:
    if not isinstance(collection, str) or not _NAME.fullmatch(collection):
        raise VectorStoreError(
            f"collection name {collection!r}: use letters, digits and . _ - only (it is a folder name in local mode)"
        )


def _is_damage(exc: BaseException) -> bool:
    """True when the embedded engine's error says the collection's files are damaged."""
    if type(exc).__name__ == "PanicException":
        return True
    text = str(exc).lower()
    return any(t in text for t in _DAMAGE_TEXT)


def corrupt_message(path: Path, problem: str, moved: Path | None) -> str:
    where = f"moved aside to {moved.name}" if moved is not None else "another process moved it aside"
    return (
        f"the collection {path.name} ({path}) cannot be read ({problem}): {where}; {REBUILT_BY}, then this "
        "step can run again"
    )


def _is_lock_error(exc: BaseException) -> bool:
    text = str(exc)
    return "WouldBlock" in text or "already accessed by another instance" in text or "lock" in text.lower()


# -- backends ---------------------------------------------------------------------------------------
class _EdgeCollection:
    """One collection as a qdrant-edge shard folder.

    Beside the folder, ``.<name>.in-use`` is flock-ed by the process that has the collection open (the
    kernel lets go when that process dies) and records how the last one left it: ``closed`` with the
    files' sizes and modification times, or ``open`` (it died with the collection open). A collection
    whose last holder died, whose files changed since chunkbench closed it, or that was never closed by
    this version is read whole in a child process first (:mod:`.vector_probe`): a damaged one can end
    the engine's process with a signal. A damaged collection is moved aside (``<name>.corrupt-<time>``).
    """

    def __init__(self, path: Path, lock_timeout: float) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self.shard: Any = None
        self._use_fd: int | None = None

    @staticmethod
    def folder_exists(path: Path) -> bool:
        return (path / _EDGE_CONFIG).is_file()

    @staticmethod
    def stored_dimension(path: Path) -> int | None:
        try:
            config = json.loads((path / _EDGE_CONFIG).read_text(encoding="utf-8"))
            return int(config["vectors"][""]["size"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @staticmethod
    def use_file(path: Path) -> Path:
        return path.parent / f".{path.name}{_IN_USE}"

    @staticmethod
    def signature(path: Path) -> list[list[Any]]:
        """Every file of the collection with its size and modification time (how chunkbench left it)."""
        out: list[list[Any]] = []
        for directory, _, filenames in os.walk(path):
            for name in filenames:
                full = os.path.join(directory, name)
                try:
                    st = os.stat(full)
                except OSError:
                    continue
                out.append([os.path.relpath(full, path), st.st_size, st.st_mtime_ns])
        return sorted(out)

    # -- the in-use lock ---------------------------------------------------------------------------
    def _busy_error(self, what: str, detail: str) -> VectorStoreError:
        return VectorStoreError(
            f"cannot {what} the local Qdrant collection {self.path}: {detail}. another process holds this "
            "collection open (a local store is locked by one process at a time); wait for it, or use a Qdrant "
            "server (QDRANT_URL)"
        )

    def _hold(self, what: str) -> None:
        """Take the in-use lock, waiting up to ``lock_timeout`` for another process to let go."""
        if self._use_fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.use_file(self.path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.02
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise self._busy_error(what, f"still in use after {self.lock_timeout:g} s") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        self._use_fd = fd

    def _let_go(self) -> None:
        if self._use_fd is not None:
            try:
                fcntl.flock(self._use_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._use_fd)
                self._use_fd = None

    def _state(self) -> dict[str, Any]:
        assert self._use_fd is not None
        try:
            raw = os.pread(self._use_fd, 1 << 24, 0)
            state = json.loads(raw.decode("utf-8")) if raw else {}
            return state if isinstance(state, dict) else {}
        except (OSError, ValueError):
            return {}

    def _set_state(self, state: dict[str, Any]) -> None:
        assert self._use_fd is not None
        data = json.dumps(state).encode("utf-8")
        try:
            os.ftruncate(self._use_fd, 0)
            os.pwrite(self._use_fd, data, 0)
        except OSError as exc:
            translated = storage_error(exc, self.use_file(self.path), f"the collection {self.path.name}")
            raise (translated or exc) from exc

    def _suspicion(self) -> str | None:
        """Why the collection should be read in a child process before this one opens it, or None."""
        state = self._state()
        if state.get("state") == "open":
            return "the last process using it ended without closing it"
        if state.get("state") != "closed":
            return "it was never checked by this version of chunkbench"
        if state.get("signature") != self.signature(self.path):
            return "its files changed since chunkbench closed it"
        return None

    # -- opening -----------------------------------------------------------------------------------
    def _retry_locked(self, action, what: str):
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.05
        while True:
            try:
                return action()
            except BaseException as exc:
                if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
                    raise
                translated = storage_error(exc, self.path, f"the collection {self.path.name}")
                if translated is not None:
                    raise translated from exc
                if not _is_lock_error(exc) or time.monotonic() >= deadline:
                    if _is_lock_error(exc):
                        raise self._busy_error(what, str(exc)) from exc
                    raise VectorStoreError(f"cannot {what} the local Qdrant collection {self.path}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    def _create(self, dimension: int) -> None:
        import qdrant_edge as qe

        ensure_space(self.path.parent, EDGE_EMPTY_BYTES, f"creating the collection {self.path.name}")
        config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine))
        self.path.mkdir(parents=True, exist_ok=True)
        self._set_state({"state": "open"})
        self.shard = self._retry_locked(lambda: qe.EdgeShard.create(str(self.path), config), "create")
        with guard_writes(self.path, f"the collection {self.path.name}"):
            self.shard.update(qe.UpdateOperation.create_field_index("document", qe.PayloadSchemaType.Keyword))
            self.shard.update(qe.UpdateOperation.create_field_index("chunk_index", qe.PayloadSchemaType.Integer))
            self.shard.flush()

    def condemn(self, problem: str) -> Path | None:
        """Move the damaged collection aside (this process holds its in-use lock); returns where it went."""
        self.close(clean=False)
        return quarantine(self.path, problem, REBUILT_BY)

    def open(self, dimension: int | None = None, missing: str = "") -> None:
        """Open the shard; create it when ``dimension`` is given and it does not exist. A damaged collection
        is moved aside: then it is created anew when ``dimension`` is given (a build), and
        :class:`CorruptStateError` is raised otherwise (a read)."""
        import qdrant_edge as qe

        if self.shard is not None:
            return
        if not self.folder_exists(self.path):
            if (self.path / "meta.json").exists() or (self.path / "collection").exists():
                raise VectorStoreError(
                    f"{self.path} holds a collection of qdrant-client's local mode, not the embedded engine; "
                    "wipe it (chunkbench collections wipe) and re-materialize, or set local_engine='client'"
                )
            if dimension is None:
                raise VectorStoreError(missing or f"collection {self.path.name} does not exist at {self.path.parent}")
            self._hold("create")
            try:
                if self.folder_exists(self.path):  # created by another process while this one waited
                    self._let_go()
                    return self.open(dimension, missing)
                self._create(dimension)
            except BaseException:
                self.close(clean=False)
                raise
            return
        # opening writes (the log; on a memory filesystem the engine's read-ahead fills its sparse files),
        # and a write into a memory map on a full disk is a signal, not an error: check first
        ensure_space(self.path, edge_open_bytes(self.path), f"opening the collection {self.path.name}")
        self._hold("open")
        try:
            problem = None
            why = self._suspicion()
            if why is not None:
                log.info("checking the collection %s in a separate process: %s", self.path, why)
                _, problem = probe_collection(self.path)
            if problem is None:
                self._set_state({"state": "open"})
                try:
                    self.shard = self._retry_locked(lambda: qe.EdgeShard.load(str(self.path)), "open")
                except VectorStoreError as exc:
                    if _is_lock_error(exc) or isinstance(exc, StorageError):
                        raise
                    problem = f"the engine cannot load it: {one_line(exc.__cause__ or exc)}"
            if problem is not None:
                moved = self.condemn(problem)
                if dimension is None:
                    raise CorruptStateError(
                        corrupt_message(self.path, problem, moved), str(self.path), str(moved) if moved else None
                    )
                self._hold("create")
                self._create(dimension)
        except BaseException:
            self.close(clean=False)
            raise

    def close(self, clean: bool = True) -> None:
        """Close the shard and let go of the collection; ``clean``: record how it was left (its files), so the
        next opener trusts it without reading it whole."""
        try:
            if self.shard is not None:
                try:
                    self.shard.close()
                finally:
                    self.shard = None
                if clean and self._use_fd is not None and self.folder_exists(self.path):
                    self._set_state({"state": "closed", "signature": self.signature(self.path)})
        finally:
            self._let_go()

    def dimension(self) -> int | None:
        return self.stored_dimension(self.path)

    def upsert(self, ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[dict[str, Any]]) -> None:
        import qdrant_edge as qe

        points = [qe.Point(ids[i], vectors[i].tolist(), payloads[i]) for i in range(len(ids))]
        self.shard.update(qe.UpdateOperation.upsert_points(points))

    def delete(self, ids: Sequence[str]) -> None:
        import qdrant_edge as qe

        self.shard.update(qe.UpdateOperation.delete_points(list(ids)))

    def flush(self) -> None:
        self.shard.flush()

    def scroll(self, flt: Any, with_payload: bool) -> list[tuple[str, dict[str, Any]]]:
        import qdrant_edge as qe

        out: list[tuple[str, dict[str, Any]]] = []
        offset = None
        while True:
            points, offset = self.shard.scroll(
                qe.ScrollRequest(
                    offset=offset, limit=SCROLL_PAGE, filter=flt, with_payload=with_payload, with_vector=False
                )
            )
            out.extend((str(p.id), dict(p.payload or {})) for p in points)
            if offset is None or not points:
                return out

    def count(self) -> int:
        import qdrant_edge as qe

        return int(self.shard.count(qe.CountRequest(exact=True)))

    def retrieve(self, ids: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
        records = self.shard.retrieve(list(ids), with_payload=True, with_vector=False)
        return [(str(r.id), dict(r.payload or {})) for r in records]

    def search(self, vector: np.ndarray, top_k: int, flt: Any) -> list[tuple[float, dict[str, Any]]]:
        import qdrant_edge as qe

        hits = self.shard.query(
            qe.QueryRequest(
                limit=top_k,
                query=qe.Query.Nearest(vector.tolist()),
                filter=flt,
                with_payload=True,
                params=qe.SearchParams(exact=True),
            )
        )
        return [(float(h.score), dict(h.payload or {})) for h in hits]

    def vectors(self) -> list[tuple[str, list[float], str]]:
        import qdrant_edge as qe

        out: list[tuple[str, list[float], str]] = []
        offset = None
        selector = qe.PayloadSelector.Include(["document"])
        while True:
            points, offset = self.shard.scroll(
                qe.ScrollRequest(offset=offset, limit=SCROLL_PAGE, with_vector=True, with_payload=selector)
            )
            out.extend((str(p.id), p.vector, str((p.payload or {}).get("document", ""))) for p in points)
            if offset is None or not points:
                return out

    def score_candidates(
        self, queries: Sequence[list[float]], candidates: Sequence[Sequence[str]]
    ) -> list[list[tuple[str, float]]]:
        import qdrant_edge as qe

        requests = [
            qe.QueryRequest(
                limit=len(ids),
                query=qe.Query.Nearest(vector),
                with_payload=False,
                filter=qe.Filter(must=[qe.HasIdCondition(set(ids))]),
                params=qe.SearchParams(exact=True),
            )
            for vector, ids in zip(queries, candidates, strict=True)
        ]
        answers = self.shard.query_batch(qe.QueryBatchRequest(requests))
        return [[(str(h.id), float(h.score)) for h in hits] for hits in answers]

    @staticmethod
    def document_filter(document: str, indices: list[int] | None = None) -> Any:
        import qdrant_edge as qe

        # typed as the filter takes it (any condition; the alias exists only in the engine's stubs)
        must: list[qe.ConditionType] = [qe.FieldCondition(key="document", match=qe.MatchValue(value=document))]
        if indices is not None:
            must.append(qe.FieldCondition(key="chunk_index", match=qe.MatchAny(any=indices)))
        return qe.Filter(must=must)


class _ClientCollection:
    """One collection through qdrant-client: a server, or qdrant-client's local mode."""

    def __init__(self, client: Any, name: str, server: bool) -> None:
        self.client = client
        self.name = name
        self.server = server

    def exists(self) -> bool:
        return bool(self.client.collection_exists(self.name))

    def create(self, dimension: int) -> None:
        from qdrant_client import models

        self.client.create_collection(
            self.name, vectors_config=models.VectorParams(size=dimension, distance=models.Distance.COSINE)
        )
        if self.server:  # qdrant-client's local mode has no payload indexes (it warns)
            self.client.create_payload_index(self.name, "document", models.PayloadSchemaType.KEYWORD, wait=True)
            self.client.create_payload_index(self.name, "chunk_index", models.PayloadSchemaType.INTEGER, wait=True)

    def dimension(self) -> int | None:
        params = self.client.get_collection(self.name).config.params.vectors
        return int(params.size) if hasattr(params, "size") else None

    def upsert(self, ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[dict[str, Any]]) -> None:
        from qdrant_client import models

        points = [
            models.PointStruct(id=ids[i], vector=vectors[i].tolist(), payload=payloads[i]) for i in range(len(ids))
        ]
        self.client.upsert(self.name, points=points, wait=True)

    def delete(self, ids: Sequence[str]) -> None:
        from qdrant_client import models

        self.client.delete(self.name, points_selector=models.PointIdsList(points=list(ids)), wait=True)

    def flush(self) -> None:
        return None

    def scroll(self, flt: Any, with_payload: bool) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.name,
                scroll_filter=flt,
                limit=SCROLL_PAGE,
                offset=offset,
                with_payload=with_payload,
                with_vectors=False,
            )
            out.extend((str(p.id), dict(p.payload or {})) for p in points)
            if offset is None:
                return out

    def count(self) -> int:
        return int(self.client.count(self.name, exact=True).count)

    def retrieve(self, ids: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
        records = self.client.retrieve(self.name, ids=list(ids), with_payload=True, with_vectors=False)
        return [(str(r.id), dict(r.payload or {})) for r in records]

    def search(self, vector: np.ndarray, top_k: int, flt: Any) -> list[tuple[float, dict[str, Any]]]:
        from qdrant_client import models

        # a server searches exactly on request; local mode always does (and warns about search_params)
        params = models.SearchParams(exact=True) if self.server else None
        response = self.client.query_points(
            self.name, query=vector.tolist(), limit=top_k, query_filter=flt, with_payload=True, search_params=params
        )
        return [(float(p.score), dict(p.payload or {})) for p in response.points]

    def vectors(self) -> list[tuple[str, list[float], str]]:
        out: list[tuple[str, list[float], str]] = []
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.name, limit=SCROLL_PAGE, offset=offset, with_payload=["document"], with_vectors=True
            )
            out.extend((str(p.id), p.vector, str((p.payload or {}).get("document", ""))) for p in points)
            if offset is None:
                return out

    def score_candidates(
        self, queries: Sequence[list[float]], candidates: Sequence[Sequence[str]]
    ) -> list[list[tuple[str, float]]]:
        from qdrant_client import models

        params = models.SearchParams(exact=True) if self.server else None
        requests = [
            models.QueryRequest(
                query=vector,
                limit=len(ids),
                with_payload=False,
                params=params,
                filter=models.Filter(must=[models.HasIdCondition(has_id=list(ids))]),
            )
            for vector, ids in zip(queries, candidates, strict=True)
        ]
        responses = self.client.query_batch_points(self.name, requests)
        return [[(str(p.id), float(p.score)) for p in r.points] for r in responses]

    @staticmethod
    def document_filter(document: str, indices: list[int] | None = None) -> Any:
        from qdrant_client import models

        must: list[Any] = [models.FieldCondition(key="document", match=models.MatchValue(value=document))]
        if indices is not None:
            must.append(models.FieldCondition(key="chunk_index", match=models.MatchAny(any=indices)))
        return models.Filter(must=must)

    def close(self) -> None:
        return None


# -- the store ----------------------------------------------------------------------------------------
class VectorStore:
    """Qdrant access for chunkbench. Use as a context manager so local locks are released."""

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        local_root: str | Path | None = None,
        timeout: int = 60,
        local_engine: LocalEngine = "edge",
        lock_timeout_seconds: float = 120.0,
        namespace: str = "",
    ) -> None:
        """``namespace`` (the benchmark): on a server, every collection is stored as ``<namespace>__<name>``, so
        benchmarks sharing a server never see each other's collections; a local store is one folder per
        benchmark already, and keeps plain names."""
        if not url and not local_root:
            raise VectorStoreError(
                "VectorStore needs a Qdrant server url (QDRANT_URL) or a local_root folder for the embedded store"
            )
        if local_engine not in LOCAL_ENGINES:
            raise VectorStoreError(f"local_engine must be one of {LOCAL_ENGINES}, got {local_engine!r}")
        if url and not str(url).startswith(("http://", "https://")):
            raise VectorStoreError(f"QDRANT_URL must start with http:// or https://, got {url!r}")
        if lock_timeout_seconds < 0:
            raise VectorStoreError(f"lock_timeout_seconds must be >= 0, got {lock_timeout_seconds}")
        if namespace and not _NAME.fullmatch(namespace):
            raise VectorStoreError(f"namespace {namespace!r}: use letters, digits and . _ - only")
        self.namespace = namespace if url else ""
        self.url = url or None
        self.api_key = api_key or None
        self.local_root = Path(local_root) if local_root and not url else None
        self.timeout = timeout
        self.local_engine: LocalEngine = local_engine
        self.lock_timeout_seconds = lock_timeout_seconds
        self._server_client: Any = None
        self._local_clients: dict[str, Any] = {}
        self._edge: dict[str, _EdgeCollection] = {}
        self._confirmed: set[str] = set()  # client collections known to exist

    def __repr__(self) -> str:  # the api key never appears
        where = self.url if self.url else str(self.local_root)
        return f"VectorStore(mode={self.mode!r}, at={where!r}, api_key={'set' if self.api_key else None})"

    @property
    def mode(self) -> str:
        return "server" if self.url else "local"

    @property
    def engine(self) -> str:
        """ "server", "edge" (embedded Qdrant engine) or "client" (qdrant-client local mode)."""
        return "server" if self.url else self.local_engine

    def __enter__(self) -> "VectorStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release every client and local lock (best effort)."""
        for edge in self._edge.values():
            try:
                edge.close()
            except Exception:
                pass
        self._edge.clear()
        for client in [*self._local_clients.values(), self._server_client]:
            if client is not None:
                try:
                    client.close()
                except Exception:
                    pass
        self._local_clients.clear()
        self._server_client = None

    # -- plumbing ------------------------------------------------------------------------------------
    def _stored_name(self, collection: str) -> str:
        """The name on the server (namespaced by benchmark); local stores keep the name."""
        return f"{self.namespace}__{collection}" if self.namespace else collection

    def _path(self, collection: str) -> Path:
        assert self.local_root is not None
        return self.local_root / collection

    def _server(self) -> Any:
        if self._server_client is None:
            from qdrant_client import QdrantClient

            try:
                # no background version probe at construction: ping() reports the server's version
                self._server_client = QdrantClient(
                    url=self.url, api_key=self.api_key, timeout=self.timeout, check_compatibility=False
                )
            except Exception as exc:
                raise VectorStoreError(f"cannot open Qdrant at {self.url}: {exc}") from exc
        return self._server_client

    def client(self, collection: str) -> Any:
        """The qdrant-client for ``collection`` (server mode, or local_engine="client")."""
        if self.url:
            return self._server()
        if self.local_engine != "client":
            raise VectorStoreError("client() is for server mode or local_engine='client'; the embedded engine has none")
        if collection not in self._local_clients:
            from qdrant_client import QdrantClient

            path = self._path(collection)
            path.mkdir(parents=True, exist_ok=True)
            deadline = time.monotonic() + self.lock_timeout_seconds
            while True:
                try:
                    self._local_clients[collection] = QdrantClient(path=str(path))
                    break
                except Exception as exc:
                    if not _is_lock_error(exc) or time.monotonic() >= deadline:
                        raise VectorStoreError(f"cannot open the local Qdrant collection {path}: {exc}") from exc
                    time.sleep(0.2)
        return self._local_clients[collection]

    def _backend(
        self, collection: str, dimension: int | None = None, must_exist: bool = True
    ) -> _EdgeCollection | _ClientCollection:
        _validate_name(collection)
        if self.url or self.local_engine == "client":
            return self._client_backend(collection, must_exist)
        edge = self._edge.get(collection)
        if edge is None:
            edge = _EdgeCollection(self._path(collection), self.lock_timeout_seconds)
            edge.open(dimension, missing=self._missing(collection))
            self._edge[collection] = edge
        return edge

    def _client_backend(self, collection: str, must_exist: bool = True) -> _ClientCollection:
        """The collection through qdrant-client (a server, or its local mode)."""
        backend = _ClientCollection(self.client(collection), self._stored_name(collection), server=bool(self.url))
        if must_exist and collection not in self._confirmed:  # one existence round trip per collection
            if not self._call(collection, "check", backend.exists):
                raise VectorStoreError(self._missing(collection))
            self._confirmed.add(collection)
        return backend

    def _missing(self, collection: str) -> str:
        return (
            f"collection {collection} does not exist in {self.url or self.local_root}; materialize its "
            "chunk_collections partition first"
        )

    def _call(self, collection: str, what: str, action: Callable[..., Any], *args: Any) -> Any:
        """``action(*args)`` with any engine error turned into a VectorStoreError naming the collection; a full
        disk into a StorageError; damaged files of an embedded collection into a CorruptStateError (the
        collection moved aside)."""
        try:
            return action(*args)
        except (VectorStoreError, StorageError, CorruptStateError):
            raise
        except BaseException as exc:
            if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
                raise
            where = self._path(collection) if self.local_root is not None else Path(str(self.url))
            translated = storage_error(exc, where, f"the collection {collection}") if self.local_root else None
            if translated is not None:
                raise translated from exc
            edge = self._edge.get(collection)
            if edge is not None and _is_damage(exc):
                problem = f"{what} failed: {one_line(exc)}"
                del self._edge[collection]
                moved = edge.condemn(problem)
                raise CorruptStateError(
                    corrupt_message(edge.path, problem, moved), str(edge.path), str(moved) if moved else None
                ) from exc
            if not isinstance(exc, Exception):
                raise
            raise VectorStoreError(f"{what} in {collection} failed ({self.url or self.local_root}): {exc}") from exc

    def _exists(self, collection: str) -> bool:
        _validate_name(collection)
        if self.url or self.local_engine == "client":
            client = self.client(collection)
            return bool(
                self._call(collection, "existence check", client.collection_exists, self._stored_name(collection))
            )
        return collection in self._edge or _EdgeCollection.folder_exists(self._path(collection))

    # -- public API ----------------------------------------------------------------------------------
    def ensure_collection(self, collection: str, dimension: int) -> None:
        """Create ``collection`` (cosine, ``dimension``, payload indexes) or check the existing one's dimension."""
        if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
            raise VectorStoreError(f"dimension must be a positive integer, got {dimension!r}")
        if self._exists(collection):
            # (embedded engine) a damaged collection is moved aside and created anew: this is a build
            backend = self._backend(collection, dimension=dimension)
            size = self._call(collection, "reading the configuration", backend.dimension)
            if size is not None and size != dimension:
                raise VectorStoreError(
                    f"collection {collection} holds vectors of dimension {size}, the model has {dimension}; "
                    "wipe the collection (chunkbench collections wipe) or fix the registry entry"
                )
            return
        if self.url or self.local_engine == "client":
            client_backend = self._client_backend(collection, must_exist=False)
            self._call(collection, "creating the collection", client_backend.create, dimension)
            return
        path = self._path(collection)
        if (path / "meta.json").is_file() and not _EdgeCollection.folder_exists(path):
            # a collection written by qdrant-client's local mode (chunkbench before the embedded engine):
            # derived data that this materialization is about to rebuild anyway
            log.warning("replacing %s (a qdrant-client local-mode collection) with the embedded engine's", path)
            shutil.rmtree(path)
        self._backend(collection, dimension=dimension, must_exist=False)

    def space_needed(self, collection: str, chunks: Sequence[Chunk], dimension: int) -> dict[Path, int]:
        """{folder: bytes} that building ``collection`` from ``chunks`` writes at its peak, without the margin
        (nothing for a server: its disk is its own)."""
        if self.url or self.local_root is None:
            return {}
        payload = sum(json_bytes(chunk_payload(c)) for c in chunks)
        path = self._path(collection)
        if self.local_engine == "edge":
            return {path: edge_collection_bytes(len(chunks), dimension, payload, path)}
        return {path: len(chunks) * (dimension * 4 + 64) * 2 + 2 * payload}  # qdrant-client: SQLite + pickles

    def check_space(
        self, collection: str, chunks: Sequence[Chunk], dimension: int, also: dict[str | Path, int] | None = None
    ) -> None:
        """Raise :class:`StorageFullError` (one line: the folder, the space needed, the space free) unless there is
        room for building ``collection`` from ``chunks`` plus ``also`` ({folder: bytes}, e.g. the partition's
        Parquet rows). Call it before embedding, so nothing is spent on a build that cannot be stored."""
        needs: dict[str | os.PathLike[str], int] = {}
        for folder, size in [*self.space_needed(collection, chunks, dimension).items(), *(also or {}).items()]:
            needs[folder] = needs.get(folder, 0) + size
        ensure_spaces(needs, f"the collection {collection} ({len(chunks)} chunks)")

    def replace_points(self, collection: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> dict[str, int]:
        """Make the collection hold exactly ``chunks``; returns counts upserted and removed.

        The embedded engine's folder must have room for what the points write (checked first: a full disk
        under its memory maps is a signal). A collection found damaged while writing is moved aside and
        built again from these chunks, once."""
        try:
            return self._replace_points(collection, chunks, vectors)
        except CorruptStateError:
            if self.url or self.local_engine != "edge":
                raise
            self.ensure_collection(collection, int(np.asarray(vectors).shape[1]))
            return self._replace_points(collection, chunks, vectors)

    def _replace_points(self, collection: str, chunks: Sequence[Chunk], vectors: np.ndarray) -> dict[str, int]:
        vectors = np.asarray(vectors, dtype=np.float32)
        if len(chunks) != len(vectors):
            raise VectorStoreError(f"{collection}: {len(chunks)} chunks but {len(vectors)} vectors")
        backend = self._backend(collection)
        wanted = [point_id(c.chunk_id) for c in chunks]
        if len(set(wanted)) != len(wanted):
            check_unique_ids(chunks, collection)
            raise DuplicateIdError(f"{collection}: two chunks share a point id")  # pragma: no cover
        if isinstance(backend, _EdgeCollection) and len(chunks):
            payload = sum(json_bytes(chunk_payload(c)) for c in chunks)
            ensure_space(
                backend.path,
                edge_points_bytes(len(chunks), int(vectors.shape[1]), payload),
                f"writing {len(chunks)} vectors into the collection {collection}",
            )
        self._forget_vectors(collection)  # until the new points are all in, the copy would be stale
        tracker = Tracker("indexing", len(chunks), unit="chunks", only_when_long=True)
        for begin in range(0, len(chunks), UPSERT_BATCH):
            tracker.step(begin)
            end = min(begin + UPSERT_BATCH, len(chunks))
            payloads = [chunk_payload(chunks[i]) for i in range(begin, end)]
            self._call(collection, "upsert", backend.upsert, wanted[begin:end], vectors[begin:end], payloads)
        tracker.step(len(chunks))
        keep = set(wanted)
        stale = sorted(set(self.point_ids(collection)) - keep)
        for begin in range(0, len(stale), UPSERT_BATCH):
            part = stale[begin : begin + UPSERT_BATCH]
            self._call(collection, "delete", backend.delete, part)
        self._call(collection, "flush", backend.flush)
        self._keep_vectors(collection, wanted, vectors, [c.document for c in chunks])
        return {"upserted": len(wanted), "removed": len(stale)}

    def _vectors_file(self, collection: str) -> Path | None:
        """Where the embedded engine's collection keeps a copy of its vectors beside its folder (None for a
        server or qdrant-client's local mode): the engine hands vectors out as Python lists, about 0.1 ms each,
        so a batched search of a 65,000-chunk collection would spend seconds reading them."""
        if self.url or self.local_root is None or self.local_engine != "edge":
            return None
        return self.local_root / f".{collection}{_VECTORS}"

    def _forget_vectors(self, collection: str) -> None:
        path = self._vectors_file(collection)
        if path is not None:
            path.unlink(missing_ok=True)

    def _keep_vectors(self, collection: str, ids: Sequence[str], vectors: np.ndarray, documents: Sequence[str]) -> None:
        """Write the copy of a finished build's vectors (best effort: without it they are read from the engine)."""
        path = self._vectors_file(collection)
        if path is None:
            return
        scratch = path.with_name(path.name + ".tmp")
        try:
            with open(scratch, "wb") as handle:
                np.savez(
                    handle,
                    ids=np.asarray(list(ids), dtype=str),
                    vectors=np.asarray(vectors, dtype=np.float32),
                    documents=np.asarray(list(documents), dtype=str),
                )
            os.replace(scratch, path)
        except OSError as exc:
            scratch.unlink(missing_ok=True)
            log.info(
                "the copy of %s's vectors was not written (%s): a batched search reads them from the engine",
                collection,
                exc,
            )

    def point_ids(self, collection: str) -> list[str]:
        backend = self._backend(collection)
        return [pid for pid, _ in self._call(collection, "scroll", backend.scroll, None, False)]

    def count(self, collection: str) -> int:
        backend = self._backend(collection)
        return self._call(collection, "count", backend.count)

    def search(self, collection: str, vector: np.ndarray, top_k: int, document: str | None = None) -> list[SearchHit]:
        """The ``top_k`` nearest chunks by cosine (exact), optionally only those of ``document``."""
        if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
            raise VectorStoreError(f"top_k must be a positive integer, got {top_k!r}")
        backend = self._backend(collection)
        flt = backend.document_filter(document) if document is not None else None
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        hits = self._call(collection, "search", backend.search, query, top_k, flt)
        return [SearchHit(rank=i + 1, score=score, payload=payload) for i, (score, payload) in enumerate(hits)]

    def stored_vectors(self, collection: str) -> tuple[list[str], np.ndarray, list[str]]:
        """Every point of ``collection``: its id, its vector as the engine stores it (unit length for cosine) and
        its document, in the engine's order (what a batched exact search scores against)."""
        backend = self._backend(collection)
        path = self._vectors_file(collection)
        if path is not None and path.is_file():
            try:
                with np.load(path, allow_pickle=False) as kept:
                    ids, vectors, documents = kept["ids"].tolist(), kept["vectors"], kept["documents"].tolist()
                if len(ids) == self.count(collection) and vectors.shape == (len(ids), vectors.shape[1]):
                    return ids, vectors, documents
            except (OSError, ValueError, KeyError) as exc:
                log.info("the copy of %s's vectors cannot be read (%s): reading them from the engine", collection, exc)
        rows = self._call(collection, "reading the vectors", backend.vectors)
        dimension = self._call(collection, "reading the configuration", backend.dimension) or 0
        vectors = np.asarray([v for _, v, _ in rows], dtype=np.float32).reshape(len(rows), -1 if rows else dimension)
        return [pid for pid, _, _ in rows], vectors, [d for _, _, d in rows]

    def score_candidates(
        self, collection: str, vectors: np.ndarray, candidates: Sequence[Sequence[str]]
    ) -> list[list[tuple[str, float]]]:
        """For each query vector, the engine's own cosine scores of its candidate points (point ids): (point id,
        score), best first, the scores and order an exact search over the whole collection gives those points.
        One batched request per call, without payloads (:meth:`payloads_of_points` reads each hit point's once:
        the payloads of 20,000 questions' candidates took three times as long as their scoring)."""
        if len(vectors) != len(candidates):
            raise VectorStoreError(f"{collection}: {len(vectors)} query vectors but {len(candidates)} candidate lists")
        backend = self._backend(collection)
        queries = [np.asarray(v, dtype=np.float32).reshape(-1).tolist() for v in vectors]
        return self._call(collection, "search", backend.score_candidates, queries, candidates)

    def payloads_of_points(self, collection: str, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Point id -> payload of the given points (ids that are not stored are left out)."""
        wanted = list(dict.fromkeys(ids))
        backend = self._backend(collection)
        found: dict[str, dict[str, Any]] = {}
        for begin in range(0, len(wanted), SCROLL_PAGE):
            found.update(
                self._call(collection, "reading the payloads", backend.retrieve, wanted[begin : begin + SCROLL_PAGE])
            )
        return found

    def fetch_by_indices(self, collection: str, document: str, indices: Iterable[int]) -> list[dict[str, Any]]:
        """Payloads of the chunks of ``document`` with the given chunk_index values (neighbor fetch), in order."""
        wanted = sorted(set(int(i) for i in indices if int(i) >= 0))
        if not wanted:
            return []
        backend = self._backend(collection)
        flt = backend.document_filter(document, wanted)
        rows = self._call(collection, "neighbor fetch", backend.scroll, flt, True)
        return sorted((payload for _, payload in rows), key=lambda p: p["chunk_index"])

    def fetch_by_chunk_ids(self, collection: str, chunk_ids: Iterable[str]) -> list[dict[str, Any]]:
        """Payloads of the given chunk ids (e.g. the parents of semantic_parent_child hits), in the order
        given; ids that are not stored are left out."""
        wanted = list(dict.fromkeys(chunk_ids))
        if not wanted:
            return []
        backend = self._backend(collection)
        by_point: dict[str, dict[str, Any]] = {}
        for begin in range(0, len(wanted), SCROLL_PAGE):
            part = [point_id(c) for c in wanted[begin : begin + SCROLL_PAGE]]
            by_point.update(self._call(collection, "fetch by chunk id", backend.retrieve, part))
        return [by_point[point_id(c)] for c in wanted if point_id(c) in by_point]

    def payloads(self, collection: str) -> list[dict[str, Any]]:
        """Every point's payload (chunk id, document, offsets, text), in the engine's order: what a retriever
        with an index of its own (keywords) indexes."""
        backend = self._backend(collection)
        return [payload for _, payload in self._call(collection, "reading the payloads", backend.scroll, None, True)]

    def document_chunks(self, collection: str, document: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Every stored chunk payload of ``document`` in chunk_index order (chunk preview)."""
        backend = self._backend(collection)
        rows = self._call(collection, "preview", backend.scroll, backend.document_filter(document), True)
        ordered = sorted((payload for _, payload in rows), key=lambda p: p["chunk_index"])
        return ordered[:limit] if limit is not None else ordered

    def list_collections(self) -> list[str]:
        """Names of the collections in this store, sorted."""
        if self.url:
            client = self._server()
            response = self._call("the server", "listing collections", client.get_collections)
            prefix = f"{self.namespace}__" if self.namespace else ""
            return sorted(c.name[len(prefix) :] for c in response.collections if c.name.startswith(prefix))
        assert self.local_root is not None
        if not self.local_root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.local_root.iterdir()
            if p.is_dir() and _NAME.fullmatch(p.name) and not is_quarantined(p.name)
        )

    def collection_info(self, collection: str) -> CollectionInfo:
        backend = self._backend(collection)
        parts = split_collection_name(collection)
        location = self.url or str(self._path(collection))
        return CollectionInfo(
            name=collection,
            points=self._call(collection, "count", backend.count),
            dimension=self._call(collection, "reading the configuration", backend.dimension),
            strategy=parts[0] if parts else None,
            model=parts[1] if parts else None,
            location=location,
        )

    def wipe_points(self, collection: str) -> int:
        """Delete every point of ``collection`` (it stays, empty); returns how many were removed."""
        self._forget_vectors(collection)
        ids = self.point_ids(collection)
        backend = self._backend(collection)
        for begin in range(0, len(ids), UPSERT_BATCH):
            part = ids[begin : begin + UPSERT_BATCH]
            self._call(collection, "delete", backend.delete, part)
        self._call(collection, "flush", backend.flush)
        return len(ids)

    def delete_collection(self, collection: str) -> bool:
        """Remove ``collection`` entirely; False when it did not exist."""
        _validate_name(collection)
        self._confirmed.discard(collection)
        self._forget_vectors(collection)
        if self.url:
            client = self._server()
            return bool(
                self._call(collection, "delete collection", client.delete_collection, self._stored_name(collection))
            )
        path = self._path(collection)
        edge = self._edge.pop(collection, None)
        if edge is not None:
            edge.close()
        client = self._local_clients.pop(collection, None)
        if client is not None:
            client.close()
        if not path.exists():
            return False
        if self.local_engine == "edge" and _EdgeCollection.folder_exists(path):
            # take the collection's in-use lock first: never delete a collection another process is using
            holder = _EdgeCollection(path, self.lock_timeout_seconds)
            holder._hold("delete")
            try:
                shutil.rmtree(path)
                _EdgeCollection.use_file(path).unlink(missing_ok=True)
            finally:
                holder.close(clean=False)
            return True
        shutil.rmtree(path)
        return True

    def verify_collection(self, collection: str, expected_points: int | None = None, deep: bool = False) -> int:
        """Check that ``collection`` can be read and holds ``expected_points`` (the retrievable chunks of its
        build); returns its point count. ``deep`` (embedded engine): read every point, payload and vector in
        a child process. A damaged or incomplete embedded collection is moved aside and raises
        :class:`CorruptStateError` (permanent: its chunk_collections partition builds it again)."""
        if deep and not self.url and self.local_engine == "edge":
            path = self._path(collection)
            edge = self._edge.pop(collection, None)
            if edge is not None:
                edge.close()
            if not _EdgeCollection.folder_exists(path):
                raise VectorStoreError(self._missing(collection))
            holder = _EdgeCollection(path, self.lock_timeout_seconds)
            holder._hold("check")
            try:
                points, problem = probe_collection(path)
                if problem is not None:
                    moved = holder.condemn(problem)
                    raise CorruptStateError(
                        corrupt_message(path, problem, moved), str(path), str(moved) if moved else None
                    )
                holder._set_state({"state": "closed", "signature": _EdgeCollection.signature(path)})
            finally:
                holder.close(clean=False)
        count = self.count(collection)
        if expected_points is not None and count != expected_points:
            problem = f"it holds {count} points where its build stored {expected_points}"
            edge = self._edge.pop(collection, None)
            if edge is None:  # a server or qdrant-client's local mode: not chunkbench's files to move
                raise VectorStoreError(f"the collection {collection} {problem}; build it again ({REBUILT_BY})")
            moved = edge.condemn(problem)
            raise CorruptStateError(
                corrupt_message(edge.path, problem, moved), str(edge.path), str(moved) if moved else None
            )
        return count

    def ping(self) -> str:
        """A short description of the store when it answers; raises VectorStoreError otherwise."""
        if self.url:
            names = self.list_collections()
            client = self._server()
            try:
                version = client.info().version
            except Exception:  # older servers have no version endpoint; the listing answered
                version = "unknown"
            return f"Qdrant server {version} at {self.url}: {len(names)} collection(s)"
        assert self.local_root is not None
        if self.local_engine == "edge":
            try:
                import qdrant_edge  # noqa: F401  (imported only to see it is installed)
            except ImportError as exc:
                raise VectorStoreError("the embedded Qdrant engine needs the PyPI package qdrant-edge-py") from exc
        self.local_root.mkdir(parents=True, exist_ok=True)
        probe = self.local_root / ".write-test"
        try:
            probe.write_text("ok", encoding="utf-8")
            probe.unlink()
        except OSError as exc:
            raise VectorStoreError(f"the local Qdrant folder {self.local_root} is not writable: {exc}") from exc
        count = len(self.list_collections())
        return f"embedded Qdrant ({self.local_engine}) at {self.local_root}: {count} collection(s)"
