"""contextual_retrieval's LLM context meets the provider faults as every LLM request does: through the one retry
loop, with the request timeout and the retry budget, ending in the provider's one line. Against a scripted
OpenAI-compatible server on 127.0.0.1 (stdlib http.server) with the real openai client."""

from __future__ import annotations

import pytest

from chunkbench_core.chunking import LLMContext, make_chunker
from chunkbench_core.errors import ChunkingError
from chunkbench_core.evaluation.llm import LLMSettings, make_client
from tests.core.evaluation.chat_server import ScriptedChatServer

from .helpers import doc

KEY = "sk-test-contextual-abcdefghijklmnop"
TEXT = (
    "# Leave policy\n\nEvery employee has 27 days of annual leave. Leave is booked in the Harbour portal.\n\n"
    "## Sick leave\n\nSick leave is paid in full for up to 20 days in any rolling twelve months.\n"
)
SETTINGS = LLMSettings(model="ctx-m", timeout_seconds=2.0, retry_budget_seconds=10.0, max_retries=2)


def chunker(server: ScriptedChatServer, **options):
    context = LLMContext(client=make_client(server.base_url, KEY), settings=SETTINGS)
    return context, make_chunker("contextual_retrieval", chunk_size=30, chunk_overlap=0, context=context, **options)


def test_a_wrong_key_stops_at_once_with_the_provider_s_line_and_no_key():
    with ScriptedChatServer([{"status": 401, "message": f"Incorrect API key provided: {KEY}."}]) as server:
        context, contextual = chunker(server)
        with pytest.raises(ChunkingError) as info:
            contextual.chunk(doc(TEXT, name="leave.md"))
        message = str(info.value)
        host = server.base_url.split("/")[2]
        assert message.startswith(
            f"contextual_retrieval: the LLM context failed on leave.md: LLM server {host} "
            "(model ctx-m) answered HTTP 401: Incorrect API key provided: [redacted]"
        )
        assert "not retried" in message and "check the key in CHUNKBENCH_LLM_API_KEY" in message
        assert "on_context_failure='headings'" in message and "\n" not in message and KEY not in message
        assert len(server.requests) == 1  # the openai client's own retries are off
        assert server.authorizations == [f"Bearer {KEY}"]


def test_a_used_up_quota_falls_back_to_headings_and_asks_no_more():
    quota = {
        "status": 429,
        "code": "insufficient_quota",
        "message": "You exceeded your current quota, please check your plan and billing details.",
    }
    with ScriptedChatServer([quota]) as server:
        _, contextual = chunker(server, on_context_failure="headings")
        first = contextual.chunk(doc(TEXT, name="leave.md"))
        second = contextual.chunk(doc(TEXT.replace("27", "28"), name="other.md"))
        assert {c.context_source for c in first + second} == {"headings_fallback"}
        reason = contextual.fallbacks["leave.md"]
        assert "answered HTTP 429" in reason and "the quota is used up" in reason and "not retried" in reason
        assert contextual.fallbacks["other.md"] == reason
        assert len(server.requests) == 1  # the endpoint failed for good: the next document sends nothing


def test_a_rate_limit_is_retried_after_its_wait_and_the_context_arrives():
    with ScriptedChatServer(
        [{"status": 429, "retry_after": 0}, {"status": 503}, "Part of the leave policy."]
    ) as server:
        context, contextual = chunker(server)
        chunks = contextual.chunk(doc(TEXT, name="leave.md"))
        assert {c.context_source for c in chunks} == {"llm"}
        # the document's header first (document context is on for this strategy by default), then the LLM's context
        assert chunks[0].embedded_text.startswith("Leave policy\n\nPart of the leave policy.\n\n")
        assert len(server.requests) == 2 + len(chunks)  # two failed attempts, then one request per chunk


def test_a_malformed_reply_is_retried_then_fails_in_one_line():
    with ScriptedChatServer([{"malformed": True}]) as server:
        _, contextual = chunker(server)
        with pytest.raises(ChunkingError) as info:
            contextual.chunk(doc(TEXT, name="leave.md"))
        message = str(info.value)
        assert "answered with a malformed response" in message and "tried 3 times" in message
        assert "(2 retries allowed)" in message and "OpenAI-compatible /v1 endpoint" in message
        assert len(server.requests) == 3
