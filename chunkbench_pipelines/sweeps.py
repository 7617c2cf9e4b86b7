"""Sweeps on demand: one Dagster job per sweep and benchmark (``<benchmark>__neighbor_sweep``,
``<benchmark>__chunk_size_sweep``), launched from the UI's launchpad (its run config: the levels or sizes, the
strategies, the corpus models), by ``chunkbench sweep`` and by the weekly schedules.

One run does the whole sweep: the ``sweep`` op runs every step (a strategy × corpus model at one level or size:
its collection built when missing or stale, then one experiment run), logging each as a materialization of the
benchmark's ``chunk_collections`` / ``experiment_results`` partition; the ``reports`` op then compares the
benchmark's runs and rewrites its reports, logged as materializations of its ``leaderboard`` and
``benchmark_report``. The results are in ``leaderboard_by_setting`` and the reports' sweep tables.

The steps are the bodies of the assets (assets/chunks.py, assets/experiments.py), so a sweep step and a
materialization of the partition with the same run config store the same rows.
"""

from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

from dagster import (
    AssetMaterialization,
    Config,
    In,
    JobDefinition,
    MultiPartitionsDefinition,
    Nothing,
    OpExecutionContext,
    Out,
    job,
    op,
)
from pydantic import Field

from chunkbench_core.configuration import default_corpus_model
from chunkbench_core.errors import ChunkbenchError, ConfigError
from chunkbench_core.provenance import check_collection_current
from chunkbench_core.stages.collections import read_collection
from chunkbench_core.stages.spec import resolve_collection
from chunkbench_core.sweeps import (
    NEIGHBOR_LEVELS,
    SWEEP_SIZES,
    SweepStep,
    check_strategies,
    format_levels,
    neighbor_steps,
    parse_levels,
    parse_sizes,
    size_steps,
)

from .assets.chunks import build_one_collection
from .assets.experiments import evaluate_one
from .assets.reports import compare_and_describe, write_benchmark_reports
from .config import ReportConfig, chunker_config, experiment_config
from .failures import fail_fast
from .partitions import partition_key
from .resources import (
    STEP_RESOURCE_KEYS,
    DuckDBResource,
    EmbeddingResource,
    RankingResource,
    StepResources,
    WorkspaceResource,
    spec_context,
)
from .scope import Scope

NEIGHBOR_SWEEP = "neighbor_sweep"
CHUNK_SIZE_SWEEP = "chunk_size_sweep"
SWEEP_TAG = "chunkbench/sweep"
#: how each sweep op's description starts (a configuration named as in every label: strategy × corpus model)
SWEEP_EACH = "Runs every strategy × corpus model"


class NeighborSweepConfig(Config):
    """Neighbor expansion levels, each one experiment run of every strategy × corpus model, against the default
    collection (built first when missing or built from an older parsed corpus)."""

    levels: list[str] = Field(
        default=[f"{p}:{n}" for p, n in NEIGHBOR_LEVELS],
        description="prev:next, chunks added before and after each hit (each 0..5)",
    )
    strategies: list[str] = Field(
        default=[],
        description="empty: the strategies whose chunks are windows of running "
        "text (neighbor expansion applies to them)",
    )
    corpus_models: list[str] = Field(default=[], description="empty: the default corpus model")


class ChunkSizeSweepConfig(Config):
    """Chunk sizes, each its own collection and experiment run of every strategy × corpus model (overlap one eighth
    of the size; sizes above a model's window left out)."""

    sizes: list[int] = Field(default=list(SWEEP_SIZES), description="chunk sizes in cl100k tokens (each 16..8192)")
    strategies: list[str] = Field(default=[], description="empty: the sweepable strategies (fixed-size windows)")
    corpus_models: list[str] = Field(default=[], description="empty: the default corpus model")


class _SweepConfig(Protocol):
    """What every sweep's config has besides its levels or sizes."""

    corpus_models: list[str]


