"""Content-addressed cache of contextual_retrieval's LLM contexts: one SQLite file, WAL mode.

A context is stored under a key made of the chat model, its endpoint, the prompt version
(the prompt templates and generation settings) and the document and chunk texts
(:meth:`chunkbench_core.chunking.LLMContext.cache_key`), so a rebuild, a sweep or another
strategy run never pays the LLM twice for the same question, and a changed prompt or model
never serves an old answer. Like the embedding cache (``embedding_cache.py``): any number of
processes read and write at once, each write is one short transaction, one connection per
process opened on first use. The file is ``CHUNKBENCH_HOME/contextual_cache.sqlite``; workers on
several machines share one PostgreSQL cache instead (``cache_postgres.py``): :func:`open_context_cache`
opens either from one setting, the cache URL. A damaged file is moved aside with a warning and the cache
starts again empty (contexts are asked of the LLM again), as the embedding cache does.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from .cache_errors import ContextCacheError
from .embedding_cache import SQLiteCacheFile

if TYPE_CHECKING:  # pragma: no cover
    from .cache_postgres import CacheURL, PostgresContextCache

CACHE_FILE = "contextual_cache.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS contexts (
    key TEXT PRIMARY KEY,
    context TEXT NOT NULL,
    created_at REAL NOT NULL
) WITHOUT ROWID;
"""


class ContextCache(SQLiteCacheFile, MutableMapping):
    """A process-safe ``{key: context}`` mapping in one SQLite file (pass it as ``LLMContext(cache=...)``)."""

    kind = "contextual cache"
    rebuilt = "the contextual cache starts again empty: contexts are asked of the LLM again as needed"
    error_class = ContextCacheError

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

    def __repr__(self) -> str:
        return f"ContextCache({str(self.path)!r})"

    def __enter__(self) -> "ContextCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._con is not None and self._pid == os.getpid():
                self._con.close()
            self._con = None

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(
            str(self.path), timeout=self.busy_timeout_seconds, isolation_level=None, check_same_thread=False
        )
        try:
            con.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_seconds * 1000)}")
            mode = con.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                mode = con.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise ContextCacheError(
                    f"{self.path}: SQLite could not switch to WAL mode (got {mode}); "
                    "put CHUNKBENCH_HOME on a local filesystem"
                )
            con.execute("PRAGMA synchronous = NORMAL")
            con.executescript(_SCHEMA)
        except BaseException:
            con.close()
            raise
        return con

    def _run(self, what: str, sql: str, params: tuple = (), write: bool = False) -> list[tuple]:
        """One statement; a damaged file is moved aside, then a read finds nothing and a write goes to the
        new file."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    return self._connection().execute(sql, params).fetchall()
                except sqlite3.Error as exc:
                    if attempt == 1 and self._recovered(exc):
                        if write:
                            continue
                        return []
                    raise self._failure(what, exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def __getitem__(self, key: str) -> str:
        rows = self._run("read", "SELECT context FROM contexts WHERE key = ?", (key,))
        if not rows:
            raise KeyError(key)
        return rows[0][0]

    def __setitem__(self, key: str, context: str) -> None:
        self._run("write", "INSERT OR REPLACE INTO contexts VALUES (?, ?, ?)", (key, context, time.time()), write=True)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._run("delete", "DELETE FROM contexts WHERE key = ?", (key,), write=True)

    def __iter__(self) -> Iterator[str]:
        return iter([row[0] for row in self._run("list", "SELECT key FROM contexts ORDER BY key")])

    def __len__(self) -> int:
        rows = self._run("count", "SELECT count(*) FROM contexts")
        return int(rows[0][0]) if rows else 0


def default_context_cache_path(home: str | os.PathLike[str] | None = None) -> Path:
    """``CHUNKBENCH_HOME/contextual_cache.sqlite``."""
    from chunkbench_core import settings

    return settings.home_dir(home) / CACHE_FILE


def open_context_cache(
    location: "str | os.PathLike[str] | CacheURL | None" = None, *, home: str | os.PathLike[str] | None = None
) -> "ContextCache | PostgresContextCache":
    """The contextual cache a setting names: unset, ``CHUNKBENCH_HOME/contextual_cache.sqlite``; a path, that
    SQLite file (or ``contextual_cache.sqlite`` in that folder); a ``postgresql://USER:PASSWORD@HOST:5432/DATABASE``
    URL, the cache that many workers share in that database (one URL serves both caches: their tables differ).

    Both are ``{key: context}`` mappings. Nothing connects here; a malformed URL raises at once, saying
    what is wrong without showing the password.
    """
    from .cache_postgres import CacheURL, PostgresContextCache, cache_location

    where = cache_location(location)
    if isinstance(where, CacheURL):
        return PostgresContextCache(where)
    return ContextCache(where if where is not None else default_context_cache_path(home))
