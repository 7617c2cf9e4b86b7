"""The readers outside ResultsDB repair a damaged table file as it does: the results of chosen runs (RunScope)
and the list of kept collection builds (history.list_builds). The damaged file is moved aside with a
warning naming it; the rest is read."""

from __future__ import annotations

import logging
import os
import random
from datetime import datetime
from pathlib import Path

import pytest

from chunkbench_core.storage import integrity
from chunkbench_core.storage.history import list_builds
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.runs import RunScope


def chunk_rows(strategy: str, build: str, n: int) -> list[dict]:
    return [
        {
            "chunk_id": f"{strategy}-{build}-{i}",
            "strategy": strategy,
            "corpus_model": "all-minilm-l6-v2",
            "document": "a.md",
            "chunk_index": i,
            "start_offset": 10 * i,
            "end_offset": 10 * i + 9,
            "text": f"chunk {i} " * 200,
            "variant": "",
            "build": build,
            "role": "chunk",
            "materialized_at": datetime(2026, 1, 1, 12, i),
        }
        for i in range(n)
    ]


@pytest.fixture
def results(tmp_path) -> ResultsDB:
    results = ResultsDB(tmp_path / "benchmark")
    results.write("chunks", "fixed_size__build-b1", chunk_rows("fixed_size", "b1", 40))
    results.write("chunks", "recursive__build-b2", chunk_rows("recursive", "b2", 40))
    return results


def truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def garble_inside(path: Path) -> None:
    """Random bytes in the middle of the file: its magic bytes and footer stay, only a full read sees it."""
    rnd = random.Random(5)
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        for _ in range(64):
            handle.seek(rnd.randrange(size // 5, size // 2))
            handle.write(bytes(rnd.randrange(256) for _ in range(16)))


def test_list_builds_moves_a_damaged_chunk_file_aside_and_lists_the_others(results, caplog):
    assert {(b.strategy, b.build) for b in list_builds(results)} == {("fixed_size", "b1"), ("recursive", "b2")}
    bad = results.tables_dir / "chunks" / "recursive__build-b2.parquet"
    truncate(bad)
    assert integrity.parquet_problem(bad, deep=True) is not None  # the damage is real
    caplog.set_level(logging.WARNING, logger="chunkbench")
    builds = list_builds(results)
    assert [(b.strategy, b.build, b.n_chunks) for b in builds] == [("fixed_size", "b1", 40)]
    assert not bad.exists() and integrity.quarantined_files(results.tables_dir)
    assert any(str(bad) in r.getMessage() and "moved aside" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("damage", [truncate, garble_inside], ids=["truncated", "garbled inside"])
def test_the_results_of_chosen_runs_move_a_damaged_table_file_aside_and_read_the_others(results, damage, caplog):
    scope = RunScope(results, ["run-1"])
    assert scope.query("SELECT count(*) AS n FROM chunks")["n"].iat[0] == 80
    bad = results.tables_dir / "chunks" / "fixed_size__build-b1.parquet"
    damage(bad)
    caplog.set_level(logging.WARNING, logger="chunkbench")
    scope = RunScope(results, ["run-1"])
    frame = scope.query("SELECT count(*) AS n, min(strategy) AS strategy, max(length(text)) AS longest FROM chunks")
    assert (frame["n"].iat[0], frame["strategy"].iat[0]) == (40, "recursive")
    assert not bad.exists() and integrity.quarantined_files(results.tables_dir)
    assert any(str(bad) in r.getMessage() for r in caplog.records)


def test_a_forked_child_reads_parquet_on_its_own_in_memory_duckdb(tmp_path):
    """The parent's connection is in use (a cursor open) when the process forks: the child makes its own on
    first use and reads; the parent's keeps working after."""
    path = tmp_path / "t.parquet"
    writer = integrity.memory_cursor()
    writer.execute(f"COPY (SELECT range AS x FROM range(5)) TO '{path}' (FORMAT parquet)")
    parent_connection = integrity._PROCESS_DUCKDB._connection
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's outcome is its exit status
        try:
            cursor = integrity.memory_cursor()
            ok = cursor.execute(f"SELECT sum(x) FROM '{path}'").fetchone()[0] == 10
            ok = ok and integrity._PROCESS_DUCKDB._connection is not parent_connection
            os._exit(0 if ok else 1)
        except BaseException:  # noqa: BLE001  (any failure of the reader is what is recorded)
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert writer.execute(f"SELECT count(*) FROM '{path}'").fetchone()[0] == 5
    writer.close()
    assert integrity._PROCESS_DUCKDB._connection is parent_connection
