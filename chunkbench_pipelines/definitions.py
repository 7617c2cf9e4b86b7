"""The Dagster code location: ``dagster dev -w workspace.yaml`` (and ``dg``) load ``defs`` from here.

The settings are built once, here, from the environment the code location was started with
(``chunkbench_core.settings.Settings.load``); the partitions, the resources and the sensors' start
status are made from that object, so ``chunkbench settings`` shows exactly what the code location uses.

Every benchmark is its own part of the graph (scope.py): the benchmarks registered in the results root
(``chunkbench run`` registers the benchmark it runs) plus the one the settings name, each with its assets
under its key prefix, its jobs, sensors, schedules and sweep jobs. A benchmark registered after the code
location loaded appears after a reload (the UI's Deployment page, "Reload").
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

from dagster import AssetsDefinition, AssetSpec, Definitions, in_process_executor

from chunkbench_core.benchmarks import Benchmark, find_benchmarks
from chunkbench_core.settings import Settings

from .assets import build_assets, external_assets
from .jobs import BenchmarkJobs, build_jobs
from .partitions import runnable_corpus_models, strategy_by_model
from .resources import build_resources
from .schedules import build_schedules
from .scope import Scope
from .sensors import build_sensors
from .sweeps import build_sweep_jobs


@dataclass
class BenchmarkDefinitions:
    """One benchmark's part of the code location."""

    scope: Scope
    assets: list[AssetsDefinition | AssetSpec]
    jobs: BenchmarkJobs
    sweep_jobs: list
    sensors: list
    schedules: list

    def all_jobs(self) -> list:
        return [*self.jobs.all(), *self.sweep_jobs]


def benchmark_definitions(benchmark: Benchmark, settings: Settings, partitions=None,
                          taken: tuple[str, ...] = ()) -> BenchmarkDefinitions:
    """The assets, jobs, sweep jobs, sensors and schedules of ``benchmark`` (partitions: strategy x the corpus
    models runnable with ``settings``, unless given)."""
    scope = Scope.of(benchmark, taken)
    partitions = partitions or strategy_by_model(runnable_corpus_models(settings))
    jobs = build_jobs(scope)
    sweep_jobs = build_sweep_jobs(partitions, scope)
    return BenchmarkDefinitions(scope, [*build_assets(partitions, scope), *external_assets(scope)], jobs, sweep_jobs,
                                build_sensors(settings.automation, scope, jobs.parse_documents),
                                build_schedules(scope, jobs, sweep_jobs))


def every_benchmark(settings: Settings) -> list[BenchmarkDefinitions]:
    """Each benchmark's definitions (see :func:`chunkbench_core.benchmarks.find_benchmarks`); a benchmark record
    that cannot be read is left out with a warning in the code location's log."""
    benchmarks, problems = find_benchmarks(settings)
    for problem in problems:
        warnings.warn(problem, stacklevel=2)
    partitions = strategy_by_model(runnable_corpus_models(settings))
    out: list[BenchmarkDefinitions] = []
    for benchmark in benchmarks:
        out.append(benchmark_definitions(benchmark, settings, partitions, tuple(d.scope.prefix for d in out)))
    return out


def build_definitions(settings: Settings) -> Definitions:
    """The code location: every benchmark's assets over strategy x the corpus models runnable with ``settings``,
    its jobs, sensors and schedules, and the resources.

    Runs execute in one process: the steps of a partition are sequential anyway, and one process
    per run (not per step) loads the embedding model once. Parallelism comes from running
    several partitions at once (the run queue, backfills).
    """
    parts = every_benchmark(settings)
    return Definitions(assets=[a for p in parts for a in p.assets], jobs=[j for p in parts for j in p.all_jobs()],
                       sensors=[s for p in parts for s in p.sensors], schedules=[s for p in parts for s in p.schedules],
                       resources=build_resources(settings), executor=in_process_executor)


# the edge: the environment this code location was started with, read once
SETTINGS = Settings.load(os.environ)
defs = build_definitions(SETTINGS)

__all__ = ["SETTINGS", "benchmark_definitions", "build_definitions", "build_resources", "defs", "every_benchmark"]
