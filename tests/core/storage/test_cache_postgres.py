"""The caches that many workers share: PostgreSQL on 127.0.0.1, next to the SQLite files of one machine.

What is proven here: one setting picks the backend and a bad URL is refused without showing its
password; both backends keep the same things behind the same methods; a batch lookup, claim and store
are one statement each; concurrent writers of one key do no harm; each text is embedded, and each
context asked of the LLM, exactly once across real processes and across threads (counted at the
engine and at the LLM); a worker killed with SIGKILL holds its texts only until its lease ends, while
a live worker keeps them; a failed embedding or LLM call gives its claims back at once; a lost
connection is reopened (a server restart is waited for) and a forked child never ends its parent's session.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback
from pathlib import Path

import numpy as np
import pytest

from chunkbench_core.chunking.contextual_retrieval import LLMContext
from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.embedding.providers import cache_namespace
from chunkbench_core.errors import ChunkingError
from chunkbench_core.storage.cache_postgres import (
    CacheURLError,
    PostgresContextCache,
    PostgresEmbeddingCache,
)
from chunkbench_core.storage.context_cache import ContextCache, ContextCacheError, open_context_cache
from chunkbench_core.storage.embedding_cache import (
    EmbeddingCacheError,
    open_embedding_cache,
    text_key,
)
from tests.support.postgres import free_port

PROJECT = Path(__file__).resolve().parents[3]
MODEL = "all-minilm-l6-v2"
SECRET = "Hunter2-s3cret"  # the password in every URL here (conftest.cache_url)


def run_worker(script: str, *args: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def start_together(workers: list[subprocess.Popen], ready: list[Path], go: Path, timeout: float = 120) -> None:
    """Wait until every worker has loaded and connected, then let them all go at once."""
    deadline = time.monotonic() + timeout
    while not all(path.exists() for path in ready):
        for worker in workers:
            if worker.poll() is not None:
                raise AssertionError(f"a worker ended before the start: {worker.communicate()[1]}")
        assert time.monotonic() < deadline, "workers never got ready"
        time.sleep(0.01)
    go.touch()


def finish(workers: list[subprocess.Popen], timeout: float = 300) -> None:
    for worker in workers:
        _, err = worker.communicate(timeout=timeout)
        assert worker.returncode == 0, err


# --- one setting ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (f"mysql://me:{SECRET}@db:3306/cache", "unsupported scheme 'mysql'"),
        (f"postgresql://me:{SECRET}@db:54x2/cache", "the port is not a number"),
        (f"postgresql://me:{SECRET}@db:5432", "names no database"),
        ("postgresql://me:Hunter2/s3cret@db:5432/cache", "not percent-encoded"),
        (f"postgres:me:{SECRET}@db/cache", "expected postgresql://USER:PASSWORD@HOST:5432/DATABASE"),
        (f"postgresql://me:{SECRET}@db/cache?sslmode", "name=value"),
    ],
)
def test_a_bad_cache_url_is_refused_saying_why_and_never_showing_the_password(url, reason):
    for open_cache in (open_embedding_cache, open_context_cache):
        with pytest.raises(CacheURLError, match=re.escape(reason)) as info:
            open_cache(url)
        assert "Hunter2" not in str(info.value) and "s3cret" not in str(info.value)
        assert "[redacted]" in str(info.value)


def test_one_setting_picks_the_backend(tmp_path):
    home = tmp_path / "home"
    assert open_embedding_cache(None, home=home).path == home / "embedding_cache.sqlite"
    assert open_embedding_cache("  ", home=home).path == home / "embedding_cache.sqlite"
    assert open_context_cache(None, home=home).path == home / "contextual_cache.sqlite"
    assert open_embedding_cache(str(tmp_path / "e.sqlite")).path == tmp_path / "e.sqlite"
    assert open_embedding_cache(tmp_path).path == tmp_path / "embedding_cache.sqlite"  # a folder
    assert isinstance(open_context_cache(tmp_path / "c.sqlite"), ContextCache)
    for scheme in ("postgresql", "postgres", "POSTGRESQL"):
        url = f"{scheme}://me:{SECRET}@db.internal:5433/cache?sslmode=require"
        embeddings, contexts = open_embedding_cache(url), open_context_cache(url)
        assert isinstance(embeddings, PostgresEmbeddingCache) and isinstance(contexts, PostgresContextCache)
        for cache in (embeddings, contexts):  # nothing connected yet, and the password shows nowhere
            assert SECRET not in repr(cache) and SECRET not in str(cache.target) and SECRET not in repr(cache.target)
            assert "db.internal:5433/cache" in repr(cache)
        assert embeddings.target.options == {
            "sslmode": "require",
            "host": "db.internal",
            "port": "5433",
            "user": "me",
            "password": SECRET,
            "dbname": "cache",
        }
    assert open_embedding_cache("postgresql://me:p%40ss%2Fw@db/cache").target.password == "p@ss/w"
    target = open_embedding_cache(f"postgresql://me:{SECRET}@db/cache").target  # a parsed URL is taken as it is
    assert open_context_cache(target).target.password == SECRET


def test_an_unreachable_server_is_named_without_the_password(postgres_server):
    port = free_port()  # nothing listens there
    cache = open_embedding_cache(f"postgresql://me:{SECRET}@127.0.0.1:{port}/cache")
    with pytest.raises(EmbeddingCacheError) as info:
        cache.get_many("m@1", ["k"], 3)
    message = "".join(traceback.format_exception(info.value))
    assert "cannot open the embedding cache" in message and f"127.0.0.1:{port}/cache" in message
    assert SECRET not in message
    with pytest.raises(ContextCacheError, match="cannot open the contextual cache"):
        open_context_cache(f"postgresql://me:{SECRET}@127.0.0.1:{port}/cache").get("k")


# --- the same interface --------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def embedding_cache(request, tmp_path):
    location = tmp_path if request.param == "sqlite" else request.getfixturevalue("cache_url")
    with open_embedding_cache(location) as cache:
        yield cache


@pytest.fixture(params=["sqlite", "postgresql"])
def context_cache(request, tmp_path):
    location = tmp_path if request.param == "sqlite" else request.getfixturevalue("cache_url")
    cache = open_context_cache(location)
    yield cache
    cache.close()


def test_both_backends_keep_vectors_by_namespace_and_text_digest(embedding_cache):
    cache = embedding_cache
    cache.register("m@1", "m", "fp")
    cache.register("m@1", "m", "fp")  # again: harmless
    keys = [text_key(f"text {i}") for i in range(1200)]  # more than one SQLite statement's worth
    vectors = np.random.default_rng(7).random((1200, 8), dtype=np.float32)
    assert cache.put_many("m@1", zip(keys, vectors), 8) == 1200
    got = cache.get_many("m@1", keys + [text_key("never stored")], 8)
    assert set(got) == set(keys)
    assert all(np.array_equal(got[key], vector) and got[key].dtype == np.float32 for key, vector in zip(keys, vectors))
    assert cache.get_many("m@1", keys[:3], 16) == {}  # another dimension is a miss
    assert cache.get_many("other@1", keys[:3], 8) == {}
    cache.put_many("n@2", [(keys[0], np.ones(8))], 8)
    assert [(s.namespace, s.model_id, s.vectors, s.bytes) for s in cache.stats()] == [
        ("m@1", "m", 1200, 1200 * 32),
        ("n@2", "", 1, 32),
    ]
    with pytest.raises(EmbeddingCacheError, match=r"shape \(3,\), expected \(8,\)"):
        cache.put_many("m@1", [("k", np.ones(3))], 8)
    assert cache.clear("m") == 1200 and [s.namespace for s in cache.stats()] == ["n@2"]
    assert cache.clear() == 1 and cache.stats() == []


def test_both_backends_are_a_mapping_of_contexts(context_cache):
    cache = context_cache
    cache["a"] = "the first section, on rivers"
    cache["b"] = "the appendix"
    assert cache["a"] == "the first section, on rivers" and cache.get("z") is None
    assert len(cache) == 2 and sorted(cache) == ["a", "b"] and "b" in cache and "z" not in cache
    del cache["a"]
    with pytest.raises(KeyError):
        del cache["a"]
    with pytest.raises(KeyError):
        cache["a"]  # noqa: B018  (the lookup is what must raise)
    assert dict(cache) == {"b": "the appendix"}


# --- PostgreSQL: round trips, concurrent writers -------------------------------------------------------


def count_statements(cache):
    """Counts the statements the cache sends from now on (its own connection's cursors)."""
    import psycopg2.extensions

    sent = []

    class Counting(psycopg2.extensions.cursor):
        def execute(self, query, params=None):
            sent.append(query)
            return super().execute(query, params)

    cache._connection().cursor_factory = Counting
    return lambda: len(sent)


def test_a_batch_lookup_claim_and_store_are_one_statement_each(cache_url):
    with PostgresEmbeddingCache(cache_url) as cache:
        cache.stats()  # connected, tables created
        sent = count_statements(cache)
        keys = [text_key(f"text {i}") for i in range(5000)]
        assert cache.get_many("m@1", keys, 4) == {} and sent() == 1
        found, mine = cache.claim_many("m@1", keys, 4)
        assert found == {} and mine == keys and cache.held() == 5000 and sent() == 2
        assert cache.put_many("m@1", [(key, np.full(4, i, np.float32)) for i, key in enumerate(keys)], 4) == 5000
        assert sent() == 3 and cache.held() == 0
        got = cache.get_many("m@1", keys, 4)
        assert len(got) == 5000 and got[keys[4321]].tolist() == [4321.0] * 4 and sent() == 4
        found, mine = cache.claim_many("m@1", keys[:10] + [text_key("new")], 4)
        assert sorted(found) == sorted(keys[:10]) and mine == [text_key("new")] and sent() == 5


def test_concurrent_writers_of_one_key_do_no_harm(cache_url):
    keys = [text_key(f"shared {i}") for i in range(300)]
    writers = 6
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            with PostgresEmbeddingCache(cache_url) as cache, PostgresContextCache(cache_url) as contexts:
                cache.stats()
                len(contexts)
                barrier.wait()
                for _ in range(3):
                    cache.put_many("m@1", [(key, np.full(4, worker, np.float32)) for key in keys], 4)
                    for key in keys[:40]:
                        contexts[key] = f"context by worker {worker}"
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with PostgresEmbeddingCache(cache_url) as cache, PostgresContextCache(cache_url) as contexts:
        got = cache.get_many("m@1", keys, 4)
        assert len(got) == 300 and cache.stats()[0].vectors == 300
        assert all(len(set(vector.tolist())) == 1 for vector in got.values())  # one writer's whole vector
        cache.put_many("m@1", [(key, np.full(4, 99, np.float32)) for key in keys], 4)
        assert all(np.array_equal(cache.get_many("m@1", [key], 4)[key], got[key]) for key in keys[:5])  # first wins
        assert len(contexts) == 40 and all(re.fullmatch(r"context by worker \d", contexts[key]) for key in keys[:40])
        before = contexts[keys[0]]
        contexts[keys[0]] = "a later answer"
        assert contexts[keys[0]] == before  # every worker keeps reading the same context


# --- each text embedded once across workers ------------------------------------------------------------

EMBED_WORKER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import numpy as np
    from chunkbench_core.embedding import Embedder, get_model
    from chunkbench_core.storage.embedding_cache import open_embedding_cache
    url, first, last, go, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5])
    texts = [f"Shared cache sentence {i}: " + "the river delta floods in spring. " * (i % 5) for i in range(first, last)]
    with open_embedding_cache(url) as cache:
        embedder = Embedder(get_model("all-minilm-l6-v2"), cache=cache)
        engine, sent = embedder._local.embed, []
        def counting(batch, purpose, remember=True):
            sent.extend(batch)  # every text this worker asks the model for
            return engine(batch, purpose, remember=remember)
        embedder._local.embed = counting
        cache.stats()  # connected before the start
        Path(f"{go}.{first}").touch()
        while not go.exists():
            time.sleep(0.002)
        vectors = embedder.embed(texts, "document")
        np.save(out.with_suffix(".npy"), vectors)
        out.write_text(json.dumps({"texts": texts, "sent": sent, "usage": embedder.last_usage.as_row(),
                                   "held": cache.held()}))
