"""Embedding: the model registry, roles and thresholds, providers and the local engines."""

from .providers import (
    Embedder,
    EmbeddingUsage,
    ProviderSettings,
    availability,
    cache_fingerprint,
    cache_namespace,
)
from .registry import (
    DEFAULT_BOUNDARY_MODEL,
    DEFAULT_CORPUS_MODEL,
    MODELS_ENV,
    EmbeddingModelSpec,
    ModelRegistry,
    builtin_registry,
    get_model,
    load_registry,
    model_registry,
    sanitize_model_id,
)
from .roles import BOUNDARY_ENV, boundary_model_id
from .thresholds import SharedDefaults, validate_threshold

__all__ = [
    "BOUNDARY_ENV",
    "DEFAULT_BOUNDARY_MODEL",
    "DEFAULT_CORPUS_MODEL",
    "MODELS_ENV",
    "Embedder",
    "EmbeddingModelSpec",
    "EmbeddingUsage",
    "ModelRegistry",
    "ProviderSettings",
    "availability",
    "boundary_model_id",
    "builtin_registry",
    "cache_fingerprint",
    "cache_namespace",
    "get_model",
    "load_registry",
    "model_registry",
    "SharedDefaults",
    "sanitize_model_id",
    "validate_threshold",
]
