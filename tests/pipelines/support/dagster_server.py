"""A real ``dagster dev`` (webserver + daemon) on a free loopback port, and a small GraphQL client."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from chunkbench_pipelines.cli import DAGSTER_YAML

ROOT = Path(__file__).resolve().parents[3]
#: on the PYTHONPATH of the tests' dagster dev and cluster: their backfill daemon turns every 3 s (see the module)
QUICK_BACKFILLS = Path(__file__).resolve().parent / "quick_backfills"


def with_quick_backfills(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the quick-backfills folder first on ``PYTHONPATH`` (what was there stays, after it)."""
    paths = [str(QUICK_BACKFILLS), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: seconds between two looks of the run queue's daemon at the queue here (Dagster's default: 5)
DEQUEUE_INTERVAL_SECONDS = 1


def instance_yaml() -> str:
    """chunkbench's dagster.yaml with the run queue looked at every second: the same coordinator and limits, without
    a run waiting up to 5 s for a free place each time one ends (14 partitions of a backfill: a wait of its own
    each)."""
    coordinator = "  class: QueuedRunCoordinator\n"
    assert DAGSTER_YAML.count(coordinator) == 1, "the run coordinator of DAGSTER_YAML moved: update this"
    return DAGSTER_YAML.replace(
        coordinator, f"{coordinator}  config:\n    dequeue_interval_seconds: {DEQUEUE_INTERVAL_SECONDS}\n"
    )


class DagsterServer:
    def __init__(self, dagster_home: Path, env: dict[str, str], log_path: Path, extra_yaml: str = "") -> None:
        dagster_home.mkdir(parents=True, exist_ok=True)
        (dagster_home / "dagster.yaml").write_text(instance_yaml() + extra_yaml, encoding="utf-8")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(log_path, "w")
        dagster = str(Path(sys.executable).with_name("dagster"))
        self.process = subprocess.Popen(
            [dagster, "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(self.port)],
            cwd=ROOT,
            env=with_quick_backfills({**os.environ, **env, "DAGSTER_HOME": str(dagster_home)}),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/server_info", timeout=2)
                break
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"dagster dev exited; see {log_path}") from None
                time.sleep(1)
        else:
            raise RuntimeError(f"dagster dev did not answer within 120 s; see {log_path}")
        self.location = self.query("{ workspaceOrError { ... on Workspace { locationEntries { name } } } }")[
            "workspaceOrError"
        ]["locationEntries"][0]["name"]

    def stop(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGINT)
            self.process.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()

    def query(self, query: str, variables: dict | None = None) -> dict:
        request = urllib.request.Request(
            f"{self.url}/graphql",
            json.dumps({"query": query, "variables": variables or {}}).encode(),
            {"Content-Type": "application/json"},
        )
        body = json.load(urllib.request.urlopen(request, timeout=60))
        if body.get("errors"):
            raise RuntimeError(body["errors"])
        return body["data"]

    def launch_run(self, job: str, tags: dict[str, str] | None = None, run_config: dict | None = None) -> str:
        """Launch ``job`` as the launchpad does (its run config, as YAML's data)."""
        params = {
            "selector": {"repositoryLocationName": self.location, "repositoryName": "__repository__", "jobName": job},
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in (tags or {}).items()]},
            "runConfigData": run_config or {},
        }
        result = self.query(
            """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
            __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
            ... on InvalidSubsetError { message } ... on RunConfigValidationInvalid { errors { message } } } }""",
            {"p": params},
        )
        launched = result["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        return launched["run"]["runId"]

    def wait_run(self, run_id: str, timeout: float = 300) -> str:
        deadline = time.time() + timeout
        while time.time() < deadline:
            status = self.query("query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }", {"id": run_id})[
                "runOrError"
            ]["status"]
            if status in ("SUCCESS", "FAILURE", "CANCELED"):
                return status
            time.sleep(0.5)
        raise TimeoutError(run_id)

    def launch_backfill(self, assets: list[str], partitions: list[str]) -> str:
        result = self.query(
            """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
            __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }""",
            {
                "p": {
                    "assetSelection": [{"path": a.split("/")} for a in assets],  # "benchmark/asset"
                    "partitionNames": partitions,
                }
            },
        )
        launched = result["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        return launched["backfillId"]

    def wait_backfill(self, backfill_id: str, timeout: float = 600) -> str:
        deadline = time.time() + timeout
        while time.time() < deadline:
            status = self.query(
                "query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } } }",
                {"id": backfill_id},
            )["partitionBackfillOrError"]["status"]
            if status in ("COMPLETED", "FAILED", "CANCELED", "COMPLETED_SUCCESS", "COMPLETED_FAILED"):
                return status
            time.sleep(1)
        raise TimeoutError(backfill_id)

    def runs(self) -> list[dict]:
        return self.query("{ runsOrError { ... on Runs { results { runId status tags { key value } } } } }")[
            "runsOrError"
        ]["results"]
