"""The embedding and contextual caches in PostgreSQL: one cache that many workers on many machines share.

Chosen by a cache URL (``postgresql://USER:PASSWORD@HOST:5432/DATABASE``, see
:func:`chunkbench_core.storage.embedding_cache.open_embedding_cache` and
:func:`chunkbench_core.storage.context_cache.open_context_cache`). The keys are the SQLite files' keys
(the model namespace and the sha256 of the prefix-applied text; the context key), the interface is
theirs, and a claim protocol makes sure that a text is embedded, and a context asked of the LLM, by one
worker only:

* One row per key. A row without a value is a *claim*: worker ``claimed_by`` is computing the value
  and holds the key until ``lease_until`` (the server's clock, so the workers' clocks do not matter).
  While a process holds claims, a thread renews their leases every third of the lease, so only the
  claims of a worker that died (or lost the database) expire.
* ``claim_many`` is one statement: it claims each key that has no row, takes over each expired claim,
  and returns the keys it claimed (this worker computes them) with the values already stored. A key in
  neither answer is being computed by a live worker, or by another thread of this one: ``await_many``
  waits for it, polling with backoff, and takes it over if its claim expires meanwhile.
* Storing a value fills the row and ends its claim in the same statement. A row that already holds a
  value keeps it: the first writer wins, so concurrent writers of one key do no harm and every worker
  reads the same value. ``release`` gives up claims (the embedding or the LLM call failed), so nobody
  waits a lease for them.

Why no text is computed twice: a claim is taken with ``INSERT ... ON CONFLICT``, which decides against
the newest committed row, not the statement's snapshot. A value stored after the statement began meets
a filled row, so its key is neither claimed nor (in that snapshot) found: it is awaited, and found by
the next poll. Keys are claimed and stored in sorted order, so two workers claiming overlapping batches
queue behind each other instead of deadlocking (a deadlock PostgreSQL still reports is retried).

One connection per process, opened on first use, in autocommit mode (each statement is its own short
transaction); reopened after a fork (the parent's connection is left untouched) or when the server went
away. Every method is thread-safe. The tables are created on first use, one process at a time. The
password is never logged, shown in a repr or put in an error.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from functools import partial
from collections.abc import MutableMapping
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from chunkbench_core.cache_url import (  # noqa: F401  (re-exported: the cache's callers name them here)
    SCHEMES,
    URL_FORM,
    CacheURL,
    CacheURLError,
    cache_location,
    parse_cache_url,
    redact_url,
)
from chunkbench_core.errors import StorageFullError
from chunkbench_core.redaction import redact

from .cache_errors import ContextCacheError, EmbeddingCacheError, NamespaceStats

DEFAULT_LEASE_SECONDS = 60.0
DEFAULT_WAIT_SECONDS = 1800.0
POLL_FIRST_SECONDS = 0.02
POLL_MAX_SECONDS = 0.5
# SQLSTATEs retried: the statement was rolled back whole (deadlock detected, serialization failure)
_RETRY_STATES = frozenset({"40P01", "40001"})
_RETRIES = 4
# SQLSTATEs of a full disk on the server (disk_full, out of memory is not one of them)
_FULL_STATES = frozenset({"53100"})
RECONNECT_SECONDS = 30.0  # how long a lost connection is tried again (a server restart)
# libpq options set unless the URL sets them: fail fast on a wrong host, notice a dead server
_CONNECT_DEFAULTS = {
    "connect_timeout": "10",
    "application_name": "chunkbench cache",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
}
_SCHEMA_LOCK = 0x6368_6B62  # advisory lock id held while one process creates the tables

T = TypeVar("T")
log = logging.getLogger("chunkbench")

EMBEDDING_TABLE = "chunkbench_embedding_vectors"
NAMESPACE_TABLE = "chunkbench_embedding_namespaces"
CONTEXT_TABLE = "chunkbench_contexts"

_EMBEDDING_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {NAMESPACE_TABLE} (
    namespace text PRIMARY KEY,
    model_id text NOT NULL,
    fingerprint text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {EMBEDDING_TABLE} (
    namespace text NOT NULL,
    text_sha256 text NOT NULL,
    dimension integer,
    vector bytea,
    created_at timestamptz NOT NULL DEFAULT now(),
    claimed_by text,
    lease_until timestamptz,
    -- the digest first: a batch lookup is an index search per key even before the table has statistics
    -- (led by the namespace, a fresh table's plan scanned the whole namespace)
    PRIMARY KEY (text_sha256, namespace),
    CHECK ((vector IS NULL) = (dimension IS NULL)),
    CHECK (vector IS NOT NULL OR (claimed_by IS NOT NULL AND lease_until IS NOT NULL))
);
-- float32 bytes do not compress: store them out of line without trying
ALTER TABLE {EMBEDDING_TABLE} ALTER COLUMN vector SET STORAGE EXTERNAL;
"""

