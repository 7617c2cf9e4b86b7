"""The benchmark factory: one benchmark's assets, jobs, sweep jobs, sensors and schedules (see scope.py).

The code location (definitions.py) builds every benchmark's; ``chunkbench run`` and ``chunkbench sweep`` build the
one they run, with the same keys and job names, so their runs are listed under that benchmark in the UI.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from dagster import AssetsDefinition, AssetSpec, Definitions, JobDefinition, MultiPartitionsDefinition

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


def benchmark_job(settings: Settings, partitions: MultiPartitionsDefinition, job: str) -> tuple[Scope, JobDefinition]:
    """The scope of the benchmark of ``settings`` and its job named ``job`` (e.g. ``benchmark_everything``,
    ``neighbor_sweep``), resolved with the resources of ``settings`` as the code location makes them (a secret
    from the environment stays an EnvVar in the runs)."""
    part = benchmark_definitions(Benchmark.of(settings), settings, partitions)
    definitions = Definitions(assets=part.assets, jobs=part.all_jobs(), resources=build_resources(settings))
    return part.scope, definitions.resolve_job_def(part.scope.name(job))
