"""What the caches' two backends share (the SQLite files of one machine, the PostgreSQL cache many workers share):
their errors and the size of a namespace. Below both backends, so each imports it and the SQLite module can open
the PostgreSQL one without a loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from chunkbench_core.errors import ChunkbenchError


class EmbeddingCacheError(ChunkbenchError):
    """The embedding cache file could not be opened, read or written."""


class ContextCacheError(EmbeddingCacheError):
    """The contextual cache file could not be opened, read or written."""


@dataclass(frozen=True)
class NamespaceStats:
    namespace: str
    model_id: str
    vectors: int
    bytes: int
