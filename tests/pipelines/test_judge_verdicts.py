"""Judge verdicts are aggregated exactly: a scripted OpenAI-compatible server on 127.0.0.1 answers every
chat call (answers, then verdicts known in advance), and the means and hallucination_rate that
experiment_results writes are checked against the numbers computed by hand."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from dagster import DagsterInstance

from chunkbench_core.storage.results_db import ResultsDB
from tests.pipelines.support.partitions import environment_graph
from chunkbench_pipelines.definitions import build_resources
from chunkbench_pipelines.partitions import partition_key
from chunkbench_pipelines.resources import LLMResource
from tests.pipelines.support.environment import environment_settings

from .test_end_to_end import MODEL, workspace  # noqa: F401 - the fixture is used by name

# by a word of each question: the verdict the scripted judge returns
VERDICTS = {
    "Kelvar": {
        "context_relevance": 9,
        "answer_similarity": 8,
        "faithfulness": 10,
        "hallucination": False,
        "reasoning": "supported",
    },
    "sourdough": {
        "context_relevance": 5,
        "answer_similarity": 3,
        "faithfulness": 6,
        "hallucination": True,
        "reasoning": "adds a baking time that is not in the context",
    },
}


class ScriptedChatServer:
    """``/v1/chat/completions`` on 127.0.0.1: an answer for an answer request, the scripted verdict for a judge one."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                text = "\n".join(m["content"] for m in body["messages"])
                if body.get("response_format", {}).get("type") == "json_object":
                    [verdict] = [
                        v
                        for word, v in VERDICTS.items()
                        if f"Question: {word}" in text or word in text.split("Expected answer:")[0]
                    ]
                    content = json.dumps(verdict)
                else:
                    content = "A scripted answer."
                reply = json.dumps(
                    {
                        "id": "scripted",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def chat_server():
    server = ScriptedChatServer()
    yield server
    server.close()


@pytest.mark.e2e
def test_judge_means_and_hallucination_rate_through_the_assets(workspace, chat_server, tmp_path):  # noqa: F811  (the fixture imported above, by name)
    llm = LLMResource(
        model="scripted",
        base_url=chat_server.url,
        api_key="not-a-secret",
        judge_attempts=1,
        home=str(environment_settings().home),
    )
    resources = {**build_resources(environment_settings()), "llm": llm}
    instance = DagsterInstance.ephemeral()
    assert (
        environment_graph()
        .materialize(["source_documents", "parsed_documents"], instance=instance, resources=resources)
        .success
    )
    result = environment_graph().materialize(
        ["chunk_collections", "experiment_results"],
        partition_key=partition_key("fixed_size", MODEL),
        instance=instance,
        resources=resources,
    )
    assert result.success

    con = ResultsDB(workspace["home"]).connect()  # the benchmark's views, with their paths resolved
    try:
        [metrics] = con.execute(
            "SELECT n_judged, context_relevance, answer_similarity, faithfulness, "
            "hallucination_rate, judge_prompt_tokens, answer_prompt_tokens "
            "FROM experiment_metrics"
        ).fetchall()
        rows = con.execute(
            "SELECT question_id, answer, context_relevance, answer_similarity, faithfulness, "
            "hallucination, judge_error FROM question_results ORDER BY question_id"
        ).fetchall()
    finally:
        con.close()
    # v1 (Kelvar, has an expected answer) and b1 (sourdough, none: its answer_similarity is not scored)
    assert rows == [
        ("b1", "A scripted answer.", 5.0, None, 6.0, True, None),
        ("v1", "A scripted answer.", 9.0, 8.0, 10.0, False, None),
    ]
    assert metrics == (2, 7.0, 8.0, 8.0, 0.5, 200, 200)
    judge_calls = [r for r in chat_server.requests if r.get("response_format")]
    assert len(judge_calls) == 2 and len(chat_server.requests) == 4


@pytest.mark.e2e
def test_dollars_per_question_and_partition_from_the_reported_tokens(workspace, chat_server):  # noqa: F811  (the fixture imported above, by name)
    """At $2 / $8 per million input / output tokens: every answer and verdict reports 100 + 10 tokens, so a
    question costs (200 · 2 + 20 · 8) / 10⁶; contextual_retrieval's context calls are priced from the tokens
    counted for every context, and a rebuild served from the context cache costs the same."""
    from chunkbench_core.chunking.contextual_retrieval import SITUATE_CHUNK
    from chunkbench_core.tokens import count_tokens

    llm = LLMResource(
        model="scripted",
        base_url=chat_server.url,
        api_key="not-a-secret",
        judge_attempts=1,
        home=str(environment_settings().home),
        input_price_per_mtok="2",
        output_price_per_mtok="8",
    )
    resources = {**build_resources(environment_settings()), "llm": llm}
    instance = DagsterInstance.ephemeral()
    assert (
        environment_graph()
        .materialize(["source_documents", "parsed_documents"], instance=instance, resources=resources)
        .success
    )
    assert (
        environment_graph()
        .materialize(
            ["chunk_collections", "experiment_results"],
            partition_key=partition_key("fixed_size", MODEL),
            instance=instance,
            resources=resources,
        )
        .success
    )
    db = ResultsDB(workspace["home"])
    questions = db.query("SELECT embedding_usd, answer_usd, judge_usd, cost_usd FROM question_results")
    assert len(questions) == 2
    assert questions["answer_usd"].tolist() == pytest.approx([(100 * 2 + 10 * 8) / 1e6] * 2)
    assert questions["judge_usd"].tolist() == pytest.approx([(100 * 2 + 10 * 8) / 1e6] * 2)
    assert questions["embedding_usd"].tolist() == [0.0, 0.0]  # a local model costs nothing
    assert questions["cost_usd"].tolist() == pytest.approx([2 * (100 * 2 + 10 * 8) / 1e6] * 2)
    [partition] = db.query(
        "SELECT index_usd, caption_usd, questions_usd, answer_usd, judge_usd, cost_usd FROM experiment_metrics"
    ).to_dict("records")
    assert partition == pytest.approx(
        {
            "index_usd": 0.0,
            "caption_usd": 0.0,
            "questions_usd": 4 * 280 / 1e6,
            "answer_usd": 2 * 280 / 1e6,
            "judge_usd": 2 * 280 / 1e6,
            "cost_usd": 4 * 280 / 1e6,
        }
    )
    [board] = db.query("SELECT cost_usd FROM leaderboard").to_dict("records")
    assert board["cost_usd"] == pytest.approx(4 * 280 / 1e6)

    before = len(chat_server.requests)
    key = partition_key("contextual_retrieval", MODEL)
    assert (
        environment_graph()
        .materialize(["chunk_collections"], partition_key=key, instance=instance, resources=resources)
        .success
    )
    calls = chat_server.requests[before:]
    assert calls and all(
        SITUATE_CHUNK.split("{")[0].strip()[:20] in "\n".join(m["content"] for m in c["messages"]) for c in calls
    )
    expected_in = sum(count_tokens(m["content"]) for c in calls for m in c["messages"])
    expected_out = len(calls) * count_tokens("A scripted answer.")
    query = (
        "SELECT context_calls, context_input_tokens, context_output_tokens, context_usd, index_usd "
        "FROM index_costs WHERE strategy = 'contextual_retrieval'"
    )
    [built] = db.query(query).to_dict("records")
    assert (built["context_calls"], built["context_input_tokens"], built["context_output_tokens"]) == (
        len(calls),
        expected_in,
        expected_out,
    )
    assert built["context_usd"] == pytest.approx((expected_in * 2 + expected_out * 8) / 1e6)
    assert built["index_usd"] == pytest.approx(built["context_usd"])  # local embeddings are free

    again = len(chat_server.requests)
    assert (
        environment_graph()
        .materialize(["chunk_collections"], partition_key=key, instance=instance, resources=resources)
        .success
    )
    assert len(chat_server.requests) == again  # every context came from the cache...
    [rebuilt] = db.query(query).to_dict("records")
    assert rebuilt == pytest.approx(built)  # ...and the build is priced the same
