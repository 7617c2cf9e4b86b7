"""Validation that loses nothing: each bad question is dropped alone, named by file, question, field and reason."""

import json

import numpy as np
import pytest

from chunkbench_core.errors import QuestionSetError
from chunkbench_core.evaluation.experiment import aggregate, outcome_row, run_retrieval
from chunkbench_core.evaluation.question_check import check_questions
from chunkbench_core.evaluation.questions import load_question_set, load_question_sets, parse_question_set

HANDBOOK = "# Leave\n\nEveryone gets 25 days of annual leave. Unused days expire in March.\n"
DOCUMENTS = {"handbook.md": HANDBOOK}
GOOD = {"id": "good", "question": "How many days of leave?",
        "references": [{"document": "handbook.md", "content": "25 days of annual leave"}]}


def write(folder, name, data):
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=1), encoding="utf-8")
    return path


def problems_by_id(check):
    return {p.question_id: p for p in check.problems}


def test_wrong_key_drops_only_that_question_and_suggests_the_right_one(tmp_path):
    bad = {"id": "bad", "question": "?", "references": [{"doc": "handbook.md", "content": "25 days"}]}
    write(tmp_path, "set.json", {"questions": [GOOD, bad]})
    check = check_questions(tmp_path, DOCUMENTS)
    assert [r.question.id for r in check.resolved] == ["good"]
    [problem] = check.problems
    assert (problem.question_id, problem.field) == ("bad", "references[0].doc")
    assert "did you mean 'document'" in problem.reason and problem.file.endswith("set.json")


def test_unknown_question_key_is_named_too(tmp_path):
    typo = {**GOOD, "id": "typo", "expected_answr": "25"}
    qs = parse_question_set({"questions": [GOOD, typo]}, "f.json")
    assert [q.id for q in qs.questions] == ["good"]
    assert qs.errors[0].field == "expected_answr" and "did you mean 'expected_answer'" in qs.errors[0].reason


def test_json_syntax_error_names_line_and_column(tmp_path):
    path = write(tmp_path, "broken.json", '{"questions": [\n  {"id": "a", "question": "b"},\n]}\n')
    with pytest.raises(QuestionSetError) as info:
        load_question_set(path)
    message = str(info.value)
    assert "JSON syntax error at line 3, column 1" in message and "trailing comma" in message
    assert "UTF-8" not in message
    # the folder still loads its other files, and the broken one is one problem
    write(tmp_path, "ok.json", {"questions": [GOOD]})
    check = check_questions(tmp_path, DOCUMENTS)
    assert [r.question.id for r in check.resolved] == ["good"]
    assert [p.file.rsplit("/", 1)[-1] for p in check.problems] == ["broken.json"]


def test_not_utf8_is_named_as_an_encoding_problem(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes('{"questions": [{"id": "a", "question": "caf\u00e9"}]}'.encode("latin-1"))
    with pytest.raises(QuestionSetError, match="not UTF-8 text"):
        load_question_set(path)


def test_unknown_document_and_unlocatable_excerpt_drop_their_question_alone(tmp_path):
    write(tmp_path, "set.json", {"questions": [
        GOOD,
        {"id": "nodoc", "question": "?", "references": [{"document": "missing.md", "content": "25 days"}]},
        {"id": "noexcerpt", "question": "?", "references": [{"document": "handbook.md", "content": "30 days"}]},
    ]})
    check = check_questions(tmp_path, DOCUMENTS)
    assert [r.question.id for r in check.resolved] == ["good"]
    found = problems_by_id(check)
    assert found["nodoc"].field == "references[0].document" and "'missing.md' is not a parsed document" in found["nodoc"].reason
    assert found["noexcerpt"].field == "references[0].content" and "was not found" in found["noexcerpt"].reason
    assert not check.ok and len(check.problems) == 2
    rows = check.rows()
    assert {r["question_id"] for r in rows} == {"nodoc", "noexcerpt"} and all(r["question_set"] == "set" for r in rows)


def test_duplicate_id_keeps_the_first(tmp_path):
    qs = parse_question_set({"questions": [GOOD, {**GOOD, "question": "again?"}]}, "f.json")
    assert [q.question for q in qs.questions] == [GOOD["question"]]
    assert qs.errors[0].field == "id" and "duplicate" in qs.errors[0].reason


def test_problems_are_listed_once_across_loads(tmp_path):
    write(tmp_path, "set.json", {"questions": [GOOD, {"id": "x", "question": ""}]})
    sets, errors = load_question_sets(tmp_path)
    assert len(errors) == 1 and errors[0].question_id == "x"
    check = check_questions(tmp_path, DOCUMENTS)
    assert len(check.problems) == 1


def test_questions_without_references_are_judge_only_never_scored_zero(tmp_path):
    from chunkbench_core.chunking import make_chunker
    from chunkbench_core.embedding import Embedder, get_model
    from chunkbench_core.parsing import parse
    from chunkbench_core.storage.vector_store import VectorStore

    doc_path = tmp_path / "handbook.md"
    doc_path.write_text(HANDBOOK, encoding="utf-8")
    document = parse(str(doc_path))
    document.document = "handbook.md"
    (tmp_path / "q").mkdir()
    write(tmp_path / "q", "lld.json", {"questions": [
        GOOD, {"id": "plain", "question": "When do unused days expire?", "expected_answer": "In March."}]})
    check = check_questions(tmp_path / "q", {"handbook.md": document.markdown})
    assert check.ok and check.n_judge_only == 1 and "1 judge-only" in check.summary()
    plain = next(r for r in check.resolved if r.question.id == "plain")
    assert plain.judge_only and plain.references == []

    chunks = make_chunker("fixed_size", chunk_size=16, chunk_overlap=0).chunk(document)
    embedder = Embedder(get_model("all-minilm-l6-v2"))
    with VectorStore(local_root=tmp_path / "qdrant") as store:
        store.ensure_collection("c", embedder.spec.dimension)
        store.replace_points("c", chunks, embedder.embed([c.text for c in chunks], "document"))
        outcomes = run_retrieval(check.resolved, embedder, store, "c", top_k=2)
    by_id = {o.resolved.question.id: o for o in outcomes}
    assert by_id["plain"].retrieved and by_id["plain"].error is None  # retrieved: the judge gets a context
    row = outcome_row(by_id["plain"])
    assert row["judge_only"] is True and row["recall"] is None and row["iou"] is None and row["hit"] is None
    assert outcome_row(by_id["good"])["judge_only"] is False
    summary = aggregate(outcomes, n_resamples=50)
    assert summary["n_questions"] == 1 and summary["n_judge_only"] == 1
    assert summary["recall"] == pytest.approx(by_id["good"].scores["recall"])  # the mean over evidence questions only
    assert not np.isnan(summary["recall"])
