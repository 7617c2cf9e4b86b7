"""Content-addressed embedding cache: (model namespace, sha256 of the prefix-applied text) -> vector.

Identical texts across strategies, sweeps and re-runs are embedded once. The cache is
one SQLite file under CHUNKBENCH_HOME (``embedding_cache.sqlite``) in WAL mode: any
number of processes (parallel partition runs) read and write it at once; each write
is one short transaction, so a run that dies keeps every batch it finished. No
connection is shared between processes (one per process, opened on first use).

The namespace is the model id plus a fingerprint of what produces its vectors
(provider, model name, dimension, engine package versions): editing a registry entry
or upgrading an engine never serves old vectors.

A cache file that SQLite finds damaged is moved aside (``embedding_cache.sqlite.corrupt-<time>``, with a
warning) and the cache starts again empty: a lookup that meets the damage finds nothing (the texts are
embedded again), a write goes to the new file. A full disk is a :class:`StorageFullError` (permanent).

SQLite's WAL needs a local filesystem (not NFS/SMB) for its shared-memory index. Workers on
several machines share one PostgreSQL cache instead (``cache_postgres.py``):
:func:`open_embedding_cache` opens either from one setting, the cache URL.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import numpy as np

from .cache_errors import EmbeddingCacheError, NamespaceStats
from .integrity import Identity, is_sqlite_corruption, one_line, quarantine, sqlite_companions
from .space import storage_error

if TYPE_CHECKING:  # pragma: no cover
    from .cache_postgres import CacheURL, PostgresEmbeddingCache

log = logging.getLogger("chunkbench")

CACHE_FILE = "embedding_cache.sqlite"
_QUERY_CHUNK = 500
_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    namespace TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    vector BLOB NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (namespace, text_sha256)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS namespaces (
    namespace TEXT PRIMARY KEY,
    model_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


class SQLiteCacheFile:
    """What both SQLite caches share: one connection per process, opened on first use; a damaged file moved
    aside and replaced by an empty one; a full disk reported as such. Subclasses set ``kind`` (in messages),
    ``rebuilt`` (what happens after a move), ``error_class`` and ``_open``."""

    kind = "cache"
    rebuilt = "the cache starts again empty"
    error_class: type[Exception] = EmbeddingCacheError

    path: Path
    busy_timeout_seconds: float
    _con: sqlite3.Connection | None
    _pid: int | None
    _identity: Identity | None = None

    def _open(self) -> sqlite3.Connection:  # pragma: no cover - subclasses
        raise NotImplementedError

    def _opened(self) -> None:
        """Called after a new connection: forget what belongs to the old one."""

    def _connection(self) -> sqlite3.Connection:
        if self._con is not None and self._pid == os.getpid():
            return self._con
        # A connection inherited through fork is never used: open our own. Opening races
        # with other processes creating the same file: switching to WAL and creating the
        # schema take locks for which SQLite does not always call its busy handler, so
        # "database is locked" while opening is retried until the busy timeout runs out.
        for attempt in (1, 2):
            found = Identity.of(self.path, inode_only=True)
            try:
                con = open_retrying(self._open, self.busy_timeout_seconds, lambda exc: exc)
            except sqlite3.Error as exc:
                if attempt == 1 and is_sqlite_corruption(exc):
                    self._move_aside(exc, found)
                    continue
                raise self._failure("opening", exc) from exc
            except OSError as exc:
                raise self._failure("opening", exc) from exc
            break
        self._con, self._pid = con, os.getpid()
        self._identity = Identity.of(self.path, inode_only=True)
        self._opened()
        return con

    def _drop_connection(self) -> None:
        if self._con is not None and self._pid == os.getpid():
            try:
                self._con.close()
            except sqlite3.Error:
                pass
        self._con = None
        self._opened()

    def _move_aside(self, exc: BaseException, found: Identity | None) -> None:
        quarantine(
            self.path, f"SQLite: {one_line(exc)}", self.rebuilt, found=found, companions=sqlite_companions(self.path)
        )

    def _recovered(self, exc: BaseException) -> bool:
        """When ``exc`` says the file is damaged: close this process's connection, move the file aside (unless
        another process already did) and return True; the next use opens a new file."""
        if not is_sqlite_corruption(exc):
            return False
        found = self._identity
        self._drop_connection()
        self._move_aside(exc, found)
        return True

    def _failure(self, what: str, exc: BaseException) -> Exception:
        """The error to raise for ``exc``: a full disk or an I/O error as such, else the cache's own error."""
        translated = storage_error(exc, self.path, f"the {self.kind} {self.path.name}")
        if translated is not None:
            return translated
        if what == "opening":
            return self.error_class(f"cannot open the {self.kind} {self.path}: {exc}")
        return self.error_class(f"{self.kind} {self.path}: {what} failed: {exc}")


