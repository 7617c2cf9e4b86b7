"""Validation that loses nothing: each bad question is dropped alone, named by file, question, field and reason."""

import json

import numpy as np
import pytest

from chunkbench_core.errors import QuestionSetError
from chunkbench_core.evaluation.experiment import RetrievalOptions, aggregate, outcome_row, run_retrieval
from chunkbench_core.evaluation.question_check import check_questions
from chunkbench_core.evaluation.questions import load_question_set, load_question_sets, parse_question_set

HANDBOOK = "# Leave\n\nEveryone gets 25 days of annual leave. Unused days expire in March.\n"
DOCUMENTS = {"handbook.md": HANDBOOK}
GOOD = {
    "id": "good",
    "question": "How many days of leave?",
    "references": [{"document": "handbook.md", "content": "25 days of annual leave"}],
}


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
    write(
        tmp_path,
        "set.json",
        {
            "questions": [
                GOOD,
                {"id": "nodoc", "question": "?", "references": [{"document": "missing.md", "content": "25 days"}]},
                {"id": "noexcerpt", "question": "?", "references": [{"document": "handbook.md", "content": "30 days"}]},
            ]
        },
    )
    check = check_questions(tmp_path, DOCUMENTS)
    assert [r.question.id for r in check.resolved] == ["good"]
    found = problems_by_id(check)
    assert (
        found["nodoc"].field == "references[0].document"
        and "'missing.md' is not a parsed document" in found["nodoc"].reason
    )
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
    write(
        tmp_path / "q",
        "lld.json",
        {
            "questions": [
                GOOD,
                {"id": "plain", "question": "When do unused days expire?", "expected_answer": "In March."},
            ]
        },
    )
    check = check_questions(tmp_path / "q", {"handbook.md": document.markdown})
    assert check.ok and check.n_judge_only == 1 and "1 judge-only" in check.summary()
    plain = next(r for r in check.resolved if r.question.id == "plain")
    assert plain.judge_only and plain.references == []

    chunks = make_chunker("fixed_size", chunk_size=16, chunk_overlap=0).chunk(document)
    embedder = Embedder(get_model("all-minilm-l6-v2"))
    with VectorStore(local_root=tmp_path / "qdrant") as store:
        store.ensure_collection("c", embedder.spec.dimension)
        store.replace_points("c", chunks, embedder.embed([c.text for c in chunks], "document"))
        outcomes = run_retrieval(check.resolved, embedder, store, "c", RetrievalOptions(top_k=2))
    by_id = {o.resolved.question.id: o for o in outcomes}
    assert by_id["plain"].retrieved and by_id["plain"].error is None  # retrieved: the judge gets a context
    row = outcome_row(by_id["plain"])
    assert row["judge_only"] is True and row["recall"] is None and row["iou"] is None and row["hit"] is None
    assert outcome_row(by_id["good"])["judge_only"] is False
    summary = aggregate(outcomes, n_resamples=50)
    assert summary["n_questions"] == 1 and summary["n_judge_only"] == 1
    assert summary["recall"] == pytest.approx(by_id["good"].scores["recall"])  # the mean over evidence questions only
    assert not np.isnan(summary["recall"])


# -- question files that cannot crash the tool ---------------------------------------------------------
def test_deep_nesting_is_one_line_never_a_recursion_error(tmp_path):
    deep = '{"questions": [{"id": "a", "question": "b", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}]}"
    write(tmp_path, "deep.json", deep)
    with pytest.raises(QuestionSetError, match="nested too deeply to read"):
        load_question_set(tmp_path / "deep.json")
    # nesting Python can read but deeper than a question needs: that question alone is dropped
    nested = {"questions": [GOOD, {"id": "nested", "question": "?", "metadata": json.loads("[" * 200 + "]" * 200)}]}
    write(tmp_path, "nested.json", nested)
    check = check_questions(tmp_path, DOCUMENTS)
    assert [r.question.id for r in check.resolved] == ["good"]
    by_file = {p.file.rsplit("/", 1)[-1]: p for p in check.problems}
    assert set(by_file) == {"deep.json", "nested.json"}
    assert (
        by_file["nested.json"].question_id == "nested" and "nested more than 32 levels" in by_file["nested.json"].reason
    )
    assert all("\n" not in str(p) for p in check.problems)


def test_an_oversized_field_drops_its_question_alone(tmp_path, monkeypatch):
    from chunkbench_core.evaluation import questions

    monkeypatch.setattr(questions, "MAX_FIELD_CHARS", 1000)
    qs = parse_question_set({"questions": [GOOD, {"id": "big", "question": "x" * 2000}]}, "f.json")
    assert [q.id for q in qs.questions] == ["good"]
    assert qs.errors[0].question_id == "big" and "2,000 characters, more than the 1,000" in qs.errors[0].reason


def test_an_excerpt_of_2_mb_not_in_the_corpus_is_answered_as_not_found(tmp_path):
    """The whitespace-tolerant search is a substring search of the collapsed texts (linear): the 2 MB excerpt that
    took a minute with a regular expression per word is answered at once (benchmarks/question_files.py times it)."""
    words = " ".join(f"word{i % 5000}" for i in range(300_000))  # about 2.5 MB
    document = " ".join(f"word{i % 5000}" for i in range(250_000)) + " end"
    write(
        tmp_path,
        "big.json",
        {
            "questions": [
                GOOD,
                {"id": "huge", "question": "?", "references": [{"document": "handbook.md", "content": words}]},
            ]
        },
    )
    check = check_questions(tmp_path, {"handbook.md": HANDBOOK + document})
    assert [r.question.id for r in check.resolved] == ["good"]
    assert check.problems[0].question_id == "huge" and "was not found" in check.problems[0].reason


