"""The two roles a model plays (LLD 6.2): corpus model and boundary model.

- The *corpus* model embeds chunks and queries; it is the ``corpus_model`` partition.
- The *boundary* model decides semantic cuts (sentence/paragraph similarity against
  its threshold). It is configured separately: explicit value, else
  ``$CHUNKBENCH_BOUNDARY_MODEL``, else the registry's ``defaults.boundary_model``.
  Cuts always use the boundary model's threshold, never the corpus model's.

What a collection was built with is recorded in its build record (chunkbench_core.provenance).
"""

from __future__ import annotations

import os
from .registry import ModelRegistry, get_model, model_registry
from .thresholds import default_boundary_model

BOUNDARY_ENV = "CHUNKBENCH_BOUNDARY_MODEL"


def boundary_model_id(explicit: str | None = None, registry: ModelRegistry | None = None,
                      home: str | os.PathLike[str] | None = None) -> str:
    """The boundary model id in force: ``explicit`` (run config), else the results database's default
    (``chunkbench defaults set boundary_model``, shared by every machine), else $CHUNKBENCH_BOUNDARY_MODEL,
    else the registry default."""
    registry = registry if registry is not None else model_registry()
    chosen = explicit or default_boundary_model(home) or os.environ.get(BOUNDARY_ENV) or registry.default_boundary_model
    return get_model(chosen, registry).id


def corpus_model_id(explicit: str | None = None, registry: ModelRegistry | None = None) -> str:
    """``explicit`` (the partition's corpus model), else the registry's default corpus model."""
    registry = registry if registry is not None else model_registry()
    return get_model(explicit or registry.default_corpus_model, registry).id
