"""The DuckDB file's views are made when they are missing or were made from other statements or columns, and
left as they are otherwise (making them reads every table file's schema, which grows with the results)."""

from __future__ import annotations

import duckdb

from chunkbench_core.storage.results_db import VIEWS_MARK, ResultsDB


def comments(db: ResultsDB) -> dict[str, str | None]:
    con = duckdb.connect(str(db.database_path), read_only=True)
    try:
        return dict(con.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
    finally:
        con.close()


def comment(db: ResultsDB, view: str, text: str) -> None:
    con = duckdb.connect(str(db.database_path))
    try:
        con.execute(f"COMMENT ON VIEW {view} IS '{text}'")
    finally:
        con.close()


def drop(db: ResultsDB, view: str) -> None:
    con = duckdb.connect(str(db.database_path))
    try:
        con.execute(f"DROP VIEW {view}")
    finally:
        con.close()


def test_views_are_made_once_and_again_only_when_missing_or_made_from_something_else(tmp_path):
    db = ResultsDB(tmp_path / "results")
    db.ensure_database()
    views = comments(db)
    assert {"leaderboard", "question_results", "experiment_metrics", "chunks", "current_chunks"} <= set(views)
    assert views["current_chunks"].startswith(VIEWS_MARK)  # what they were made from

    comment(db, "leaderboard", "probe")  # a view made again loses its comment
    ResultsDB(tmp_path / "results").ensure_database()  # another process, same version: nothing to make
    assert comments(db)["leaderboard"] == "probe"

    drop(db, "chunks")  # a view missing: all are made again
    ResultsDB(tmp_path / "results").ensure_database()
    after = comments(db)
    assert "chunks" in after and after["leaderboard"] is None and after["current_chunks"] == views["current_chunks"]

    comment(db, "leaderboard", "probe")
    comment(db, "current_chunks", VIEWS_MARK + "an older version")  # made by another version
    ResultsDB(tmp_path / "results").ensure_database()
    after = comments(db)
    assert after["leaderboard"] is None and after["current_chunks"] == views["current_chunks"]

    # the views still read the files as they are when queried
    db.write("documents", "corpus", [{"document": "a.md", "characters": 3}])
    con = duckdb.connect(str(db.database_path), read_only=True)
    try:
        con.execute("SET file_search_path = ?", [str(db.root)])
        assert con.execute("SELECT document FROM documents").fetchall() == [("a.md",)]
    finally:
        con.close()


def test_the_objects_of_one_folder_share_their_reading_views_and_schema_check_in_a_process(tmp_path, monkeypatch):
    """Every asset, report and command makes its own ResultsDB: the reading views are made once per folder in a
    process, the schema files checked once, and again when they changed on disk. A RunScope keeps its own views."""
    from chunkbench_core.storage.runs import RunScope

    made, checked = [], []
    made_views, stale_schema_files = ResultsDB._made_views, ResultsDB._stale_schema_files
    monkeypatch.setattr(ResultsDB, "_made_views", lambda self, s: made.append(type(self)) or made_views(self, s))
    monkeypatch.setattr(ResultsDB, "_stale_schema_files", lambda self: checked.append(1) or stale_schema_files(self))
    first = ResultsDB(tmp_path / "results")
    first.write("documents", "corpus", [{"document": "a.md", "characters": 3}])
    assert first.query("SELECT document FROM documents")["document"].tolist() == ["a.md"]
    assert len(made) == 1 and checked  # the schema files made, the views made
    checks = len(checked)
    second = ResultsDB(tmp_path / "results")
    second.write("documents", "corpus", [{"document": "b.md", "characters": 4}])  # seen by the shared views
    assert first.query("SELECT document FROM documents")["document"].tolist() == ["b.md"]
    assert second.query("SELECT count(*) AS n FROM leaderboard")["n"].tolist() == [0]
    assert (len(made), len(checked)) == (1, checks)

    schema = tmp_path / "results" / "tables" / "chunks" / "_schema.parquet"
    schema.unlink()  # another process (or a person) removed one: the next object checks again and makes it
    third = ResultsDB(tmp_path / "results")
    assert third.query("SELECT count(*) AS n FROM chunks")["n"].tolist() == [0]
    assert len(checked) > checks and schema.exists()

    other = ResultsDB(tmp_path / "other")  # another folder: its own views
    assert other.query("SELECT count(*) AS n FROM documents")["n"].tolist() == [0]
    scope = RunScope(first, [])
    assert scope.query("SELECT count(*) AS n FROM leaderboard")["n"].tolist() == [0]
    assert made == [ResultsDB, ResultsDB, RunScope]
