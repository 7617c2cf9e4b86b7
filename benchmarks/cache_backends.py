"""Embedding-cache lookups: the SQLite file of one machine vs the PostgreSQL cache that workers share.

    python benchmarks/cache_backends.py [--url postgresql://...] [--vectors 20000] [--rounds 3]

Without ``--url`` a throwaway PostgreSQL server is started on 127.0.0.1 (Debian's postgresql package,
as in the tests) and removed at the end. Both caches hold the same ``--vectors`` 384-dimensional
vectors; then, side by side in one run (rounds alternate the backends, the best round of each counts):

1. 1,000 lookups of one text each (``get_many`` with one key): the cost of a round trip;
2. 20 lookups of a batch of 1,000 texts: what the Embedder does per batch (one statement in
   PostgreSQL, counted and printed);
3. 20 stores of 1,000 new vectors; for PostgreSQL also the shared path, claim then store.

Prints the figures and the PostgreSQL / SQLite ratios. It measures, it sets no target: a local
PostgreSQL round trip costs more than a read of a local file; what the shared cache buys is that no
worker embeds a text another worker has embedded.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core.storage.cache_postgres import PostgresEmbeddingCache
from chunkbench_core.storage.embedding_cache import EmbeddingCache, text_key

DIMENSION = 384
NAMESPACE = "bench@1"


def best(rounds: int, work: Callable[[], None]) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def count_statements(cache: PostgresEmbeddingCache) -> Callable[[], int]:
    import psycopg2.extensions

    sent: list[str] = []

    class Counting(psycopg2.extensions.cursor):
        def execute(self, query, params=None):  # type: ignore[override]  # a stand-in cursor with the driver's call
            sent.append(query)
            return super().execute(query, params)

    cache._connection().cursor_factory = Counting
    return lambda: len(sent)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="an existing PostgreSQL database (default: a throwaway local server)")
    parser.add_argument("--vectors", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    server = None
    url = args.url
    if url is None:
        from tests.support.postgres import PostgresServer

        server = PostgresServer(database="bench")
        url = server.url
    rng = np.random.default_rng(5)
    keys = [text_key(f"benchmark text {i}") for i in range(args.vectors)]
    vectors = rng.random((args.vectors, DIMENSION), dtype=np.float32)
    singles = [keys[i] for i in rng.choice(len(keys), 1000, replace=False)]
    batches = [[keys[i] for i in rng.choice(len(keys), 1000, replace=False)] for _ in range(20)]
    fresh = iter(range(10**9))

    def new_batch() -> list[tuple[str, np.ndarray]]:
        return [(text_key(f"new text {next(fresh)}"), vectors[i % len(vectors)]) for i in range(1000)]

    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            EmbeddingCache(Path(tmp)) as sqlite,
            PostgresEmbeddingCache(url) as postgres,
        ):
            for cache in (sqlite, postgres):
                for begin in range(0, len(keys), 5000):
                    cache.put_many(NAMESPACE, zip(keys[begin : begin + 5000], vectors[begin : begin + 5000]), DIMENSION)
            statements = count_statements(postgres)
            before = statements()
            assert len(postgres.get_many(NAMESPACE, batches[0], DIMENSION)) == 1000
            per_batch = statements() - before

            def singles_of(cache) -> Callable[[], None]:
                return lambda: [cache.get_many(NAMESPACE, [key], DIMENSION) for key in singles]

            def batches_of(cache) -> Callable[[], None]:
                return lambda: [cache.get_many(NAMESPACE, batch, DIMENSION) for batch in batches]

            def stores_of(cache) -> Callable[[], None]:
                return lambda: [cache.put_many(NAMESPACE, new_batch(), DIMENSION) for _ in range(20)]

            def claims_and_stores() -> None:
                for _ in range(20):
                    items = new_batch()
                    found, mine = postgres.claim_many(NAMESPACE, [key for key, _ in items], DIMENSION)
                    assert not found and len(mine) == 1000
                    postgres.put_many(NAMESPACE, items, DIMENSION)

            figures: dict[str, dict[str, float]] = {}
            for name, make in (
                ("1,000 lookups of 1 text", lambda c: singles_of(c)),
                ("20 lookups of 1,000 texts", lambda c: batches_of(c)),
                ("20 stores of 1,000 vectors", lambda c: stores_of(c)),
            ):
                row = figures.setdefault(name, {"sqlite": float("inf"), "postgresql": float("inf")})
                for _ in range(args.rounds):  # alternate, so both see the same machine
                    row["sqlite"] = min(row["sqlite"], best(1, make(sqlite)))
                    row["postgresql"] = min(row["postgresql"], best(1, make(postgres)))
            claim_row = {"sqlite": float("nan"), "postgresql": best(args.rounds, claims_and_stores)}
            figures["20 claims + stores of 1,000 (shared path)"] = claim_row
    finally:
        if server is not None:
            server.stop()

    print(
        f"{args.vectors:,} vectors of {DIMENSION} floats in each cache; best of {args.rounds} rounds, "
        "backends alternating; PostgreSQL on 127.0.0.1"
    )
    print(f"statements per batch lookup of 1,000 texts (PostgreSQL): {per_batch}")
    print(f"{'':45} {'SQLite':>10} {'PostgreSQL':>11} {'ratio':>7}")
    for name, row in figures.items():
        sqlite_s, postgres_s = row["sqlite"], row["postgresql"]
        ratio = f"{postgres_s / sqlite_s:6.1f}x" if sqlite_s == sqlite_s else f"{'-':>7}"
        shown = f"{sqlite_s * 1000:8.0f} ms" if sqlite_s == sqlite_s else f"{'-':>11}"
        print(f"{name:45} {shown} {postgres_s * 1000:8.0f} ms {ratio}")
    single = figures["1,000 lookups of 1 text"]
    print(
        f"per lookup of one text: SQLite {single['sqlite'] * 1e3:.2f} ms per 1,000 "
        f"({single['sqlite'] * 1e6 / 1000:.0f} us each), PostgreSQL {single['postgresql'] * 1e6 / 1000:.0f} us each"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
