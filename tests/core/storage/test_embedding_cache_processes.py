"""Many processes opening one brand-new embedding cache file at the same instant.

Regression: the first opener switches the file to WAL while others try to as well;
SQLite answers "database is locked" without waiting, which once failed a parallel
partition run in CI. Every opener must get through and every vector must be stored.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from chunkbench_core.storage.embedding_cache import EmbeddingCache

PROJECT = Path(__file__).resolve().parents[3]
OPENERS = 8
ROUNDS = 4

OPEN_AND_WRITE = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    from chunkbench_core.storage.embedding_cache import EmbeddingCache, text_key
    cache_path, worker, go = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    Path(f"{go}.{worker}").touch()
    while not go.exists():
        pass
    with EmbeddingCache(cache_path, busy_timeout_seconds=30) as cache:
        cache.register("m@1", "m", "fp")
        shared = [(text_key(f"shared {i}"), np.full(4, i, np.float32)) for i in range(50)]
        own = [(text_key(f"worker {worker} text {i}"), np.full(4, worker, np.float32)) for i in range(50)]
        cache.put_many("m@1", shared + own, 4)
""")


@pytest.mark.slow
def test_simultaneous_first_opens_of_one_cache_file_all_succeed(tmp_path):
    for round_ in range(ROUNDS):
        cache_path, go = tmp_path / f"cache{round_}.sqlite", tmp_path / f"go{round_}"
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AND_WRITE, str(cache_path), str(w), str(go)],
                cwd=PROJECT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in range(OPENERS)
        ]
        deadline = time.monotonic() + 120
        while not all(Path(f"{go}.{w}").exists() for w in range(OPENERS)):
            assert time.monotonic() < deadline, "workers never got ready"
            time.sleep(0.01)
        go.touch()
        for process in workers:
            _, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
        with EmbeddingCache(cache_path) as cache:
            [stats] = cache.stats()
            assert stats.vectors == 50 + 50 * OPENERS  # shared texts once, each worker's own once
            assert stats.model_id == "m"


def test_clear_and_put_report_row_counts(tmp_path):
    with EmbeddingCache(tmp_path) as cache:
        assert cache.put_many("a@1", [("k1", np.ones(3)), ("k2", np.zeros(3))], 3) == 2
        assert cache.put_many("b@1", [("k1", np.ones(3))], 3) == 1
        assert cache.clear("a") == 2
        assert [s.namespace for s in cache.stats()] == ["b@1"]
        assert cache.clear() == 1 and cache.stats() == []