def test_the_whitespace_tolerant_search_maps_back_to_the_original_offsets():
    from chunkbench_core.evaluation.questions import find_whitespace_tolerant

    text = "  Alpha\n\n beta\tgamma  delta\n"
    assert find_whitespace_tolerant("beta gamma", text) == (text.index("beta"), text.index("gamma") + 5)
    assert find_whitespace_tolerant("Alpha\nbeta", text) == (2, text.index("beta") + 4)
    assert find_whitespace_tolerant("gamma delta epsilon", text) is None and find_whitespace_tolerant(" ", text) is None


def test_two_files_with_one_set_name_are_both_named_and_both_kept(tmp_path):
    write(tmp_path, "sample.json", {"name": "sample", "questions": [GOOD]})
    write(tmp_path, "copy.json", {"name": "sample", "questions": [{**GOOD, "id": "other"}]})
    sets, errors = load_question_sets(tmp_path)
    assert sorted(qs.name for qs in sets) == ["copy", "sample"]  # the file named after the set keeps the name
    [error] = errors
    assert "copy.json" in str(error) and "sample.json" in str(error) and "give each its own" in error.reason
    check = check_questions(tmp_path, DOCUMENTS)
    assert len(check.resolved) == 2 and not check.ok


def test_document_level_references_labels_and_located_fields():
    from chunkbench_core.evaluation.questions import (
        document_problems,
        question_set_to_json,
        resolve_source_documents,
    )

    item = {
        "id": "d",
        "question": "Which report?",
        "labels": {"Source Chunk Type": "Table", "Round": 2},
        "references": [
            {"document": "*Q3*"},
            {
                "document": "handbook.md",
                "content": "25 days of annual leave",
                "located_by": "answer_words+answer_figures",
                "score": 0.8,
            },
        ],
    }
    qs = parse_question_set({"questions": [item]}, "f.json")
    [q] = qs.questions
    assert q.documents == ("*Q3*",) and q.labels == {"Source Chunk Type": "Table", "Round": "2"}
    assert q.references[0].located and q.n_located == 1 and q.evidence_origin == "located" and not q.judge_only
    names = ["2023 Q3 AAPL.pdf", "2023 Q2 AAPL.pdf", "handbook.md"]
    assert resolve_source_documents(q, names) == ("2023 Q3 AAPL.pdf", "handbook.md")
    assert document_problems(q, names, "f.json") == []
    assert "matches no parsed document" in str(document_problems(q, ["x.md"], "f.json")[0])
    assert parse_question_set(question_set_to_json(qs), "g.json").questions == [q]  # written and read back alike
    docs_only = parse_question_set(
        {"questions": [{"id": "e", "question": "?", "references": [{"document": "a.md"}]}]}, "f.json"
    ).questions[0]
    assert docs_only.evidence_origin == "documents" and not docs_only.judge_only and docs_only.references == ()
    bad = parse_question_set(
        {
            "questions": [
                {
                    "id": "b1",
                    "question": "?",
                    "references": [{"document": "a.md", "content": "x", "located_by": "magic"}],
                },
                {"id": "b2", "question": "?", "references": [{"document": "a.md", "content": "x", "score": 3}]},
                {"id": "b3", "question": "?", "references": [{"document": "a.md", "start": 1, "end": 2}]},
                {"id": "b4", "question": "?", "labels": {"x": [1]}},
            ]
        },
        "f.json",
    )
    assert bad.questions == [] and [e.field for e in bad.errors] == [
        "references[0].located_by",
        "references[0].score",
        "references[0]",
        "labels",
    ]


def test_a_document_level_reference_must_name_a_parsed_document(tmp_path):
    write(
        tmp_path,
        "set.json",
        {
            "questions": [
                GOOD,
                {"id": "docs", "question": "?", "references": [{"document": "handbook*"}]},
                {"id": "nowhere", "question": "?", "references": [{"document": "*2023*"}]},
            ]
        },
    )
    check = check_questions(tmp_path, DOCUMENTS)
    assert [r.question.id for r in check.resolved] == ["good", "docs"]
    [problem] = check.problems
    assert (problem.question_id, problem.field) == ("nowhere", "references[0].document")
    assert (
        check.n_judge_only == 0
        and check.n_documents_only == 1
        and "1 of them with source documents only" in check.summary()
    )


def test_a_sampled_corpus_sets_aside_the_questions_whose_evidence_it_left_out(tmp_path):
    """The evidence documents a sample left out set their questions aside, counted apart from the problems; a
    document that is simply missing is still a problem."""
    write(
        tmp_path,
        "set.json",
        {
            "questions": [
                GOOD,
                {
                    "id": "memo",
                    "question": "What does the memo say?",
                    "references": [{"document": "memo.md", "content": "the memo"}],
                },
                {"id": "memos", "question": "Any memo?", "references": [{"document": "memo*"}]},
                {"id": "gone", "question": "?", "references": [{"document": "gone.md", "content": "x"}]},
            ]
        },
    )
    check = check_questions(tmp_path, DOCUMENTS, left_out=["memo.md"])
    assert [r.question.id for r in check.resolved] == ["good"]
    assert check.set_aside == 2 and set(problems_by_id(check)) == {"gone"}
    assert "2 question(s) set aside: their evidence lies in documents the sampled corpus left out" in check.summary()
    assert "1 of 4 questions usable" in check.summary()
    whole = check_questions(tmp_path, DOCUMENTS)
    assert whole.set_aside == 0 and set(problems_by_id(whole)) == {"memo", "memos", "gone"}
