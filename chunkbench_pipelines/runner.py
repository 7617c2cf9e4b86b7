"""Materialize the whole graph in-process: what ``chunkbench run`` and ``make demo`` do."""

from __future__ import annotations

from typing import Sequence, TextIO

from dagster import DagsterInstance, materialize

from chunkbench_core import settings
from chunkbench_core.chunking import STRATEGY_NAMES
from chunkbench_core.embedding import model_registry
from chunkbench_core.errors import ChunkbenchError
from chunkbench_core.reporting.leaderboard import format_table
from chunkbench_core.storage.results_db import ResultsDB

from .assets import ALL_ASSETS
from .definitions import build_resources
from .partitions import partition_key


def failure_reason(event) -> str:
    """A step failure's reason: the Failure's own description (e.g. the failed check's problems), else the error."""
    data = event.step_failure_data
    if data.user_failure_data is not None and data.user_failure_data.description:
        return data.user_failure_data.description.strip()
    return str(data.error.message).strip() if data.error is not None else "failed"


def run_everything(strategies: Sequence[str] | None = None, corpus_models: Sequence[str] | None = None,
                   out: TextIO | None = None, instance: DagsterInstance | None = None,
                   log_level: str = "WARNING", run_settings: dict[str, dict] | None = None) -> int:
    """Documents once, then every strategy x available corpus model, then leaderboard and report.

    A failing partition is reported and the others go on. Returns 0 when everything
    succeeded, 1 otherwise (the leaderboard is printed either way). ``run_settings``: the
    ``parsing`` / ``chunking`` / ``experiment`` run config (``chunkbench run`` flags or --config).
    """
    given = run_settings or {}
    op_config = {"parsed_documents": given.get("parsing") or {}, "chunk_collections": given.get("chunking") or {},
                 "experiment_results": {**(given.get("chunking") or {}), **(given.get("experiment") or {})}}
    def say(text: str) -> None:
        if out is not None:
            print(text, file=out, flush=True)

    instance = instance or DagsterInstance.get()
    resources = build_resources()
    embeddings = build_resources(resolve=True)["embeddings"]  # availability is decided outside a run
    failures: list[str] = []

    def step(selection: list[str], key=None, label: str = "") -> bool:
        result = materialize(ALL_ASSETS, selection=selection, partition_key=key, instance=instance,
                             resources=resources, raise_on_error=False, tags={"chunkbench/trigger": "cli"},
                             run_config={"loggers": {"console": {"config": {"log_level": log_level}}},
                                         "ops": {name: {"config": op_config[name]} for name in selection
                                                 if op_config.get(name)}})
        if not result.success:
            errors = [failure_reason(e) for e in result.all_events if e.is_step_failure]
            failures.append(f"{label or ','.join(selection)}: {errors[-1] if errors else 'failed'}")
            say(f"  FAILED {label or ','.join(selection)}: {errors[-1] if errors else 'failed'}")
        return result.success

    say("parsing documents ...")
    if not step(["source_documents", "parsed_documents"]):
        say("\n".join(failures))
        return 1
    models = list(corpus_models or model_registry())
    for model in models:
        try:
            ok, reason = embeddings.availability(model)  # type: ignore[attr-defined]
        except ChunkbenchError as exc:
            ok, reason = False, str(exc)
        if not ok:
            if corpus_models:
                failures.append(f"{model}: {reason}")
            say(f"skipping corpus model {model}: {reason}")
            continue
        for strategy in strategies or STRATEGY_NAMES:
            say(f"chunking, embedding and evaluating: {strategy} x {model} ...")
            step(["chunk_collections", "experiment_results"], partition_key(strategy, model), f"{strategy}|{model}")
    say("building leaderboard and report ...")
    step(["leaderboard", "benchmark_report"])
    results = ResultsDB(settings.results_dir())
    say("")
    say(format_table(results.leaderboard()))
    say("")
    say(f"DuckDB:  {results.database_path}  (try: SELECT * FROM leaderboard)")
    reports = settings.results_dir() / "reports"
    say(f"Report:  {reports / 'benchmark_report.html'}")
    say(f"         {reports / 'technical_report.html'} (retrieval inspector), {reports / 'decision_board.html'}")
    if failures:
        say("\nfailures:\n" + "\n".join(f"- {f}" for f in failures))
        return 1
    return 0
