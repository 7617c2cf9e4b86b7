"""The two roles a model plays (LLD 6.2): corpus model and boundary model.

- The *corpus* model embeds chunks and queries; it is the ``corpus_model`` partition.
- The *boundary* model decides semantic cuts (sentence/paragraph similarity against
  its threshold). It is configured separately: explicit value, else
  ``$CHUNKBENCH_BOUNDARY_MODEL``, else the registry's ``defaults.boundary_model``.
  Cuts always use the boundary model's threshold, never the corpus model's.

``resolve_roles`` takes one snapshot of both; ``ModelRoles.provenance()`` is what a
materialization records.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .registry import EmbeddingModelSpec, ModelRegistry, get_model, model_registry
from .thresholds import semantic_threshold, threshold_source

BOUNDARY_ENV = "CHUNKBENCH_BOUNDARY_MODEL"


def boundary_model_id(explicit: str | None = None, registry: ModelRegistry | None = None) -> str:
    """The configured boundary model id: ``explicit``, else $CHUNKBENCH_BOUNDARY_MODEL, else the registry default."""
    registry = registry if registry is not None else model_registry()
    chosen = explicit or os.environ.get(BOUNDARY_ENV) or registry.default_boundary_model
    return get_model(chosen, registry).id


def corpus_model_id(explicit: str | None = None, registry: ModelRegistry | None = None) -> str:
    """``explicit`` (the partition's corpus model), else the registry's default corpus model."""
    registry = registry if registry is not None else model_registry()
    return get_model(explicit or registry.default_corpus_model, registry).id


@dataclass(frozen=True)
class ModelRoles:
    corpus: EmbeddingModelSpec
    boundary: EmbeddingModelSpec
    boundary_threshold: float
    boundary_threshold_source: str  # "override" | "registry"

    def provenance(self) -> dict[str, Any]:
        """What a materialization records about its models (no secrets)."""
        return {
            "corpus_model": self.corpus.id,
            "corpus_provider": self.corpus.provider,
            "corpus_model_name": self.corpus.model_name,
            "corpus_dimension": self.corpus.dimension,
            "corpus_document_prefix": self.corpus.document_prefix,
            "corpus_query_prefix": self.corpus.query_prefix,
            "boundary_model": self.boundary.id,
            "boundary_provider": self.boundary.provider,
            "boundary_threshold": self.boundary_threshold,
            "boundary_threshold_source": self.boundary_threshold_source,
        }


def resolve_roles(corpus_model: str | None = None, boundary_model: str | None = None, *,
                  registry: ModelRegistry | None = None, home: str | os.PathLike[str] | None = None) -> ModelRoles:
    """Snapshot the corpus and boundary models and the boundary threshold in force now."""
    registry = registry if registry is not None else model_registry()
    corpus = get_model(corpus_model_id(corpus_model, registry), registry)
    boundary = get_model(boundary_model_id(boundary_model, registry), registry)
    return ModelRoles(
        corpus=corpus,
        boundary=boundary,
        boundary_threshold=semantic_threshold(boundary, home=home),
        boundary_threshold_source=threshold_source(boundary.id, home=home),
    )