def _models(given: list[str], embeddings: EmbeddingResource, scope: Scope, workspace: WorkspaceResource) -> list[str]:
    """The corpus models to sweep (default: the benchmark's default corpus model in force, read when the run starts:
    ``chunkbench defaults set``, the environment, else the registry's); an unknown or unavailable one fails at
    once."""
    try:
        models = list(dict.fromkeys(given)) or [default_corpus_model(scope.workspace(workspace).settings())]
    except ChunkbenchError as exc:
        raise fail_fast(str(exc)) from exc
    for model in models:
        try:
            ok, reason = embeddings.availability(model)
        except ChunkbenchError as exc:
            ok, reason = False, str(exc)
        if not ok:
            raise fail_fast(f"corpus model {model}: {reason}")
    return models


@dataclass
class _Runner:
    """Runs sweep steps with the resources of one op invocation, logging each as its partition's materialization."""

    context: OpExecutionContext
    scope: Scope
    resources: StepResources

    def current(self, config, step: SweepStep) -> bool:
        """Whether the step's collection exists and was built from the current parsed corpus with these settings."""
        workspace = self.scope.workspace(self.resources.workspace)
        results = self.scope.results(self.resources.duckdb)
        spec = resolve_collection(
            config.request(step.strategy, step.corpus_model),
            spec_context(workspace, results, self.resources.embeddings),
        )
        try:
            check_collection_current(
                read_collection(results, spec),
                partition="",
                variant=spec.variant,
                collection=spec.collection,
                corpus_fingerprint=workspace.parsed_store().manifest_fingerprint(),
                settings=spec.settings,
            )
        except ConfigError:
            return False
        return True

    def build(self, step: SweepStep) -> None:
        config = chunker_config()(**step.chunking)
        if self.current(config, step):
            return
        self.context.log.info(f"building the collection of {step.label}")
        built = build_one_collection(self.context, self.scope, step.strategy, step.corpus_model, config, self.resources)
        self._log("chunk_collections", step, built.result)
        if built.problems:
            raise fail_fast(f"{step.label}: " + "; ".join(built.problems))

    def evaluate(self, step: SweepStep, expansion_strategies: Optional[list[str]] = None) -> None:
        expansion = {} if expansion_strategies is None else {"expansion_strategies": expansion_strategies}
        config = experiment_config()(
            **step.chunking, neighbor_prev=step.neighbor_prev, neighbor_next=step.neighbor_next, **expansion
        )
        self.context.log.info(f"evaluating {step.label}")
        evaluated = evaluate_one(
            self.context,
            self.scope,
            step.strategy,
            step.corpus_model,
            config,
            self.resources,
            experiment_run_id=f"{self.context.run.run_id}-{step.slug}",
        )
        self._log("experiment_results", step, evaluated.result)
        if evaluated.problem:
            raise fail_fast(f"{step.label}: {evaluated.problem}")

    def _log(self, asset: str, step: SweepStep, result) -> None:
        self.context.log_event(
            AssetMaterialization(
                asset_key=self.scope.key(asset),
                partition=str(partition_key(step.strategy, step.corpus_model)),
                metadata=dict(result.metadata or {}),
                description=f"sweep step: {step.label}",
            )
        )


def _needs_parsed_corpus(scope: Scope, workspace: WorkspaceResource) -> None:
    if not scope.workspace(workspace).parsed_store().manifest_fingerprint():
        raise fail_fast(
            "no parsed documents yet: run the benchmark first (chunkbench run, or materialize "
            "parsed_documents), then the sweep"
        )


