"""The Dagster instance the command line uses: the user's DAGSTER_HOME, or chunkbench's own in CHUNKBENCH_HOME.

Commands open it explicitly (:func:`open_instance`); nothing is passed through the environment. Dagster is
imported only by the commands that use an instance.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from chunkbench_core.settings import Settings
from chunkbench_core.storage.space import guard_writes

from . import session

if TYPE_CHECKING:  # Dagster is imported only by the commands that use it
    from chunkbench_pipelines.resources import Resources

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


def _tell(text: str) -> None:
    """What a process waiting for another one's setup prints (once, after it has waited 2 s)."""
    print(text, file=sys.stderr, flush=True)


@contextmanager
def setting_up(settings: Settings) -> Iterator[None]:
    """Hold the setup lock of ``settings``' home (and of the user's DAGSTER_HOME, when one is set): one process at
    a time creates or migrates the Dagster instance, the results folder and the caches. The others wait, and say
    so after 2 s; the kernel frees the lock of a process that dies, so nothing stale is left behind."""
    from chunkbench_core.storage.locks import setup_lock

    with setup_lock(settings.home, "its Dagster instance, results folder and caches", notify=_tell):
        if settings.dagster_home is None:
            yield
            return
        with setup_lock(settings.dagster_home_dir, "the Dagster instance", notify=_tell):
            yield


def ensure_dagster_home(settings: Settings | None = None) -> Path:
    """The Dagster home of ``settings`` (default: this invocation's): the user's DAGSTER_HOME, or one inside
    CHUNKBENCH_HOME with chunkbench's dagster.yaml. Either way the provider pools are created with their starting
    limit (concurrency.py). Done under the setup lock (:func:`setting_up`)."""
    settings = settings or session.current()
    with setting_up(settings):
        # not ``with``: Dagster 1.13's instance context leaves its state storage set after the instance is gone
        _prepared_instance(settings).dispose()
    return settings.dagster_home_dir


def _prepared_instance(settings: Settings) -> Any:
    """The Dagster instance of ``settings``, its home and provider pools made first (call under the setup lock;
    dispose of it). Opening an instance checks each of its databases' schema version (about 0.6 s of CPU), so a
    command that goes on to use it keeps this one."""
    path = settings.dagster_home_dir
    if settings.dagster_home is None:
        path.mkdir(parents=True, exist_ok=True)
        config = path / "dagster.yaml"
        if not config.exists():
            with guard_writes(config, "the Dagster instance's configuration"):
                tmp = config.with_name(f".{config.name}.{os.getpid()}.tmp")
                tmp.write_text(DAGSTER_YAML, encoding="utf-8")
                os.replace(tmp, config)  # a process that reads it never sees half of it
    instance = _instance(settings)  # creates (or stamps) its databases: under the lock, once
    try:
        from chunkbench_pipelines.concurrency import ensure_provider_pools

        ensure_provider_pools(instance, settings.pool_limit)
    except BaseException:
        instance.dispose()
        raise
    return instance


def _instance(settings: Settings) -> Any:
    from dagster import DagsterInstance

    return DagsterInstance.from_config(str(settings.dagster_home_dir))


def prepare_state(settings: Settings) -> Any:
    """What a run needs before it starts, made once under the setup lock: the Dagster instance and its pools, the
    results folder's schema files and views file, and the caches' databases (created empty). A second process
    waits for the first, then finds them made. Returns the Dagster instance (dispose of it)."""
    from chunkbench_core.storage.context_cache import ContextCache, default_context_cache_path
    from chunkbench_core.storage.embedding_cache import EmbeddingCache, default_cache_path
    from chunkbench_core.storage.results_db import ResultsDB

    with setting_up(settings):
        instance = _prepared_instance(settings)
        try:
            ResultsDB(settings.results_dir).ensure_database()
            EmbeddingCache(default_cache_path(settings.home)).close()
            ContextCache(default_context_cache_path(settings.home)).close()
        except BaseException:
            instance.dispose()
            raise
    return instance


def open_instance(settings: Settings, prepare: bool = True) -> Any:
    """The Dagster instance of ``settings`` (prepared first: its home and the provider pools). Dispose of it."""
    if prepare:
        with setting_up(settings):
            return _prepared_instance(settings)
    return _instance(settings)


def resources(settings: Settings) -> Resources:
    """The resources the Dagster definitions use, with their values (outside Dagster nothing resolves an EnvVar)."""
    from chunkbench_pipelines.resources import build_resources

    return build_resources(settings, resolve=True)
