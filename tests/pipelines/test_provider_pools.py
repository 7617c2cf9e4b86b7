"""Per-provider concurrency limits through Dagster pools, on real instance storage.

The mechanism is checked on a real SQLite DagsterInstance with threads (slots are held,
waited for, freed on failure), then end to end: two partitions of a remote model, run as
two processes on one instance, against a real HTTP embeddings server on 127.0.0.1 that
counts how many requests it answers at once.
"""

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from dagster import AssetExecutionContext, DagsterInstance, asset, materialize

from chunkbench_pipelines.cli import DAGSTER_YAML
from chunkbench_pipelines.concurrency import ensure_pool_limit, llm_pool, pool_slots, provider_pool
from tests.core.embedding.openai_server import FaultProxy

PROJECT = Path(__file__).resolve().parents[2]


def test_pool_names():
    assert provider_pool("local") is None
    assert provider_pool("openai") == "openai" and provider_pool("openai_compatible") == "openai_compatible"
    assert llm_pool(None) == "openai" and llm_pool("http://127.0.0.1:11434/v1") == "openai_compatible"


def test_a_new_pool_starts_at_the_configured_limit_and_keeps_a_later_change(tmp_path):
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        assert ensure_pool_limit(instance, "openai", 2) == 2
        instance.event_log_storage.set_concurrency_slots("openai", 5)  # what the UI / CLI does
        assert ensure_pool_limit(instance, "openai", 2) == 5


def test_the_instance_default_limit_wins_for_a_new_pool(tmp_path):
    overrides = {"concurrency": {"pools": {"default_limit": 4}}}
    with DagsterInstance.local_temp(str(tmp_path), overrides=overrides) as instance:
        assert ensure_pool_limit(instance, "openai_compatible", 2) == 4


def test_an_instance_without_pool_storage_runs_unlimited():
    with DagsterInstance.ephemeral() as instance:
        assert ensure_pool_limit(instance, "openai", 2) is None