def build_sweep_jobs(partitions_def: MultiPartitionsDefinition, scope: Scope) -> list[JobDefinition]:
    """The neighbor sweep and chunk-size sweep jobs of one benchmark."""
    of = scope.of_benchmark("")
    report_config = {"experiment_run_id": "", "batch": ""}

    def reports_op(name: str) -> Callable:
        @op(
            name=scope.name(f"{name}_reports"),
            ins={"after": In(Nothing)},
            tags=scope.tags(),
            description="Compares the benchmark's runs and rewrites its reports (as the leaderboard and "
            "benchmark_report assets do).",
        )
        def sweep_reports(
            context: OpExecutionContext, workspace: WorkspaceResource, duckdb: DuckDBResource, ranking: RankingResource
        ) -> None:
            results = scope.results(duckdb)
            board = compare_and_describe(context, scope, results, ranking, partitions_def)
            context.log_event(
                AssetMaterialization(
                    asset_key=scope.key("leaderboard"),
                    metadata=board,
                    description=f"after the {name.replace('_', ' ')}",
                )
            )
            links = write_benchmark_reports(
                context, ReportConfig(**report_config), scope.workspace(workspace), results, ranking
            )
            context.log_event(
                AssetMaterialization(
                    asset_key=scope.key("benchmark_report"),
                    metadata={**scope.metadata(), **links},
                    description=f"after the {name.replace('_', ' ')}",
                )
            )

        return sweep_reports

    def sweep_op(
        name: str, what: str, config_type: type, check: Callable[[Any], tuple], run: Callable[..., None]
    ) -> Callable:
        """One sweep op: ``check(config)`` reads its settings (a bad value fails at once, before anything else),
        the parsed corpus is required, then ``run(context, checked, runner, models)`` runs its steps."""

        @op(
            name=scope.name(name),
            out=Out(Nothing),
            tags=scope.tags(),
            description=f"{SWEEP_EACH} {what}.",
            required_resource_keys=STEP_RESOURCE_KEYS,
        )
        def sweep(context: OpExecutionContext, config: config_type) -> None:  # type: ignore[valid-type]  # Dagster reads the op's config class from this annotation, and each sweep has its own
            resources = StepResources.of(context)
            try:
                checked = check(config)
            except ConfigError as exc:
                raise fail_fast(str(exc)) from exc
            _needs_parsed_corpus(scope, resources.workspace)
            runner = _Runner(context, scope, resources)
            swept: _SweepConfig = config
            run(
                context, checked, runner, _models(swept.corpus_models, resources.embeddings, scope, resources.workspace)
            )

        return sweep

    def neighbors(context: OpExecutionContext, checked: tuple, runner: _Runner, models: list[str]) -> None:
        levels, strategies = checked
        steps = neighbor_steps(strategies, models, levels)
        context.log.info(f"neighbor sweep: {len(steps)} experiment runs (levels {format_levels(levels)})")
        for step in steps:
            if step.neighbor_prev == levels[0][0] and step.neighbor_next == levels[0][1]:
                runner.build(step)  # the default collection, once per strategy × model
            runner.evaluate(step, strategies)

    def chunk_sizes(context: OpExecutionContext, checked: tuple, runner: _Runner, models: list[str]) -> None:
        sizes, strategies = checked
        steps, skipped = size_steps(
            strategies, models, sizes, {m: runner.resources.embeddings.spec(m).max_input_tokens for m in models}
        )
        for line in skipped:
            context.log.warning(line)
        if not steps:
            raise fail_fast("no chunk size fits: " + "; ".join(skipped))
        context.log.info(f"chunk-size sweep: {len(steps)} collections and experiment runs")
        for step in steps:
            runner.build(step)
            runner.evaluate(step)

    sweep_neighbors = sweep_op(
        "sweep_neighbors",
        "at every neighbor level (one experiment run each)",
        NeighborSweepConfig,
        lambda c: (parse_levels(c.levels), check_strategies(c.strategies, "neighbor_expansion")),
        neighbors,
    )
    sweep_chunk_sizes = sweep_op(
        "sweep_chunk_sizes",
        "at every chunk size (one collection and experiment run each)",
        ChunkSizeSweepConfig,
        lambda c: (parse_sizes(c.sizes), check_strategies(c.strategies, "sweepable")),
        chunk_sizes,
    )

    neighbor_reports, size_reports = reports_op(NEIGHBOR_SWEEP), reports_op(CHUNK_SIZE_SWEEP)

    @job(
        name=scope.name(NEIGHBOR_SWEEP),
        tags={**scope.tags(), SWEEP_TAG: "neighbors"},
        description=of + "Neighbor expansion levels side by side (default 0:0 to 3:3), one experiment run per "
        "level; then the leaderboard and the reports. Results: leaderboard_by_setting.",
    )
    def neighbor_sweep_job():
        neighbor_reports(after=sweep_neighbors())

    @job(
        name=scope.name(CHUNK_SIZE_SWEEP),
        tags={**scope.tags(), SWEEP_TAG: "chunk_size"},
        description=of + "Chunk sizes side by side (default 128 to 1,024 tokens), each size its own collection "
        "and experiment run; then the leaderboard and the reports. Results: "
        "leaderboard_by_setting.",
    )
    def chunk_size_sweep_job():
        size_reports(after=sweep_chunk_sizes())

    return [neighbor_sweep_job, chunk_size_sweep_job]