_CONTEXT_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {CONTEXT_TABLE} (
    key text PRIMARY KEY,
    context text,
    created_at timestamptz NOT NULL DEFAULT now(),
    claimed_by text,
    lease_until timestamptz,
    CHECK (context IS NOT NULL OR (claimed_by IS NOT NULL AND lease_until IS NOT NULL))
);
"""


# the cache URL is read and checked with the settings (chunkbench_core/cache_url.py)

# --- one connection per process, leases renewed while claims are held ---------------------------------


class _SharedCache:
    """What both PostgreSQL caches share: the connection, the tables, retries and the claims' leases."""

    kind = "cache"
    schema = ""
    last_table = ""  # created last, in the same transaction as the rest: when it exists, all do
    error_type: type[EmbeddingCacheError] = EmbeddingCacheError

    def __init__(
        self,
        url: str | CacheURL,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> None:
        self.target = url if isinstance(url, CacheURL) else parse_cache_url(url)
        for name, value in (("lease_seconds", lease_seconds), ("wait_seconds", wait_seconds)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a number > 0, got {value!r}")
        self.lease_seconds = float(lease_seconds)
        self.wait_seconds = float(wait_seconds)
        self._lock = threading.RLock()
        self._con: Any = None
        self._pid: int | None = None
        self._owner = ""
        self._held: dict[str, set[str]] = {}  # namespace -> keys this process claimed and has not stored
        self._heartbeat: threading.Thread | None = None
        self._after_fork()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target.redacted!r})"

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def owner(self) -> str:
        """Who this process is in ``claimed_by``: host, process id and a random token (a pid can be reused)."""
        self._check_fork()
        return self._owner

    def _after_fork(self) -> None:
        self._pid = os.getpid()
        self._owner = f"{socket.gethostname()}:{self._pid}:{secrets.token_hex(4)}"
        self._held = {}
        self._heartbeat = None

    def _check_fork(self) -> None:
        if self._pid != os.getpid():  # a forked child: its own lock, connection, identity and claims
            self._lock = threading.RLock()
            if self._con is not None:
                _let_go(self._con)
            self._con = None
            self._after_fork()

    def _error(self, what: str, exc: BaseException | str) -> Exception:
        detail = exc if isinstance(exc, str) else (str(exc).strip() or type(exc).__name__)
        detail = redact(" ".join(detail.split()), [self.target.password])
        if getattr(exc, "pgcode", None) in _FULL_STATES:  # the server's disk (or quota) is full: permanent
            return StorageFullError(
                f"the PostgreSQL server of the {self.kind} ({self.target.redacted}) has no space "
                f"left: {what} failed ({detail}); free space on the server and run again",
                self.target.redacted,
                None,
                None,
            )
        return self.error_type(f"{self.kind} {self.target.redacted}: {what} failed: {detail}")

    def close(self) -> None:
        """Give up this process's claims (nobody waits for them) and close its connection."""
        self._check_fork()
        with self._lock:
            held, self._held = self._held, {}
            if self._con is not None and not self._con.closed:
                try:
                    for namespace, keys in held.items():
                        with self._con.cursor() as cursor:
                            self._release(cursor, namespace, sorted(keys))
                except Exception:  # noqa: BLE001 - the claims expire with their lease anyway
                    pass
                self._con.close()
            self._con = None

    def _connect(self) -> Any:
        try:
            import psycopg2
        except ImportError:
            raise self.error_type(
                f"{self.kind} {self.target.redacted} needs the PostgreSQL driver psycopg2: "
                "pip install 'chunkbench[postgres]'"
            ) from None
        options = {**_CONNECT_DEFAULTS, **self.target.options}
        try:
            con = psycopg2.connect(**options)
        except psycopg2.Error as exc:
            raise self.error_type(
                f"cannot open the {self.kind} {self.target.redacted}: "
                + redact(" ".join(str(exc).split()), [self.target.password])
            ) from None
        try:
            con.autocommit = True
            self._create_tables(con)
        except psycopg2.Error as exc:
            con.close()
            raise self._error("creating its tables", exc) from None
        except BaseException:
            con.close()
            raise
        return con

    def _create_tables(self, con: Any) -> None:
        with con.cursor() as cursor:
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", (self.last_table,))
            if cursor.fetchone()[0]:
                return
            cursor.execute("BEGIN")
            try:  # CREATE TABLE IF NOT EXISTS races with itself: one process at a time
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                cursor.execute(self.schema)
                cursor.execute("COMMIT")
            except BaseException:
                cursor.execute("ROLLBACK")
                raise

    def _connection(self) -> Any:
        if self._con is None or self._con.closed:
            self._con = None
            self._con = self._connect()
        return self._con

    def _run(self, what: str, work: Callable[[Any], T]) -> T:
        """``work(cursor)`` on this process's connection.

        Retried when PostgreSQL rolled it back whole (a deadlock between workers), and when the server
        went away (a restart, a failover): reconnecting is tried for ``RECONNECT_SECONDS``. A server that
        cannot be reached at the first connection fails at once (a wrong URL should not wait)."""
        import psycopg2

        self._check_fork()
        attempt, lost_at = 0, None
        while True:
            with self._lock:
                try:
                    con = self._connection()
                except EmbeddingCacheError:
                    if lost_at is None or time.monotonic() - lost_at > RECONNECT_SECONDS:
                        raise
                    con = None
                if con is not None:
                    try:
                        with con.cursor() as cursor:
                            return work(cursor)
                    except psycopg2.Error as exc:
                        if not con.closed:
                            try:  # leave no transaction open after a failed BEGIN ... COMMIT
                                with con.cursor() as cursor:
                                    cursor.execute("ROLLBACK")
                            except psycopg2.Error:
                                pass
                        if con.closed:
                            self._con = None
                            lost_at = lost_at if lost_at is not None else time.monotonic()
                        elif exc.pgcode not in _RETRY_STATES or attempt >= _RETRIES:
                            raise self._error(what, exc) from None
                        if lost_at is not None and time.monotonic() - lost_at > RECONNECT_SECONDS:
                            raise self._error(what, exc) from None
            attempt += 1
            time.sleep(min(0.05 * 2**attempt, 2.0))

    # claims held by this process, and the heartbeat that renews their leases

    def _hold(self, namespace: str, keys: Iterable[str]) -> None:
        keys = set(keys)
        if not keys:
            return
        with self._lock:
            self._held.setdefault(namespace, set()).update(keys)
            if self._heartbeat is None:
                self._heartbeat = threading.Thread(
                    target=self._beat, name=f"chunkbench {self.kind} leases", daemon=True
                )
                self._heartbeat.start()

    def _drop(self, namespace: str, keys: Iterable[str]) -> None:
        with self._lock:
            held = self._held.get(namespace)
            if held is not None:
                held.difference_update(keys)
                if not held:
                    del self._held[namespace]

    def held(self) -> int:
        """How many keys this process has claimed and not yet stored or released."""
        self._check_fork()
        with self._lock:
            return sum(len(keys) for keys in self._held.values())

    def _beat(self) -> None:
        """Renew this process's leases every third of a lease; ends when it holds no claim."""
        pid = os.getpid()
        while True:
            time.sleep(self.lease_seconds / 3)
            with self._lock:
                if self._pid != pid or os.getpid() != pid or not self._held:
                    if self._pid == pid:
                        self._heartbeat = None
                    return
                held = {namespace: sorted(keys) for namespace, keys in self._held.items()}
            try:
                self._run("renewing leases", partial(self._renew_held, held))
            except EmbeddingCacheError:  # the next beat tries again; a lease only runs out if every beat fails
                pass

    def _renew_held(self, held: dict[str, list[str]], cursor: Any) -> None:
        """Renew the leases of every key held, in one transaction (``held``: namespace -> keys)."""
        for namespace, keys in held.items():
            self._renew(cursor, namespace, keys)

    def _renew(self, cursor: Any, namespace: str, keys: list[str]) -> None:
        raise NotImplementedError

    def _release(self, cursor: Any, namespace: str, keys: list[str]) -> int:
        raise NotImplementedError

    def _wait(self, started: float, delay: float, what: Callable[[], str]) -> float:
        """Sleep before the next poll (backoff); an error once ``wait_seconds`` have passed."""
        if time.monotonic() + delay - started > self.wait_seconds:
            raise self.error_type(
                f"{self.kind} {self.target.redacted}: waited {self.wait_seconds:.0f} s for "
                f"{what()}; that worker is alive (it renews its claims) but stores nothing: "
                "look at it, or stop it and its claims expire"
            )
        time.sleep(delay)
        return min(delay * 2, POLL_MAX_SECONDS)


