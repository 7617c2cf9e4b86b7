"""The Dagster code location: ``dagster dev -w workspace.yaml`` (and ``dg``) load ``defs`` from here.

The settings are built once, here, from the environment the code location was started with
(``chunkbench_core.settings.Settings.load``); the partitions, the resources and the sensors' start
status are made from that object, so ``chunkbench settings`` shows exactly what the code location uses.
"""

from __future__ import annotations

import os

from dagster import Definitions, in_process_executor

from chunkbench_core.settings import Settings

from .assets import EXTERNAL_ASSETS, build_assets
from .jobs import ALL_JOBS
from .partitions import runnable_corpus_models, strategy_by_model
from .resources import build_resources
from .schedules import ALL_SCHEDULES
from .sensors import build_sensors


def build_definitions(settings: Settings) -> Definitions:
    """The code location: every asset over strategy x the corpus models runnable with ``settings``, the jobs,
    sensors and schedules, and the resources.

    Runs execute in one process: the steps of a partition are sequential anyway, and one process
    per run (not per step) loads the embedding model once. Parallelism comes from running
    several partitions at once (the run queue, backfills). With a Celery broker set
    (CHUNKBENCH_CELERY_BROKER, the distributed profile) each step goes to a Celery worker instead.
    """
    partitions = strategy_by_model(runnable_corpus_models(settings))
    return Definitions(assets=[*build_assets(partitions), *EXTERNAL_ASSETS], jobs=ALL_JOBS,
                       sensors=build_sensors(settings.automation), schedules=ALL_SCHEDULES,
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

__all__ = ["SETTINGS", "build_definitions", "build_resources", "defs", "executor_for"]
