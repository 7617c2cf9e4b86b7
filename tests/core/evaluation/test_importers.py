"""Importers: each format on a small file; contexts located in the parsed documents; bad entries dropped alone."""

from __future__ import annotations

import csv
import json

import pytest

from chunkbench_core.errors import QuestionSetError
from chunkbench_core.evaluation.importers import import_questions
from chunkbench_core.evaluation.question_check import check_questions
from chunkbench_core.parsing.persian import normalize_persian

DOCUMENTS = {
    "leave.md": "# Leave\n\nEveryone gets 25 days of annual leave.\nUnused days expire in March.\n",
    "travel.md": "# Travel\n\nTrain tickets are booked through the travel desk.\n",
    "fa.md": normalize_persian("مرخصی سالانه ۲۶ روز کاری است.\n"),  # as the parser gives it
}


def written_and_reloaded(result, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir(exist_ok=True)
    (folder / "set.json").write_text(json.dumps(result.to_json(), ensure_ascii=False), encoding="utf-8")
    check = check_questions(folder, DOCUMENTS)
    assert check.ok, check.problems  # what was written resolves against the same documents
    return check


def test_ragas_jsonl(tmp_path):
    path = tmp_path / "testset.jsonl"
    rows = [
        {"user_input": "How many days of leave?", "reference": "25 days.",
         "reference_contexts": ["Everyone gets 25 days of annual leave."]},
        {"user_input": "How are train tickets booked?", "reference": "Through the travel desk.",
         # whitespace differs from the parsed text, and two contexts in two documents
         "reference_contexts": ["Train  tickets are\nbooked through the travel desk.", "Unused days expire in March."]},
        {"user_input": "Who approves expenses?", "reference": "?", "reference_contexts": ["Expenses are approved by"]},
        {"user_input": "", "reference_contexts": ["Everyone gets"]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = import_questions("ragas", path, DOCUMENTS)
    # a context found nowhere no longer loses its question: it is kept (judge-only here) and noted
    assert [q.id for q in result.question_set.questions] == ["ragas-0001", "ragas-0002", "ragas-0003"]
    second = result.question_set.questions[1]
    assert [r.document for r in second.references] == ["travel.md", "leave.md"]
    assert second.references[0].content == "Train tickets are booked through the travel desk."
    assert DOCUMENTS["travel.md"][second.references[0].start:second.references[0].end] == second.references[0].content
    assert result.question_set.questions[0].expected_answer == "25 days."
    assert result.question_set.questions[2].judge_only
    assert {(p.question_id, p.field) for p in result.problems} == {("ragas-0004", "question")}
    assert any("'ragas-0003'" in note and "not verbatim" in note for note in result.notes)
    assert result.summary().startswith("4 question(s) read") and "3 kept, 1 left out" in result.summary()
    assert "1 judge-only" in result.summary()
    check = written_and_reloaded(result, tmp_path)
    assert len(check.resolved) == 3


def test_ragas_csv_with_python_list_cells_and_persian(tmp_path):
    path = tmp_path / "testset.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["user_input", "reference", "reference_contexts", "synthesizer_name"])
        writer.writeheader()
        writer.writerow({"user_input": "How many days of leave?", "reference": "25",
                         "reference_contexts": "['Everyone gets 25 days of annual leave.']", "synthesizer_name": "x"})
        # Arabic yeh/kaf as typed on many keyboards: found after the parser's Persian normalisation
        writer.writerow({"user_input": "مرخصی سالانه چند روز است؟", "reference": "۲۶ روز",
                         "reference_contexts": json.dumps(["مرخصي سالانه ۲۶ روز كاري است."], ensure_ascii=False),
                         "synthesizer_name": "x"})
    result = import_questions("ragas", path, DOCUMENTS)
    assert result.problems == [] and len(result.question_set.questions) == 2
    assert result.question_set.questions[1].references[0].document == "fa.md"
    written_and_reloaded(result, tmp_path)


def test_ragas_csv_needs_its_columns(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("question,answer\nq,a\n", encoding="utf-8")
    with pytest.raises(QuestionSetError, match="missing column"):
        import_questions("ragas", path, DOCUMENTS)


def test_llamaindex_dataset(tmp_path):
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps({
        "queries": {"q-a": "How many days of leave?", "q-b": "How are tickets booked?", "q-c": "Unknown node?",
                    "q-d": "Not in the documents?"},
        "corpus": {"n1": "Everyone gets 25 days of annual leave.", "n2": "Train tickets are booked through the travel desk.",
                   "n3": "A text of another corpus."},
        "relevant_docs": {"q-a": ["n1"], "q-b": ["n2", "n1"], "q-c": ["n9"], "q-d": ["n3"]},
        "mode": "text",
    }), encoding="utf-8")
    result = import_questions("llamaindex", path, DOCUMENTS, name="llama")
    assert [q.id for q in result.question_set.questions] == ["q-a", "q-b", "q-d"]
    assert [r.document for r in result.question_set.questions[1].references] == ["travel.md", "leave.md"]
    assert {(p.question_id, p.field) for p in result.problems} == {("q-c", "relevant_docs")}
    assert result.question_set.questions[2].judge_only and any("'q-d'" in n for n in result.notes)
    assert result.to_json()["name"] == "llama"
    written_and_reloaded(result, tmp_path)


def test_llamaindex_needs_its_keys(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"queries": {}}), encoding="utf-8")
    with pytest.raises(QuestionSetError, match="LlamaIndex retrieval dataset"):
        import_questions("llamaindex", path, DOCUMENTS)


def test_chroma_csv(tmp_path):
    text = "Alpha beta gamma. Delta epsilon."
    documents = {"sotu.md": text, **DOCUMENTS}
    path = tmp_path / "questions_df.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["question", "references", "corpus_id"])
        writer.writeheader()
        writer.writerow({"question": "Which letters come first?", "corpus_id": "sotu",
                         "references": json.dumps([{"content": "Alpha beta", "start_index": 0, "end_index": 10}])})
        writer.writerow({"question": "Wrong offsets?", "corpus_id": "sotu",
                         "references": json.dumps([{"content": "Delta", "start_index": 0, "end_index": 5}])})
    result = import_questions("chroma", path, documents)
    assert [q.id for q in result.question_set.questions] == ["sotu-0001"]
    assert [p.question_id for p in result.problems] == ["sotu-0002"]
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "set.json").write_text(json.dumps(result.to_json()), encoding="utf-8")
    assert check_questions(folder, documents).ok
