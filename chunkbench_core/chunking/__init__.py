"""Chunking strategies. Adding a strategy = one module in this package, its chunker class registered with
:func:`register_strategy` (see :mod:`.registry`); every module here is imported when the package is.

Every registered name is a value of the pipeline's ``strategy`` partition dimension.
Strategies with the ``boundary_model`` capability take ``embed=<callable texts -> array>``
bound to the boundary model and fail hard without it; every strategy takes
``window=ModelWindow(...)`` (the corpus model's window, counted with its own
tokenizer). :func:`check_chunks` is the blocking check on a run's chunks.
"""

from __future__ import annotations

from typing import Any

from .base import Chunk, Chunker, Piece, make_chunk_id, safe_document_name
from .checks import ChunkCheckReport, WindowOverflow, check_chunks
from .registry import STRATEGIES, Capabilities, Strategy, StrategyOptions, discover_strategies, register_strategy
from .sentences import sentence_spans, split_sentences
from .window import CountModelTokens, ModelWindow

# every module of the package, so each strategy registers itself (no list to keep up to date); the
# registration order, the partition order, is the order below, then any other module by name
_ORDER = (
    "fixed_size",
    "recursive",
    "semantic",
    "semantic_parent_child",
    "contextual_retrieval",
    "structural",
    "cluster_semantic",
    "page",
    "element",
)
discover_strategies(__name__, first=_ORDER)

from .cluster_semantic import ClusterSemanticChunker  # noqa: E402  (after discover_strategies above registered every strategy module)
from .contextual_retrieval import ContextualRetrievalChunker, LLMContext  # noqa: E402  (after discover_strategies above registered every strategy module)
from .element import ElementChunker  # noqa: E402  (after discover_strategies above registered every strategy module)
from .fixed_size import FixedSizeChunker  # noqa: E402  (after discover_strategies above registered every strategy module)
from .page import PageChunker  # noqa: E402  (after discover_strategies above registered every strategy module)
from .recursive import RecursiveChunker  # noqa: E402  (after discover_strategies above registered every strategy module)
from .semantic import SemanticChunker  # noqa: E402  (after discover_strategies above registered every strategy module)
from .semantic_parent_child import SemanticParentChildChunker  # noqa: E402  (after discover_strategies above registered every strategy module)
from .structural import StructuralChunker  # noqa: E402  (after discover_strategies above registered every strategy module)


def make_chunker(strategy: str, **params: Any) -> Chunker:
    """Build the chunker of ``strategy`` with ``params`` (sizes, window, embed, context, its options).

    ``embed`` is passed only to strategies that use boundary embeddings and ``context`` only to those
    that use an LLM, so one call shape serves every partition; any other parameter a strategy does
    not accept is an error naming the ones it does.
    """
    spec = STRATEGIES[strategy]
    if not spec.capabilities.boundary_model:
        params.pop("embed", None)
    if not spec.capabilities.llm:
        params.pop("context", None)
    accepted = spec.accepted_arguments()
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        from chunkbench_core.errors import ChunkingError

        raise ChunkingError(f"{strategy} does not take {', '.join(unknown)}; it takes: {', '.join(accepted)}")
    return spec.chunker(**params)


__all__ = [
    "Capabilities",
    "Chunk",
    "ChunkCheckReport",
    "Chunker",
    "ClusterSemanticChunker",
    "ContextualRetrievalChunker",
    "CountModelTokens",
    "ElementChunker",
    "FixedSizeChunker",
    "LLMContext",
    "ModelWindow",
    "PageChunker",
    "Piece",
    "RecursiveChunker",
    "STRATEGIES",
    "SemanticChunker",
    "SemanticParentChildChunker",
    "Strategy",
    "StrategyOptions",
    "StructuralChunker",
    "WindowOverflow",
    "check_chunks",
    "make_chunk_id",
    "make_chunker",
    "discover_strategies",
    "register_strategy",
    "safe_document_name",
    "sentence_spans",
    "split_sentences",
]
