"""Importers: each format on a small file; contexts located in the parsed documents; bad entries dropped alone."""

from __future__ import annotations

import csv
import json

import pytest

from chunkbench_core.errors import QuestionSetError
from chunkbench_core.evaluation.importers import ImportOptions, import_questions
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
        {
            "user_input": "How many days of leave?",
            "reference": "25 days.",
            "reference_contexts": ["Everyone gets 25 days of annual leave."],
        },
        {
            "user_input": "How are train tickets booked?",
            "reference": "Through the travel desk.",
            # whitespace differs from the parsed text, and two contexts in two documents
            "reference_contexts": [
                "Train  tickets are\nbooked through the travel desk.",
                "Unused days expire in March.",
            ],
        },
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
    assert DOCUMENTS["travel.md"][second.references[0].start : second.references[0].end] == second.references[0].content
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
        writer = csv.DictWriter(
            handle, fieldnames=["user_input", "reference", "reference_contexts", "synthesizer_name"]
        )
        writer.writeheader()
        writer.writerow(
            {
                "user_input": "How many days of leave?",
                "reference": "25",
                "reference_contexts": "['Everyone gets 25 days of annual leave.']",
                "synthesizer_name": "x",
            }
        )
        # Arabic yeh/kaf as typed on many keyboards: found after the parser's Persian normalisation
        writer.writerow(
            {
                "user_input": "مرخصی سالانه چند روز است؟",
                "reference": "۲۶ روز",
                "reference_contexts": json.dumps(["مرخصي سالانه ۲۶ روز كاري است."], ensure_ascii=False),
                "synthesizer_name": "x",
            }
        )
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
    path.write_text(
        json.dumps(
            {
                "queries": {
                    "q-a": "How many days of leave?",
                    "q-b": "How are tickets booked?",
                    "q-c": "Unknown node?",
                    "q-d": "Not in the documents?",
                },
                "corpus": {
                    "n1": "Everyone gets 25 days of annual leave.",
                    "n2": "Train tickets are booked through the travel desk.",
                    "n3": "A text of another corpus.",
                },
                "relevant_docs": {"q-a": ["n1"], "q-b": ["n2", "n1"], "q-c": ["n9"], "q-d": ["n3"]},
                "mode": "text",
            }
        ),
        encoding="utf-8",
    )
    result = import_questions("llamaindex", path, DOCUMENTS, ImportOptions(name="llama"))
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
        writer.writerow(
            {
                "question": "Which letters come first?",
                "corpus_id": "sotu",
                "references": json.dumps([{"content": "Alpha beta", "start_index": 0, "end_index": 10}]),
            }
        )
        writer.writerow(
            {
                "question": "Wrong offsets?",
                "corpus_id": "sotu",
                "references": json.dumps([{"content": "Delta", "start_index": 0, "end_index": 5}]),
            }
        )
    result = import_questions("chroma", path, documents)
    assert [q.id for q in result.question_set.questions] == ["sotu-0001"]
    assert [p.question_id for p in result.problems] == ["sotu-0002"]
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "set.json").write_text(json.dumps(result.to_json()), encoding="utf-8")
    assert check_questions(folder, documents).ok


# -- sheets of questions: CSV, XLSX, JSONL ------------------------------------------------------------
FILINGS = {
    "filings/AAPL 2023 Q3.md": "# Apple 10-Q\n\nFor the quarter ended July 1, 2023.\n\n| Total net sales | 81,797 | 82,959 |\n\n"
    "Gross margin was driven by a different mix of products and services.\n",
    "filings/MSFT 2023 Q3.md": "# Microsoft 10-Q\n\nFor the quarter ended September 30, 2023.\n\n| Revenue | 56,517 |\n\n"
    "Gross margin was driven by a different mix of products and services.\n",
}
HEADER = ["Question", "Source Docs", "Question Type", "Source Chunk Type", "Answer"]
ROWS = [
    ["What were net sales a year earlier?", "*AAPL 2023 Q3*", "figure", "Table", "Net sales were $82,959 million."],
    [
        "What drove Microsoft's gross margin?",
        "MSFT 2023 Q3.md",
        "why",
        "Text",
        "Gross margin was driven by a “different mix” of products and services.",
    ],
    ["Both?", '["filings/AAPL 2023 Q3.md", "*MSFT*"]', "list", "Text", "Revenue of 56,517."],
]
MAPPING = {"question": "Question", "answer": "Answer", "sources": "Source Docs", "category": "Source Chunk Type"}


