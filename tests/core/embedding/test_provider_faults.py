"""Each fault of a remote provider ends within its bound, in one line: the server, what it said, what was tried and
what to do. Against a real stdlib OpenAI-compatible server on 127.0.0.1 (``FaultProxy``) with the real openai
client; the embedding cache is the real SQLite one, to show a bad answer is never kept."""

from __future__ import annotations

import time

import pytest

from chunkbench_core.configuration import provider_settings_of
from chunkbench_core.embedding import Embedder, EmbeddingModelSpec, ProviderSettings
from chunkbench_core.errors import ConfigError, EmbeddingProviderError, ProviderError
from chunkbench_core.evaluation.llm import LLMSettings, evaluate_question, make_client
from chunkbench_core.evaluation.questions import Question
from chunkbench_core.evaluation.retrieval import RetrievedChunk
from chunkbench_core.settings import Settings
from chunkbench_core.storage.embedding_cache import EmbeddingCache
from tests.core.embedding.openai_server import FaultProxy

KEY = "sk-test-abcdefghijklmnop1234"


@pytest.fixture()
def server():
    proxy = FaultProxy(dimension=8)
    yield proxy
    proxy.stop()


def spec(proxy: FaultProxy) -> EmbeddingModelSpec:
    return EmbeddingModelSpec(
        id="tiny-remote",
        provider="openai_compatible",
        model_name="tiny-embed",
        dimension=8,
        max_input_tokens=512,
        base_url=proxy.base_url,
    )


def embedder(proxy: FaultProxy, cache=None, waits: list[float] | None = None, **policy) -> Embedder:
    settings = ProviderSettings(
        compatible_api_key=KEY,
        **{
            "max_retries": 3,
            "timeout_seconds": 5.0,
            "backoff_initial_seconds": 0.01,
            "backoff_max_seconds": 0.02,
            **policy,
        },
    )
    return Embedder(spec(proxy), settings, cache=cache, sleep=(waits.append if waits is not None else time.sleep))


def failure(proxy: FaultProxy, *faults: str, **policy) -> tuple[EmbeddingProviderError, float]:
    proxy.script(*faults)
    started = time.monotonic()
    with pytest.raises(EmbeddingProviderError) as info:
        embedder(proxy, **policy).embed(["The Almo river floods every April.", "The mill ground barley."], "document")
    message = str(info.value)
    assert "\n" not in message and KEY not in message
    host = proxy.base_url.split("/")[2]
    assert message.startswith(f"embedding server {host} (model tiny-embed) ")
    return info.value, time.monotonic() - started


@pytest.mark.parametrize(
    "fault, kind, said, fix",
    [
        (
            f"401:{KEY}",
            "auth",
            "answered HTTP 401: Incorrect API key provided: [redacted]",
            "check the key in CHUNKBENCH_OPENAI_COMPATIBLE_API_KEY",
        ),
        ("403", "forbidden", "answered HTTP 403: scripted HTTP 403 (test)", "may not use this model"),
        ("404", "not_found", "answered HTTP 404: scripted HTTP 404 (test)", "check the model name and the server URL"),
        (
            "quota",
            "quota",
            (
                "answered HTTP 429: You exceeded your current quota, please check your plan and billing "
                "details. (insufficient_quota)"
            ),
            "the quota is used up: raise it",
        ),
        ("400", "refused", "answered HTTP 400: scripted HTTP 400 (test)", "switch model"),
    ],
)
def test_a_refusal_stops_at_once_with_the_server_s_own_words_and_the_fix(server, fault, kind, said, fix):
    error, _ = failure(server, fault, fault)
    message = str(error)
    assert error.kind == kind and said in message and fix in message
    assert "not retried" in message and len(server.requests) == 1


def test_a_malformed_reply_is_retried_then_stops_saying_so(server):
    error, _ = failure(server, *["malformed"] * 5, max_retries=2)
    assert error.kind == "malformed" and len(server.requests) == 3
    assert "answered with a malformed response" in str(error) and "tried 3 times" in str(error)
    assert "OpenAI-compatible /v1 endpoint" in str(error)


def test_a_rate_limit_waits_at_least_what_retry_after_asks(server):
    waits: list[float] = []
    server.script("429:0.3", "429:0.3")
    vectors = embedder(server, waits=waits).embed(["wait for me"], "document")
    assert vectors.shape == (1, 8) and len(server.requests) == 3
    assert len(waits) == 2 and all(w >= 0.3 for w in waits)  # the backoff alone would be 0.01 to 0.02 s


