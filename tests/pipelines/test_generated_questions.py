"""The on-demand generated_questions asset, against a scripted OpenAI-compatible server on 127.0.0.1."""

import json

import pytest
from dagster import DagsterInstance, materialize

from chunkbench_core.benchmarks import Benchmark
from chunkbench_pipelines.assets import build_document_assets, build_generated_questions
from chunkbench_pipelines.resources import DuckDBResource, LLMResource, WorkspaceResource
from chunkbench_pipelines.scope import Scope
from tests.core.evaluation.chat_server import ScriptedChatServer

DOC = (
    "# Tides\n\nThe harbour of Quelm floods twice a day at high tide, and boats must be moored on the outer wall "
    "between October and March. The harbour master publishes the tide table every Monday morning.\n"
)


def benchmark(tmp_path) -> Scope:
    return Scope.of(Benchmark("tides", tmp_path / "corpus", tmp_path / "questions"))


def assets(scope: Scope) -> list:
    """The parse and the on-demand generation of the benchmark, as its part of the code location has them."""
    return [*build_document_assets(scope), build_generated_questions(scope)]


def resources(tmp_path, llm):
    corpus, questions, home = tmp_path / "corpus", tmp_path / "questions", tmp_path / "home"
    corpus.mkdir(exist_ok=True)
    questions.mkdir(exist_ok=True)
    (corpus / "tides.md").write_text(DOC, encoding="utf-8")
    return {
        "workspace": WorkspaceResource(home=str(home), corpus=str(corpus), questions=str(questions), benchmark="tides"),
        "duckdb": DuckDBResource(folder=str(home), benchmark="tides"),
        "llm": llm,
    }


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_generated_questions_asset_writes_a_grounded_set(tmp_path):
    reply = {
        "question": "How often does the harbour of Quelm flood?",
        "answer": "Twice a day.",
        "excerpts": ["floods twice a day at high tide"],
    }
    with ScriptedChatServer([json.dumps(reply)]) as server:
        res = resources(tmp_path, LLMResource(model="scripted", base_url=server.base_url))
        scope = benchmark(tmp_path)
        result = materialize(
            assets(scope),
            resources=res,
            instance=DagsterInstance.ephemeral(),
            run_config={"ops": {scope.op("generated_questions"): {"config": {"n": 1, "out": "gen.json", "seed": 3}}}},
        )
    assert result.success
    [event] = result.asset_materializations_for_node(scope.op("generated_questions"))
    assert event.metadata["kept"].value == 1 and event.metadata["tried"].value == 1
    data = json.loads((tmp_path / "questions" / "gen.json").read_text(encoding="utf-8"))
    assert data["generator"]["model"] == "scripted" and data["generator"]["seed"] == 3
    assert data["questions"][0]["references"][0]["content"] == "floods twice a day at high tide"


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_without_an_llm_the_asset_says_what_to_set(tmp_path):
    res = resources(tmp_path, LLMResource())
    result = materialize(
        assets(benchmark(tmp_path)), resources=res, instance=DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = str(failure.event_specific_data.error.message) + str(failure.event_specific_data.error)
    assert "CHUNKBENCH_LLM_MODEL" in message and "chunkbench questions draft" in message


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_a_refusing_llm_fails_the_asset_at_once_with_its_line(tmp_path):
    key = "sk-test-asset-abcdefghijklmnop1234"
    with ScriptedChatServer([{"status": 401, "message": f"Incorrect API key provided: {key}."}]) as server:
        res = resources(
            tmp_path, LLMResource(model="scripted", base_url=server.base_url, api_key=key, retry_budget_seconds=10.0)
        )
        scope = benchmark(tmp_path)
        result = materialize(
            assets(scope),
            resources=res,
            instance=DagsterInstance.ephemeral(),
            raise_on_error=False,
            run_config={"ops": {scope.op("generated_questions"): {"config": {"n": 2, "out": "gen.json"}}}},
        )
        assert len(server.requests) == 1  # stopped at once: not once per passage, not retried by the step
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = str(failure.event_specific_data.error.message)
    host = server.base_url.split("/")[2]
    assert f"LLM server {host} (model scripted) answered HTTP 401: Incorrect API key provided: [redacted]" in message
    assert "check the key in CHUNKBENCH_LLM_API_KEY" in message and "Nothing written" in message
    assert key not in message and not (tmp_path / "questions" / "gen.json").exists()
