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

from dagster import Definitions, in_process_executor

from chunkbench_core.settings import Settings

from .benchmarks import benchmark_definitions, every_benchmark
from .resources import build_resources


def build_definitions(settings: Settings) -> Definitions:
    """The code location: every benchmark's assets over strategy x the corpus models runnable with ``settings``,
    its jobs, sensors and schedules, and the resources.

    Runs execute in one process: the steps of a partition are sequential anyway, and one process
    per run (not per step) loads the embedding model once. Parallelism comes from running
    several partitions at once (the run queue, backfills). With a Celery broker set
    (CHUNKBENCH_CELERY_BROKER, the distributed profile) each step goes to a Celery worker instead.
    """
    parts = every_benchmark(settings)
    return Definitions(assets=[a for p in parts for a in p.assets], jobs=[j for p in parts for j in p.all_jobs()],
                       sensors=[s for p in parts for s in p.sensors], schedules=[s for p in parts for s in p.schedules],
                       resources=build_resources(settings), executor=executor_for(settings))


def executor_for(settings: Settings):
    """In the run's own process; on Celery workers when the settings name a broker."""
    if settings.celery_broker:
        from .celery_app import celery_executor_def

        return celery_executor_def(settings)
    return in_process_executor


# the edge: the environment this code location was started with, read once
SETTINGS = Settings.load(os.environ)
defs = build_definitions(SETTINGS)

__all__ = ["SETTINGS", "benchmark_definitions", "build_definitions", "build_resources", "defs", "every_benchmark",
           "executor_for"]
