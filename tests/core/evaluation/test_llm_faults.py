"""Faults of the LLM endpoint end a partition's LLM work promptly, and say so: a total deadline, a circuit
breaker, progress reported, a stop request obeyed. Against real stdlib HTTP servers on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chunkbench_core import progress
from chunkbench_core.errors import ConfigError
from chunkbench_core.evaluation.experiment import QuestionOutcome, ResolvedQuestion
from chunkbench_core.evaluation.experiment import run_llm_evaluation
from chunkbench_core.evaluation.llm import LLMSettings, make_client
from chunkbench_core.evaluation.questions import Question, Span
from chunkbench_core.evaluation.retrieval import RetrievedChunk


class Server:
    """``mode``: "hang" (accepts, never answers), "500" (fails every request), "ok" (a fixed answer)."""

    def __init__(self, mode: str) -> None:
        self.requests = 0
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802  (the name http.server calls)
                server.requests += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if mode == "hang":
                    server.release.wait(120)
                    return
                if mode == "500":
                    body, status = b'{"error": {"message": "upstream down"}}', 500
                else:
                    body, status = (
                        json.dumps(
                            {
                                "id": "x",
                                "object": "chat.completion",
                                "created": 0,
                                "model": "m",
                                "choices": [
                                    {
                                        "index": 0,
                                        "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": "Twenty five days."},
                                    }
                                ],
                                "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
                            }
                        ).encode(),
                        200,
                    )
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers: list[Server] = []

    def start(mode: str) -> Server:
        servers.append(Server(mode))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def outcomes(n: int) -> list[QuestionOutcome]:
    out = []
    for i in range(n):
        question = Question(id=f"q{i}", question="How many days of annual leave?", expected_answer="25 days.")
        context = [
            RetrievedChunk(
                rank=1,
                chunk_id=f"c{i}",
                document="handbook.md",
                start=0,
                end=40,
                score=0.8,
                chunk_index=0,
                text="Employees get 25 days of annual leave a year.",
            )
        ]
        out.append(
            QuestionOutcome(
                ResolvedQuestion("s", question, [Span("handbook.md", 0, 40)]),
                retrieved=context,
                expanded=context,
                scores={"recall": 1.0},
            )
        )
    return out


def test_a_silent_endpoint_costs_the_deadline_not_minutes_per_question(serve):
    server = serve("hang")
    items = outcomes(20)
    settings = LLMSettings(model="m", timeout_seconds=60, deadline_seconds=3, breaker_failures=100)
    started = time.monotonic()
    report = run_llm_evaluation(items, make_client(server.url, max_retries=2, timeout_seconds=60), settings)
    seconds = time.monotonic() - started
    assert seconds < 10, seconds  # was 60 s x 3 tries per question
    assert report.evaluated >= 1 and report.skipped_deadline == 20 - report.evaluated
    assert (
        "did not answer within 3.0 s" in items[0].llm.answer_error
        and "CHUNKBENCH_PROVIDER_TIMEOUT_S" in items[0].llm.answer_error
    )
    assert "skipped, the partition's LLM deadline of 3 s passed" in items[-1].llm.answer_error


def test_a_server_failing_every_request_costs_one_question_then_the_rest_are_skipped_with_its_line(serve):
    server = serve("500")
    items = outcomes(12)
    settings = LLMSettings(model="m", max_retries=1, breaker_failures=3)
    started = time.monotonic()
    report = run_llm_evaluation(items, make_client(server.url, max_retries=2), settings)
    assert time.monotonic() - started < 10
    assert server.requests == 2  # the first question, tried twice (the client's own retries are off)
    assert report.evaluated == 1 and report.skipped_breaker == 11
    line = items[0].llm.answer_error
    assert line.startswith(
        f"answer: LLM server 127.0.0.1:{server.url.split(':')[2].split('/')[0]} (model m) answered "
        "HTTP 500: upstream down; tried 2 times"
    )
    assert "the server is failing: run again later" in line and "\n" not in line
    assert items[11].llm.answer_error == "answer: skipped, " + line.removeprefix("answer: ")


def test_progress_is_reported_and_a_stop_is_obeyed(serve):
    server = serve("ok")
    lines: list[str] = []
    sink = lambda p: lines.append(p.line())  # noqa: E731  (a one-line helper, named for reading)
    progress.add_sink(sink)
    try:
        run_llm_evaluation(outcomes(4), make_client(server.url, max_retries=0), LLMSettings(model="m"), label="answers")
        assert lines[0].startswith("answers: 0/4") and lines[-1].startswith("answers: 4/4")
        progress.request_stop("SIGTERM")
        with pytest.raises(progress.StopRequested, match="SIGTERM"):
            run_llm_evaluation(outcomes(4), make_client(server.url, max_retries=0), LLMSettings(model="m"))
    finally:
        progress.remove_sink(sink)
        progress.clear_stop()


def test_progress_line_has_eta():
    line = progress.Progress("questions", 500, 1000, 30.0, "questions").line()
    assert line == "questions: 500/1,000 questions, 17/s, 30 s elapsed, ETA 30 s"


@pytest.mark.parametrize("field, value", [("deadline_seconds", 0), ("breaker_failures", 0)])
def test_bad_settings_are_refused(field, value):
    with pytest.raises(ConfigError, match=field):
        LLMSettings(model="m", **{field: value})
