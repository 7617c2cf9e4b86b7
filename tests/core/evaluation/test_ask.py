"""``ask`` on the sample corpus: real parsed documents, real MiniLM, a real embedded Qdrant, a scripted chat server."""

from __future__ import annotations

import json

import pytest

from chunkbench_core.datasets import SAMPLE_CORPUS
from chunkbench_core.embedding import Embedder, builtin_registry, get_model
from chunkbench_core.evaluation.ask import AskRequest, CollectionMissingError, ask
from chunkbench_core.evaluation.llm import LLMSettings, make_client
from chunkbench_core.evaluation.retrieval import ExpansionSettings
from chunkbench_core.parsing import parse
from chunkbench_core.stages.collections import BuildRequest, build_collection, read_build_chunks
from chunkbench_core.stages.spec import (
    CollectionRequest,
    SpecContext,
    partition_collection,
    partition_rows_key,
    resolve_collection,
)
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore

from .chat_server import ScriptedChatServer

pytestmark = pytest.mark.slow  # builds two collections of the sample corpus

SAMPLE = SAMPLE_CORPUS
MODEL = "all-minilm-l6-v2"
QUESTION = "What are the core working hours?"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("ask")
    documents = []
    for name in ("employee_handbook.docx", "product_faq.md"):
        document = parse(str(SAMPLE / name))
        document.document = name
        documents.append(document)
    spec = get_model(MODEL)
    embedder = Embedder(spec)
    results = ResultsDB(root / "results")
    store = VectorStore(local_root=root / "qdrant")
    for strategy in ("fixed_size", "semantic_parent_child"):
        collection = resolve_collection(CollectionRequest(strategy, MODEL), SpecContext(builtin_registry()))
        build_collection(
            BuildRequest(collection, documents),
            embedder,
            embedder if collection.boundary_model else None,
            store,
            results,
        )
    yield {
        "store": store,
        "results": results,
        "embedder": embedder,
        "texts": {d.document: d.markdown for d in documents},
    }
    store.close()


def run(built, strategy, llm_client=None, llm_settings=None, **kwargs):
    _, rows = read_build_chunks(built["results"], partition_rows_key(strategy, MODEL))
    request = AskRequest(QUESTION, strategy, partition_collection(strategy, MODEL), chunk_rows=rows, **kwargs)
    return ask(request, built["embedder"], built["store"], llm_client, llm_settings)


def test_ask_shows_hits_with_scores_offsets_and_the_expansion_tree(built):
    result = run(built, "fixed_size", top_k=3, expansion=ExpansionSettings(1, 1))
    assert [c.rank for c in result.hits] == [1, 2, 3]
    assert all(a.score >= b.score for a, b in zip(result.hits, result.hits[1:]))
    for chunk in result.context:  # offsets rebuild the text
        assert built["texts"][chunk.document][chunk.start : chunk.end] == chunk.text
    assert result.hits[0].document == "employee_handbook.docx" and "10:00 to 15:30" in result.hits[0].text
    assert any(n.neighbors_prev or n.neighbors_next for n in result.tree) and len(result.context) > 3
    text = result.to_text()
    assert "expansion tree:" in text and "score 0." in text and "no LLM configured" in text
    data = json.loads(json.dumps(result.to_dict()))
    assert data["neighbors"] == {"previous": 1, "next": 1, "applied": True}
    assert data["hits"][0]["document"] == "employee_handbook.docx" and data["answer"] is None
    assert set(data["latency_ms"]) == {"embed", "search", "expand"} and data["tokens"]["context"] > 0

    only_faq = run(built, "fixed_size", top_k=2, document="product_faq.md")
    assert {c.document for c in only_faq.hits} == {"product_faq.md"}


def test_ask_gives_parent_context_and_the_answer(built):
    with ScriptedChatServer(["Core hours are 10:00 to 15:30."]) as server:
        settings = LLMSettings(model="scripted", input_price_per_mtok=0, output_price_per_mtok=0)
        result = run(
            built, "semantic_parent_child", top_k=2, llm_client=make_client(server.base_url), llm_settings=settings
        )
        prompt = server.requests[0]["messages"][-1]["content"]
    assert result.parents and all(p.text for p in result.parents)
    assert result.parents[0].text in prompt  # the parent section is in the context the LLM got
    assert result.answer == "Core hours are 10:00 to 15:30." and result.answer_error is None
    assert result.prompt_tokens and result.completion_tokens == 6 and "generate" in result.latency_ms
    text = result.to_text()
    assert "parent context" in text and "answer (scripted):" in text and "tokens: context" in text


