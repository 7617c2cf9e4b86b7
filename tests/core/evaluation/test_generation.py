"""Question generation against a scripted OpenAI-compatible server on 127.0.0.1, and llama.cpp as plumbing."""

from __future__ import annotations

import json

import pytest

from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.evaluation.generation import (
    PROMPT_VERSION,
    GenerationRequest,
    draft_question_set,
    generate_question_set,
    generation_messages,
    plan_generation,
    sample_passages,
)
from chunkbench_core.evaluation.llm import LLMSettings, make_client
from chunkbench_core.tokens import count_tokens
from chunkbench_core.evaluation.question_check import check_questions
from chunkbench_core.parsing import parse

from .chat_server import ScriptedChatServer

HANDBOOK = """# Working hours

Core hours are 10:00 to 15:30 local time, and everyone is asked to be available for meetings during that window. Outside core hours people may arrange their day as they like, provided their team knows when they are reachable.

# Leave

Every employee receives 25 days of annual leave, plus public holidays. Unused days may be carried into the next year up to a limit of five days, and carried days expire at the end of March.

# Travel

Train tickets are booked through the travel desk at least ten days ahead. Flights need the approval of a director and are only allowed for journeys longer than six hours by train.

# Equipment

Every new starter receives a laptop, a headset and a monitor. Equipment is returned to the service desk on the last working day, and missing items are charged at their replacement value.
"""
VERBATIM = {
    "question": "What are the core working hours?",
    "answer": "10:00 to 15:30 local time.",
    "excerpts": ["Core hours are 10:00 to 15:30 local time"],
}
PARAPHRASED = {
    "question": "How many leave days are there?",
    "answer": "25.",
    "excerpts": ["Employees get twenty-five days of annual leave"],
}
DUPLICATE = {
    "question": "What are the core working hours?",
    "answer": "10:00-15:30.",
    "excerpts": ["everyone is asked to be available for meetings during that window"],
}
MINILM = Embedder(get_model("all-minilm-l6-v2"))


def embed(texts):
    return MINILM.embed(texts, "query")


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    path = tmp_path_factory.mktemp("gen") / "handbook.md"
    path.write_text(HANDBOOK, encoding="utf-8")
    document = parse(str(path))
    document.document = "handbook.md"
    return [document]


SETTINGS = LLMSettings(model="scripted-model", input_price_per_mtok=0, output_price_per_mtok=0)


def test_verbatim_kept_paraphrase_and_duplicate_dropped_invalid_retried_then_counted(documents, tmp_path):
    replies = [json.dumps(VERBATIM), json.dumps(PARAPHRASED), json.dumps(DUPLICATE), "{not json", "still not json"]
    with ScriptedChatServer(replies) as server:
        data, report = generate_question_set(
            documents,
            make_client(server.base_url),
            SETTINGS,
            embed,
            GenerationRequest(4, seed=7, name="gen", max_tries=4),
        )
        requests = server.requests
    assert len(requests) == 5  # four passages, the invalid one asked twice
    assert all(r["response_format"] == {"type": "json_object"} for r in requests)
    assert "not usable" in requests[4]["messages"][-1]["content"]  # the retry says why
    assert (report.tried, report.kept) == (4, 1)
    assert report.dropped == {"excerpt not verbatim": 1, "near-duplicate": 1, "invalid reply": 1}
    summary = report.summary()
    assert "4 passage(s) tried, 1 question(s) kept" in summary and "1 near-duplicate" in summary
    [question] = data["questions"]
    assert question["question"] == VERBATIM["question"] and question["expected_answer"] == VERBATIM["answer"]
    [reference] = question["references"]
    text = documents[0].markdown
    assert text[reference["start"] : reference["end"]] == reference["content"] == VERBATIM["excerpts"][0]
    # the kept question's evidence length in tokens, set against the chunk sizes compared
    assert report.evidence_tokens == [count_tokens(reference["content"])]
    lengths, favoured = report.lengths([64, 256])
    assert lengths.startswith("Evidence length of the 1 question with spans: median ")
    assert "Fits in one chunk: 100% at 64 tokens, 100% at 256 tokens." in lengths
    assert favoured is not None and "favours small chunks" in favoured
    assert data["generator"] == {
        "model": "scripted-model",
        "prompt_version": PROMPT_VERSION,
        "seed": 7,
        "documents": "*",
        "duplicate_threshold": 0.92,
        "max_coverage": 0.5,
        "requested": 4,
    }
    folder = tmp_path / "q"
    folder.mkdir()
    (folder / "gen.json").write_text(json.dumps(data), encoding="utf-8")
    check = check_questions(folder, {"handbook.md": text})
    assert check.ok and len(check.resolved) == 1  # the written file is a valid, resolving question set