def test_a_csv_sheet_with_a_mapping_keeps_every_question_its_sources_and_labels(tmp_path):
    from chunkbench_core.evaluation.importers import parse_mapping

    path = tmp_path / "golden.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([HEADER, *ROWS])
    mapping = parse_mapping('question=Question,answer=Answer,sources="Source Docs",category="Source Chunk Type"')
    assert mapping == MAPPING
    result = import_questions(None, path, FILINGS, ImportOptions(mapping=mapping))
    assert result.source_format == "table" and result.problems == []
    first, second, third = result.question_set.questions
    assert [q.id for q in result.question_set.questions] == ["golden-0001", "golden-0002", "golden-0003"]
    assert first.category == "Table" and first.labels == {"Question Type": "figure"}
    assert first.documents == ("*AAPL 2023 Q3*",)
    assert third.documents == ("filings/AAPL 2023 Q3.md", "*MSFT*")
    # evidence located in the source document only: the Microsoft filing holds the same sentence
    assert [(r.document, r.located_by) for r in second.references] == [("filings/MSFT 2023 Q3.md", "answer_words")]
    assert first.references[0].content == "| Total net sales | 81,797 | 82,959 |"
    assert first.references[0].located_by == "answer_figures"
    assert result.located.n_found == 3 and result.located.by_method["answer_words"] == 1
    data = result.to_json()
    assert data["questions"][0]["references"][-1] == {"document": "*AAPL 2023 Q3*"}
    check = written_and_reloaded_with(result, tmp_path, FILINGS)
    assert len(check.resolved) == 3 and check.n_judge_only == 0


def written_and_reloaded_with(result, tmp_path, documents):
    folder = tmp_path / "out"
    folder.mkdir(exist_ok=True)
    (folder / "set.json").write_text(json.dumps(result.to_json(), ensure_ascii=False), encoding="utf-8")
    check = check_questions(folder, documents)
    assert check.ok, check.problems
    return check


def test_a_source_that_names_no_document_leaves_its_question_out_and_says_so(tmp_path):
    path = tmp_path / "golden.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([HEADER, *ROWS, ["Nvidia?", "*NVDA*", "x", "Text", "?"]])
    result = import_questions("table", path, FILINGS, ImportOptions(mapping=MAPPING, locate=False))
    assert len(result.question_set.questions) == 3
    [problem] = result.problems
    assert (problem.question_id, problem.field) == ("golden-0004", "sources[0]") and "'*NVDA*' matches no" in str(
        problem
    )
    assert all(not q.references for q in result.question_set.questions)  # --no-locate: nothing located


def test_the_mapping_is_guessed_from_the_column_names_and_described(tmp_path):
    from chunkbench_core.evaluation.importers import describe_mapping, format_mapping, guess_mapping, read_table

    path = tmp_path / "golden.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows([HEADER, *ROWS])
    table = read_table(path)
    guess = guess_mapping(table)
    assert guess == {"question": "Question", "answer": "Answer", "sources": "Source Docs", "category": "Question Type"}
    lines = describe_mapping(guess, table)
    assert any("'Source Chunk Type'" in line and "a label" in line and "Table" in line for line in lines)
    assert format_mapping(guess) == 'question=Question,answer=Answer,sources="Source Docs",category="Question Type"'


