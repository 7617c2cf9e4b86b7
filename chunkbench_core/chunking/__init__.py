"""Chunking strategies. Adding a strategy = one module + one line in ``STRATEGIES``.

Every registered name is a value of the pipeline's ``strategy`` partition dimension.
Strategies with ``needs_boundary_embeddings`` take ``embed=<callable texts -> array>``
bound to the boundary model and fail hard without it; every strategy takes
``window=ModelWindow(...)`` (the corpus model's window, counted with its own
tokenizer). :func:`check_chunks` is the blocking check on a run's chunks.
"""

from __future__ import annotations

import inspect
from typing import Any

from chunkbench_core.errors import ChunkingError

from .base import Chunk, Chunker, Piece, make_chunk_id, safe_document_name
from .checks import ChunkCheckReport, WindowOverflow, check_chunks
from .cluster_semantic import ClusterSemanticChunker
from .contextual_retrieval import ContextualRetrievalChunker, LLMContext
from .fixed_size import FixedSizeChunker
from .recursive import RecursiveChunker
from .semantic import SemanticChunker
from .semantic_parent_child import SemanticParentChildChunker
from .sentences import sentence_spans, split_sentences
from .structural import StructuralChunker
from .window import CountModelTokens, ModelWindow

STRATEGIES: dict[str, type[Chunker]] = {
    FixedSizeChunker.name: FixedSizeChunker,
    RecursiveChunker.name: RecursiveChunker,
    SemanticChunker.name: SemanticChunker,
    SemanticParentChildChunker.name: SemanticParentChildChunker,
    ContextualRetrievalChunker.name: ContextualRetrievalChunker,
    StructuralChunker.name: StructuralChunker,
    ClusterSemanticChunker.name: ClusterSemanticChunker,
}

STRATEGY_NAMES: tuple[str, ...] = tuple(STRATEGIES)


def make_chunker(strategy: str, **params: Any) -> Chunker:
    """Build the chunker of ``strategy`` with ``params`` (validated by the chunker).

    ``embed`` is passed only to strategies that use boundary embeddings, so one call
    shape serves every partition; any other parameter a strategy does not accept is
    an error naming the ones it does.
    """
    try:
        cls = STRATEGIES[strategy]
    except KeyError:
        raise ChunkingError(
            f"unknown strategy {strategy!r}; choose one of: {', '.join(STRATEGY_NAMES)}"
        ) from None
    if not cls.needs_boundary_embeddings:
        params.pop("embed", None)
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ChunkingError(f"{strategy} does not take {', '.join(unknown)}; it takes: {', '.join(accepted)}")
    return cls(**params)


__all__ = [
    "Chunk",
    "ChunkCheckReport",
    "Chunker",
    "ClusterSemanticChunker",
    "ContextualRetrievalChunker",
    "CountModelTokens",
    "FixedSizeChunker",
    "LLMContext",
    "ModelWindow",
    "Piece",
    "RecursiveChunker",
    "STRATEGIES",
    "STRATEGY_NAMES",
    "SemanticChunker",
    "SemanticParentChildChunker",
    "StructuralChunker",
    "WindowOverflow",
    "check_chunks",
    "make_chunk_id",
    "make_chunker",
    "safe_document_name",
    "sentence_spans",
    "split_sentences",
]
