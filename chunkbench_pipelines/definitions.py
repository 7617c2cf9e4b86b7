"""The Dagster code location: ``dagster dev -w workspace.yaml`` (and ``dg``) load ``defs`` from here.

``defs`` is a function Dagster calls when it loads the code location (``@dg.definitions``): importing this module
reads nothing and builds nothing. The settings are built then, once, from the environment the code location was
started with (``chunkbench_core.settings.Settings.load``); the partitions, the resources and the sensors' start
status are made from that object, so ``chunkbench settings`` shows exactly what the code location uses.

Every benchmark is its own part of the graph (scope.py, benchmarks.py): the benchmarks registered in the results
root (``chunkbench run`` registers the benchmark it runs) plus the one the settings name, each with its assets
under its key prefix, its jobs, sensors, schedules and sweep jobs. A benchmark registered after the code location
loaded appears after a reload: ``chunkbench ui`` reloads it when a benchmark record appears (cli_ui.py); under
another ``dagster dev``, the UI's Deployment page, "Reload".
"""

from __future__ import annotations

import dagster as dg

from chunkbench_core.settings import Settings

from .benchmarks import every_benchmark
from .resources import build_resources


def build_definitions(settings: Settings) -> dg.Definitions:
    """The code location: every benchmark's assets over strategy x the corpus models runnable with ``settings``,
    its jobs, sensors and schedules, and the resources.

    Runs execute in one process: the steps of a partition are sequential anyway, and one process
    per run (not per step) loads the embedding model once. Parallelism comes from running
    several partitions at once (the run queue, backfills). With a Celery broker set
    (CHUNKBENCH_CELERY_BROKER, the distributed profile) each step goes to a Celery worker instead.
    """
    return dg.Definitions.merge(
        every_benchmark(settings), dg.Definitions(resources=build_resources(settings), executor=executor_for(settings))
    )


def executor_for(settings: Settings):
    """In the run's own process; on Celery workers when the settings name a broker."""
    if settings.celery_broker:
        from .celery_app import celery_executor_def

        return celery_executor_def(settings)
    return dg.in_process_executor


@dg.definitions
def defs() -> dg.Definitions:
    """What Dagster loads: the definitions of the settings in force, read from the environment when it asks."""
    return build_definitions(Settings.from_environment())


__all__ = ["build_definitions", "build_resources", "defs", "executor_for"]