""")


@pytest.mark.slow
def test_two_processes_embed_overlapping_texts_each_text_once(cache_url, tmp_path):
    go = tmp_path / "go"
    ranges = [(0, 900), (300, 1200)]  # 600 texts in common, 1200 in all
    outs = [tmp_path / f"worker{first}.json" for first, _ in ranges]
    workers = [run_worker(EMBED_WORKER, cache_url, first, last, go, out) for (first, last), out in zip(ranges, outs)]
    try:
        start_together(workers, [Path(f"{go}.{first}") for first, _ in ranges], go)
        finish(workers)
    finally:
        for worker in workers:
            worker.kill()
    results = [json.loads(out.read_text()) for out in outs]
    sent = [result["sent"] for result in results]
    every_text = set(results[0]["texts"]) | set(results[1]["texts"])
    assert len(every_text) == 1200
    assert not set(sent[0]) & set(sent[1])  # no text embedded by both
    assert sorted(sent[0] + sent[1]) == sorted(every_text)  # and each by one: engine calls = distinct texts
    for result in results:
        usage = result["usage"]
        assert usage["embedded"] + usage["cache_hits"] == usage["unique_texts"] == 900 and result["held"] == 0
    # the texts in common have one vector, whoever embedded it
    vectors = [dict(zip(result["texts"], np.load(out.with_suffix(".npy")))) for result, out in zip(results, outs)]
    common = set(results[0]["texts"]) & set(results[1]["texts"])
    assert all(np.array_equal(vectors[0][text], vectors[1][text]) for text in common)
    with PostgresEmbeddingCache(cache_url) as cache:
        assert [s.vectors for s in cache.stats()] == [1200]


@pytest.mark.slow
def test_threads_sharing_one_cache_embed_each_text_once(cache_url):
    spec = get_model(MODEL)
    texts = [f"Threaded sentence {i} about harbours" + " and tides" * (i % 4) for i in range(700)]
    slices = [texts[0:500], texts[100:600], texts[200:700], texts]
    sent: list[str] = []
    lock = threading.Lock()
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []
    with PostgresEmbeddingCache(cache_url) as cache:
        embedders = [Embedder(spec, cache=cache) for _ in slices]
        for embedder in embedders:

            def counting(batch, purpose, remember=True, engine=embedder._local.embed):
                with lock:
                    sent.extend(batch)
                return engine(batch, purpose, remember=remember)

            embedder._local.embed = counting
        barrier = threading.Barrier(len(slices))

        def work(i: int) -> None:
            try:
                barrier.wait()
                results[i] = embedders[i].embed(slices[i], "document")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(slices))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and cache.held() == 0
        assert sorted(sent) == sorted(texts)  # 700 engine texts for 700 distinct texts, whatever the threads did
        assert sum(e.usage.embedded for e in embedders) == 700
        by_text = dict(zip(texts, results[3]))
        for i, part in enumerate(slices[:3]):
            assert all(np.array_equal(row, by_text[text]) for text, row in zip(part, results[i]))


CLAIMER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from chunkbench_core.storage.cache_postgres import PostgresEmbeddingCache
    url, namespace, ready = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    keys = sys.argv[4:]
    cache = PostgresEmbeddingCache(url, lease_seconds=1.5)
    found, mine = cache.claim_many(namespace, keys, 384)
    assert found == {} and sorted(mine) == sorted(keys), (found, mine)
    ready.write_text(cache.owner)
    time.sleep(600)  # "embedding": it renews its leases until it is killed
""")


