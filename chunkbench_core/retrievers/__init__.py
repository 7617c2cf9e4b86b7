"""Retrievers: how a question's chunks are found in a collection (dense vectors, or dense fused with keywords).

Each retriever is one module registered in :mod:`.registry`."""

from .registry import (
    DEFAULT_RETRIEVER,
    RETRIEVERS,
    Documents,
    IndexFigures,
    Retriever,
    SearchRequest,
    register_retriever,
)

__all__ = [
    "DEFAULT_RETRIEVER",
    "RETRIEVERS",
    "Documents",
    "IndexFigures",
    "Retriever",
    "SearchRequest",
    "register_retriever",
]
