"""The Chroma CSV importer, offsets in question sets, and the questions folder."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from chunkbench_core.datasets import CHROMA_CORPORA, CHROMA_QUESTIONS, CHROMA_QUESTIONS_FILE
from chunkbench_core.evaluation.experiment import resolve_questions
from chunkbench_core.evaluation.questions import (
    load_chroma_csv,
    load_question_sets,
    parse_question_set,
    question_set_to_json,
)


TEXT = "Alpha beta gamma. The late fee was cut from $32 to $8.\nDelta epsilon."


def write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["question", "references", "corpus_id"])
        writer.writeheader()
        writer.writerows(rows)
    return path


def ref(content: str, start: int | None = None) -> dict:
    start = TEXT.index(content) if start is None else start
    return {"content": content, "start_index": start, "end_index": start + len(content)}


def test_import_keeps_offsets_and_names_documents(tmp_path):
    path = write_csv(
        tmp_path / "q.csv",
        [
            {
                "question": "How much was the fee cut?",
                "references": json.dumps([ref("The late fee was cut from $32 to $8.")]),
                "corpus_id": "sotu",
            },
            {
                "question": "Which letters?",
                "references": json.dumps([ref("Alpha beta"), ref("Delta epsilon")]),
                "corpus_id": "sotu",
            },
        ],
    )
    qs = load_chroma_csv(path)
    assert qs.name == "q" and len(qs.sha256) == 64
    assert [q.id for q in qs.questions] == ["sotu-0001", "sotu-0002"]
    first = qs.questions[0].references[0]
    assert (first.document, first.start, first.end) == ("sotu.md", 18, 54)
    assert qs.questions[1].category == "sotu" and len(qs.questions[1].references) == 2
    resolved, errors = resolve_questions([qs], {"sotu.md": TEXT})
    assert errors == [] and resolved[0].references[0].start == 18
    # the JSON form round-trips
    again = parse_question_set(question_set_to_json(qs), "again.json")
    assert again.questions == qs.questions


def test_wrong_offsets_are_reported_with_file_question_and_field(tmp_path):
    path = write_csv(
        tmp_path / "q.csv",
        [{"question": "?", "references": json.dumps([ref("Delta epsilon", start=0)]), "corpus_id": "sotu"}],
    )
    _, errors = resolve_questions([load_chroma_csv(path)], {"sotu.md": TEXT})
    assert len(errors) == 1
    message = str(errors[0])
    assert "q.csv" in message and "sotu-0001" in message and "references[0].content" in message


@pytest.mark.parametrize(
    "row, field",
    [
        ({"question": "?", "references": "not json", "corpus_id": "c"}, "references"),
        ({"question": "?", "references": json.dumps([{"content": "x"}]), "corpus_id": "c"}, "references[0]"),
        ({"question": "?", "references": "[]", "corpus_id": ""}, "corpus_id"),
        ({"question": "", "references": "[]", "corpus_id": "c"}, "question"),
    ],
)
def test_bad_rows_name_the_field(tmp_path, row, field):
    good = {"question": "?", "references": json.dumps([ref("Alpha beta")]), "corpus_id": "sotu"}
    qs = load_chroma_csv(write_csv(tmp_path / "bad.csv", [good, row]))
    assert [q.id for q in qs.questions] == ["sotu-0001"]  # the bad row is dropped alone
    [error] = qs.errors
    assert error.field == field and error.question_id and "bad.csv" in error.file


def test_json_offsets_validation():
    base = {"id": "q", "question": "?", "references": [{"document": "d", "content": "x", "start": 5, "end": 2}]}
    qs = parse_question_set({"questions": [base]}, "f.json")
    assert qs.questions == [] and "end" in qs.errors[0].reason
    base["references"][0].pop("end")
    qs = parse_question_set({"questions": [base]}, "f.json")
    assert qs.questions == [] and "together" in qs.errors[0].reason


def test_questions_folder_reads_chroma_csv_and_rejects_other_csv(tmp_path):
    write_csv(
        tmp_path / "chroma.csv", [{"question": "?", "references": json.dumps([ref("Alpha beta")]), "corpus_id": "sotu"}]
    )
    (tmp_path / "other.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    sets, errors = load_question_sets(tmp_path)
    assert [s.name for s in sets] == ["chroma"]
    assert len(errors) == 1 and "other.csv" in str(errors[0])


def test_the_real_chroma_questions_resolve_at_their_offsets():
    qs = load_chroma_csv(CHROMA_QUESTIONS_FILE)
    assert len(qs.questions) == 472
    documents = {p.name: p.read_text(encoding="utf-8") for p in CHROMA_CORPORA.glob("*.md")}
    resolved, errors = resolve_questions([qs], documents)
    assert errors == [] and len(resolved) == 472
    assert sum(len(r.references) for r in resolved) == sum(len(q.references) for q in qs.questions)


def test_the_shipped_chroma_questions_folder_is_a_question_folder_of_the_pipeline():
    """CHUNKBENCH_QUESTIONS can point at the shipped folder: one set, no error, named after its file."""
    sets, errors = load_question_sets(CHROMA_QUESTIONS)
    assert errors == []
    assert [(s.name, len(s.questions)) for s in sets] == [("chroma_general", 472)]