@pytest.mark.slow
def test_a_killed_worker_holds_its_texts_only_until_its_lease_ends(cache_url, tmp_path):
    spec = get_model(MODEL)
    texts = [f"Claimed sentence {i} about lighthouses" for i in range(40)]
    keys = [text_key(t) for t in spec.apply_prefix(texts, "document")]
    namespace = cache_namespace(spec)
    ready = tmp_path / "ready"
    claimer = run_worker(CLAIMER, cache_url, namespace, ready, *keys)
    try:
        start_together([claimer], [ready], tmp_path / "unused")
        time.sleep(4.5)  # three leases: alive, it renews them, so its texts stay its own
        with PostgresEmbeddingCache(cache_url, lease_seconds=1.5, wait_seconds=1.0) as other:
            assert other.claim_many(namespace, keys, 384) == ({}, [])
            with pytest.raises(EmbeddingCacheError, match=re.escape(f"40 claimed by {ready.read_text()}")):
                other.await_many(namespace, keys, 384)  # and a live claimer that stores nothing is named
        claimer.send_signal(signal.SIGKILL)
        claimer.wait(timeout=30)
        killed = time.monotonic()
        with open_embedding_cache(cache_url) as cache:
            embedder = Embedder(spec, cache=cache)
            vectors = embedder.embed(texts, "document")
            waited = time.monotonic() - killed
            assert embedder.last_usage.embedded == 40 and cache.held() == 0  # it took every claim over
            assert np.array_equal(np.stack([cache.get_many(namespace, keys, 384)[k] for k in keys]), vectors)
        assert 0.8 < waited < 20, waited  # the lease's rest (1 to 1.5 s), then the work; never forever
    finally:
        claimer.kill()
        claimer.communicate()


