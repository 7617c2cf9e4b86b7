"""The two roles a model plays: corpus model and boundary model.

- The *corpus* model embeds chunks and queries; it is the ``corpus_model`` partition.
- The *boundary* model decides semantic cuts (sentence/paragraph similarity against
  its threshold). It is configured separately, so every corpus model is compared on the same
  cuts: explicit value (run config), else the results database's shared default, else this
  machine's default (the settings' ``boundary_model``, ``CHUNKBENCH_BOUNDARY_MODEL``), else the
  registry's ``defaults.boundary_model``. Cuts always use the boundary model's threshold, never
  the corpus model's.

What a collection was built with is recorded in its build record (chunkbench_core.provenance).
"""

from __future__ import annotations

from .registry import ModelRegistry, get_model, model_registry
from .thresholds import SharedDefaults

BOUNDARY_ENV = "CHUNKBENCH_BOUNDARY_MODEL"


def boundary_model_id(explicit: str | None = None, registry: ModelRegistry | None = None,
                      shared: SharedDefaults | None = None, machine_default: str | None = None) -> str:
    """The boundary model id in force: ``explicit`` (run config), else the results database's default
    (``chunkbench defaults set boundary_model``, shared by every machine: ``shared``), else ``machine_default``
    (``CHUNKBENCH_BOUNDARY_MODEL`` of the settings), else the registry default."""
    registry = registry if registry is not None else model_registry()
    chosen = (explicit or (shared.boundary_model() if shared is not None else None) or machine_default
              or registry.default_boundary_model)
    return get_model(chosen, registry).id


def corpus_model_id(explicit: str | None = None, registry: ModelRegistry | None = None) -> str:
    """``explicit`` (the partition's corpus model), else the registry's default corpus model."""
    registry = registry if registry is not None else model_registry()
    return get_model(explicit or registry.default_corpus_model, registry).id
