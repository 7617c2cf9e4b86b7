"""The distributed profile, run here: ``make cluster``'s launcher with two Celery workers, each on its own scratch.

One cluster for the module (Redis, PostgreSQL, two workers, the daemon, the webserver, all on 127.0.0.1),
started by the same launcher as ``make cluster``. The corpus is the bundled sample, with MiniLM and three
strategies, one of each kind: ``fixed_size`` (cut by size), ``semantic`` (cut with a boundary model) and
``semantic_parent_child`` (a boundary model, and parents handed to retrieval). The two with a boundary model embed
the same sentences, so whether a text is embedded once across both workers is tested where it can go wrong; the
other strategies and the e5 partitions are more of the same kinds and would multiply the time while proving
nothing more. Against it:

1. a backfill of those partitions gives the leaderboard (every metric to 1e-9) and the recommendation of the
   single-process run (``chunkbench run``); steps ran on both workers, which wrote their partitions'
   collections into the shared folder at the same time; and each text was embedded once across both: the
   texts sent to each model (the product's embedding_usage records) add up to the single process's, and the
   shared cache holds the single process's vectors, model by model;
2. a worker killed with SIGKILL in the middle of a partition: the step is handed to a worker again, the
   backfill ends with every run successful and no row duplicated or lost.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.storage.results_db import ResultsDB
from tests.conftest import require_executable, require_tool
from tests.support import calibration

from .support.dagster_server import DagsterServer, free_port, with_quick_backfills

ROOT = Path(__file__).resolve().parents[2]
MODEL = "all-minilm-l6-v2"
BENCHMARK = "sample"
#: one strategy of each kind (see above); the killed-worker test backfills "semantic" again
STRATEGY_KINDS = ("fixed_size", "semantic", "semantic_parent_child")
VISIBILITY_TIMEOUT = 10  # seconds: a dead worker's step goes to another one soon (live workers renew theirs)

# one worker runs the module (--dist loadgroup): one cluster, one reference run, one first backfill
pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("cluster")]


class ClusterClient(DagsterServer):
    """The GraphQL client of DagsterServer, talking to the cluster's webserver (started by the launcher)."""

    def __init__(self, url: str) -> None:  # noqa: D107 - nothing to start
        self.url = url
        self.location = self.query("{ workspaceOrError { ... on Workspace { locationEntries { name } } } }")[
            "workspaceOrError"
        ]["locationEntries"][0]["name"]


