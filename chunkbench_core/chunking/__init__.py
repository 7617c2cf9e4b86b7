"""Chunking strategies. Adding a strategy = one module + one line in ``STRATEGIES``."""

from __future__ import annotations

from typing import Any

from chunkbench_core.errors import ChunkingError

from .base import Chunk, Chunker, make_chunk_id, safe_document_name
from .fixed_size import FixedSizeChunker
from .recursive import RecursiveChunker

STRATEGIES: dict[str, type[Chunker]] = {
    FixedSizeChunker.name: FixedSizeChunker,
    RecursiveChunker.name: RecursiveChunker,
}

STRATEGY_NAMES: tuple[str, ...] = tuple(STRATEGIES)


def make_chunker(strategy: str, **params: Any) -> Chunker:
    """Build the chunker of ``strategy`` with ``params`` (validated by the chunker)."""
    try:
        cls = STRATEGIES[strategy]
    except KeyError:
        raise ChunkingError(
            f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGY_NAMES)}"
        ) from None
    return cls(**params)


__all__ = [
    "Chunk",
    "Chunker",
    "STRATEGIES",
    "STRATEGY_NAMES",
    "make_chunker",
    "make_chunk_id",
    "safe_document_name",
]
