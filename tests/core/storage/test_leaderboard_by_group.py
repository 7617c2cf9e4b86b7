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
    assert view[["dimension", "group", "strategy"]].values.tolist() == \
        python[["dimension", "group", "strategy"]].values.tolist()
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
        rows = con.execute("SELECT dimension, \"group\", strategy, n_questions, too_small FROM leaderboard_by_group "
                           "WHERE dimension = 'category' ORDER BY \"group\", strategy").fetchall()
    finally:
        con.close()
    assert rows == [("category", "(none)", "recursive", 1, True), ("category", "(none)", "semantic", 1, True),
                    ("category", "howto", "recursive", 5, False), ("category", "howto", "semantic", 4, False),
                    ("category", "policy", "recursive", 3, True), ("category", "policy", "semantic", 3, True)]


def test_view_is_empty_before_any_run(tmp_path) -> None:
    view = ResultsDB(tmp_path / "empty").query("SELECT * FROM leaderboard_by_group")
    assert view.empty and list(view.columns) == list(breakdown_columns())