def _tools() -> None:
    require_executable("redis-server")
    import glob

    require_tool(bool(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl")), "PostgreSQL server (apt-get install postgresql)")
    try:
        import dagster_celery  # noqa: F401  (imported only to see it is installed)
    except ImportError:
        require_tool(False, "dagster-celery (pip install '.[test]')")


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHUNKBENCH_", "DAGSTER_"))}
    env.update(
        {
            "CHUNKBENCH_HOME": str(home),
            "CHUNKBENCH_BENCHMARK": BENCHMARK,
            "CHUNKBENCH_CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        }
    )
    return with_quick_backfills(env)


class Reference:
    """The single-process run of the same partitions (``chunkbench run``: SQLite cache, one process), started at
    once and waited for when its results are needed (it runs while the cluster works)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.out = open(home.parent / "single.log", "w")
        strategies = [arg for s in STRATEGY_KINDS for arg in ("--strategy", s)]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "chunkbench_pipelines.cli", "run", "--corpus-model", MODEL, *strategies],
            cwd=ROOT,
            env=_environment(home),
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def results(self) -> ResultsDB:
        code = self.process.wait(timeout=900)
        self.out.flush()
        assert code == 0, (self.home.parent / "single.log").read_text()[-3000:]
        return ResultsDB(self.home / "benchmarks" / BENCHMARK)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.out.close()


@pytest.fixture(scope="module")
def reference(cluster, tmp_path_factory):
    home = tmp_path_factory.mktemp("single") / "home"
    home.mkdir()
    calibration.give_graph(home)  # the fused MiniLM graph a first run keeps: not this test's point
    run = Reference(home)
    yield run
    run.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    _tools()
    root = tmp_path_factory.mktemp("cluster")
    state = root / "state"
    log = open(root / "launcher.log", "w")
    env = _environment(root / "home")
    calibration.give_graph(root / "home")  # each worker's first MiniLM load reads it instead of rewriting the graph
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chunkbench_pipelines.cluster",
            "--workers",
            "2",
            "--port",
            str(free_port()),
            "--state",
            str(state),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    description = state / "cluster.json"
    deadline = time.time() + 300
    while not description.exists():
        if launcher.poll() is not None:
            pytest.fail(f"the cluster did not start: {(root / 'launcher.log').read_text()[-3000:]}")
        if time.time() > deadline:
            launcher.kill()
            pytest.fail("the cluster did not start within 300 s")
        time.sleep(0.5)
    info = json.loads(description.read_text())
    info["state"], info["launcher"], info["log"] = state, launcher, root / "launcher.log"
    try:
        yield info
    finally:
        pids = list(json.loads(description.read_text())["processes"].values()) if description.exists() else []
        launcher.send_signal(signal.SIGINT)
        try:
            launcher.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)
        log.close()
        left = [pid for pid in pids if _alive(pid)]
        pointer = state / "postgres-data-folder.txt"  # PostgreSQL's data outside the state folder (as root)
        if pointer.exists():
            import shutil

            folder = pointer.read_text(encoding="utf-8").strip()
            shutil.rmtree(folder, ignore_errors=True)
            Path(f"{folder}.log").unlink(missing_ok=True)  # its server log, beside it
        assert not left, f"processes left running after Ctrl-C: {left}"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _instance(info):
    from dagster import DagsterInstance

    os.environ["DAGSTER_PG_URL"] = info["instance"]
    return DagsterInstance.from_config(str(info["state"] / "dagster_home"))


def _worker_steps(instance, run_ids) -> list[tuple[str, str, str]]:
    """(run id, step key, worker) of every step a Celery worker took, from the runs' engine events."""
    from dagster import DagsterEventType

    out = []
    for run_id in sorted(run_ids):
        for entry in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
            event = entry.dagster_event
            if not event or "in celery worker" not in (event.message or ""):
                continue
            worker = event.engine_event_data.metadata.get("Celery worker")
            out.append((run_id, event.step_key, str(getattr(worker, "value", worker))))
    return out


def _step_spans(instance, run_ids, step_key: str) -> list[tuple[str, float, float]]:
    """(worker, start, end) of each ``step_key`` step: from the worker's engine event to the step's success."""
    from dagster import DagsterEventType

    spans = []
    for run_id in sorted(run_ids):
        start = worker = end = None
        for entry in instance.all_logs(run_id):
            event = entry.dagster_event
            if not event or event.step_key != step_key:
                continue
            if event.event_type == DagsterEventType.ENGINE_EVENT and "in celery worker" in (event.message or ""):
                start = entry.timestamp
                worker = str(getattr(event.engine_event_data.metadata.get("Celery worker"), "value", ""))
            elif event.event_type == DagsterEventType.STEP_SUCCESS:
                end = entry.timestamp
        if start is not None and end is not None:
            spans.append((worker.split("@")[0], start, end))
    return spans


def _board(results: ResultsDB) -> dict[str, dict[str, float | None]]:
    import pandas as pd

    frame = results.query("SELECT * FROM experiment_metrics ORDER BY created_at")  # a partition's latest run last
    numeric = [c for c in frame.columns if frame[c].dtype.kind in "fiu" or str(frame[c].dtype) in ("Int32", "Int64")]
    return {
        f"{r['strategy']}|{r['corpus_model']}": {c: None if pd.isna(r[c]) else float(r[c]) for c in numeric}
        for r in frame.to_dict("records")
    }


def _assert_same_board(results: ResultsDB, reference: ResultsDB) -> None:
    ours, theirs = _board(results), _board(reference)
    assert sorted(ours) == sorted(theirs)
    for key, metrics in theirs.items():
        for name, value in metrics.items():
            if name.endswith(("_ms", "_seconds")):
                continue  # times differ by machine and load, not by where a step ran
            got = ours[key].get(name)
            same = (
                got is None
                and value is None
                or (got is not None and value is not None and math.isclose(got, value, rel_tol=0, abs_tol=1e-9))
            )
            assert same, f"{key} {name}: {got} on two workers, {value} in one process"
    mine, single = results.recommendation(), reference.recommendation()
    assert mine is not None and single is not None
    assert (mine["strategy"], mine["corpus_model"]) == (single["strategy"], single["corpus_model"])


def _backfill(client: ClusterClient, strategies) -> list[str]:
    partitions = [f"{MODEL}|{s}" for s in strategies]  # a key joins the dimensions in name order
    backfill = client.launch_backfill([f"{BENCHMARK}/chunk_collections", f"{BENCHMARK}/experiment_results"], partitions)
    return [backfill]


def _runs_of(client: ClusterClient, backfill_id: str) -> list[dict]:
    return [r for r in client.runs() if {"key": "dagster/backfill", "value": backfill_id} in r["tags"]]


@pytest.fixture(scope="module")
def first_backfill(cluster):
    """The sample parsed, then a backfill of every partition of STRATEGY_KINDS on the cluster: (its status, its
    runs). Both tests need it (the killed worker's test compares the whole leaderboard), whichever runs first."""
    client = ClusterClient(cluster["ui"])
    assert client.wait_run(client.launch_run(f"{BENCHMARK}__parse_documents"), timeout=300) == "SUCCESS"
    started = time.time()
    [backfill] = _backfill(client, list(STRATEGY_KINDS))
    status = client.wait_backfill(backfill, timeout=900)
    print(f"backfill of {len(STRATEGY_KINDS)} partitions on two workers: {time.time() - started:.0f} s")
    return status, _runs_of(client, backfill)


def test_a_backfill_on_two_workers_gives_the_single_process_leaderboard_embedding_each_text_once(
    cluster, reference, first_backfill
):
    client = ClusterClient(cluster["ui"])
    strategies = list(STRATEGY_KINDS)
    assert set(strategies) <= set(STRATEGIES.names())
    status, runs = first_backfill
    assert status.startswith("COMPLETED") and runs and all(r["status"] == "SUCCESS" for r in runs), (status, runs)
    assert len(runs) == len(strategies)
    assert client.wait_run(client.launch_run(f"{BENCHMARK}__refresh_reports"), timeout=300) == "SUCCESS"

    results = ResultsDB(Path(cluster["shared"]) / "benchmarks" / BENCHMARK)
    _assert_same_board(results, reference.results())

    # every step ran on a Celery worker, and both workers took some
    instance = _instance(cluster)
    try:
        steps = _worker_steps(instance, {r["runId"] for r in runs})
    finally:
        instance.dispose()
    assert len(steps) == 2 * len(strategies), steps  # none ran twice: a live worker keeps its steps
    assert {w.split("@")[0] for _, _, w in steps} == {"w1", "w2"}, steps
    # the two workers wrote different partitions' collections into the shared folder at the same time
    instance = _instance(cluster)
    try:
        spans = _step_spans(instance, {r["runId"] for r in runs}, f"{BENCHMARK}__chunk_collections")
    finally:
        instance.dispose()
    assert any(a[0] != b[0] and a[1] < b[2] and b[1] < a[2] for a in spans for b in spans), spans
    collections = Path(cluster["shared"]) / "benchmarks" / BENCHMARK / "qdrant"
    assert len([p for p in collections.iterdir() if p.name.endswith("_collection")]) == len(strategies)

    # each text embedded once across both workers, told by the product's own records: the texts sent to a
    # model (embedding_usage "embedded", every stage and model) add up to the single process's, where the
    # cache makes each text's embedding happen once by construction; and the shared cache holds the single
    # process's vectors, model by model (which stage embeds a text first depends on the order partitions ran
    # in: a boundary sentence of one strategy is a chunk of another; the totals do not)
    usage = "SELECT model_id, sum(embedded) AS n FROM embedding_usage GROUP BY ALL ORDER BY ALL"
    sent, single_sent = results.query(usage), reference.results().query(usage)
    assert sent.to_dict("records") == single_sent.to_dict("records")
    assert sent["n"].sum() > 0
    from chunkbench_core.storage.cache_postgres import PostgresEmbeddingCache
    from chunkbench_core.storage.embedding_cache import EmbeddingCache

    with PostgresEmbeddingCache(cluster["cache"]) as shared:
        held = {(s.model_id, s.vectors) for s in shared.stats() if s.vectors}
    with EmbeddingCache(reference.home / "embedding_cache.sqlite") as single_cache:
        single_held = {(s.model_id, s.vectors) for s in single_cache.stats() if s.vectors}
    assert held == single_held and held, (held, single_held)
    # ... and nothing was cached on a worker's own machine
    for home in cluster["worker_homes"].values():
        assert not (Path(home) / "embedding_cache.sqlite").exists()
        assert not (Path(home) / "benchmarks" / BENCHMARK / "qdrant").exists()


def test_a_worker_killed_mid_partition_leaves_a_partition_that_is_retried_with_no_row_lost_or_duplicated(
    cluster, reference, first_backfill
):
    client = ClusterClient(cluster["ui"])
    status, runs = first_backfill
    assert status.startswith("COMPLETED") and all(r["status"] == "SUCCESS" for r in runs), (status, runs)
    from chunkbench_core.storage.cache_postgres import PostgresEmbeddingCache

    with PostgresEmbeddingCache(cluster["cache"]) as cache:  # the texts must be embedded again: a longer step
        cache.clear()
    [backfill] = _backfill(client, ["semantic"])
    instance = _instance(cluster)
    description = cluster["state"] / "cluster.json"
    try:
        deadline = time.time() + 300
        victim = None
        while victim is None and time.time() < deadline:
            run_ids = {r["runId"] for r in _runs_of(client, backfill)}
            victim = next(
                (
                    (run_id, step, worker.split("@")[0])
                    for run_id, step, worker in _worker_steps(instance, run_ids)
                    if step == f"{BENCHMARK}__chunk_collections"
                ),
                None,
            )
            time.sleep(0.1)
        assert victim is not None, "the chunk_collections step reached no worker"
        run_id, step, worker = victim
        pid = json.loads(description.read_text())["processes"][worker]
        os.killpg(pid, signal.SIGKILL)  # the worker and its pool process, as if its machine went away
        status = client.wait_backfill(backfill, timeout=600)
        runs = _runs_of(client, backfill)
        assert status.startswith("COMPLETED") and all(r["status"] == "SUCCESS" for r in runs), (status, runs)
        taken = [s for s in _worker_steps(instance, {run_id}) if s[1] == step]
    finally:
        instance.dispose()
    assert len(taken) == 2, f"the killed step was not handed to a worker again: {taken}"
    assert f"worker {worker} ended (signal 9); starting it again" in cluster["log"].read_text()

    assert client.wait_run(client.launch_run(f"{BENCHMARK}__refresh_reports"), timeout=300) == "SUCCESS"
    results, single = ResultsDB(Path(cluster["shared"]) / "benchmarks" / BENCHMARK), reference.results()
    _assert_same_board(results, single)
    # every experiment run holds one row per question (runs are kept: the partition's first run from the
    # backfill above, then the retried one, and no third from the killed attempt); the latest run of each
    # partition has the questions of the single process; the chunks are the same
    per_run = (
        "SELECT experiment_run_id, strategy, corpus_model, question_id, count(*) AS n FROM question_results "
        "GROUP BY ALL"
    )
    assert (results.query(per_run)["n"] == 1).all()
    semantic_runs = results.query("SELECT count(*) AS n FROM experiment_metrics WHERE strategy = 'semantic'")
    assert semantic_runs["n"][0] == 2
    assert _latest_questions(results) == _latest_questions(single)
    chunks = (
        "SELECT strategy, corpus_model, count(*) AS n, count(DISTINCT chunk_id) AS ids FROM chunks "
        "GROUP BY ALL ORDER BY ALL"
    )
    assert results.query(chunks).to_dict("records") == single.query(chunks).to_dict("records")


def _latest_questions(results: ResultsDB) -> list[tuple]:
    """(strategy, corpus model, question id) of each partition's latest experiment run."""
    return [
        tuple(row)
        for row in results.query("""
        SELECT strategy, corpus_model, question_id FROM question_results
        WHERE experiment_run_id IN (SELECT arg_max(experiment_run_id, created_at) FROM experiment_metrics
                                    GROUP BY strategy, corpus_model)
        ORDER BY ALL""").itertuples(index=False)
    ]