def test_a_retry_after_beyond_the_budget_stops_at_once(server):
    error, seconds = failure(server, "429:120", "429:120", retry_budget_seconds=3.0)
    assert error.kind == "rate_limit" and len(server.requests) == 1 and seconds < 2
    assert (
        "the retry budget CHUNKBENCH_PROVIDER_RETRY_BUDGET_S of 3 s was spent; the server asked to wait 120 s"
        in str(error)
    )
    assert "lower CHUNKBENCH_PROVIDER_POOL_LIMIT" in str(error)


def test_a_silent_server_ends_within_the_budget(server):
    error, seconds = failure(server, *["sleep:30"] * 10, timeout_seconds=1.0, retry_budget_seconds=3.0, max_retries=10)
    assert error.kind == "timeout" and seconds < 3.0 + 1.5
    assert "did not answer within 1.0 s" in str(
        error
    ) and "retry budget CHUNKBENCH_PROVIDER_RETRY_BUDGET_S of 3 s" in str(error)
    assert "raise CHUNKBENCH_PROVIDER_TIMEOUT_S (now 1.0 s)" in str(error)


@pytest.mark.parametrize(
    "fault, what",
    [
        ("nan:1", "NaN or infinite values at position 2 of 2"),
        ("inf:0", "NaN or infinite values at position 1 of 2"),
        ("zero:1", "only zeros at position 2 of 2"),
        ("dim", "vectors of dimension 7 where the model registry says 8"),
    ],
)
def test_unusable_vectors_are_refused_naming_the_position_and_never_cached(server, tmp_path, fault, what):
    with EmbeddingCache(tmp_path / "cache.sqlite") as cache:
        server.script(fault)
        texts = ["The Almo river floods every April.", "The mill ground barley."]
        with pytest.raises(EmbeddingProviderError, match="nothing of this batch was kept|set its dimension") as info:
            embedder(server, cache=cache).embed(texts, "document")
        assert what in str(info.value) and info.value.kind == "bad_vector" and len(server.requests) == 1
        again = embedder(server, cache=cache)
        again.embed(texts, "document")  # the server is well again: every text is embedded, none read from the cache
        assert again.last_usage.cache_hits == 0 and again.last_usage.embedded == 2


def test_the_llm_s_refusal_is_one_line_on_the_question_and_marks_the_endpoint_failed(server):
    chat = FaultProxy(dimension=8)
    try:
        chat.script(f"401:{KEY}")
        question = Question(id="q1", question="When does the Almo flood?", expected_answer="In April.")
        chunk = RetrievedChunk(
            rank=1,
            chunk_id="c1",
            document="rivers.md",
            start=0,
            end=30,
            score=0.9,
            chunk_index=0,
            text="The Almo river floods every April.",
        )
        result = evaluate_question(make_client(chat.base_url, KEY), LLMSettings(model="judge-m"), question, [chunk])
        host = chat.base_url.split("/")[2]
        assert result.answer_error.startswith(
            f"answer: LLM server {host} (model judge-m) answered HTTP 401: Incorrect API key provided: [redacted]"
        )
        assert "not retried" in result.answer_error and "check the key in CHUNKBENCH_LLM_API_KEY" in result.answer_error
        assert KEY not in result.answer_error and result.fatal and len(chat.requests) == 1
    finally:
        chat.stop()


def test_the_timeout_and_the_budget_are_settings():
    settings = Settings.load({"CHUNKBENCH_PROVIDER_TIMEOUT_S": "7", "CHUNKBENCH_PROVIDER_RETRY_BUDGET_S": "25"})
    providers = provider_settings_of(settings)
    assert (providers.timeout_seconds, providers.retry_budget_seconds) == (7.0, 25.0)
    defaults = provider_settings_of(Settings.load({}))
    # a dead server: a first request's timeout, then retries, all within about a minute
    assert defaults.timeout_seconds <= 30 and defaults.retry_budget_seconds <= 60
    from chunkbench_core import provider_faults

    # code built without settings (ProviderSettings(), LLMSettings()) waits alike
    assert (provider_faults.DEFAULT_TIMEOUT_SECONDS, provider_faults.DEFAULT_BUDGET_SECONDS) == (
        defaults.timeout_seconds,
        defaults.retry_budget_seconds,
    )
    rows = {name: (value, source) for name, value, source in settings.rows()}
    assert rows["CHUNKBENCH_PROVIDER_TIMEOUT_S"] == ("7", "environment CHUNKBENCH_PROVIDER_TIMEOUT_S")
    for bad in ("0", "-3", "soon", "inf"):
        with pytest.raises(ConfigError, match="CHUNKBENCH_PROVIDER_RETRY_BUDGET_S must be a number of seconds"):
            Settings.load({"CHUNKBENCH_PROVIDER_RETRY_BUDGET_S": bad})


def test_a_provider_error_is_permanent():
    from chunkbench_core.errors import is_permanent

    assert is_permanent(ProviderError("x", kind="timeout"))
