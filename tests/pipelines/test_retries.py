"""Which failures the assets' RetryPolicy retries, through Dagster, against a real HTTP server on 127.0.0.1.

A provider's 429 is retried by the client within its budget; past it, the step fails once with the provider's
line (what it said, what was tried, what to do), and the RetryPolicy does not run it again; a provider that
rejects the request, an unavailable model and a bug fail at once with the reason, with no retry.
"""

import json

import pytest
from dagster import DagsterEventType, DagsterInstance, Failure

from tests.pipelines.support.partitions import environment_graph
from chunkbench_pipelines.definitions import build_resources
from chunkbench_pipelines.failures import permanent_errors_fail_fast
from chunkbench_pipelines.partitions import partition_key
from chunkbench_pipelines.resources import EmbeddingResource
from tests.pipelines.support.environment import environment_settings
from tests.core.embedding.openai_server import FaultProxy


MODEL = "nomic-embed-text-v2-moe"  # a shipped openai_compatible model: 768 dimensions
# the code location loaded without CHUNKBENCH_OPENAI_COMPATIBLE_URL, so MODEL has no partitions there;
# these tests configure it through the resource and build the assets over it


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    corpus, questions = tmp_path / "corpus", tmp_path / "questions"
    corpus.mkdir()
    questions.mkdir()
    (corpus / "rivers.md").write_text("# Rivers\n\nThe Almo river floods its valley every April.\n", encoding="utf-8")
    (corpus / "mills.md").write_text("# Mills\n\nThe Halden mill ground barley until 1952.\n", encoding="utf-8")
    (questions / "set.json").write_text(json.dumps({"questions": []}), encoding="utf-8")
    for name, value in {
        "CHUNKBENCH_HOME": tmp_path / "home",
        "CHUNKBENCH_CORPUS": corpus,
        "CHUNKBENCH_QUESTIONS": questions,
    }.items():
        monkeypatch.setenv(name, str(value))
    for name in (
        "QDRANT_URL",
        "CHUNKBENCH_OPENAI_COMPATIBLE_URL",
        "CHUNKBENCH_LLM_MODEL",
        "CHUNKBENCH_MODELS",
        "OPENAI_API_KEY",
        "CHUNKBENCH_BOUNDARY_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
    proxy = FaultProxy(dimension=768)
    instance = DagsterInstance.ephemeral()
    assert (
        environment_graph()
        .materialize(
            ["source_documents", "parsed_documents"],
            instance=instance,
            resources=build_resources(environment_settings()),
        )
        .success
    )
    yield proxy, instance
    proxy.stop()


def build(proxy: FaultProxy, instance: DagsterInstance, url: str | None = "proxy"):
    embeddings = EmbeddingResource(
        compatible_base_url=proxy.base_url if url == "proxy" else url,
        max_retries=1,
        home=str(environment_settings().home),  # the test's own embedding cache
        backoff_initial_seconds=0.01,
        backoff_max_seconds=0.02,
        timeout_seconds=10,
    )
    result = environment_graph(["all-minilm-l6-v2", MODEL]).materialize(
        ["chunk_collections"],
        partition_key=partition_key("fixed_size", MODEL),
        instance=instance,
        resources={**build_resources(environment_settings()), "embeddings": embeddings},
        raise_on_error=False,
    )
    kinds = [e.event_type for e in result.all_events]
    failures = [e.event_specific_data.error for e in result.all_events if e.is_step_failure]
    return result, kinds, " ".join(f"{f.message} {f.cause.message if f.cause else ''}" for f in failures)


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_a_rate_limit_within_the_client_retries_is_absorbed(setup):
    proxy, instance = setup
    proxy.script("429")  # the first request; the client's one retry goes through
    result, kinds, _ = build(proxy, instance)
    assert result.success and DagsterEventType.STEP_UP_FOR_RETRY not in kinds
    [materialization] = result.asset_materializations_for_node(environment_graph().op("chunk_collections"))
    assert materialization.metadata["dagster/row_count"].value == 2
    assert len(proxy.requests) == 2


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_a_rate_limit_past_the_client_retries_fails_once_saying_what_was_tried(setup):
    """The client's retries and their budget are the whole wait: the step's RetryPolicy does not run them again
    (which made a silent server cost about 25 minutes)."""
    proxy, instance = setup
    proxy.script("429", "429", "429")
    result, kinds, message = build(proxy, instance)
    assert not result.success and DagsterEventType.STEP_UP_FOR_RETRY not in kinds
    assert len(proxy.requests) == 2  # the request and its one client retry
    assert "answered HTTP 429: rate limited (test); tried 2 times" in message
    assert "lower CHUNKBENCH_PROVIDER_POOL_LIMIT" in message


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_a_rejected_request_fails_at_once(setup):
    proxy, instance = setup
    proxy.script("401")
    result, kinds, message = build(proxy, instance)
    assert not result.success and DagsterEventType.STEP_UP_FOR_RETRY not in kinds
    assert "answered HTTP 401: scripted HTTP 401 (test); not retried" in message and len(proxy.requests) == 1
    assert "check the key in CHUNKBENCH_OPENAI_COMPATIBLE_API_KEY" in message


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_an_unavailable_model_fails_at_once_with_the_reason(setup):
    proxy, instance = setup
    result, kinds, message = build(proxy, instance, url=None)
    assert not result.success and DagsterEventType.STEP_UP_FOR_RETRY not in kinds
    assert "CHUNKBENCH_OPENAI_COMPATIBLE_URL" in message and proxy.requests == []


@pytest.mark.parametrize("error", [TypeError("unsupported operand"), AttributeError("no attribute 'x'")])
def test_a_bug_is_not_retried(error):
    with pytest.raises(Failure) as info, permanent_errors_fail_fast():
        raise error
    assert info.value.allow_retries is False and type(error).__name__ in info.value.description


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_an_unavailable_boundary_model_fails_at_once_with_the_reason(setup):
    _, instance = setup
    config = {"ops": {"chunk_collections": {"config": {"boundary_model": "text-embedding-3-small"}}}}
    result = environment_graph().materialize(
        ["chunk_collections"],
        instance=instance,
        run_config=config,
        partition_key=partition_key("semantic", "all-minilm-l6-v2"),
        resources=build_resources(environment_settings()),
        raise_on_error=False,
    )
    kinds = [e.event_type for e in result.all_events]
    [failure] = [e.event_specific_data.error for e in result.all_events if e.is_step_failure]
    assert not result.success and DagsterEventType.STEP_UP_FOR_RETRY not in kinds
    assert "OPENAI_API_KEY" in failure.message + (failure.cause.message if failure.cause else "")


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_an_empty_question_set_fails_at_once(setup):
    _, instance = setup  # the question set of the fixture holds no question
    key = partition_key("fixed_size", "all-minilm-l6-v2")
    assert (
        environment_graph()
        .materialize(
            ["chunk_collections"],
            partition_key=key,
            instance=instance,
            resources=build_resources(environment_settings()),
        )
        .success
    )
    result = environment_graph().materialize(
        ["experiment_results"],
        partition_key=key,
        instance=instance,
        resources=build_resources(environment_settings()),
        raise_on_error=False,
    )
    kinds = [e.event_type for e in result.all_events]
    [failure] = [e.event_specific_data.error for e in result.all_events if e.is_step_failure]
    assert not result.success and DagsterEventType.STEP_UP_FOR_RETRY not in kinds
    assert "no question could be evaluated" in failure.message + (failure.cause.message if failure.cause else "")