def test_a_failed_embedding_gives_its_claims_back_at_once(cache_url):
    spec = get_model(MODEL)
    texts = [f"Doomed sentence {i}" for i in range(10)]
    keys = [text_key(t) for t in spec.apply_prefix(texts, "document")]
    with PostgresEmbeddingCache(cache_url) as cache:
        embedder = Embedder(spec, cache=cache)

        def broken(batch, purpose, remember=True):
            raise RuntimeError("the GPU fell over")

        embedder._local.embed = broken
        with pytest.raises(RuntimeError, match="GPU"):
            embedder.embed(texts, "document")
        assert cache.held() == 0
    with PostgresEmbeddingCache(cache_url) as other:  # another worker need not wait for a lease
        assert other.claim_many(cache_namespace(spec), keys, spec.dimension) == ({}, keys)


# --- each context asked of the LLM once across workers -------------------------------------------------

CONTEXT_WORKER = textwrap.dedent("""
    import json, random, re, sys, time
    from pathlib import Path
    from chunkbench_core.chunking.contextual_retrieval import LLMContext
    from chunkbench_core.storage.context_cache import open_context_cache
    url, worker, go, out = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
    document = "# Handbook\\n\\n" + "\\n\\n".join(f"Rule {i}: keep the harbour gate shut." for i in range(60))
    chunks = [f"Rule {i}: keep the harbour gate shut." for i in range(60)]
    if worker == "b":
        random.Random(3).shuffle(chunks)
    asked = []
    def complete(messages):
        chunk = re.search(r"<chunk>\\n(.*?)\\n</chunk>", messages[0]["content"], re.S).group(1)
        asked.append(chunk)
        time.sleep(0.02)  # a real LLM takes a while
        return f"The {chunk.split(':')[0]} of the handbook, as answered to worker {worker}."
    cache = open_context_cache(url)
    context = LLMContext(complete, cache=cache, endpoint="http://llm.internal/v1")
    len(cache)  # connected before the start
    Path(f"{go}.{worker}").touch()
    while not go.exists():
        time.sleep(0.002)
    answers = {chunk: context(document, chunk) for chunk in chunks}
    out.write_text(json.dumps({"asked": asked, "answers": answers, "calls": context.calls, "held": cache.held()}))
""")