def _slot_asset(
    spans: list, pools: list, hold_seconds: float, fail: bool = False, barrier: threading.Barrier | None = None
):
    @asset
    def talks_to_provider(context: AssetExecutionContext) -> None:
        if barrier is not None:
            barrier.wait(timeout=60)  # every run claims at the same moment, however long its start took
        with pool_slots(context, pools, initial_limit=3, poll_seconds=0.05) as waited:
            begin = time.monotonic()
            time.sleep(hold_seconds)
            spans.append((begin, time.monotonic(), waited))
            if fail:
                raise RuntimeError("the provider call failed")

    return talks_to_provider


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_slots_serialize_runs_and_are_freed(tmp_path):
    spans: list = []
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        instance.event_log_storage.set_concurrency_slots("openai", 1)
        node = _slot_asset(spans, ["openai", None, "openai"], hold_seconds=0.5, barrier=threading.Barrier(3))
        results = []
        threads = [
            threading.Thread(
                target=lambda: results.append(materialize([node], instance=instance, raise_on_error=False).success)
            )
            for _ in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert results == [True, True, True]
        spans.sort()
        for (_, end, _), (begin, _, _) in zip(spans, spans[1:]):
            assert begin >= end, "two runs held the single slot of pool 'openai' at once"
        # two of them waited for a hold (0.5 s) each: the wait each run reports grows by about a hold from one run
        # to the next (not "the first waited under 0.3 s": on a loaded machine the first claim alone took 1 s)
        waits = [w["openai"] for _, _, w in spans]
        assert all(later - earlier > 0.3 for earlier, later in zip(waits, waits[1:])), waits
        info = instance.event_log_storage.get_concurrency_info("openai")
        assert (info.slot_count, info.active_slot_count, info.pending_step_count) == (1, 0, 0)


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_a_failing_body_frees_its_slot(tmp_path):
    spans: list = []
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        instance.event_log_storage.set_concurrency_slots("openai", 1)
        assert not materialize(
            [_slot_asset(spans, ["openai"], 0.0, fail=True)], instance=instance, raise_on_error=False
        ).success
        info = instance.event_log_storage.get_concurrency_info("openai")
        assert (info.active_slot_count, info.pending_step_count) == (0, 0)
        assert materialize([_slot_asset(spans, ["openai"], 0.0)], instance=instance).success
        assert spans[-1][2]["openai"] < 0.3  # nothing held the slot any more


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_local_models_claim_nothing(tmp_path):
    spans: list = []
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        assert materialize([_slot_asset(spans, [provider_pool("local"), None], 0.0)], instance=instance).success
        assert spans[0][2] == {} and instance.event_log_storage.get_concurrency_keys() == set()


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_a_pool_limit_below_one_is_refused(tmp_path):
    with DagsterInstance.local_temp(str(tmp_path)) as instance:

        @asset
        def bad(context: AssetExecutionContext) -> None:
            with pool_slots(context, ["openai"], initial_limit=0):
                pass

        result = materialize([bad], instance=instance, raise_on_error=False)
        [failure] = [e for e in result.all_events if e.is_step_failure]
        error = failure.event_specific_data.error
        assert "pool_limit must be >= 1, got 0" in error.message + (error.cause.message if error.cause else "")


# One partition of chunk_collections in its own process, like a run launched by dagster dev.
MATERIALIZE = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    from dagster import DagsterInstance, materialize
    from chunkbench_core.benchmarks import Benchmark
    from chunkbench_core.settings import Settings
    from chunkbench_pipelines.benchmarks import benchmark_definitions
    from chunkbench_pipelines.resources import build_resources
    from chunkbench_pipelines.partitions import partition_key
    from chunkbench_pipelines.scope import Scope

    settings = Settings.from_environment()  # the code location's settings: its environment
    scope = Scope.of(Benchmark.of(settings))
    assets = benchmark_definitions(scope, settings).assets

    selection, strategy, model, go = scope.keys(*sys.argv[1].split(",")), sys.argv[2], sys.argv[3], sys.argv[4]
    Path(f"{go}.{strategy}").touch()
    while not Path(go).exists():
        time.sleep(0.005)
    key = partition_key(strategy, model)
    result = materialize(assets, selection=selection, partition_key=key, instance=DagsterInstance.get(),
                         resources=build_resources(settings), raise_on_error=False)
    waits = [m.metadata["pool_wait_seconds"].value
             for m in result.asset_materializations_for_node(scope.op("chunk_collections"))]
    print(json.dumps({"success": result.success, "pool_wait": waits}))
""")


def _corpus(root: Path) -> dict[str, str]:
    corpus, questions, dagster_home = root / "corpus", root / "questions", root / "dagster_home"
    for folder in (corpus, questions, dagster_home):
        folder.mkdir()
    for topic in ("rivers", "bridges", "mills"):
        (corpus / f"{topic}.md").write_text(
            f"# {topic.title()}\n\n"
            + "".join(f"Paragraph {i} about {topic}: stone, water and timber.\n\n" for i in range(12)),
            encoding="utf-8",
        )
    (dagster_home / "dagster.yaml").write_text(DAGSTER_YAML, encoding="utf-8")
    return {
        "CHUNKBENCH_HOME": str(root / "home"),
        "CHUNKBENCH_CORPUS": str(corpus),
        "CHUNKBENCH_QUESTIONS": str(questions),
        "DAGSTER_HOME": str(dagster_home),
    }


def _parse_here(env: dict[str, str]) -> None:
    """The documents parsed in this process, on the instance the runs share (what the two runs need first; no
    provider is called, so no process of its own is needed)."""
    from chunkbench_core.settings import Settings
    from chunkbench_pipelines.partitions import runnable_corpus_models
    from chunkbench_pipelines.resources import build_resources
    from tests.pipelines.support.partitions import benchmark_graph

    settings = Settings.load(env)
    graph = benchmark_graph(settings, runnable_corpus_models(settings))
    with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        assert graph.materialize(
            ["source_documents", "parsed_documents"], instance=instance, resources=build_resources(settings)
        ).success


def _run(env: dict[str, str], selection: str, strategy: str, model: str, go: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", MATERIALIZE, selection, strategy, model, str(go)],
        cwd=PROJECT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.parametrize("limit", [1, 2])
def test_partitions_of_a_remote_model_respect_the_provider_pool(tmp_path, limit, monkeypatch):
    import os

    proxy = FaultProxy(dimension=64)
    try:
        models = tmp_path / "models.toml"
        models.write_text(
            textwrap.dedent(f"""
            [[models]]
            id = "remote-test"
            provider = "openai_compatible"
            model_name = "fake-embedder"
            dimension = 64
            max_input_tokens = 512
            base_url = "{proxy.base_url}"
            default_semantic_threshold = 0.5
        """),
            encoding="utf-8",
        )
        env = {
            **os.environ,
            **_corpus(tmp_path),
            "CHUNKBENCH_MODELS": str(models),
            "CHUNKBENCH_PROVIDER_POOL_LIMIT": str(limit),
        }
        for name in ("OPENAI_API_KEY", "QDRANT_URL", "CHUNKBENCH_OPENAI_COMPATIBLE_URL", "CHUNKBENCH_LLM_MODEL"):
            env.pop(name, None)
        go = tmp_path / "go"
        _parse_here(env)

        # a request waits for the other run's request: the two runs overlap for sure unless the
        # pool keeps them apart (with limit 1 each request then gives up waiting after 4 s: the runs start together,
        # so without the pool the other run's first request comes well within that)
        proxy.script()
        proxy.gather = (2, 4.0 if limit == 1 else 120.0)
        # limit 1: every request waits for a partner that must never come; limit 2: once two were answered at once
        # (what the test checks), the others need not wait
        proxy.gather_once = limit > 1
        strategies = ("fixed_size", "contextual_retrieval")  # different texts: no shared cache hits
        runs = {s: _run(env, "chunk_collections", s, "remote-test", go) for s in strategies}
        deadline = time.monotonic() + 120
        while not all(Path(f"{go}.{s}").exists() for s in strategies):
            assert time.monotonic() < deadline, "the runs never got ready"
            time.sleep(0.01)
        go.touch()
        results = {}
        for strategy, process in runs.items():
            out, err = process.communicate(timeout=300)
            assert process.returncode == 0, err
            results[strategy] = json.loads(out.splitlines()[-1])
            assert results[strategy]["success"], err
        assert proxy.max_in_flight == limit
        waits = sorted(r["pool_wait"][0]["openai_compatible"] for r in results.values())
        if limit == 1:
            assert waits[1] > 1.0  # the second run waited for the first one's slot (held 4 s a request)
        with DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
            info = instance.event_log_storage.get_concurrency_info("openai_compatible")
            assert (info.slot_count, info.active_slot_count, info.pending_step_count) == (limit, 0, 0)
    finally:
        proxy.stop()
