"""Steps of runs on Celery workers: the distributed profile (deploy/README.md).

When ``CHUNKBENCH_CELERY_BROKER`` is set (a ``redis://`` URL), the code location's executor is
dagster-celery's: each step of a run (``chunk_collections`` of a partition, then its
``experiment_results``) is a Celery task that any worker listening on the broker may take. A worker is

    celery -A chunkbench_pipelines.celery_app worker -Q dagster --concurrency 1 -n NAME@%h

started with the same settings as the code location, except its own ``CHUNKBENCH_HOME`` (a scratch folder:
the machine's own), and ``DAGSTER_HOME`` pointing at the shared instance (PostgreSQL). ``make cluster``
starts them (:mod:`chunkbench_pipelines.cluster`).

A worker that dies: its step goes to another worker. A task is acknowledged only when its step has ended
(``task_acks_late``); until then the broker keeps it as taken, with the time it was taken. A worker renews
that time for the tasks it holds every third of ``CHUNKBENCH_CELERY_VISIBILITY_TIMEOUT`` (default 60 s), so
a step may run for hours; the task of a worker that stopped renewing (killed, its machine gone) is handed
to another worker once the timeout has passed. The step then runs again from its start, which is safe:
each partition's results replace their own files, its collection's points are replaced by deterministic
ids, and the shared cache hands over every vector the dead worker had already stored.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from chunkbench_core.settings import Settings

log = logging.getLogger("chunkbench")

QUEUE = "dagster"  # dagster-celery's queue (its step tasks are routed there)
MODULE = __name__


def celery_config(settings: Settings) -> dict[str, Any]:
    """The Celery settings both sides use (the run's process that sends steps, the workers that run them)."""
    return {
        "task_acks_late": True,  # a task is done when its step has ended, not when a worker took it
        "task_reject_on_worker_lost": True,  # a worker's pool process killed: the task goes back at once
        "worker_prefetch_multiplier": 1,  # a worker takes one step at a time, so idle workers get the others
        # the broker hands a task to another worker when its lease is older than the visibility timeout;
        # look for such tasks every quarter of it (kombu's default looks every 100 s)
        "broker_transport_options": {
            "visibility_timeout": settings.celery_visibility_timeout,
            "unacked_restore_interval": max(1.0, settings.celery_visibility_timeout / 4),
            "unacked_restore_throttle": 1,
        },
        "broker_connection_retry_on_startup": True,
        "result_expires": 7 * 24 * 3600,
        "worker_hijack_root_logger": False,
    }


def executor_config(settings: Settings) -> dict[str, Any]:
    """dagster-celery's executor config for ``settings`` (broker and result backend: the one Redis)."""
    if not settings.celery_broker:
        raise ValueError("no Celery broker: set CHUNKBENCH_CELERY_BROKER")
    return {
        "broker": settings.celery_broker,
        "backend": settings.celery_broker,
        "include": [MODULE],
        "config_source": celery_config(settings),
    }


def celery_executor_def(settings: Settings):
    """The executor of the code location when a broker is set (dagster-celery, from the ``distributed`` extra)."""
    try:
        from dagster_celery import celery_executor
    except ImportError as exc:
        from chunkbench_core.errors import ConfigError

        raise ConfigError(
            "CHUNKBENCH_CELERY_BROKER is set but dagster-celery is not installed: pip install 'chunkbench[distributed]'"
        ) from exc
    return celery_executor.configured(executor_config(settings), name="celery")


def make_worker_app(settings: Settings):
    """The Celery app a worker runs: dagster-celery's step task, with the profile's settings."""
    from dagster_celery.executor import CeleryExecutor
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task

    config = executor_config(settings)
    app = make_app(
        CeleryExecutor.for_cli(
            broker=config["broker"],
            backend=config["backend"],
            include=config["include"],
            config_source=config["config_source"],
        ).app_args()
    )
    create_task(app)
    _connect_worker_signals(settings.celery_visibility_timeout)
    return app


# -- a live worker keeps its tasks --------------------------------------------------------------------
_renewer: threading.Thread | None = None
_stop = threading.Event()


def held_delivery_tags() -> list[str]:
    """The broker's delivery tags of the tasks this worker holds (taken, not yet acknowledged)."""
    from celery.worker import state

    tags = []
    for request in list(state.reserved_requests) + list(state.active_requests):
        message = getattr(request, "message", None) or getattr(request, "_message", None)
        tag = getattr(message, "delivery_tag", None)
        if tag is not None:
            tags.append(str(tag))
    return sorted(set(tags))


def renew_leases(app, tags: list[str]) -> int:
    """Mark the tasks ``tags`` as taken now (kombu's Redis transport hands a task to another worker when the
    time it was taken is older than the visibility timeout); a task already acknowledged is left alone."""
    import time

    if not tags:
        return 0
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        key = channel.unacked_index_key
        client = channel.client
        now = time.time()
        return int(client.zadd(key, {tag: now for tag in tags}, xx=True, ch=True) or 0) + 0


def _renew_forever(app, every: float) -> None:
    while not _stop.wait(every):
        try:
            renew_leases(app, held_delivery_tags())
        except Exception as exc:  # noqa: BLE001 - the broker is away: try again; the lease may lapse meanwhile
            log.warning("renewing the leases of this worker's steps failed: %s", exc)


def _connect_worker_signals(visibility_timeout: float) -> None:
    from celery import signals

    def ready(sender=None, **_: Any) -> None:
        global _renewer
        if _renewer is None:
            _stop.clear()
            _renewer = threading.Thread(
                target=_renew_forever,
                args=(sender.app, visibility_timeout / 3),
                name="chunkbench-lease-renewer",
                daemon=True,
            )
            _renewer.start()

    def shutdown(**_: Any) -> None:
        _stop.set()

    def child_ends(**_: Any) -> None:  # a pool process ends: its shared cache gives up its claims
        from .caches import close_caches

        close_caches()

    signals.worker_ready.connect(ready, weak=False)
    signals.worker_shutdown.connect(shutdown, weak=False)
    signals.worker_process_shutdown.connect(child_ends, weak=False)


def __getattr__(name: str):
    """``app``: built when a worker asks for it (``celery -A chunkbench_pipelines.celery_app``), from the
    worker's environment (its edge)."""
    if name in ("app", "celery"):
        app = make_worker_app(Settings.from_environment())
        globals()["app"] = globals()["celery"] = app
        return app
    raise AttributeError(name)