@pytest.mark.slow
def test_two_processes_ask_the_llm_once_per_context(cache_url, tmp_path):
    go = tmp_path / "go"
    outs = {worker: tmp_path / f"{worker}.json" for worker in "ab"}
    workers = [run_worker(CONTEXT_WORKER, cache_url, worker, go, out) for worker, out in outs.items()]
    try:
        start_together(workers, [Path(f"{go}.{worker}") for worker in outs], go)
        finish(workers)
    finally:
        for worker in workers:
            worker.kill()
    a, b = (json.loads(out.read_text()) for out in outs.values())
    assert not set(a["asked"]) & set(b["asked"]) and len(a["asked"]) + len(b["asked"]) == 60  # each asked once
    assert a["calls"] + b["calls"] == 60 and a["held"] == b["held"] == 0
    assert a["answers"] == b["answers"]  # both workers use the same context for each chunk
    with PostgresContextCache(cache_url) as cache:
        assert len(cache) == 60


CONTEXT_CLAIMER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from chunkbench_core.storage.cache_postgres import PostgresContextCache
    url, key, ready = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    cache = PostgresContextCache(url, lease_seconds=1.5)
    assert cache.claim(key) is None
    ready.write_text(cache.owner)
    time.sleep(600)  # "asking the LLM": it renews its lease until it is killed