def _let_go(con: Any) -> None:
    """Drop a connection inherited through fork without ending the parent's session on it.

    Closing it would send PostgreSQL's goodbye on the socket the parent still uses; so the child's copy of
    the socket is swapped for /dev/null first, then closed (the parent's copy stays open)."""
    try:
        fd = con.fileno()
        devnull = os.open(os.devnull, os.O_RDWR)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
        con.close()
    except Exception:  # noqa: BLE001 - nothing of the parent's is touched either way
        pass


# --- the embedding cache ------------------------------------------------------------------------------

_CLAIM_VECTORS = f"""
WITH claimed AS (
    INSERT INTO {EMBEDDING_TABLE} AS v (namespace, text_sha256, claimed_by, lease_until)
    SELECT %(namespace)s, k.key, %(owner)s, now() + make_interval(secs => %(lease)s)
    FROM (SELECT DISTINCT unnest(%(keys)s::text[]) AS key) AS k
    ORDER BY k.key
    ON CONFLICT (text_sha256, namespace) DO UPDATE
    SET claimed_by = EXCLUDED.claimed_by, lease_until = EXCLUDED.lease_until, dimension = NULL, vector = NULL,
        created_at = now()
    WHERE (v.vector IS NULL AND v.lease_until < now())
       OR (v.vector IS NOT NULL AND (v.dimension <> %(dimension)s OR length(v.vector) <> %(size)s))
    RETURNING v.text_sha256
)
SELECT text_sha256, NULL::bytea FROM claimed
UNION ALL
SELECT text_sha256, vector FROM {EMBEDDING_TABLE}
WHERE namespace = %(namespace)s AND text_sha256 = ANY(%(keys)s::text[])
  AND dimension = %(dimension)s AND length(vector) = %(size)s
"""

