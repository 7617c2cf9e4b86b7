"""The two roles a model plays: corpus model and boundary model.

- The *corpus* model embeds chunks and queries; it is the ``corpus_model`` partition. Where one is not
  given (``chunkbench ask``, ``queries``, ``sweep``): the results database's default (``chunkbench
  defaults set corpus_model``), else ``CHUNKBENCH_CORPUS_MODEL``, else the registry's default.
- The *boundary* model decides semantic cuts (sentence/paragraph similarity against
  its threshold). It is configured separately, so every corpus model is compared on the same
  cuts: explicit value (run config), else the results database's shared default, else this
  machine's default (the settings' ``boundary_model``, ``CHUNKBENCH_BOUNDARY_MODEL``), else the
  registry's ``defaults.boundary_model``. Cuts always use the boundary model's threshold, never
  the corpus model's. When the parsed corpus is not written in the Latin script and nobody chose
  the boundary model, an English-only default gives way to a multilingual model
  (:mod:`.language` states the rule).

What a collection was built with is recorded in its build record (chunkbench_core.provenance).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chunkbench_core.errors import ConfigError
from chunkbench_core.settings import VARIABLE_OF

from .language import BoundaryChoice, ScriptShare, choose_boundary_model
from .registry import ModelRegistry, get_model, model_registry
from .thresholds import SharedDefaults

# the settings' own names, so what is shown names what a user sets
BOUNDARY_ENV = VARIABLE_OF["boundary_model"].name
CORPUS_MODEL_ENV = VARIABLE_OF["corpus_model"].name


def boundary_model_id(
    explicit: str | None = None,
    registry: ModelRegistry | None = None,
    shared: SharedDefaults | None = None,
    machine_default: str | None = None,
) -> str:
    """The boundary model id in force: ``explicit`` (run config), else the results database's default
    (``chunkbench defaults set boundary_model``, shared by every machine: ``shared``), else ``machine_default``
    (``CHUNKBENCH_BOUNDARY_MODEL`` of the settings), else the registry default."""
    return boundary_choice(explicit, registry, shared, machine_default).model


def boundary_choice(
    explicit: str | None = None,
    registry: ModelRegistry | None = None,
    shared: SharedDefaults | None = None,
    machine_default: str | None = None,
    corpus: ScriptShare | None = None,
) -> BoundaryChoice:
    """The boundary model in force, where it came from and why, for a corpus whose letters are ``corpus``
    (None: not known; then the language rule does not apply). See :mod:`.language`."""
    registry = registry if registry is not None else model_registry()
    return choose_boundary_model(
        registry,
        explicit=explicit,
        shared_default=shared.boundary_model() if shared is not None else None,
        machine_default=machine_default,
        corpus=corpus,
    )


def corpus_model_id(
    explicit: str | None = None,
    registry: ModelRegistry | None = None,
    shared: SharedDefaults | None = None,
    machine_default: str | None = None,
) -> str:
    """``explicit`` (the partition's corpus model), else the results database's default (``chunkbench defaults
    set corpus_model``), else ``machine_default`` (``CHUNKBENCH_CORPUS_MODEL``), else the registry's default."""
    return corpus_model_choice(explicit, registry, shared, machine_default).model


@dataclass(frozen=True)
class RoleDefault:
    """A role's model in force and where it came from: ``source`` is ``run config`` (or a flag), ``defaults set``,
    ``environment``, ``registry`` or (boundary model only) ``corpus language``; ``detail`` says it for a person."""

    role: str  # corpus_model | boundary_model
    model: str
    source: str
    detail: str
    warning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"role": self.role, "model": self.model, "source": self.source, "detail": self.detail}
        if self.warning:
            out["warning"] = self.warning
        return out


def corpus_model_choice(
    explicit: str | None = None,
    registry: ModelRegistry | None = None,
    shared: SharedDefaults | None = None,
    machine_default: str | None = None,
    explicit_source: str = "run config",
) -> RoleDefault:
    """The corpus model in force and its source (order of :func:`corpus_model_id`)."""
    registry = registry if registry is not None else model_registry()
    stored = shared.corpus_model() if shared is not None else None
    for value, source, detail in (
        (explicit, explicit_source, f"given ({explicit_source})"),
        (stored, "defaults set", "chunkbench defaults set corpus_model"),
        (machine_default, "environment", CORPUS_MODEL_ENV),
        (registry.default_corpus_model, "registry", "the model registry's default"),
    ):
        if value:
            return RoleDefault("corpus_model", get_model(value, registry).id, source, detail)
    raise AssertionError("the registry always has a default corpus model")  # pragma: no cover


def role_defaults(
    registry: ModelRegistry,
    shared: SharedDefaults | None = None,
    machine_corpus: str | None = None,
    machine_boundary: str | None = None,
    corpus: ScriptShare | None = None,
) -> dict[str, RoleDefault]:
    """The corpus and boundary models in force when none is given, with where each comes from (what
    ``chunkbench models`` shows); ``corpus``: the parsed corpus's letters (the boundary model's language rule)."""
    try:
        boundary = boundary_choice(None, registry, shared, machine_boundary, corpus)
        chosen = RoleDefault("boundary_model", boundary.model, boundary.source, boundary.reason, boundary.warning)
    except ConfigError as exc:  # the corpus needs a multilingual model and none is registered: shown, not raised
        plain = boundary_choice(None, registry, shared, machine_boundary)
        chosen = RoleDefault("boundary_model", plain.model, "refused", plain.reason, str(exc))
    return {"corpus_model": corpus_model_choice(None, registry, shared, machine_corpus), "boundary_model": chosen}