def text_key(text: str) -> str:
    """sha256 hex digest of the UTF-8 text (the text as the model sees it, prefix included)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache(SQLiteCacheFile):
    """A process-safe vector cache in one SQLite file. Use one instance per process."""

    kind = "embedding cache"
    rebuilt = "the embedding cache starts again empty: texts are embedded again as needed"
    error_class = EmbeddingCacheError

    def __init__(self, path: str | os.PathLike[str], busy_timeout_seconds: float = 120.0) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            self.path = self.path / CACHE_FILE
        if busy_timeout_seconds <= 0:
            raise ValueError(f"busy_timeout_seconds must be > 0, got {busy_timeout_seconds}")
        self.busy_timeout_seconds = busy_timeout_seconds
        self._con: sqlite3.Connection | None = None
        self._pid: int | None = None
        self._lock = threading.Lock()
        self._registered: set[str] = set()

    def __repr__(self) -> str:
        return f"EmbeddingCache({str(self.path)!r})"

    def __enter__(self) -> "EmbeddingCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._con is not None and self._pid == os.getpid():
                self._con.close()
            self._con = None
            self._registered.clear()

    def _opened(self) -> None:
        self._registered.clear()

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(
            str(self.path), timeout=self.busy_timeout_seconds, isolation_level=None, check_same_thread=False
        )
        try:
            con.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_seconds * 1000)}")
            mode = con.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":  # WAL is persistent: only the first opener switches
                mode = con.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise EmbeddingCacheError(
                    f"{self.path}: SQLite could not switch to WAL mode (got {mode}); "
                    "put CHUNKBENCH_HOME on a local filesystem"
                )
            con.execute("PRAGMA synchronous = NORMAL")
            con.executescript(_SCHEMA)
        except BaseException:
            con.close()
            raise
        return con

    def _write(self, what: str, statements: Callable[[sqlite3.Connection], int]) -> int:
        """Run ``statements`` in one IMMEDIATE transaction (rolled back on error); caller holds the lock.
        A damaged file is moved aside and the transaction runs again on a new one."""
        for attempt in (1, 2):
            con = self._connection()
            try:
                con.execute("BEGIN IMMEDIATE")
                result = statements(con)
                con.execute("COMMIT")
                return result
            except sqlite3.Error as exc:
                try:
                    con.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                if attempt == 1 and self._recovered(exc):
                    continue
                raise self._failure(what, exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def register(self, namespace: str, model_id: str, fingerprint: str) -> None:
        """Record what a namespace is (for ``stats`` and humans reading the file)."""
        with self._lock:
            if namespace in self._registered:
                return
            self._write(
                "registering a model",
                lambda con: (
                    con.execute(
                        "INSERT OR IGNORE INTO namespaces VALUES (?, ?, ?, ?)",
                        (namespace, model_id, fingerprint, time.time()),
                    ).rowcount
                ),
            )
            self._registered.add(namespace)

    def get_many(self, namespace: str, keys: Sequence[str], dimension: int) -> dict[str, np.ndarray]:
        """The cached vectors of ``keys`` (text digests) that exist, as float32 rows."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        damaged = 0
        with self._lock:
            try:
                con = self._connection()
                for begin in range(0, len(unique), _QUERY_CHUNK):
                    part = unique[begin : begin + _QUERY_CHUNK]
                    marks = ",".join("?" * len(part))
                    rows = con.execute(
                        "SELECT text_sha256, dimension, vector FROM vectors "
                        f"WHERE namespace = ? AND text_sha256 IN ({marks})",
                        (namespace, *part),
                    ).fetchall()
                    for key, dim, blob in rows:
                        if dim == dimension and isinstance(blob, bytes) and len(blob) == 4 * dimension:
                            vector = np.frombuffer(blob, dtype=np.float32).copy()
                            if np.isfinite(vector).all():
                                found[key] = vector
                                continue
                        if dim == dimension:
                            damaged += 1
            except sqlite3.Error as exc:
                if self._recovered(exc):
                    return {}  # a new, empty cache: every text is embedded again
                raise self._failure("reading", exc) from exc
        if damaged:
            log.warning(
                "embedding cache %s: %d stored vector(s) of %s had the wrong length or non-finite values; "
                "they are embedded again and replaced",
                self.path,
                damaged,
                namespace,
            )
        return found

    def put_many(self, namespace: str, items: Iterable[tuple[str, np.ndarray]], dimension: int) -> int:
        """Store vectors under their text digests in one transaction; returns how many were given."""
        now = time.time()
        rows = []
        for key, vector in items:
            array = np.ascontiguousarray(vector, dtype=np.float32)
            if array.shape != (dimension,):
                raise EmbeddingCacheError(f"embedding cache: vector of shape {array.shape}, expected ({dimension},)")
            rows.append((namespace, key, dimension, array.tobytes(), now))
        if not rows:
            return 0
        with self._lock:
            self._write(
                "writing",
                lambda con: con.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)", rows).rowcount,
            )
        return len(rows)

    def stats(self) -> list[NamespaceStats]:
        """Vectors and bytes per namespace."""
        with self._lock:
            try:
                rows = (
                    self._connection()
                    .execute(
                        "SELECT v.namespace, coalesce(n.model_id, ''), count(*), sum(length(v.vector)) "
                        "FROM vectors v LEFT JOIN namespaces n USING (namespace) GROUP BY 1, 2 ORDER BY 1"
                    )
                    .fetchall()
                )
            except sqlite3.Error as exc:
                if self._recovered(exc):
                    return []
                raise self._failure("reading", exc) from exc
        return [NamespaceStats(ns, model, int(n), int(size or 0)) for ns, model, n, size in rows]

    def clear(self, model_id: str | None = None) -> int:
        """Delete the vectors of one model id (every namespace of it), or all; returns rows deleted."""

        def delete(con: sqlite3.Connection) -> int:
            if model_id is None:
                con.execute("DELETE FROM namespaces")
                return con.execute("DELETE FROM vectors").rowcount
            prefix = f"{model_id}@"
            con.execute("DELETE FROM namespaces WHERE model_id = ?", (model_id,))
            return con.execute("DELETE FROM vectors WHERE substr(namespace, 1, ?) = ?", (len(prefix), prefix)).rowcount

        with self._lock:
            deleted = self._write("clearing", delete)
            self._registered.clear()
        return int(deleted)


