"""The results folder's schema (its tables' empty schema files and the DuckDB views file) is created or upgraded
by one process at a time, under the folder's setup lock: a second process waits and says so, then finds it made;
two processes starting at once on a new folder both succeed and leave one sound database."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb

from chunkbench_core.storage.locks import setup_lock
from chunkbench_core.storage.results_db import SCHEMA_FILE, ResultsDB

PROJECT = Path(__file__).resolve().parents[3]

WORKER = textwrap.dedent("""
    import logging, sys, time
    from chunkbench_core.storage.results_db import ResultsDB
    logging.basicConfig(level=logging.WARNING, format="%(message)s")  # the waiting line, as the CLI prints it
    print("imported", flush=True)
    start_at = float(sys.argv[2])
    time.sleep(max(0.0, start_at - time.time()))  # both processes start on the same instant
    db = ResultsDB(sys.argv[1])
    db.ensure_database()
    print("ready", len(db.query("SELECT * FROM leaderboard").columns), flush=True)
""")


def start(root: Path, at: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(root), str(at)],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )


def test_a_second_process_waits_for_the_schema_under_the_setup_lock(tmp_path):
    root = tmp_path / "results"
    with setup_lock(root, "held by the test"):
        waiting = start(root, time.time())
        assert waiting.stdout.readline().strip() == "imported"
        time.sleep(3.0)
        # it waits for the lock: nothing made yet, and it said so after 2 s
        assert waiting.poll() is None
        assert not (root / "tables").exists() or not any((root / "tables").rglob(SCHEMA_FILE))
        assert not (root / "chunkbench.duckdb").exists()
    out, err = waiting.communicate(timeout=300)
    assert waiting.returncode == 0, err
    assert "waiting for another chunkbench process to finish setting up" in err and str(root) in err
    assert out.startswith("ready") and err.count("waiting for another") == 1


def test_two_processes_starting_at_once_on_a_new_folder_both_succeed(tmp_path):
    root = tmp_path / "results"
    at = time.time() + 3.0  # both have imported by then
    workers = [start(root, at) for _ in range(2)]
    outputs = [w.communicate(timeout=300) for w in workers]
    for worker, (out, err) in zip(workers, outputs):
        assert worker.returncode == 0, err
        assert out.splitlines()[-1].startswith("ready")
    assert not list(root.rglob("*.corrupt-*"))  # nothing moved aside as unreadable
    con = duckdb.connect(str(root / "chunkbench.duckdb"), read_only=True)
    try:
        views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    finally:
        con.close()
    assert {"leaderboard", "experiment_metrics", "question_results", "embedding_usage"} <= views
    assert ResultsDB(root).leaderboard().empty
