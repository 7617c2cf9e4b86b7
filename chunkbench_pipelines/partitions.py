"""Partitions: every strategy x every corpus model that can run in this deployment.

The ``corpus_model`` dimension is decided when the code location loads, from its settings object
(built from the environment it was started with: ``chunkbench settings`` shows it): the models of the
registry (shipped ones plus ``CHUNKBENCH_MODELS``) whose provider is configured
(``OPENAI_API_KEY``, ``CHUNKBENCH_OPENAI_COMPATIBLE_URL`` or a ``base_url`` in the model's entry) and
whose local engine is installed. So the UI, a backfill of "all partitions" and the sweeps only offer
work that can succeed. The ``strategy`` dimension is every registered strategy.

- Adding a model (a registry entry) or configuring a provider adds its partitions the next
  time the code location loads: "Reload" on the UI's Deployment page after editing the
  ``CHUNKBENCH_MODELS`` file; a restart of ``make ui`` after changing environment variables
  (the code location reads them when it starts).
- Removing a model (or its key) removes its partitions from the partitions view and from
  backfills. Nothing is deleted: its runs and materialization events stay in Dagster's
  history, its rows stay in DuckDB and its collections in Qdrant, and its partitions come back,
  with their history, when the model is available again.

Why static at load and not a DynamicPartitionsDefinition: availability is a property of the code
location's environment (its keys, its installed packages), which only the code location sees; dynamic
keys would have to be written into the instance by a separate step, could drift from that environment,
and would let anyone add a key the UI then offers although it cannot run.
"""

from __future__ import annotations

from typing import Sequence

from dagster import MultiPartitionKey, MultiPartitionsDefinition, StaticPartitionsDefinition

from chunkbench_core.configuration import provider_settings_of, registry_of
from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.embedding import availability
from chunkbench_core.settings import Settings

STRATEGY = "strategy"
CORPUS_MODEL = "corpus_model"


def runnable_corpus_models(settings: Settings) -> list[str]:
    """Registry ids (the registry of ``settings``), in registry order, that can run with its providers."""
    providers = provider_settings_of(settings)
    return [spec.id for spec in registry_of(settings).values() if availability(spec, providers)[0]]


def strategy_by_model(
    corpus_models: Sequence[str], strategies: Sequence[str] | None = None
) -> MultiPartitionsDefinition:
    """strategy x corpus_model over the given models (and every registered strategy, unless given)."""
    names = list(strategies) if strategies is not None else list(STRATEGIES.names())
    return MultiPartitionsDefinition(
        {STRATEGY: StaticPartitionsDefinition(names), CORPUS_MODEL: StaticPartitionsDefinition(list(corpus_models))}
    )


def partition_key(strategy: str, corpus_model: str) -> MultiPartitionKey:
    return MultiPartitionKey({STRATEGY: strategy, CORPUS_MODEL: corpus_model})


def split_key(key: MultiPartitionKey | str) -> tuple[str, str]:
    """(strategy, corpus_model) of a partition key (a key's string joins the values in dimension-name order)."""
    if isinstance(key, MultiPartitionKey):
        dims = key.keys_by_dimension
        return dims[STRATEGY], dims[CORPUS_MODEL]
    values = str(key).split("|")
    if len(values) != 2:
        raise ValueError(f"not a strategy x corpus_model partition key: {key!r}")
    dims = dict(zip(sorted((STRATEGY, CORPUS_MODEL)), values))
    return dims[STRATEGY], dims[CORPUS_MODEL]