""")


def complete(messages):
    return "The rule on harbour gates, in the safety chapter."


@pytest.mark.slow
def test_a_killed_worker_holds_its_context_only_until_its_lease_ends(cache_url, tmp_path):
    document, chunk = "# Safety\n\nKeep the harbour gate shut.", "Keep the harbour gate shut."
    key = LLMContext(complete, endpoint="http://llm").cache_key(document, chunk)
    ready = tmp_path / "ready"
    claimer = run_worker(CONTEXT_CLAIMER, cache_url, key, ready)
    try:
        start_together([claimer], [ready], tmp_path / "unused")
        time.sleep(4.5)
        with PostgresContextCache(cache_url, wait_seconds=1.0) as other:
            with pytest.raises(ContextCacheError, match=re.escape(ready.read_text())):
                other.claim(key)  # alive, it keeps the key; a wait that runs out names it
        claimer.send_signal(signal.SIGKILL)
        claimer.wait(timeout=30)
        killed = time.monotonic()
        with PostgresContextCache(cache_url) as cache:
            context = LLMContext(complete, cache=cache, endpoint="http://llm")
            assert context(document, chunk) == complete([]) and context.calls == 1
            assert cache[key] == complete([]) and cache.held() == 0
        assert 0.8 < time.monotonic() - killed < 20
    finally:
        claimer.kill()
        claimer.communicate()


def test_a_failed_llm_call_gives_its_claim_back_at_once(cache_url):
    def failing(messages):
        raise ConnectionError("the LLM endpoint is down")

    with PostgresContextCache(cache_url) as cache:
        context = LLMContext(failing, cache=cache, endpoint="http://llm")
        with pytest.raises(ConnectionError):
            context("# Doc\n\ntext", "text")
        assert cache.held() == 0 and len(cache) == 0
        empty = LLMContext(lambda messages: "  ", cache=cache, endpoint="http://llm")
        with pytest.raises(ChunkingError, match="empty context"):
            empty("# Doc\n\ntext", "text")
    with PostgresContextCache(cache_url, wait_seconds=1.0) as other:
        assert other.claim(context.cache_key("# Doc\n\ntext", "text")) is None  # free at once, no wait


# --- connections -----------------------------------------------------------------------------------------


def backend_pid(cache) -> int:
    def read(cursor):
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]

    return cache._run("reading", read)


def test_a_lost_connection_is_reopened(cache_url, postgres_server):
    import psycopg2

    with PostgresEmbeddingCache(cache_url) as cache, PostgresContextCache(cache_url) as contexts:
        cache.put_many("m@1", [("k", np.ones(4))], 4)
        contexts["k"] = "a context"
        admin = psycopg2.connect(**cache.target.options)
        admin.autocommit = True
        with admin.cursor() as cursor:  # what a server restart or a failover does to a session
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'chunkbench cache'"
            )
            assert cursor.rowcount == 2
        admin.close()
        assert cache.get_many("m@1", ["k"], 4)["k"].tolist() == [1.0] * 4
        assert contexts["k"] == "a context"
        restart = threading.Thread(target=postgres_server.restart, args=(2.0,))
        restart.start()  # a server restart: down for two seconds and more
        try:
            time.sleep(0.5)
            assert cache.get_many("m@1", ["k"], 4)["k"].tolist() == [1.0] * 4  # waits for it, reconnects
            assert contexts["k"] == "a context"
        finally:
            restart.join()


def test_a_forked_child_uses_its_own_connection_and_leaves_its_parents_alone(cache_url):
    with PostgresEmbeddingCache(cache_url) as cache:
        cache.put_many("m@1", [("parent", np.ones(4))], 4)
        parent = backend_pid(cache)
        child = os.fork()
        if child == 0:  # pragma: no cover - the child reports through its exit status
            status = 1
            try:
                ok = cache.get_many("m@1", ["parent"], 4).keys() == {"parent"} and backend_pid(cache) != parent
                cache.put_many("m@1", [("child", np.zeros(4))], 4)
                status = 0 if ok else 2
            finally:
                os._exit(status)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert backend_pid(cache) == parent  # the same session, not a reconnection
        assert set(cache.get_many("m@1", ["parent", "child"], 4)) == {"parent", "child"}
