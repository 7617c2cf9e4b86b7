"""Damaged cache entries are embedded again and replaced; a damaged cache file is moved aside."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from chunkbench_core.doctor import doctor
from chunkbench_core.storage.embedding_cache import EmbeddingCache


def test_a_sqlite_vector_of_the_wrong_length_is_a_miss_with_a_warning_and_doctor_deletes_it(tmp_path, caplog):
    path = tmp_path / "embedding_cache.sqlite"
    with EmbeddingCache(path) as cache:
        cache.put_many("model@1", [("good", np.ones(8, np.float32)), ("bad", np.ones(8, np.float32))], 8)
    con = sqlite3.connect(str(path))
    con.execute("UPDATE vectors SET vector = x'00112233' WHERE text_sha256 = 'bad'")
    con.commit()
    con.close()
    caplog.set_level(logging.WARNING, logger="chunkbench")
    with EmbeddingCache(path) as cache:
        assert list(cache.get_many("model@1", ["good", "bad"], 8)) == ["good"]
    assert any("wrong length" in r.getMessage() and "model@1" in r.getMessage() for r in caplog.records)
    results = tmp_path / "benchmark"
    found = doctor(results, caches=[path]).findings
    assert [(f.path, f.problem) for f in found] == [
        (str(path), "1 stored vector(s) whose length disagrees with their dimension")
    ]
    assert doctor(results, caches=[path], repair=True).findings[0].repaired
    assert doctor(results, caches=[path]).healthy
    with EmbeddingCache(path) as cache:  # the good one stays
        assert list(cache.get_many("model@1", ["good", "bad"], 8)) == ["good"]


@pytest.mark.slow
def test_a_postgres_row_of_the_wrong_length_is_embedded_again_and_replaced(cache_url, caplog):
    import psycopg2

    from chunkbench_core.storage.cache_postgres import EMBEDDING_TABLE, PostgresEmbeddingCache

    cache = PostgresEmbeddingCache(cache_url)
    try:
        cache.put_many("model@1", [("good", np.ones(8, np.float32)), ("bad", np.ones(8, np.float32))], 8)
        con = psycopg2.connect(cache_url.replace(":Hunter2-s3cret", ""))
        con.autocommit = True
        with con.cursor() as cursor:
            cursor.execute(f"UPDATE {EMBEDDING_TABLE} SET vector = '\\x00112233'::bytea WHERE text_sha256 = 'bad'")
        con.close()
        caplog.set_level(logging.WARNING, logger="chunkbench")
        assert list(cache.get_many("model@1", ["good", "bad"], 8)) == ["good"]
        assert any("wrong length" in r.getMessage() and "bad" in r.getMessage() for r in caplog.records)
        assert "Hunter2" not in caplog.text
        assert cache.damaged_rows() == 1
        found = doctor(Path("/nonexistent-benchmark"), caches=[cache]).findings
        assert [f.problem for f in found] == ["1 stored vector(s) whose length disagrees with their dimension"]
        assert "Hunter2" not in found[0].path
        # a worker that needs the text claims it (the damaged vector counts as missing), embeds it, stores it
        stored, mine = cache.claim_many("model@1", ["good", "bad"], 8)
        assert list(stored) == ["good"] and mine == ["bad"]
        cache.put_many("model@1", [("bad", np.full(8, 2, np.float32))], 8)
        assert cache.damaged_rows() == 0
        assert np.array_equal(cache.get_many("model@1", ["bad"], 8)["bad"], np.full(8, 2, np.float32))
    finally:
        cache.close()
