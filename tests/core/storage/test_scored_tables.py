"""Scores stored long read back as the wide tables: every row keeps its own values, older wide files still count."""

from __future__ import annotations

import duckdb

from chunkbench_core.storage.results_db import ResultsDB


def question(run: str, strategy: str, question_id: str, recall: float) -> dict:
    return {
        "experiment_run_id": run,
        "strategy": strategy,
        "corpus_model": "m",
        "question_set": "s",
        "question_id": question_id,
        "recall": recall,
        "hit": 1.0 if recall else 0.0,
    }


def test_runs_written_together_with_the_same_question_ids_keep_their_own_scores(tmp_path):
    results = ResultsDB(tmp_path)
    rows = [
        question("r1", "a", "q1", 1.0),
        question("r1", "a", "q2", 0.0),
        question("r2", "b", "q1", 0.25),
        question("r2", "b", "q2", 0.5),
    ]
    results.write("question_results", "snapshot", rows)
    results.write(
        "experiment_metrics",
        "snapshot",
        [
            {"experiment_run_id": "r1", "strategy": "a", "corpus_model": "m", "recall": 0.5, "recall_ci_low": 0.0},
            {"experiment_run_id": "r2", "strategy": "b", "corpus_model": "m", "recall": 0.375},
        ],
    )

    read = results.query("SELECT experiment_run_id, question_id, recall, hit FROM question_results ORDER BY ALL")
    assert read.values.tolist() == [
        ["r1", "q1", 1.0, 1.0],
        ["r1", "q2", 0.0, 0.0],
        ["r2", "q1", 0.25, 1.0],
        ["r2", "q2", 0.5, 1.0],
    ]
    runs = results.query("SELECT experiment_run_id, recall, recall_ci_low FROM experiment_metrics ORDER BY 1")
    assert runs["recall"].tolist() == [0.5, 0.375] and runs["recall_ci_low"].tolist()[0] == 0.0
    assert [r["recall"] for r in results.read("question_results", "snapshot")] == [1.0, 0.0, 0.25, 0.5]


def test_a_wide_file_of_an_older_version_is_read_with_the_new_rows_and_replaced_by_a_rewrite(tmp_path):
    results = ResultsDB(tmp_path)
    results.write("question_results", "new", [question("r2", "b", "q1", 0.5)])
    folder = tmp_path / "tables" / "question_results"
    folder.mkdir(parents=True, exist_ok=True)
    old = folder / "old.parquet"  # what an older version wrote under the key "old": one wide file
    duckdb.sql(
        "SELECT 'r1' AS experiment_run_id, 'a' AS strategy, 'm' AS corpus_model, 's' AS question_set, "
        "'q1' AS question_id, 0.75 AS recall"
    ).write_parquet(str(old))

    read = results.query("SELECT experiment_run_id, recall FROM question_results ORDER BY 1")
    assert read.values.tolist() == [["r1", 0.75], ["r2", 0.5]]

    results.write("question_results", "old", [question("r1", "a", "q1", 1.0)])  # the run written again
    assert not old.exists()
    read = results.query("SELECT experiment_run_id, recall FROM question_results ORDER BY 1")
    assert read.values.tolist() == [["r1", 1.0], ["r2", 0.5]]


def run_row(run: str, strategy: str, recall: float) -> dict:
    return {"experiment_run_id": run, "strategy": strategy, "corpus_model": "m", "recall": recall}


RECALLS = "SELECT experiment_run_id, recall FROM experiment_metrics ORDER BY 1"


def test_a_reading_block_reads_the_run_scores_as_outside_it_and_sees_its_own_writes(tmp_path):
    results = ResultsDB(tmp_path)
    results.write("experiment_metrics", "k1", [run_row("r1", "a", 0.5)])
    outside = results.query("SELECT * FROM leaderboard")
    with results.one_reading():
        assert results.query("SELECT * FROM leaderboard").equals(outside)  # the copy's pivot is the view's
        assert results.query(RECALLS).values.tolist() == [["r1", 0.5]]
        with results.one_reading():  # a block inside a block is the outer one
            assert results._reading_cursor() is not None
        results.write("experiment_metrics", "k2", [run_row("r2", "b", 0.25)])  # dropped the copy: read again
        assert results.query(RECALLS).values.tolist() == [["r1", 0.5], ["r2", 0.25]]
        results.delete("experiment_metrics", "k2")
        assert results.query(RECALLS).values.tolist() == [["r1", 0.5]]
        ResultsDB(tmp_path).write("experiment_metrics", "k3", [run_row("r3", "c", 1.0)])  # another writer
        assert results.query(RECALLS).values.tolist() == [["r1", 0.5]]  # one state for the block
    assert results._reading_cursor() is None  # the block's cursor is gone: every query reads the files again
    assert results.query(RECALLS).values.tolist() == [["r1", 0.5], ["r3", 1.0]]


def test_a_reading_block_belongs_to_its_thread(tmp_path):
    import threading

    results = ResultsDB(tmp_path)
    results.write("experiment_metrics", "k1", [run_row("r1", "a", 0.5)])
    seen = []
    with results.one_reading():
        results.query(RECALLS)
        ResultsDB(tmp_path).write("experiment_metrics", "k2", [run_row("r2", "b", 0.25)])
        other = threading.Thread(target=lambda: seen.append(results.query(RECALLS).values.tolist()))
        other.start()
        other.join()
        assert results.query(RECALLS).values.tolist() == [["r1", 0.5]]
    assert seen == [[["r1", 0.5], ["r2", 0.25]]]  # another thread's queries read the files as they are


def test_the_leaderboard_shows_the_run_search_time_beside_the_index_time(tmp_path):
    results = ResultsDB(tmp_path)
    results.write("experiment_metrics", "k1", [{**run_row("r1", "a", 0.5), "search_seconds": 4.25}])
    results.write("index_costs", "a__m", [{"strategy": "a", "corpus_model": "m", "variant": "", "index_seconds": 30.0}])
    board = results.query("SELECT strategy, index_seconds, search_seconds FROM leaderboard")
    assert board.values.tolist() == [["a", 30.0, 4.25]]
