"""The golden-set sheet of the financial-statements fixture (scripts/make_financial_fixture.py), imported as a
team would: the CSV of 10 questions with source-document globs and answers, no evidence excerpts.

facts.json says where each answer really is (the table row and figure, or the sentence); the importer never
reads it, so it checks the located evidence from outside.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkbench_core.evaluation.importers import ImportOptions, import_table, parse_mapping
from chunkbench_core.parsing import parse

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "financial"
MAPPING = 'question=Question,answer=Answer,sources="Source Docs",category="Source Chunk Type"'


@pytest.fixture(scope="module")
def documents() -> dict[str, str]:
    return {path.name: parse(path).markdown for path in sorted(FIXTURE.glob("*.pdf"))}


@pytest.fixture(scope="module")
def imported(documents):
    return import_table(
        FIXTURE / "questions.csv", documents, ImportOptions(name="financial", mapping=parse_mapping(MAPPING))
    )


def test_import_keeps_all_ten_questions_with_their_labels_and_source_documents(imported):
    questions = imported.question_set.questions
    assert len(questions) == 10 and not imported.problems
    assert sorted(q.category for q in questions) == ["Table"] * 6 + ["Text"] * 4
    # the column mapped to no role is kept as a label of every question
    assert all(q.labels.get("Question Type") for q in questions)
    assert {q.labels["Question Type"] for q in questions} >= {"Single-Doc Single-Chunk RAG"}
    assert all(q.documents for q in questions)


def test_located_evidence_is_the_planted_span_and_never_from_another_document(imported, documents):
    facts = {
        item["question"]: item["evidence"] for item in json.loads((FIXTURE / "facts.json").read_text())["csv_evidence"]
    }
    questions = imported.question_set.questions
    assert len(facts) == len(questions)
    found = 0
    for question in questions:
        planted = facts[question.question]
        allowed = {e["document"] for e in planted}
        for reference in question.references:
            assert reference.document in allowed, (question.id, reference.document)
            assert reference.located and reference.score is not None
            text = documents[reference.document]
            assert text[reference.start : reference.end] == reference.content
        # every planted piece of evidence is covered by a located span of its document: the figure's table row
        # (which names the row's label) or the sentence
        for evidence in planted:
            spans = [r.content for r in question.references if r.document == evidence["document"]]
            if "figure" in evidence:
                hit = any(evidence["figure"] in s and evidence["label"] in s for s in spans)
            else:
                hit = any(evidence["text"] in " ".join(s.split()) for s in spans)
            found += hit
    n_planted = sum(len(e) for e in facts.values())
    assert found == n_planted, f"{found} of {n_planted} planted spans located"