def test_a_refused_answer_is_the_provider_s_one_line_and_a_transient_one_is_retried(built):
    key = "sk-test-ask-abcdefghijklmnop1234"
    settings = LLMSettings(model="ask-m", timeout_seconds=2.0, retry_budget_seconds=10.0, max_retries=2)
    with ScriptedChatServer([{"status": 401, "message": f"Incorrect API key provided: {key}."}]) as server:
        result = run(built, "fixed_size", top_k=2, llm_client=make_client(server.base_url, key), llm_settings=settings)
        assert len(server.requests) == 1  # not retried, by us or by the openai client
    host = server.base_url.split("/")[2]
    assert result.answer is None and result.hits  # what was retrieved is still shown
    assert result.answer_error.startswith(
        f"LLM server {host} (model ask-m) answered HTTP 401: Incorrect API key provided: [redacted]"
    )
    assert "not retried" in result.answer_error and "check the key in CHUNKBENCH_LLM_API_KEY" in result.answer_error
    text = result.to_text()
    assert f"answer failed: LLM server {host}" in text and key not in text and key not in json.dumps(result.to_dict())
    with ScriptedChatServer([{"status": 429, "retry_after": 0}, {"malformed": True}, "At 10:00."]) as server:
        result = run(built, "fixed_size", top_k=2, llm_client=make_client(server.base_url, key), llm_settings=settings)
        assert len(server.requests) == 3
    assert result.answer == "At 10:00." and result.answer_error is None


def test_ask_names_the_partition_to_materialize(built):
    with pytest.raises(CollectionMissingError, match=r"chunk_collections partition all-minilm-l6-v2\|recursive"):
        run(built, "recursive")


def test_a_saved_query_keeps_what_was_asked_what_came_back_and_what_it_took(built, tmp_path):
    from chunkbench_core.evaluation.ask import query_row
    from chunkbench_core.storage.queries import (
        MIN_PREFIX,
        QueryNotFound,
        find_query,
        list_queries,
        query_text,
        save_query,
    )
    from chunkbench_core.storage.records import now

    results = ResultsDB(tmp_path / "results")
    assert list_queries(results) == []
    with ScriptedChatServer(["Core hours are 10:00 to 15:30."]) as server:
        settings = LLMSettings(model="scripted", input_price_per_mtok=0, output_price_per_mtok=0)
        answered = run(
            built,
            "fixed_size",
            top_k=3,
            expansion=ExpansionSettings(1, 1),
            llm_client=make_client(server.base_url),
            llm_settings=settings,
        )
    first = save_query(results, query_row(answered, configuration_source="given", created_at=now(), build="b1"))
    plain = run(built, "fixed_size", top_k=2, document="product_faq.md")
    second = save_query(results, query_row(plain, configuration_source="recommended", created_at=now()))
    assert len(first) == 16 and first != second and all(c in "0123456789abcdef" for c in first)

    listed = list_queries(results)
    assert [q["query_id"] for q in listed] == [second, first]  # newest first
    assert listed[1]["configuration"] == f"fixed_size × {MODEL}" and listed[1]["answered"] is True
    assert listed[1]["hits"] == 3 and listed[0]["hits"] == 2 and listed[0]["answered"] is False
    assert list_queries(results, limit=1) == listed[:1]

    saved = find_query(results, first[:MIN_PREFIX]).to_dict()
    assert saved["question"] == QUESTION and saved["strategy"] == "fixed_size" and saved["corpus_model"] == MODEL
    assert saved["configuration_source"] == "given" and saved["build"] == "b1" and saved["top_k"] == 3
    assert (saved["neighbor_prev"], saved["neighbor_next"], saved["expansion_applied"]) == (1, 1, True)
    hits = saved["retrieved"]
    assert [h["rank"] for h in hits] == [1, 2, 3] and all(h["score"] > 0 for h in hits)
    for chunk in saved["context"]:  # offsets and texts: the chunks can be read back without the collection
        assert built["texts"][chunk["document"]][chunk["start"] : chunk["end"]] == chunk["text"]
    assert any(n["neighbors_prev"] or n["neighbors_next"] for n in saved["expansion_tree"])
    assert saved["answer"] == "Core hours are 10:00 to 15:30." and saved["llm_model"] == "scripted"
    assert saved["prompt_tokens"] > 0 and saved["completion_tokens"] == 6 and saved["generate_ms"] is not None
    assert saved["total_ms"] >= saved["embed_ms"] + saved["search_ms"]
    text = query_text(find_query(results, first))
    assert f"query {first}" in text and "answer (scripted):" in text and "expansion tree:" in text
    assert f"fixed_size × {MODEL} (given)" in text
    assert find_query(results, second).to_dict()["document"] == "product_faq.md"

    with pytest.raises(QueryNotFound, match="at least 8"):
        find_query(results, first[:7])
    with pytest.raises(QueryNotFound, match="no saved query"):
        find_query(results, "0" * 16 if not first.startswith("0" * 8) else "f" * 16)
    # two ids with one prefix: the prefix is refused, naming both
    twin = {**query_row(plain, configuration_source="given", created_at=now()), "query_id": first[:8] + "0" * 8}
    if twin["query_id"] != first:
        save_query(results, twin)
        with pytest.raises(QueryNotFound, match="give more characters"):
            find_query(results, first[:8])
    # saving the same query again replaces it (the id is its key)
    before = len(list_queries(results, limit=None))
    save_query(results, query_row(plain, configuration_source="recommended", created_at=now()) | {"query_id": second})
    assert len(list_queries(results, limit=None)) == before
