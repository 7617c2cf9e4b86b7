"""The benchmark factory: one benchmark's assets, jobs, sweep jobs, sensors and schedules (see scope.py), as one
``Definitions``.

The code location (definitions.py) merges every benchmark's; ``chunkbench run`` and ``chunkbench sweep`` build the
one they run, with the same keys and job names, so their runs are listed under that benchmark in the UI.
"""

from __future__ import annotations

import warnings

from dagster import Definitions, JobDefinition, MultiPartitionsDefinition

from chunkbench_core.benchmarks import Benchmark, find_benchmarks
from chunkbench_core.settings import Settings

from .assets import build_assets, external_assets
from .jobs import build_jobs
from .partitions import runnable_corpus_models, strategy_by_model
from .resources import build_resources
from .schedules import build_schedules
from .scope import Scope
from .sensors import build_sensors
from .sweeps import build_sweep_jobs


def benchmark_definitions(
    scope: Scope, settings: Settings, partitions: MultiPartitionsDefinition | None = None
) -> Definitions:
    """The assets, jobs, sweep jobs, sensors and schedules of the benchmark of ``scope`` (partitions: strategy x the
    corpus models runnable with ``settings``, unless given); no resources: the caller binds them."""
    partitions = partitions or strategy_by_model(runnable_corpus_models(settings))
    jobs = build_jobs(scope)
    sweep_jobs = build_sweep_jobs(partitions, scope)
    return Definitions(
        assets=[*build_assets(partitions, scope), *external_assets(scope)],
        jobs=[*jobs.all(), *sweep_jobs],
        sensors=build_sensors(settings.automation, scope, jobs.parse_documents),
        schedules=build_schedules(scope, jobs, sweep_jobs),
    )


def benchmark_scopes(settings: Settings) -> list[Scope]:
    """The scope of each benchmark (see :func:`chunkbench_core.benchmarks.find_benchmarks`), each with a Dagster name
    of its own; a benchmark record that cannot be read is left out with a warning in the code location's log."""
    benchmarks, problems = find_benchmarks(settings)
    for problem in problems:
        warnings.warn(problem, stacklevel=2)
    scopes: list[Scope] = []
    for benchmark in benchmarks:
        scopes.append(Scope.of(benchmark, [s.prefix for s in scopes]))
    return scopes


def every_benchmark(settings: Settings) -> Definitions:
    """Every benchmark's definitions, merged (one partitions definition shared by all)."""
    partitions = strategy_by_model(runnable_corpus_models(settings))
    return Definitions.merge(
        *[benchmark_definitions(scope, settings, partitions) for scope in benchmark_scopes(settings)]
    )


def benchmark_job(settings: Settings, partitions: MultiPartitionsDefinition, job: str) -> tuple[Scope, JobDefinition]:
    """The scope of the benchmark of ``settings`` and its job named ``job`` (e.g. ``benchmark_everything``,
    ``neighbor_sweep``), resolved with the resources of ``settings`` as the code location makes them (a secret
    from the environment stays an EnvVar in the runs)."""
    scope = Scope.of(Benchmark.of(settings))
    definitions = Definitions.merge(
        benchmark_definitions(scope, settings, partitions), Definitions(resources=build_resources(settings))
    )
    return scope, definitions.resolve_job_def(scope.name(job))