# Waiting: which keys are stored (their vector) and which are free to claim (no row, an expired claim,
# a vector of the wrong size); keys under a live claim are left out. Read-only: polling locks nothing.
_POLL_VECTORS = f"""
SELECT k.key, CASE WHEN v.dimension = %(dimension)s AND length(v.vector) = %(size)s THEN v.vector END
FROM unnest(%(keys)s::text[]) AS k(key)
LEFT JOIN {EMBEDDING_TABLE} v ON v.namespace = %(namespace)s AND v.text_sha256 = k.key
WHERE v.text_sha256 IS NULL OR v.vector IS NOT NULL OR v.lease_until < now()
"""

_PUT_VECTORS = f"""
INSERT INTO {EMBEDDING_TABLE} AS v (namespace, text_sha256, dimension, vector)
SELECT %(namespace)s, k.key, %(dimension)s, substring(%(blob)s FROM (k.n - 1)::integer * %(size)s + 1 FOR %(size)s)
FROM unnest(%(keys)s::text[]) WITH ORDINALITY AS k(key, n)
ORDER BY k.key
ON CONFLICT (text_sha256, namespace) DO UPDATE
SET dimension = EXCLUDED.dimension, vector = EXCLUDED.vector, created_at = now(), claimed_by = NULL,
    lease_until = NULL
WHERE v.vector IS NULL OR v.dimension <> EXCLUDED.dimension OR length(v.vector) <> length(EXCLUDED.vector)
"""


