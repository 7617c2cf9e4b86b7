"""A backfill of local partitions through a real ``dagster dev`` (queued coordinator, 3 runs at once).

The backfill covers one strategy of each kind with the default local model (MiniLM), and the cut-by-size strategy
with the other local model (e5), each partition a run in a process of its own. A kind is a set of capabilities in
the strategy registry (cuts by size, needs a boundary model, gives parent context, can use an LLM ...): every kind's
chunking, boundary model, parents and context runs in a backfill's run process, and so does the second model's
engine. Strategies of the same kind share that path (the same definitions loaded by the run process, the same
engine, the same stores) and each one's own chunking is tested in-process, so a second one of a kind would add a
run process (its Python, Dagster and model loaded again) and prove nothing more. The backfill has more partitions
than the three runs the coordinator starts at once, so runs wait in the queue and start as others finish.

Dagster's instance in PostgreSQL under concurrent runs (runs, events and a backfill's bookkeeping written by
several processes at once) is the cluster's test (test_distributed.py): its backfill runs on two Celery workers with
the instance in PostgreSQL. A second ``dagster dev`` with PostgreSQL storage here repeated that, at the cost of a
``dagster dev``, a PostgreSQL server and four run processes.
"""

import duckdb
import pytest
import yaml

from chunkbench_pipelines.resources import EmbeddingResource
from chunkbench_core.chunking import STRATEGIES

from .conftest import QUESTIONS

#: the strategy backfilled with the other local model as well: it cuts by size, so that model's run embeds the chunks
#: and the questions, and needs no boundary model
SECOND_MODEL_STRATEGY = "fixed_size"
#: runs the coordinator starts at once (the dagster.yaml chunkbench writes, which ``dagster dev`` is given here)
MAX_CONCURRENT_RUNS = 3


def test_the_coordinator_runs_as_many_runs_at_once_as_this_test_assumes():
    from chunkbench_pipelines.cli import DAGSTER_YAML

    assert yaml.safe_load(DAGSTER_YAML)["concurrency"]["runs"]["max_concurrent_runs"] == MAX_CONCURRENT_RUNS


def one_of_each_kind() -> list[str]:
    """The first registered strategy of each set of capabilities."""
    kinds: dict = {}
    for name in STRATEGIES.names():
        kinds.setdefault(STRATEGIES[name].capabilities, name)
    return list(kinds.values())


def partitions_for(models: list[str]) -> list[str]:
    """The partitions the backfill covers: one strategy of each kind with the default model, and one with the
    other local model."""
    return [f"{models[0]}|{s}" for s in one_of_each_kind()] + [f"{models[1]}|{SECOND_MODEL_STRATEGY}"]


def test_the_sqlite_backfill_covers_every_kind_of_strategy():
    kinds = {STRATEGIES[name].capabilities for name in one_of_each_kind()}
    assert kinds == {STRATEGIES[name].capabilities for name in STRATEGIES.names()}
    assert len(one_of_each_kind()) > MAX_CONCURRENT_RUNS


@pytest.mark.e2e
@pytest.mark.slow
def test_backfill_of_local_partitions_loses_no_row(dagster_dev):
    server = dagster_dev
    assert server.wait_run(server.launch_run("backfill__parse_documents")) == "SUCCESS"  # the benchmark's own job
    models = EmbeddingResource().available_models()
    assert models[0] == "all-minilm-l6-v2" and len(models) >= 2, models
    assert SECOND_MODEL_STRATEGY in STRATEGIES.names()
    partitions = partitions_for(models)
    assert len(partitions) > MAX_CONCURRENT_RUNS  # some runs wait in the queue
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
        chunks = con.execute(
            "SELECT strategy, corpus_model, count(DISTINCT document) FROM chunks GROUP BY ALL"
        ).fetchall()
        board = con.execute("SELECT count(*) FROM experiment_metrics").fetchone()
    finally:
        con.close()
    built = [tuple(p.split("|")) for p in partitions]  # (model, strategy)
    expected = sorted((s, m, q) for m, s in built for q, *_ in QUESTIONS)
    assert [(s, m, q) for s, m, q, _ in counts] == expected
    assert all(n == 1 for *_, n in counts), counts
    assert sorted(chunks) == sorted((s, m, 3) for m, s in built)
    assert board == (len(partitions),)
