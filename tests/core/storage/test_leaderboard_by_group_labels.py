"""``leaderboard_by_group`` on real DuckDB with the team's own labels and document-level questions: a
``label:NAME`` dimension per label, source documents as the question's documents, the same cells as the
Python twin (evaluation.breakdowns)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pandas as pd
import pytest

from chunkbench_core.evaluation.breakdowns import group_breakdown
from chunkbench_core.reporting.data import load_report_data
from chunkbench_core.storage.results_db import ResultsDB
from tests.core.storage.test_leaderboard_by_group import _assert_same

# id, source documents, has spans, labels, doc_recall of (recursive, semantic)
QUESTIONS = [
    ("q1", ["2023 Q3 ACME.pdf"], True, {"Source Chunk Type": "Table", "Question Type": "Numeric"}, (1.0, 0.0)),
    ("q2", ["2023 Q3 ACME.pdf"], False, {"Source Chunk Type": "Text", "Question Type": "Numeric"}, (1.0, 1.0)),
    ("q3", ["2022 Q3 BRLF.pdf", "2024 Q1 CBLT.pdf"], False, {"Source Chunk Type": " Table "}, (0.5, 1.0)),
    ("q4", ["2024 Q1 CBLT.pdf"], False, {"Source Chunk Type": "Text", "Question Type": ""}, (0.0, 1.0)),
    ("q5", [], False, {"Source Chunk Type": "Text"}, (None, None)),  # judge-only
]


def _rows(strategy: str, column: int, stamp: datetime) -> list[dict]:
    rows = []
    for qid, sources, spans, labels, scores in QUESTIONS:
        value = scores[column]
        rows.append(
            {
                "experiment_run_id": f"run-{strategy}",
                "strategy": strategy,
                "corpus_model": "minilm",
                "question_set": "financial",
                "question_id": qid,
                "question": f"question {qid}",
                "top_k": 5,
                "n_references": 1 if spans else 0,
                "judge_only": not sources,
                "references": json.dumps(
                    [{"document": sources[0], "start": 0, "end": 10, "located_by": "answer_words"}] if spans else []
                ),
                "source_documents": json.dumps(sources),
                "labels": json.dumps(labels),
                "evidence_origin": "located" if spans else "documents" if sources else None,
                "n_located_references": 1 if spans else 0,
                "retrieved": "[]",
                "error": None,
                "recall": value if spans else None,
                "recall_at_512": value if spans else None,
                "doc_recall": value,
                "doc_hit": None if value is None else float(value > 0),
                "doc_reciprocal_rank": value,
                "context_tokens": 100.0,
                "embed_ms": 1.0,
                "search_ms": 1.0,
                "created_at": stamp,
            }
        )
    return rows


@pytest.fixture()
def results(tmp_path) -> ResultsDB:
    results = ResultsDB(tmp_path / "results")
    base = datetime(2026, 1, 1, 12, 0, 0)
    for i, strategy in enumerate(("recursive", "semantic")):
        stamp = base + timedelta(minutes=i)
        results.write("question_results", f"{strategy}__minilm__run-{strategy}", _rows(strategy, i, stamp))
        results.write(
            "experiment_metrics",
            f"{strategy}__minilm__run-{strategy}",
            [
                {
                    "experiment_run_id": f"run-{strategy}",
                    "strategy": strategy,
                    "corpus_model": "minilm",
                    "n_questions": 4,
                    "n_judge_only": 1,
                    "n_documents_only": 3,
                    "n_located": 1,
                    "variant": "",
                    "neighbor_prev": 0,
                    "neighbor_next": 0,
                    "created_at": stamp,
                }
            ],
        )
    return results


def test_labels_are_dimensions_and_source_documents_are_documents(results: ResultsDB) -> None:
    view = results.query("SELECT * FROM leaderboard_by_group")
    _assert_same(view, group_breakdown(load_report_data(results).questions))
    assert {"label:Source Chunk Type", "label:Question Type"} <= set(view["dimension"])
    # the label dimensions come after the built-in ones
    assert view["dimension"].tolist().index("label:Question Type") > view["dimension"].tolist().index("document")

    def cell(dimension: str, group: str, strategy: str) -> dict:
        rows = view[(view["dimension"] == dimension) & (view["group"] == group) & (view["strategy"] == strategy)]
        assert len(rows) == 1, (dimension, group, strategy)
        return rows.iloc[0].to_dict()

    table = cell("label:Source Chunk Type", "Table", "recursive")  # blanks around " Table " trimmed
    assert table["n_questions"] == 2 and table["n_judge_only"] == 0
    assert table["doc_recall"] == pytest.approx((1.0 + 0.5) / 2)
    text = cell("label:Source Chunk Type", "Text", "semantic")
    assert text["n_questions"] == 2 and text["n_judge_only"] == 1  # q2, q4 scored; q5 judge-only
    assert text["doc_recall"] == pytest.approx(1.0)
    # a question without the label, or with it blank, is in (none)
    assert cell("label:Question Type", "(none)", "recursive")["n_questions"] == 2
    # document-level questions are in the groups of their source documents
    brlf = cell("document", "2022 Q3 BRLF.pdf", "semantic")
    assert brlf["n_questions"] == 1 and brlf["doc_recall"] == pytest.approx(1.0)
    assert cell("document", "2024 Q1 CBLT.pdf", "recursive")["n_questions"] == 2
    assert cell("format", "pdf", "recursive")["n_questions"] == 4


def test_question_rows_keep_the_new_columns(results: ResultsDB) -> None:
    rows = results.query(
        "SELECT question_id, labels, source_documents, evidence_origin, n_located_references, "
        "json_extract_string(\"references\", '$[0].located_by') AS located_by "
        "FROM question_results WHERE strategy = 'recursive' ORDER BY question_id"
    )
    first = rows.iloc[0]
    assert json.loads(first["labels"])["Source Chunk Type"] == "Table"
    assert first["evidence_origin"] == "located" and first["located_by"] == "answer_words"
    assert first["n_located_references"] == 1
    assert rows["evidence_origin"].tolist()[1:4] == ["documents"] * 3
    assert pd.isna(rows["evidence_origin"].iloc[4])
