"""The DuckDB view ``leaderboard_by_group`` on real DuckDB: the same cells as evaluation.breakdowns."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from chunkbench_core.evaluation.breakdowns import breakdown_columns, group_breakdown
from chunkbench_core.evaluation.recommendation import RankingSettings
from chunkbench_core.reporting.data import load_report_data
from chunkbench_core.stages import compare_latest_runs
from chunkbench_core.storage.results_db import ResultsDB
from tests.core.evaluation.breakdown_data import build


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["dimension", "group", "strategy", "corpus_model"]).reset_index(drop=True)


def _assert_same(view: pd.DataFrame, python: pd.DataFrame) -> None:
    assert list(view.columns) == list(breakdown_columns()) == list(python.columns)
    assert len(view) == len(python) > 0
    pd.testing.assert_frame_equal(_sorted(view), _sorted(python), check_dtype=False, check_exact=False, rtol=1e-12)


@pytest.fixture()
def results(tmp_path) -> ResultsDB:
    return build(tmp_path / "results")


def test_view_equals_the_python_computation(results: ResultsDB) -> None:
    view = results.query("SELECT * FROM leaderboard_by_group")
    python = group_breakdown(load_report_data(results).questions)
    _assert_same(view, python)
    # in the same order too: dimension, group, best first
    assert (
        view[["dimension", "group", "strategy"]].values.tolist()
        == python[["dimension", "group", "strategy"]].values.tolist()
    )
    pdf = view[(view["dimension"] == "format") & (view["group"] == "pdf")]
    assert pdf["strategy"].tolist() == ["semantic", "recursive"]
    assert pdf["rank_mean"].tolist() == pytest.approx([0.6, 0.3])
    assert pdf["n_questions"].tolist() == [5, 5]


def test_view_follows_the_ranking_metric_of_the_comparison(results: ResultsDB) -> None:
    compare_latest_runs(results, RankingSettings(rank_metric="mrr"))
    view = results.query("SELECT * FROM leaderboard_by_group")
    assert set(view["rank_metric"]) == {"reciprocal_rank"}
    assert len(view) == 21  # one row per cell, however many rows the comparison holds (evidence_length: 2)
    docx = view[(view["dimension"] == "format") & (view["group"] == "docx") & (view["strategy"] == "recursive")]
    assert docx["n_questions"].iloc[0] == 5
    assert docx["rank_mean"].iloc[0] == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 9) / 5)
    _assert_same(view, group_breakdown(load_report_data(results).questions, rank_metric="mrr"))


def test_view_in_the_duckdb_file_reads_its_own_folder(results: ResultsDB) -> None:
    results.ensure_database()
    con = duckdb.connect(str(results.database_path), read_only=True)
    try:
        con.execute("SET file_search_path = ?", [results.root.as_posix()])
        rows = con.execute(
            'SELECT dimension, "group", strategy, n_questions, too_small FROM leaderboard_by_group '
            "WHERE dimension = 'category' ORDER BY \"group\", strategy"
        ).fetchall()
    finally:
        con.close()
    assert rows == [
        ("category", "(none)", "recursive", 1, True),
        ("category", "(none)", "semantic", 1, True),
        ("category", "howto", "recursive", 5, False),
        ("category", "howto", "semantic", 4, False),
        ("category", "policy", "recursive", 3, True),
        ("category", "policy", "semantic", 3, True),
    ]


def test_view_is_empty_before_any_run(tmp_path) -> None:
    view = ResultsDB(tmp_path / "empty").query("SELECT * FROM leaderboard_by_group")
    assert view.empty and list(view.columns) == list(breakdown_columns())


def test_a_hybrid_run_has_cells_of_its_own(results: ResultsDB) -> None:
    # recursive × minilm once more, searched by the hybrid retriever: every question scores 0.75
    from datetime import datetime

    stamp = datetime(2026, 1, 1, 12, 30, 0)
    rows = results.read("question_results", "recursive__minilm__run-recursive")
    hybrid = [
        {
            **row,
            "experiment_run_id": "run-hybrid",
            "retriever": "hybrid",
            "created_at": stamp,
            "recall_at_512": None if row["recall_at_512"] is None else 0.75,
        }
        for row in rows
    ]
    results.write("question_results", "recursive__minilm__hybrid__run-hybrid", hybrid)
    results.write(
        "experiment_metrics",
        "recursive__minilm__hybrid__run-hybrid",
        [
            {
                "experiment_run_id": "run-hybrid",
                "strategy": "recursive",
                "corpus_model": "minilm",
                "retriever": "hybrid",
                "n_questions": 9,
                "recall": 0.75,
                "variant": "",
                "neighbor_prev": 0,
                "neighbor_next": 0,
                "created_at": stamp,
            }
        ],
    )
    view = results.query("SELECT * FROM leaderboard_by_group")
    _assert_same(view, group_breakdown(load_report_data(results).questions))
    pdf = view[(view["dimension"] == "format") & (view["group"] == "pdf")]
    cells = {(r.strategy, r.retriever): r.rank_mean for r in pdf.itertuples()}
    assert cells == pytest.approx(
        {("recursive", "hybrid"): 0.75, ("semantic", "dense"): 0.6, ("recursive", "dense"): 0.3}
    )
    assert pdf["n_questions"].tolist() == [5, 5, 5]
    # the report's tables: one column per configuration, the hybrid one beside its dense twin
    from chunkbench_core.reporting.by_group import render_by_group

    data = load_report_data(results)
    assert len(data.questions[data.questions["strategy"] == "recursive"]) == 2 * 10
    html = render_by_group(data)
    assert "recursive × minilm × hybrid" in html and "recursive × minilm</" in html.replace("</span>", "</")
