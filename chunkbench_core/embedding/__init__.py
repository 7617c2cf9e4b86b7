"""Embedding: the model registry, providers and the embedded local default."""

from .providers import Embedder, ProviderSettings, availability
from .registry import (
    DEFAULT_BOUNDARY_MODEL,
    DEFAULT_CORPUS_MODEL,
    EmbeddingModelSpec,
    builtin_registry,
    get_model,
    sanitize_model_id,
)

__all__ = [
    "DEFAULT_BOUNDARY_MODEL",
    "DEFAULT_CORPUS_MODEL",
    "Embedder",
    "EmbeddingModelSpec",
    "ProviderSettings",
    "availability",
    "builtin_registry",
    "get_model",
    "sanitize_model_id",
]
