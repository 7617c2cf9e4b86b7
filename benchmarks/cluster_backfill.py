"""The sample backfill on the distributed profile with 1 and with 2 Celery workers, side by side.

    python benchmarks/cluster_backfill.py [--workers 1,2] [--model all-minilm-l6-v2] [--strategies a,b]

For each worker count, a fresh cluster (``make cluster``'s launcher: Redis, PostgreSQL, the workers, the
daemon, the webserver, all on 127.0.0.1, empty caches) parses the sample corpus, then a backfill of
``chunk_collections`` + ``experiment_results`` over every strategy with the given model runs. Printed:
the backfill's wall time (from launching it to its end, as a user waits for it), the speed-up over
the first worker count, how many steps each worker took, and the embedding cache's hit rate (over the
backfill's ``embedding_usage`` rows: texts found in the cache over distinct texts asked for).

The parse run is not timed (it is one run on one worker either way). On a machine with 2 cores a
speed-up well below 2x is expected: the runs' own processes, the daemon, the webserver, Redis and
PostgreSQL share the same cores with the workers, and each worker loads its own copy of the model.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chunkbench_pipelines.cluster import free_port, remove_outside_data, stop_launcher


def graphql(url: str, query: str, variables: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"{url}/graphql",
        json.dumps({"query": query, "variables": variables or {}}).encode(),
        {"Content-Type": "application/json"},
    )
    body = json.load(urllib.request.urlopen(request, timeout=60))
    if body.get("errors"):
        raise RuntimeError(body["errors"])
    return body["data"]


def wait_run(url: str, run_id: str) -> str:
    while True:
        status = graphql(url, "query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }", {"id": run_id})[
            "runOrError"
        ]["status"]
        if status in ("SUCCESS", "FAILURE", "CANCELED"):
            return status
        time.sleep(1)


def launch_job(url: str, job: str) -> str:
    result = graphql(
        url,
        """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
        __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }""",
        {
            "p": {
                "selector": {
                    "repositoryLocationName": "chunkbench",
                    "repositoryName": "__repository__",
                    "jobName": job,
                },
                "runConfigData": {},
            }
        },
    )["launchRun"]
    assert result["__typename"] == "LaunchRunSuccess", result
    return result["run"]["runId"]


def backfill(url: str, partitions: list[str]) -> tuple[str, float]:
    started = time.perf_counter()
    result = graphql(
        url,
        """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
        __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }""",
        {
            "p": {
                "assetSelection": [
                    {"path": ["sample", "chunk_collections"]},
                    {"path": ["sample", "experiment_results"]},
                ],
                "partitionNames": partitions,
            }
        },
    )["launchPartitionBackfill"]
    assert result["__typename"] == "LaunchBackfillSuccess", result
    backfill_id = result["backfillId"]
    while True:
        status = graphql(
            url,
            "query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }",
            {"id": backfill_id},
        )["partitionBackfillOrError"]["status"]
        if status not in ("REQUESTED",):
            return status, time.perf_counter() - started
        time.sleep(0.5)


def measure(workers: int, partitions: list[str], folder: Path) -> dict:
    state = folder / f"workers-{workers}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHUNKBENCH_", "DAGSTER_"))}
    env["CHUNKBENCH_HOME"] = str(folder / f"home-{workers}")
    log = open(folder / f"launcher-{workers}.log", "w")
    launcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chunkbench_pipelines.cluster",
            "--workers",
            str(workers),
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
    try:
        while not (state / "cluster.json").exists():
            if launcher.poll() is not None:
                raise SystemExit(f"the cluster did not start; see {folder / f'launcher-{workers}.log'}")
            time.sleep(0.5)
        info = json.loads((state / "cluster.json").read_text())
        assert wait_run(info["ui"], launch_job(info["ui"], "sample__parse_documents")) == "SUCCESS"
        status, seconds = backfill(info["ui"], partitions)
        from chunkbench_core.storage.results_db import ResultsDB

        results = ResultsDB(Path(info["shared"]) / "benchmarks" / "sample")
        usage = results.query(
            "SELECT sum(cache_hits) AS hits, sum(unique_texts) AS texts, sum(embedded) AS embedded FROM embedding_usage"
        ).iloc[0]
        steps = {}
        for name in (f"w{i}" for i in range(1, workers + 1)):
            text = (state / "logs" / f"worker-{name}.log").read_text(errors="replace")
            steps[name] = text.count("] succeeded in ")
        return {
            "status": status,
            "seconds": seconds,
            "hits": int(usage["hits"]),
            "texts": int(usage["texts"]),
            "embedded": int(usage["embedded"]),
            "steps": steps,
        }
    finally:
        stop_launcher(launcher)
        remove_outside_data(state)  # the PostgreSQL data kept in /var/tmp when run as root
        log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2", help="worker counts, in order (default 1,2)")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--strategies", default="", help="default: every registered strategy")
    args = parser.parse_args()
    from chunkbench_core.chunking import STRATEGIES

    strategies = [s for s in args.strategies.split(",") if s] or list(STRATEGIES.names())
    partitions = [f"{args.model}|{s}" for s in strategies]
    counts = [int(n) for n in args.workers.split(",")]
    print(
        f"sample corpus, {args.model} x {len(strategies)} strategies = {len(partitions)} partitions; "
        f"cpu cores: {os.cpu_count()}; load average before: {os.getloadavg()[0]:.1f}"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="chunkbench-cluster-bench-") as folder:
        for workers in counts:
            result = measure(workers, partitions, Path(folder))
            rows.append((workers, result))
            print(
                f"  {workers} worker(s): {result['status']} in {result['seconds']:.0f} s, steps per worker "
                f"{result['steps']}",
                flush=True,
            )
    base = rows[0][1]["seconds"]
    print("\n| workers | backfill wall time | speed-up | embedding cache hit rate | texts embedded |")
    print("|---|---|---|---|---|")
    for workers, result in rows:
        rate = result["hits"] / result["texts"] if result["texts"] else 1.0
        print(
            f"| {workers} | {result['seconds']:.0f} s | {base / result['seconds']:.2f}x | {rate:.0%} "
            f"({result['hits']} of {result['texts']}) | {result['embedded']} |"
        )
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
