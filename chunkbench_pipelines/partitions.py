"""Partitions: every strategy x every registered corpus model."""

from __future__ import annotations

from dagster import MultiPartitionKey, MultiPartitionsDefinition, StaticPartitionsDefinition

from chunkbench_core.chunking import STRATEGY_NAMES
from chunkbench_core.embedding import model_registry

STRATEGY = "strategy"
CORPUS_MODEL = "corpus_model"

strategy_partitions = StaticPartitionsDefinition(list(STRATEGY_NAMES))
corpus_model_partitions = StaticPartitionsDefinition(list(model_registry()))

strategy_x_model = MultiPartitionsDefinition(
    {STRATEGY: strategy_partitions, CORPUS_MODEL: corpus_model_partitions}
)


def partition_key(strategy: str, corpus_model: str) -> MultiPartitionKey:
    return MultiPartitionKey({STRATEGY: strategy, CORPUS_MODEL: corpus_model})


def split_key(key: MultiPartitionKey | str) -> tuple[str, str]:
    """(strategy, corpus_model) of a partition key."""
    if not isinstance(key, MultiPartitionKey):
        key = strategy_x_model.get_partition_key_from_str(key)
    dims = key.keys_by_dimension
    return dims[STRATEGY], dims[CORPUS_MODEL]
