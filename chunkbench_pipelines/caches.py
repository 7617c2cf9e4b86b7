"""The caches of this process: one shared (PostgreSQL) cache per URL, closed when the process ends.

A ``postgresql://`` cache URL (CHUNKBENCH_CACHE_URL) names one cache that every worker shares. Each process
keeps one cache object per URL and kind (embeddings, contexts): one connection, one heartbeat renewing
its claims; :func:`close_caches` gives up the claims and closes the connection, at exit or when a Celery
worker process shuts down. SQLite caches (a folder, or nothing) are opened per use as before: their
files live on this machine.
"""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path
from typing import Any, Callable

from chunkbench_core.settings import home_dir
from chunkbench_core.storage.cache_postgres import CacheURL, cache_location

_OPEN: dict[tuple[str, str, int], Any] = {}
_LOCK = threading.Lock()


def _shared(kind: str, url: CacheURL, make: Callable[[CacheURL], Any]) -> Any:
    key = (kind, url.url, os.getpid())  # a forked child opens its own
    with _LOCK:
        cache = _OPEN.get(key)
        if cache is None:
            cache = _OPEN[key] = make(url)
        return cache


def embedding_cache(location: str | None, home: str | None):
    """The embedding cache that ``location`` (the cache URL setting) names; unset: the SQLite file in ``home``."""
    from chunkbench_core.storage.embedding_cache import EmbeddingCache, default_cache_path, open_embedding_cache

    return _cache("embedding", location, default_cache_path(home_dir(home)), EmbeddingCache, open_embedding_cache)


def context_cache(location: str | None, home: str | None):
    """The contextual cache that ``location`` names; unset: the SQLite file in ``home``."""
    from chunkbench_core.storage.context_cache import ContextCache, default_context_cache_path, open_context_cache

    return _cache("context", location, default_context_cache_path(home_dir(home)), ContextCache, open_context_cache)


def _cache(
    kind: str, location: str | None, default: Path, local: Callable[[Path], Any], open_cache: Callable[[Any], Any]
) -> Any:
    """A cache of ``kind``: shared per process for a PostgreSQL URL, ``local(default)`` when no location is set,
    else the SQLite file at (or in the folder) ``location``."""
    where = cache_location(location)
    if isinstance(where, CacheURL):
        return _shared(kind, where, open_cache)
    if where is None:
        return local(default)
    return open_cache(_in_folder(Path(where), default.name))


def _in_folder(path: Path, name: str) -> Path:
    """A folder (existing or not) holds the cache file ``name``; a ``.sqlite`` path or an existing file is the file."""
    return path if path.suffix == ".sqlite" or path.is_file() else path / name


def close_caches() -> None:
    """Close this process's shared caches (their claims are given up: nobody waits a lease for them)."""
    with _LOCK:
        mine = [key for key in _OPEN if key[2] == os.getpid()]
        caches = [_OPEN.pop(key) for key in mine]
    for cache in caches:
        try:
            cache.close()
        except Exception:  # noqa: BLE001 - ending anyway; the claims expire with their lease
            pass


atexit.register(close_caches)
