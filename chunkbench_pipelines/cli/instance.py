"""The Dagster instance the command line uses: the user's DAGSTER_HOME, or chunkbench's own in CHUNKBENCH_HOME.

Commands open it explicitly (:func:`open_instance`); nothing is passed through the environment. Dagster is
imported only by the commands that use an instance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chunkbench_core.settings import Settings

from . import session

DAGSTER_YAML = """\
# written by chunkbench for its own DAGSTER_HOME
nux:
  enabled: false
telemetry:
  enabled: false
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
concurrency:
  runs:
    # three runs at once; never two runs of the same partition (they share a collection)
    max_concurrent_runs: 3
    tag_concurrency_limits:
      - key: "dagster/partition"
        limit: 1
        value:
          applyLimitPerUniqueValue: true
# Remote providers are limited by Dagster pools named after them ("openai", "openai_compatible"),
# claimed by the partition that calls them; the monitoring daemon frees slots a crashed run held.
run_monitoring:
  enabled: true
  free_slots_after_run_end_seconds: 60
"""


def ensure_dagster_home(settings: Settings | None = None) -> Path:
    """The Dagster home of ``settings`` (default: this invocation's): the user's DAGSTER_HOME, or one inside
    CHUNKBENCH_HOME with chunkbench's dagster.yaml. Either way the provider pools are created with their starting
    limit (concurrency.py)."""
    settings = settings or session.current()
    path = settings.dagster_home_dir
    if settings.dagster_home is None:
        path.mkdir(parents=True, exist_ok=True)
        config = path / "dagster.yaml"
        if not config.exists():
            config.write_text(DAGSTER_YAML, encoding="utf-8")
    instance = open_instance(settings, prepare=False)
    try:
        from chunkbench_pipelines.concurrency import ensure_provider_pools

        ensure_provider_pools(instance, settings.pool_limit)
    finally:
        # not ``with``: Dagster 1.13's instance context leaves its state storage set after the instance is gone
        instance.dispose()
    return path


def open_instance(settings: Settings, prepare: bool = True) -> Any:
    """The Dagster instance of ``settings`` (prepared first: its home and the provider pools). Dispose of it."""
    if prepare:
        ensure_dagster_home(settings)
    from dagster import DagsterInstance

    return DagsterInstance.from_config(str(settings.dagster_home_dir))


def resources(settings: Settings) -> dict[str, Any]:
    """The resources the Dagster definitions use, with their values (outside Dagster nothing resolves an EnvVar)."""
    from chunkbench_pipelines.resources import build_resources

    return build_resources(settings, resolve=True)
