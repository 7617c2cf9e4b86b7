"""A backfill of every local partition through a real ``dagster dev`` (queued coordinator, 3 runs at once)."""

import duckdb
import pytest

from chunkbench_pipelines.resources import EmbeddingResource
from chunkbench_core.chunking import STRATEGIES

from .conftest import QUESTIONS


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.parametrize("instance_storage", ["dagster_dev", "dagster_dev_postgres"])
def test_backfill_of_every_local_partition_loses_no_row(instance_storage, request):
    server = request.getfixturevalue(instance_storage)
    assert server.wait_run(server.launch_run("backfill__parse_documents")) == "SUCCESS"  # the benchmark's own job
    models = EmbeddingResource().available_models()
    partitions = [f"{m}|{s}" for m in models for s in STRATEGIES.names()]
    backfill = server.launch_backfill(["backfill/chunk_collections", "backfill/experiment_results"], partitions)
    status = server.wait_backfill(backfill, timeout=1500)
    runs = server.runs()
    failed = [r for r in runs if r["status"] != "SUCCESS"]
    log = server.log_path.read_text(errors="replace")
    for lock_error in ("Could not set lock on file", "already accessed by another instance of Qdrant client"):
        assert lock_error not in log, f"lock error during the backfill: {lock_error}"
    assert not failed, f"failed runs: {failed}; backfill status {status}"
    assert status.startswith("COMPLETED")

    state = server.home / "benchmarks" / "backfill"  # CHUNKBENCH_BENCHMARK in conftest.start_server
    con = duckdb.connect(str(state / "chunkbench.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(state)])  # the file's views read Parquet paths relative to it
    try:
        counts = con.execute("""SELECT strategy, corpus_model, question_id, count(*) FROM question_results
                                GROUP BY ALL ORDER BY ALL""").fetchall()
        chunks = con.execute("SELECT strategy, corpus_model, count(DISTINCT document) FROM chunks GROUP BY ALL").fetchall()
        board = con.execute("SELECT count(*) FROM experiment_metrics").fetchone()
    finally:
        con.close()
    expected = sorted((s, m, q) for m in models for s in STRATEGIES.names() for q, *_ in QUESTIONS)
    assert [(s, m, q) for s, m, q, _ in counts] == expected
    assert all(n == 1 for *_, n in counts), counts
    assert sorted(chunks) == sorted((s, m, 3) for m in models for s in STRATEGIES.names())
    assert board == (len(partitions),)