def test_excerpts_covering_most_of_a_document_are_dropped(tmp_path):
    path = tmp_path / "tiny.md"
    body = "The office closes at six in the evening on every working day of the week, all year round."
    path.write_text(body + "\n", encoding="utf-8")
    document = parse(str(path))
    document.document = "tiny.md"
    reply = {"question": "When does the office close?", "answer": "At six.", "excerpts": [body]}
    with ScriptedChatServer([json.dumps(reply)]) as server:
        data, report = generate_question_set(
            [document], make_client(server.base_url), SETTINGS, embed, GenerationRequest(1)
        )
    assert data["questions"] == [] and report.dropped == {"excerpts cover most of the document": 1}


def test_passages_are_stratified_by_document_and_kind_and_seeded(documents):
    from chunkbench_core.parsing.models import ParsedDocument, TreeNode, Unit

    rows = "\n".join(f"Item: thing {i}, Price: {i} euros and some more words to pass" for i in range(6))
    table = ParsedDocument(
        "prices.xlsx",
        rows,
        TreeNode("document"),
        [Unit("table_row", line, rows.index(line), rows.index(line) + len(line)) for line in rows.split("\n")],
        "xlsx",
    )
    picked = sample_passages([*documents, table], 4, seed=1)
    assert {p.kind for p in picked} == {"prose", "spreadsheet_row"}
    assert {p.document for p in picked} == {"handbook.md", "prices.xlsx"}
    assert sample_passages([*documents, table], 4, seed=1) == picked
    for p in picked:
        assert {"handbook.md": documents[0].markdown, "prices.xlsx": rows}[p.document][p.start : p.end] == p.text


def test_persian_passages_ask_for_persian_questions():
    user = generation_messages("fa.docx", "مرخصی سالانه ۲۶ روز کاری است و باید از قبل درخواست شود.")[1]["content"]
    assert "write the question and the answer in Persian" in user
    assert "Persian" not in generation_messages("en.md", "Annual leave is 25 days.")[1]["content"]


def test_dry_run_and_draft_send_nothing(documents):
    plan = plan_generation(documents, GenerationRequest(2), SETTINGS)
    assert plan.min_calls == 2 and plan.max_calls >= plan.min_calls and plan.usd == 0.0
    assert "Nothing was sent" in plan.summary()
    draft = draft_question_set(documents, 3, seed=2)
    assert len(draft["questions"]) == 3
    for q in draft["questions"]:
        [ref] = q["references"]
        assert q["question"] == "" and documents[0].markdown[ref["start"] : ref["end"]] == ref["content"]


@pytest.mark.slow
def test_generation_against_the_llama_cpp_server(documents, llama_server_url):
    """Plumbing: a real OpenAI-compatible server; the base model's replies decide what is kept, never a crash."""
    settings = LLMSettings(
        model="gemma", system_prompt_as_user=True, timeout_seconds=120, input_price_per_mtok=0, output_price_per_mtok=0
    )
    data, report = generate_question_set(
        documents,
        make_client(f"{llama_server_url}/v1"),
        settings,
        embed,
        GenerationRequest(1, max_tries=2, attempts=1, max_tokens=32),
    )
    assert report.tried in (1, 2) and report.calls == report.tried  # one attempt per passage; stops once kept
    assert report.usage.prompt_tokens > 0
    assert report.kept + sum(report.dropped.values()) == report.tried
    for question in data["questions"]:
        for ref in question["references"]:
            assert documents[0].markdown[ref["start"] : ref["end"]] == ref["content"]