def test_bad_mappings_say_what_is_allowed(tmp_path):
    from chunkbench_core.evaluation.importers import parse_mapping

    with pytest.raises(QuestionSetError, match="unknown role 'questoin'"):
        parse_mapping("questoin=Question")
    with pytest.raises(QuestionSetError, match="must be ROLE=COLUMN"):
        parse_mapping("question")
    path = tmp_path / "golden.csv"
    path.write_text("Q,A\nx,y\n", encoding="utf-8")
    with pytest.raises(QuestionSetError, match="no such column"):
        import_questions("table", path, FILINGS, ImportOptions(mapping={"question": "Question"}))
    with pytest.raises(QuestionSetError, match="no column is mapped to question"):
        import_questions("table", path, FILINGS, ImportOptions(mapping={"answer": "A"}))


def test_an_xlsx_sheet(tmp_path):
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Golden"
    sheet.append(["Question", "Source Docs", "Answer", "Round"])
    sheet.append(["What were net sales a year earlier?", "*AAPL*", "82,959", 2])
    sheet.append([None, None, None, None])  # an empty row is skipped
    sheet.append(["Revenue?", "*MSFT*", 56517.0, 1.5])
    book.save(tmp_path / "golden.xlsx")
    result = import_questions(
        None,
        tmp_path / "golden.xlsx",
        FILINGS,
        ImportOptions(sheet="Golden", mapping={"question": "Question", "sources": "Source Docs", "answer": "Answer"}),
    )
    assert [q.expected_answer for q in result.question_set.questions] == ["82,959", "56517"]
    assert [q.labels for q in result.question_set.questions] == [{"Round": "2"}, {"Round": "1.5"}]
    assert [q.references[0].document for q in result.question_set.questions] == [
        "filings/AAPL 2023 Q3.md",
        "filings/MSFT 2023 Q3.md",
    ]
    with pytest.raises(QuestionSetError, match="has no sheet 'Other'"):
        import_questions(
            None, tmp_path / "golden.xlsx", FILINGS, ImportOptions(sheet="Other", mapping={"question": "Question"})
        )


def test_jsonl_with_a_metadata_source_and_labels_from_objects(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "query": "Revenue?",
                    "answer": "Revenue of 56,517.",
                    "metadata": {"source": "MSFT 2023 Q3.md", "page": 3},
                },
                {"query": "Net sales?", "answer": "82,959", "metadata": {"source": "AAPL 2023 Q3.md", "page": 1}},
                "not an object",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    result = import_questions(None, path, FILINGS)
    assert result.mapping["sources"] == "metadata.source" and result.mapping["question"] == "query"
    first = result.question_set.questions[0]
    assert first.documents == ("MSFT 2023 Q3.md",) and first.labels == {"metadata.page": "3"}
    assert [p.question_id for p in result.problems] == ["line-3"] and "must be a JSON object" in str(result.problems[0])


def test_ragas_honours_the_source_document_and_keeps_its_labels(tmp_path):
    """An excerpt found in two documents goes to the row's source document, never to the other one."""
    path = tmp_path / "ragas.csv"
    shared = "Gross margin was driven by a different mix of products and services."
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=["user_input", "reference", "reference_contexts", "synthesizer_name", "source"]
        )
        writer.writeheader()
        writer.writerow(
            {
                "user_input": "What drove Microsoft's margin?",
                "reference": "A different mix.",
                "reference_contexts": json.dumps([shared]),
                "synthesizer_name": "single_hop_specific",
                "source": "MSFT 2023 Q3.md",
            }
        )
    result = import_questions(None, path, FILINGS)
    assert result.source_format == "ragas"
    [question] = result.question_set.questions
    assert [r.document for r in question.references] == ["filings/MSFT 2023 Q3.md"]
    assert question.references[0].located_by == ""  # verbatim: an ordinary reference
    assert question.labels == {"synthesizer_name": "single_hop_specific"}