class PostgresEmbeddingCache(_SharedCache):
    """The embedding cache in a PostgreSQL database that many workers share (same methods as EmbeddingCache).

    ``claim_many``, ``await_many`` and ``release`` let the Embedder embed each text on one worker only;
    ``lease_seconds``: how long a claim outlives a worker that stopped renewing it; ``wait_seconds``: how
    long to wait for a live worker's claim before giving up with an error.
    """

    kind = "embedding cache"
    schema = _EMBEDDING_SCHEMA
    last_table = EMBEDDING_TABLE
    error_type = EmbeddingCacheError

    def __init__(
        self,
        url: str | CacheURL,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        wait_seconds: float = DEFAULT_WAIT_SECONDS,
    ) -> None:
        super().__init__(url, lease_seconds=lease_seconds, wait_seconds=wait_seconds)
        self._registered: set[str] = set()

    def register(self, namespace: str, model_id: str, fingerprint: str) -> None:
        """Record what a namespace is (for ``stats`` and people reading the table)."""
        if namespace in self._registered:
            return
        self._run(
            "registering a model",
            lambda cursor: cursor.execute(
                f"INSERT INTO {NAMESPACE_TABLE} (namespace, model_id, fingerprint) VALUES (%s, %s, %s) "
                "ON CONFLICT (namespace) DO NOTHING",
                (namespace, model_id, fingerprint),
            ),
        )
        self._registered.add(namespace)

    def get_many(self, namespace: str, keys: Sequence[str], dimension: int) -> dict[str, np.ndarray]:
        """The stored vectors of ``keys`` (text digests), as float32 rows: one round trip, however many keys."""
        unique = list(dict.fromkeys(keys))
        if not unique:
            return {}

        def read(cursor: Any) -> list[tuple]:
            # a row whose vector's length disagrees with its dimension is damaged: left out (so it is
            # embedded again, and the new vector replaces it) and counted, for a warning
            cursor.execute(
                f"SELECT text_sha256, CASE WHEN length(vector) = %s THEN vector END FROM {EMBEDDING_TABLE} "
                "WHERE namespace = %s AND text_sha256 = ANY(%s::text[]) AND dimension = %s "
                "AND vector IS NOT NULL",
                (4 * dimension, namespace, unique, dimension),
            )
            return cursor.fetchall()

        found: dict[str, np.ndarray] = {}
        damaged: list[str] = []
        for key, blob in self._run("reading", read):
            vector = _vector(blob) if blob is not None else None
            if vector is None or not np.isfinite(vector).all():
                damaged.append(key)
            else:
                found[key] = vector
        if damaged:
            log.warning(
                "embedding cache %s: %d stored vector(s) of %s have the wrong length or non-finite values "
                "(first: text digest %s); they are embedded again and replaced",
                self,
                len(damaged),
                namespace,
                damaged[0],
            )
        return found

    def damaged_rows(self, repair: bool = False) -> int:
        """How many stored vectors are damaged (their length disagrees with their dimension); ``repair``
        deletes them (they are embedded again when next needed). For ``chunkbench doctor``."""
        condition = "vector IS NOT NULL AND length(vector) <> 4 * dimension"

        def count(cursor: Any) -> int:
            if repair:
                cursor.execute(f"DELETE FROM {EMBEDDING_TABLE} WHERE {condition}")
                return int(cursor.rowcount)
            cursor.execute(f"SELECT count(*) FROM {EMBEDDING_TABLE} WHERE {condition}")
            return int(cursor.fetchone()[0])

        return self._run("checking stored vectors", count)

    def put_many(self, namespace: str, items: Iterable[tuple[str, np.ndarray]], dimension: int) -> int:
        """Store vectors under their text digests (ends this worker's claims on them); returns how many were given.

        A key that already holds a vector of this dimension keeps it (the first writer wins)."""
        given = 0
        rows: dict[str, bytes] = {}
        for key, vector in items:
            array = np.ascontiguousarray(vector, dtype=np.float32)
            if array.shape != (dimension,):
                raise EmbeddingCacheError(f"embedding cache: vector of shape {array.shape}, expected ({dimension},)")
            rows.setdefault(key, array.astype("<f4", copy=False).tobytes())
            given += 1
        if not rows:
            return 0
        keys = list(rows)
        params = {
            "namespace": namespace,
            "dimension": dimension,
            "size": 4 * dimension,
            "keys": keys,
            "blob": b"".join(rows.values()),
        }
        self._run("writing", lambda cursor: cursor.execute(_PUT_VECTORS, params))
        self._drop(namespace, keys)
        return given

    def claim_many(
        self, namespace: str, keys: Sequence[str], dimension: int
    ) -> tuple[dict[str, np.ndarray], list[str]]:
        """One statement: (the stored vectors of ``keys``, the keys this worker now has to embed).

        Claimed are keys nobody holds: no row, an expired claim, a vector of the wrong size. Keys in neither
        answer are being embedded by another worker (or thread): :meth:`await_many` waits for them."""
        unique = list(dict.fromkeys(keys))
        if not unique:
            return {}, []
        params = {
            "namespace": namespace,
            "keys": unique,
            "dimension": dimension,
            "size": 4 * dimension,
            "owner": self.owner,
            "lease": self.lease_seconds,
        }

        def claim(cursor: Any) -> list[tuple]:
            cursor.execute(_CLAIM_VECTORS, params)
            return cursor.fetchall()

        found: dict[str, np.ndarray] = {}
        mine: list[str] = []
        for key, blob in self._run("claiming", claim):
            if blob is None:
                mine.append(key)
            else:
                found[key] = _vector(blob)
        self._hold(namespace, mine)
        return found, _in_order(mine, unique)

    def await_many(
        self, namespace: str, keys: Sequence[str], dimension: int
    ) -> tuple[dict[str, np.ndarray], list[str]]:
        """Wait until ``keys`` (claimed by other workers) are stored, or some claim expires and becomes ours.

        Returns (vectors found, keys claimed) as soon as one key is claimed (embed it, then call again for
        the rest) or every key is stored. Polls a read-only query with backoff (20 ms to 0.5 s); raises
        EmbeddingCacheError after ``wait_seconds`` without progress."""
        rest = list(dict.fromkeys(keys))
        found: dict[str, np.ndarray] = {}
        started, delay = time.monotonic(), POLL_FIRST_SECONDS
        params = {"namespace": namespace, "dimension": dimension, "size": 4 * dimension}

        def poll(cursor: Any) -> list[tuple]:
            cursor.execute(_POLL_VECTORS, {**params, "keys": rest})
            return cursor.fetchall()

        while rest:
            free = []
            progress = False
            for key, blob in self._run("waiting", poll):
                if blob is None:
                    free.append(key)
                else:
                    found[key] = _vector(blob)
                    progress = True
            if free:
                got, mine = self.claim_many(namespace, free, dimension)
                found.update(got)
                if mine:
                    return found, mine
                progress = progress or bool(got)
            rest = [key for key in rest if key not in found]
            if not rest:
                break
            if progress:
                started, delay = time.monotonic(), POLL_FIRST_SECONDS
            delay = self._wait(started, delay, partial(self._describe_claims, namespace, rest))
        return found, []

    def release(self, namespace: str, keys: Sequence[str]) -> int:
        """Give up this worker's claims on ``keys`` (it will not embed them); returns how many were held."""
        unique = sorted(set(keys))
        if not unique:
            return 0
        released = self._run("releasing claims", lambda cursor: self._release(cursor, namespace, unique))
        self._drop(namespace, unique)
        return released

    def _release(self, cursor: Any, namespace: str, keys: list[str]) -> int:
        cursor.execute(
            f"DELETE FROM {EMBEDDING_TABLE} WHERE namespace = %s AND text_sha256 = ANY(%s::text[]) "
            "AND vector IS NULL AND claimed_by = %s",
            (namespace, keys, self._owner),
        )
        return int(cursor.rowcount)

    def _renew(self, cursor: Any, namespace: str, keys: list[str]) -> None:
        cursor.execute(
            f"UPDATE {EMBEDDING_TABLE} SET lease_until = now() + make_interval(secs => %s) "
            "WHERE namespace = %s AND text_sha256 = ANY(%s::text[]) AND vector IS NULL "
            "AND claimed_by = %s",
            (self.lease_seconds, namespace, keys, self._owner),
        )

    def _describe_claims(self, namespace: str, keys: list[str]) -> str:
        def who(cursor: Any) -> list[tuple]:
            cursor.execute(
                f"SELECT claimed_by, count(*) FROM {EMBEDDING_TABLE} WHERE namespace = %s "
                "AND text_sha256 = ANY(%s::text[]) AND vector IS NULL GROUP BY 1 ORDER BY 2 DESC",
                (namespace, keys),
            )
            return cursor.fetchall()

        try:
            claims = ", ".join(f"{n} claimed by {owner}" for owner, n in self._run("reading claims", who))
        except EmbeddingCacheError:
            claims = ""
        return f"{len(keys)} text(s) another worker is embedding ({claims or 'claims gone'})"

    def stats(self) -> list[NamespaceStats]:
        """Vectors and bytes per namespace (claims not counted)."""

        def read(cursor: Any) -> list[tuple]:
            cursor.execute(
                f"SELECT v.namespace, coalesce(n.model_id, ''), count(*), sum(length(v.vector)) "
                f"FROM {EMBEDDING_TABLE} v LEFT JOIN {NAMESPACE_TABLE} n USING (namespace) "
                "WHERE v.vector IS NOT NULL GROUP BY 1, 2 ORDER BY 1"
            )
            return cursor.fetchall()

        return [NamespaceStats(ns, model, int(n), int(size or 0)) for ns, model, n, size in self._run("reading", read)]

    def clear(self, model_id: str | None = None) -> int:
        """Delete the vectors (and claims) of one model id (every namespace of it), or all; returns vectors deleted."""

        def delete(cursor: Any) -> int:
            cursor.execute("BEGIN")
            if model_id is None:
                cursor.execute(f"DELETE FROM {NAMESPACE_TABLE}")
                cursor.execute(f"DELETE FROM {EMBEDDING_TABLE} WHERE vector IS NOT NULL")
                deleted = cursor.rowcount
                cursor.execute(f"DELETE FROM {EMBEDDING_TABLE}")
            else:
                prefix = f"{model_id}@"
                cursor.execute(f"DELETE FROM {NAMESPACE_TABLE} WHERE model_id = %s", (model_id,))
                cursor.execute(
                    f"DELETE FROM {EMBEDDING_TABLE} WHERE left(namespace, %s) = %s RETURNING vector IS NOT NULL",
                    (len(prefix), prefix),
                )
                deleted = sum(1 for (stored,) in cursor.fetchall() if stored)
            cursor.execute("COMMIT")
            return int(deleted)

        deleted = self._run("clearing", delete)
        self._registered.clear()
        return deleted


