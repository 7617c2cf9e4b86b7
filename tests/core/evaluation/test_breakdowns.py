"""Results split by group (evaluation.breakdowns), against means computed by hand (see breakdown_data)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from chunkbench_core.evaluation import breakdowns
from chunkbench_core.evaluation.breakdowns import (
    document_format,
    group_breakdown,
    group_leaders,
    label,
    question_groups,
    ranking_difference,
)
from chunkbench_core.reporting.data import load_report_data

from .breakdown_data import RECURSIVE, SEMANTIC, build

ORDER = [RECURSIVE, SEMANTIC]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    results = build(tmp_path_factory.mktemp("breakdowns") / "results")
    return group_breakdown(load_report_data(results).questions)


def cell(table: pd.DataFrame, dimension: str, group: str, strategy: str) -> dict:
    rows = table[(table["dimension"] == dimension) & (table["group"] == group) & (table["strategy"] == strategy)]
    assert len(rows) == 1, (dimension, group, strategy, rows)
    return rows.iloc[0].to_dict()


def test_formats_labels_and_groups_of_a_question() -> None:
    assert document_format("HR/Policy.DOCX") == "docx"
    assert document_format("notes") == "(none)" and document_format("dir.v2/README") == "(none)"
    assert document_format(".hidden") == "(none)" and document_format("a.tar.gz") == "gz"
    assert label(None) == label(float("nan")) == label("  ") == "(none)"
    assert label(" policy\t") == "policy"
    groups = question_groups(
        {
            "references": '[{"document": "a.pdf"}, {"document": "b.docx"}, {"document": "a.pdf"}]',
            "category": None,
            "difficulty": "hard",
        }
    )
    assert groups == {
        "format": ["pdf", "docx"],
        "category": ["(none)"],
        "difficulty": ["hard"],
        "document": ["a.pdf", "b.docx"],
        "evidence_length": ["(none)"],
    }
    assert question_groups({"references": "[]", "category": "x"})["format"] == []  # judge-only: no format


def test_means_per_format_against_hand_computed_values(table: pd.DataFrame) -> None:
    docx = cell(table, "format", "docx", "recursive")  # q1-q4 and q9 (evidence in both formats)
    assert docx["n_questions"] == 5 and not docx["too_small"]
    assert docx["rank_metric"] == "recall_at_512"
    assert docx["rank_mean"] == pytest.approx((1 + 1 + 1 + 1 + 0.5) / 5)
    assert docx["recall"] == pytest.approx(0.9)
    assert docx["precision"] == pytest.approx((0.1 + 0.2 + 0.3 + 0.4 + 0.9) / 5)
    assert docx["mrr"] == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 9) / 5)
    assert docx["hit_rate"] == 1.0
    assert docx["context_tokens"] == pytest.approx((100 + 200 + 300 + 400 + 900) / 5)
    assert docx["query_ms"] == pytest.approx(2 + (1 + 2 + 3 + 4 + 9) / 5)
    # semantic failed q3: left out of its cell, so its docx cell has 4 questions
    semantic_docx = cell(table, "format", "docx", "semantic")
    assert semantic_docx["n_questions"] == 4
    assert semantic_docx["rank_mean"] == pytest.approx((0.5 + 0.5 + 0.5 + 1.0) / 4)
    pdf = cell(table, "format", "pdf", "semantic")  # q5-q9
    assert pdf["n_questions"] == 5 and pdf["rank_mean"] == pytest.approx((4 * 0.5 + 1.0) / 5)
    assert cell(table, "format", "pdf", "recursive")["rank_mean"] == pytest.approx((4 * 0.25 + 0.5) / 5)
    assert set(table[table["dimension"] == "format"]["group"]) == {"docx", "pdf"}
    # the sweep rows of the same run (all scores 0) never reach a cell
    assert (table[table["strategy"] == "recursive"]["rank_mean"] > 0).all()


def test_categories_judge_only_and_missing_labels(table: pd.DataFrame) -> None:
    policy = cell(table, "category", "policy", "recursive")  # q1, q2, q4 and the judge-only q10
    assert policy["n_questions"] == 3 and policy["n_judge_only"] == 1 and policy["too_small"]
    assert policy["recall"] == pytest.approx(1.0)  # judge-only: out of the evidence means
    assert policy["precision"] == pytest.approx((0.1 + 0.2 + 0.4) / 3)
    assert policy["context_tokens"] == pytest.approx((100 + 200 + 400 + 1000) / 4)  # but in the context it sends
    howto = cell(table, "category", "howto", "recursive")  # q3, q5, q6, q7, q9
    assert howto["n_questions"] == 5 and howto["recall"] == pytest.approx((1 + 0.25 * 3 + 0.5) / 5)
    none = cell(table, "category", "(none)", "semantic")
    assert none["n_questions"] == 1 and none["too_small"]
    assert cell(table, "difficulty", "(none)", "recursive")["n_questions"] == 1
    documents = table[table["dimension"] == "document"]
    assert set(documents["group"]) == {"policy.docx", "manual.pdf"}
    texts = table.astype(str).to_numpy().ravel().tolist()
    assert not {"None", "nan", "NaN", "<NA>"} & set(texts)


def test_the_ranking_differs_between_formats(table: pd.DataFrame) -> None:
    leaders = {g.group: g for g in group_leaders(table, ORDER, "format")}
    assert leaders["pdf"].best == SEMANTIC and leaders["pdf"].differs
    assert leaders["docx"].best == RECURSIVE and not leaders["docx"].differs
    sentence = ranking_difference(table, ORDER, "format", "recall_at_512")
    assert sentence == (
        "On pdf documents (5 questions) semantic × minilm ranks first by recall_at_512; "
        "on docx documents (5 questions) recursive × minilm does, as on all questions."
    )


def test_groups_of_three_questions_or_fewer_never_drive_the_sentence(table: pd.DataFrame) -> None:
    # category (none) has 1 question and semantic wins it; policy has 3 and recursive wins it: both too small
    leaders = {g.group: g for g in group_leaders(table, ORDER, "category")}
    assert leaders["(none)"].too_small and leaders["(none)"].differs
    assert leaders["policy"].too_small and leaders["policy"].n_questions == 3
    sentence = ranking_difference(table, ORDER, "category", "recall_at_512")
    assert sentence == (
        "In category howto (5 questions) semantic × minilm ranks first by recall_at_512; "
        "on all questions recursive × minilm does. (2 categories with 3 questions or fewer are "
        "left out: too small to read.)"
    )
    assert "without a category" not in sentence


def test_same_leader_everywhere_and_nothing_readable() -> None:
    rows = [
        {
            "experiment_run_id": "r",
            "strategy": s,
            "corpus_model": "m",
            "question_set": "s",
            "question_id": f"q{i}",
            "category": "a",
            "difficulty": None,
            "references": '[{"document": "x.md"}]',
            "judge_only": False,
            "error": None,
            "recall_at_512": score,
        }
        for i in range(4)
        for s, score in (("one", 0.9), ("two", 0.1))
    ]
    table = group_breakdown(rows)
    assert ranking_difference(table, ["one × m", "two × m"], "format") == (
        "one × m ranks first by recall_at_512 in every document format with more than 3 questions, as on all questions."
    )
    small = group_breakdown(rows[:6])  # 3 questions
    assert ranking_difference(small, ["one × m", "two × m"], "format") == (
        "Every document format has 3 questions or fewer: too small to compare the ranking (1 document format)."
    )
    assert (
        ranking_difference(group_breakdown([]), ["one | m"], "format")
        == "No question has a document format to split by."
    )


def test_rank_metric_alias_and_empty_cells() -> None:
    rows = [
        {
            "experiment_run_id": "r",
            "strategy": "s",
            "corpus_model": "m",
            "question_set": "s",
            "question_id": "q",
            "references": '[{"document": "x.md"}]',
            "judge_only": False,
            "error": "",
            "reciprocal_rank": 0.5,
        }
    ]
    table = group_breakdown(rows, rank_metric="mrr")
    row = table.iloc[0]
    assert row["rank_metric"] == "reciprocal_rank" and row["rank_mean"] == 0.5 and row["mrr"] == 0.5
    assert math.isnan(row["recall"])  # no value recorded: empty, never 0
    assert list(table.columns) == list(breakdowns.breakdown_columns())


def test_module_is_pure() -> None:
    source = Path(breakdowns.__file__).read_text(encoding="utf-8")
    imports = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not [line for line in imports if "dagster" in line or "duckdb" in line or "storage" in line]


def test_question_labels_are_group_dimensions() -> None:
    """A ``labels`` column (the team's own columns kept at import) gives one ``label:NAME`` dimension per label."""

    def row(qid: str, recall: float, labels: dict | None) -> dict:
        return {
            "strategy": "recursive",
            "corpus_model": "m",
            "experiment_run_id": "r1",
            "question_id": qid,
            "references": '[{"document": "a.pdf", "start": 0, "end": 5}]',
            "category": "",
            "difficulty": "",
            "judge_only": False,
            "recall": recall,
            "recall_at_512": recall,
            "error": None,
            "labels": None if labels is None else json.dumps(labels),
        }

    rows = [
        row("q1", 1.0, {"Source Chunk Type": "Table"}),
        row("q2", 0.5, {"Source Chunk Type": "Table"}),
        row("q3", 0.0, {"Source Chunk Type": "Text", "Question Type": "why"}),
        row("q4", 0.25, None),
    ]
    table = group_breakdown(rows)
    chunk_type = table[table["dimension"] == "label:Source Chunk Type"].set_index("group")
    assert chunk_type.loc["Table", "recall"] == pytest.approx(0.75) and chunk_type.loc["Table", "n_questions"] == 2
    assert chunk_type.loc["Text", "recall"] == 0.0 and chunk_type.loc["(none)", "recall"] == 0.25
    question_type = table[table["dimension"] == "label:Question Type"].set_index("group")
    assert question_type.loc["why", "n_questions"] == 1 and question_type.loc["(none)", "n_questions"] == 3
    # the fixed dimensions come first, then the labels
    assert list(dict.fromkeys(table["dimension"]))[:2] == ["format", "category"]
    assert breakdowns.group_phrase("label:Source Chunk Type", "Table") == "where Source Chunk Type is Table"
    # rows without a labels column: no label dimension (what the results table holds until it stores labels)
    plain = group_breakdown([{k: v for k, v in r.items() if k != "labels"} for r in rows])
    assert not plain["dimension"].str.startswith("label:").any()