def test_ragas_with_the_answer_given_as_the_context_keeps_every_question(tmp_path):
    """The answer passed as the context (not verbatim in any document): questions kept, evidence located."""
    path = tmp_path / "ragas.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "user_input": "What drove Apple's gross margin?",
                    "reference": "A different mix.",
                    "reference_contexts": [
                        "Apple said gross margin was driven by a “different mix” of products and services."
                    ],
                    "source": "AAPL 2023 Q3.md",
                },
                {
                    "user_input": "Net sales a year earlier?",
                    "reference": "$82,959 million",
                    "reference_contexts": ["Net sales were $82,959 million."],
                },
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    result = import_questions("ragas", path, FILINGS)
    assert len(result.question_set.questions) == 2 and result.problems == []
    first, second = result.question_set.questions
    # the context's words find the sentence; the answer's three words ("a different mix"), found whole inside it,
    # agree on the same span
    assert [(r.document, r.located_by) for r in first.references] == [
        ("filings/AAPL 2023 Q3.md", "answer_words+context_words")
    ]
    assert second.references[0].content == "| Total net sales | 81,797 | 82,959 |"
    assert len(result.notes) == 2 and all("not verbatim" in n for n in result.notes)


def test_llamaindex_relevant_docs_holding_lists_lose_only_their_question(tmp_path):
    path = tmp_path / "dataset.json"
    path.write_text(
        json.dumps(
            {
                "queries": {"q-a": "How many days of leave?", "q-b": "Nested?", "q-c": 42},
                "corpus": {"n1": "Everyone gets 25 days of annual leave."},
                "relevant_docs": {"q-a": ["n1"], "q-b": [["n1"]], "q-c": ["n1"]},
            }
        ),
        encoding="utf-8",
    )
    result = import_questions("llamaindex", path, DOCUMENTS)
    assert [q.id for q in result.question_set.questions] == ["q-a"]
    assert {(p.question_id, p.field) for p in result.problems} == {("q-b", "relevant_docs"), ("q-c", "question")}


def test_llamaindex_labelled_rag_dataset(tmp_path):
    path = tmp_path / "rag_dataset.json"
    path.write_text(
        json.dumps(
            {
                "examples": [
                    {
                        "query": "How many days of leave?",
                        "reference_contexts": ["Everyone gets 25 days of annual leave."],
                        "reference_answer": "25 days",
                        "query_by": {"model_name": "gpt-4", "type": "ai"},
                    },
                ]
            }
        ),
        encoding="utf-8",
    )
    result = import_questions("llamaindex", path, DOCUMENTS)
    [question] = result.question_set.questions
    assert question.references[0].document == "leave.md" and question.expected_answer == "25 days"
    assert question.labels == {"query_by.model_name": "gpt-4", "query_by.type": "ai"}


def test_csv_fields_over_the_old_128_kb_limit_are_read_and_oversized_ones_named(tmp_path):
    from chunkbench_core.evaluation import questions as questions_module

    long_context = "Everyone gets 25 days of annual leave. " + "x" * 200_000
    path = tmp_path / "ragas.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["user_input", "reference_contexts"])
        writer.writeheader()
        writer.writerow(
            {"user_input": "Leave?", "reference_contexts": json.dumps(["Everyone gets 25 days of annual leave."])}
        )
        writer.writerow({"user_input": "Long?", "reference_contexts": json.dumps([long_context])})
    result = import_questions("ragas", path, DOCUMENTS, ImportOptions(locate=False))
    assert [q.id for q in result.question_set.questions] == ["ragas-0001", "ragas-0002"]  # a 200 KB field is read
    small = tmp_path / "small.csv"
    small.write_text('user_input,reference_contexts\nLeave?,"' + "y" * 300 + '"\n', encoding="utf-8")
    original = questions_module.MAX_FIELD_CHARS
    process_limit = csv.field_size_limit()
    try:
        questions_module.MAX_FIELD_CHARS = 100
        result = import_questions("ragas", small, DOCUMENTS, ImportOptions(locate=False))
    finally:
        questions_module.MAX_FIELD_CHARS = original
    [problem] = result.problems
    assert "CSV error at line" in str(problem) and "longer than 100 characters" in str(problem)
    # the csv module's limit is the process's: the import put back the one in force before (a small limit left
    # behind made a later test's csv reading fail)
    assert csv.field_size_limit() == process_limit
