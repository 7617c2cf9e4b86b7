"""Question generation meets the provider faults as every LLM request does: one retry loop within the request
timeout and the retry budget, a refusal stopping at once (not once per passage), the provider's one line, the
questions already kept kept. Against a scripted OpenAI-compatible server on 127.0.0.1 with the real openai client."""

from __future__ import annotations

import json

import numpy as np
import pytest

from chunkbench_core.evaluation.generation import GenerationRequest, generate_question_set
from chunkbench_core.evaluation.llm import LLMSettings, make_client
from chunkbench_core.parsing import parse

from .chat_server import ScriptedChatServer

KEY = "sk-test-generation-abcdefghijklmnop"
SETTINGS = LLMSettings(
    model="gen-m",
    timeout_seconds=2.0,
    retry_budget_seconds=10.0,
    max_retries=2,
    input_price_per_mtok=0,
    output_price_per_mtok=0,
)
TEXT = (
    "# Working hours\n\nCore hours are 10:00 to 15:30 local time, and everyone is asked to be available for "
    "meetings during that window.\n\n# Leave\n\nEvery employee receives 25 days of annual leave, plus public "
    "holidays. Unused days may be carried into the next year up to a limit of five days.\n\n# Travel\n\nTrain "
    "tickets are booked through the travel desk at least ten days ahead. Flights need the approval of a "
    "director.\n"
)
VERBATIM = {
    "question": "What are the core working hours?",
    "answer": "10:00 to 15:30 local time.",
    "excerpts": ["Core hours are 10:00 to 15:30 local time"],
}


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    path = tmp_path_factory.mktemp("genfaults") / "handbook.md"
    path.write_text(TEXT, encoding="utf-8")
    document = parse(str(path))
    document.document = "handbook.md"
    return [document]


def embed(texts):  # the near-duplicate check is not under test: distinct unit vectors
    return np.eye(len(texts), 8, dtype=np.float32)


def generate(server, documents, n=3):
    return generate_question_set(
        documents, make_client(server.base_url, KEY), SETTINGS, embed, GenerationRequest(n, seed=1, max_tries=3)
    )


def test_a_wrong_key_stops_generation_at_once_in_one_line(documents):
    with ScriptedChatServer([{"status": 401, "message": f"Incorrect API key provided: {KEY}."}]) as server:
        data, report = generate(server, documents)
        assert len(server.requests) == 1  # not once per passage, not the client's retries
    host = server.base_url.split("/")[2]
    assert report.stopped.startswith(
        f"LLM server {host} (model gen-m) answered HTTP 401: Incorrect API key provided: [redacted]"
    )
    assert "not retried" in report.stopped and "check the key in CHUNKBENCH_LLM_API_KEY" in report.stopped
    assert KEY not in report.stopped and "\n" not in report.stopped
    assert data["questions"] == [] and report.tried == 0 and "the LLM failed" in report.summary()


def test_questions_kept_before_a_used_up_quota_are_kept(documents):
    quota = {"status": 429, "code": "insufficient_quota", "message": "You exceeded your current quota."}
    with ScriptedChatServer([json.dumps(VERBATIM), quota]) as server:
        data, report = generate(server, documents)
        assert len(server.requests) == 2
    assert [q["question"] for q in data["questions"]] == [VERBATIM["question"]]
    assert "the quota is used up: raise it" in report.stopped and (report.tried, report.kept) == (1, 1)


def test_a_rate_limit_and_a_server_error_are_retried_then_the_question_arrives(documents):
    with ScriptedChatServer([{"status": 429, "retry_after": 0}, {"status": 502}, json.dumps(VERBATIM)]) as server:
        data, report = generate(server, documents, n=1)
        assert len(server.requests) == 3
    assert report.stopped is None and report.kept == 1 and report.calls == 1


def test_a_silent_server_ends_within_the_budget(documents):
    import time

    settings = LLMSettings(model="gen-m", timeout_seconds=1.0, retry_budget_seconds=3.0, max_retries=5)
    with ScriptedChatServer([{"sleep": 5}]) as server:
        started = time.monotonic()
        data, report = generate_question_set(
            documents, make_client(server.base_url, KEY), settings, embed, GenerationRequest(2, max_tries=2)
        )
        elapsed = time.monotonic() - started
    assert elapsed < 8 and data["questions"] == []
    assert "did not answer within 1.0 s" in report.stopped and "CHUNKBENCH_PROVIDER_TIMEOUT_S" in report.stopped