def _vector(blob: Any) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype="<f4").astype(np.float32)


def _in_order(subset: list[str], order: list[str]) -> list[str]:
    wanted = set(subset)
    return [key for key in order if key in wanted]


# --- the contextual-context cache ---------------------------------------------------------------------

_CLAIM_CONTEXT = f"""
WITH claimed AS (
    INSERT INTO {CONTEXT_TABLE} AS c (key, claimed_by, lease_until)
    VALUES (%(key)s, %(owner)s, now() + make_interval(secs => %(lease)s))
    ON CONFLICT (key) DO UPDATE SET claimed_by = EXCLUDED.claimed_by, lease_until = EXCLUDED.lease_until,
        created_at = now()
    WHERE c.context IS NULL AND c.lease_until < now()
    RETURNING c.key
)
SELECT (SELECT context FROM {CONTEXT_TABLE} WHERE key = %(key)s AND context IS NOT NULL),
       EXISTS (SELECT 1 FROM claimed)
"""

_POLL_CONTEXT = f"""
SELECT context, context IS NULL AND lease_until < now(), claimed_by FROM {CONTEXT_TABLE} WHERE key = %s
"""


class PostgresContextCache(_SharedCache, MutableMapping):
    """The contextual-context cache in a PostgreSQL database that many workers share.

    A ``{key: context}`` mapping like ContextCache, plus :meth:`claim` / :meth:`release`, which
    LLMContext uses so that one worker asks the LLM for a context and the others wait for its answer.
    A stored context is never replaced by a later write (every worker must read the same context for a
    key); delete it to replace it."""

    kind = "contextual cache"
    schema = _CONTEXT_SCHEMA
    last_table = CONTEXT_TABLE
    error_type = ContextCacheError

    def __getitem__(self, key: str) -> str:
        def read(cursor: Any) -> Any:
            cursor.execute(f"SELECT context FROM {CONTEXT_TABLE} WHERE key = %s AND context IS NOT NULL", (key,))
            return cursor.fetchone()

        row = self._run("reading", read)
        if row is None:
            raise KeyError(key)
        return row[0]

    def __setitem__(self, key: str, context: str) -> None:
        if not isinstance(context, str):
            raise ContextCacheError(f"contextual cache: a context is text, got {type(context).__name__}")
        self._run(
            "writing",
            lambda cursor: cursor.execute(
                f"INSERT INTO {CONTEXT_TABLE} AS c (key, context) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                "SET context = EXCLUDED.context, claimed_by = NULL, lease_until = NULL, created_at = now() "
                "WHERE c.context IS NULL",
                (key, context),
            ),
        )
        self._drop("", [key])

    def __delitem__(self, key: str) -> None:
        def delete(cursor: Any) -> int:
            cursor.execute(f"DELETE FROM {CONTEXT_TABLE} WHERE key = %s AND context IS NOT NULL", (key,))
            return int(cursor.rowcount)

        if not self._run("deleting", delete):
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        def read(cursor: Any) -> list[tuple]:
            cursor.execute(f"SELECT key FROM {CONTEXT_TABLE} WHERE context IS NOT NULL ORDER BY key")
            return cursor.fetchall()

        return iter([row[0] for row in self._run("listing", read)])

    def __len__(self) -> int:
        def count(cursor: Any) -> int:
            cursor.execute(f"SELECT count(*) FROM {CONTEXT_TABLE} WHERE context IS NOT NULL")
            return int(cursor.fetchone()[0])

        return self._run("counting", count)

    def clear(self) -> None:
        """Delete every context (and claim) in one statement."""
        self._run("clearing", lambda cursor: cursor.execute(f"DELETE FROM {CONTEXT_TABLE}"))

    def claim(self, key: str) -> str | None:
        """The stored context of ``key``, or None when this worker now holds the key and must ask the LLM.

        When another worker holds it, waits for its answer (polling with backoff), or takes the key over
        when its claim expires. A stored context costs one read-only round trip, a free key two."""
        params = {"key": key, "owner": self.owner, "lease": self.lease_seconds}

        def claim(cursor: Any) -> tuple:
            cursor.execute(_CLAIM_CONTEXT, params)
            return cursor.fetchone()

        def poll(cursor: Any) -> Any:
            cursor.execute(_POLL_CONTEXT, (key,))
            return cursor.fetchone()

        started, delay = time.monotonic(), POLL_FIRST_SECONDS
        while True:
            row = self._run("reading", poll)  # (context, claim expired, claimed by), or None: no row
            if row is not None and row[0] is not None:
                return row[0]
            if row is None or row[1]:
                context, mine = self._run("claiming", claim)
                if context is not None:
                    return context
                if mine:
                    self._hold("", [key])
                    return None
                continue  # another worker claimed it first: wait for it
            holder = row[2]
            delay = self._wait(started, delay, partial("the context that {} is asking the LLM for".format, holder))

    def release(self, key: str) -> bool:
        """Give up this worker's claim on ``key`` (the LLM call failed); True if it held one."""
        released = self._run("releasing a claim", lambda cursor: self._release(cursor, "", [key]))
        self._drop("", [key])
        return bool(released)

    def _release(self, cursor: Any, namespace: str, keys: list[str]) -> int:
        cursor.execute(
            f"DELETE FROM {CONTEXT_TABLE} WHERE key = ANY(%s::text[]) AND context IS NULL AND claimed_by = %s",
            (keys, self._owner),
        )
        return int(cursor.rowcount)

    def _renew(self, cursor: Any, namespace: str, keys: list[str]) -> None:
        cursor.execute(
            f"UPDATE {CONTEXT_TABLE} SET lease_until = now() + make_interval(secs => %s) "
            "WHERE key = ANY(%s::text[]) AND context IS NULL AND claimed_by = %s",
            (self.lease_seconds, keys, self._owner),
        )
