"""Per-provider concurrency limits through Dagster's concurrency pools.

A remote provider (OpenAI, an OpenAI-compatible server) has one Dagster pool, named after
the provider: ``openai`` or ``openai_compatible``. An asset that will call a provider holds
one slot of its pool while it runs, so across all runs (UI materializations, backfills,
sensors, schedules) no more than the pool's limit of partitions talk to that provider at
once. Local models need no pool: they are bounded by the run queue.

Why not ``@asset(pool=...)``: a pool is fixed per asset definition, while the provider of
``chunk_collections`` / ``experiment_results`` changes with the ``corpus_model`` partition.
So the asset claims the slot itself, in the same instance storage Dagster's executor uses:
the pool, its limit, the runs holding a slot and those waiting all show on the UI's
Deployment -> Concurrency page, and the limit is changed there or with
``dagster instance concurrency set openai 2``.

The first claim of a pool that has no limit yet sets it to ``EmbeddingResource.pool_limit``
(or the instance's ``concurrency.pools.default_limit`` when dagster.yaml sets one); after
that the stored limit rules. Storages without pool support (the in-memory instance of a
test's ``materialize``) run without a limit.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterable, Iterator, Optional

from dagster import AssetExecutionContext, DagsterInstance, OpExecutionContext

LOCAL_PROVIDER = "local"
PRIORITY_TAG = "dagster/priority"
_MAX_SLEEP_SECONDS = 5.0
_LOG_EVERY_SECONDS = 60.0


def provider_pool(provider: str) -> Optional[str]:
    """The pool of an embedding provider from the registry; ``None`` for local models."""
    return None if provider == LOCAL_PROVIDER else provider


def llm_pool(base_url: Optional[str]) -> str:
    """The pool of the chat model: ``openai`` when it is OpenAI itself, else ``openai_compatible``."""
    return "openai_compatible" if base_url else "openai"


PROVIDER_POOLS = ("openai", "openai_compatible")


def ensure_provider_pools(instance: DagsterInstance, initial_limit: int) -> dict[str, Optional[int]]:
    """Create every provider pool that has no limit yet, so the UI's Concurrency page lists them from the start.

    Called when chunkbench prepares its instance (``chunkbench init``, ``make ui``, ``chunkbench run``);
    a limit already set (in the UI or with ``dagster instance concurrency set``) is kept.
    """
    return {pool: ensure_pool_limit(instance, pool, initial_limit) for pool in PROVIDER_POOLS}


def ensure_pool_limit(instance: DagsterInstance, pool: str, initial_limit: int) -> Optional[int]:
    """The pool's limit, creating it when it has none: the instance default if set, else ``initial_limit``.

    Returns ``None`` when the instance storage has no pools (nothing is limited then).
    """
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return None
    if pool not in storage.get_concurrency_keys():
        default = instance.get_concurrency_config().pool_config.default_pool_limit
        if default is not None:
            storage.initialize_concurrency_limit_to_default(pool)
        else:
            storage.set_concurrency_slots(pool, initial_limit)
    return storage.get_concurrency_info(pool).slot_count


@contextmanager
def pool_slots(
    context: AssetExecutionContext | OpExecutionContext,
    pools: Iterable[Optional[str]],
    initial_limit: int,
    poll_seconds: float = 0.5,
) -> Iterator[dict[str, float]]:
    """Hold one slot of each pool (sorted, so two steps never wait on each other) while the body runs.

    Yields ``{pool: seconds waited}`` for the asset's metadata. Slots are freed on exit,
    also when the body fails; a retry of the step claims again.
    """
    if initial_limit < 1:
        raise ValueError(f"pool_limit must be >= 1, got {initial_limit}")
    names = sorted({p for p in pools if p})
    instance = context.instance
    storage = instance.event_log_storage
    run_id = context.run.run_id
    step_key = str(context.op_execution_context.node_handle)
    try:
        priority = int(context.run.tags.get(PRIORITY_TAG, "0"))
    except ValueError:
        priority = 0
    waited: dict[str, float] = {}
    try:
        for pool in names:
            limit = ensure_pool_limit(instance, pool, initial_limit)
            if limit is None:
                continue
            started = time.monotonic()
            last_log: Optional[float] = None
            sleep = poll_seconds
            status = storage.claim_concurrency_slot(pool, run_id, step_key, priority)
            while not status.is_claimed:
                now = time.monotonic()
                if last_log is None or now - last_log >= _LOG_EVERY_SECONDS:
                    info = storage.get_concurrency_info(pool)
                    context.log.info(
                        f"waiting for a slot of pool {pool!r}: limit {info.slot_count}, "
                        f"{info.active_slot_count} in use, {info.pending_step_count} waiting"
                    )
                    last_log = now
                time.sleep(status.sleep_interval or sleep)
                sleep = min(sleep * 1.5, _MAX_SLEEP_SECONDS)
                status = storage.claim_concurrency_slot(pool, run_id, step_key, priority)
            waited[pool] = round(time.monotonic() - started, 3)
            context.log.info(f"holding a slot of pool {pool!r} (waited {waited[pool]:.1f} s)")
        yield waited
    finally:
        if names and storage.supports_global_concurrency_limits:
            storage.free_concurrency_slot_for_step(run_id, step_key)