def open_retrying(
    open_connection: Callable[[], sqlite3.Connection],
    busy_timeout_seconds: float,
    error: Callable[[Exception], Exception],
) -> sqlite3.Connection:
    """``open_connection()``, retried with backoff while the file is busy, up to the busy timeout.

    Opening races with other processes creating the same file: switching to WAL and creating the
    schema take locks for which SQLite does not always call its busy handler. Any other failure,
    or one past the timeout, raises ``error(exc)``.
    """
    deadline = time.monotonic() + busy_timeout_seconds
    delay = 0.01
    while True:
        try:
            return open_connection()
        except sqlite3.Error as exc:
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc) and time.monotonic() + delay <= deadline:
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
                continue
            failure = error(exc)
            if failure is exc:
                raise
            raise failure from exc


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def default_cache_path(home: str | os.PathLike[str] | None = None) -> Path:
    """``CHUNKBENCH_HOME/embedding_cache.sqlite``."""
    from chunkbench_core import settings

    return settings.home_dir(home) / CACHE_FILE


def open_embedding_cache(
    location: "str | os.PathLike[str] | CacheURL | None" = None, *, home: str | os.PathLike[str] | None = None
) -> "EmbeddingCache | PostgresEmbeddingCache":
    """The embedding cache a setting names: unset, ``CHUNKBENCH_HOME/embedding_cache.sqlite``; a path, that
    SQLite file (or ``embedding_cache.sqlite`` in that folder); a ``postgresql://USER:PASSWORD@HOST:5432/DATABASE``
    URL, the cache that many workers share in that database.

    Both have the same methods. Nothing connects here (the first lookup does); a malformed URL raises
    ConfigError at once (a setting to fix), saying what is wrong without showing the password.
    """
    from .cache_postgres import CacheURL, PostgresEmbeddingCache, cache_location

    where = cache_location(location)
    if isinstance(where, CacheURL):
        return PostgresEmbeddingCache(where)
    return EmbeddingCache(where if where is not None else default_cache_path(home))
