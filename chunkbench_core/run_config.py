"""The settings of one run, declared once: parsing, chunking (with every strategy's options), the experiment.

These typed models are the single description of a run's settings. The Dagster run config of the
assets (``chunkbench_pipelines.config``: the launchpad), the flags of ``chunkbench run`` and its
``--config FILE`` sections are all generated from them, so a setting's type, default, bounds and
description live here only; the strategies' own options come from the strategy registry (each
strategy's options model), so a new strategy's options appear everywhere without a line here.

``chunk_collections`` and ``experiment_results`` share the chunking settings: an experiment names
the collection it scores by them (a non-default value builds a collection of its own), and fails at
once when the collection on disk was built otherwise.
"""

from __future__ import annotations

import typing
from enum import Enum
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, Optional, cast

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from chunkbench_core.chunking import STRATEGIES

NEIGHBORS_DEFAULT_REASON = (
    "Default 0: the leaderboard compares what each strategy retrieves, and expansion applies to fixed_size only "
    "(expansion_strategies), so expanding by default would give fixed_size up to seven times the context of the "
    "other strategies. `chunkbench sweep neighbors` (or the neighbor sweep job) measures 0/0 to 3/3 side by side in "
    "leaderboard_by_setting."
)
SECTIONS = ("parsing", "chunking", "experiment")


def plain(value: Any) -> Any:
    """An enum member's value (the Dagster config gives enums for the choices), else the value."""
    return value.value if isinstance(value, Enum) else value


class ParsingSettings(BaseModel):
    """Parser settings (empty = the defaults); a changed value parses the documents again."""

    model_config = ConfigDict(extra="forbid")

    pdf_min_total_chars: Optional[int] = Field(
        default=None,
        description="PDF text-layer gate: a PDF with fewer non-blank characters in total is treated "
        "as scanned and rejected (default 100).",
    )
    pdf_min_median_chars_per_page: Optional[int] = Field(
        default=None,
        description="PDF text-layer gate: a PDF with a lower median of characters per page is "
        "treated as scanned and rejected (default 40).",
    )
    persian_digits: Optional[Literal["ascii", "persian"]] = Field(
        default=None,
        description="Arabic-Indic and Persian digits are all rewritten to this one style: "
        "'ascii' (0-9, the default) or 'persian' (۰-۹).",
    )
    csv_encodings: Optional[str] = Field(
        default=None,
        description="The encodings tried, in order, for .csv, .md and .txt files, comma-separated "
        "(default utf-8-sig,cp1256), e.g. utf-8-sig,latin-1 for Western European files.",
    )

    sample_documents: Optional[int] = Field(
        default=None,
        ge=1,
        description="A sampled corpus: keep every document the questions' evidence is in, plus a "
        "seeded random sample of the others, this many documents in all (empty: the "
        "whole corpus); fewer than the evidence needs keeps the questions whose "
        "evidence fits, and says how many. Shown in every view; never mixed with "
        "whole-corpus results.",
    )
    sample_tokens: Optional[int] = Field(
        default=None,
        ge=1,
        description="A sampled corpus by size: the evidence documents plus seeded others up to "
        "this many cl100k tokens in all (documents not parsed yet are counted from "
        "their file size).",
    )
    sample_seed: Optional[int] = Field(
        default=None,
        description="The seed of the sampled corpus's distractors (empty: 0); the same seed keeps "
        "the same documents on every machine.",
    )


#: the parsing settings that choose the documents (a sampled corpus), not how they are read
SAMPLE_FIELDS = ("sample_documents", "sample_tokens", "sample_seed")


class ParsingMethods:
    """What the parsing settings give, whichever model (this one or the Dagster config made from it) holds them."""

    if TYPE_CHECKING:  # what the pydantic model this is mixed into gives (for the type checker only)

        def model_dump(self) -> dict[str, Any]: ...

    def given(self) -> dict[str, Any]:
        """The parser's options set (not the sample's)."""
        return {k: plain(v) for k, v in self.model_dump().items() if v is not None and k not in SAMPLE_FIELDS}

    def sample(self) -> dict[str, Any]:
        """The sampled corpus asked for: {"n", "token_budget", "seed"}, or {} for the whole corpus."""
        values = self.model_dump()
        if values.get("sample_documents") is None and values.get("sample_tokens") is None:
            return {}
        return {
            "n": values.get("sample_documents"),
            "token_budget": values.get("sample_tokens"),
            "seed": values.get("sample_seed") or 0,
        }


class ChunkingBase(BaseModel):
    """What every strategy takes: sizes, the window rule, the boundary model (the strategies' own options follow)."""

    model_config = ConfigDict(extra="forbid")

    chunk_size: Optional[int] = Field(
        default=None,
        description="Chunk size in cl100k tokens (empty: the same size for every corpus model, the "
        "smallest model window's default, so models are compared like for like). "
        "A non-default value builds a collection of its own (a sweep variant).",
    )
    per_model_window: bool = Field(
        default=False,
        description="With an empty chunk_size: size the chunks to this corpus model's own window "
        "(512 tokens, shrunk to 3/4 of a smaller window) instead of the shared size; "
        "a sweep with a collection of its own.",
    )
    chunk_overlap: Optional[int] = Field(
        default=None,
        description="Overlap in cl100k tokens for fixed_size/recursive/contextual_retrieval "
        "(empty: 50, at most a quarter of the size).",
    )
    overflow: Literal["error", "truncate"] = Field(
        default="error",
        description="'error': an embedded text over the corpus model's window fails the "
        "chunk_invariants check; 'truncate': allow it knowingly (the model truncates, "
        "counted in truncated_chunks).",
    )
    boundary_model: Optional[str] = Field(
        default=None,
        description="The model that decides semantic cuts (empty: the shared default, "
        "`chunkbench defaults set boundary_model`, else CHUNKBENCH_BOUNDARY_MODEL, else "
        "MiniLM). An explicit model builds a collection of its own.",
    )


class ChunkingMethods:
    """What the chunking settings give, whichever model (the core one or the Dagster config made from it) holds them."""

    if TYPE_CHECKING:  # the fields of the model this is mixed into (for the type checker only; the overflow is an
        # Enum of its choices in the Dagster config)
        chunk_size: Optional[int]
        chunk_overlap: Optional[int]
        per_model_window: bool
        overflow: Any
        boundary_model: Optional[str]

    def chunker_options(self) -> dict[str, Any]:
        """The strategy options set (not empty), by name, as plain values (any strategy's: the collection spec
        keeps those its strategy takes)."""
        return {
            name: plain(getattr(self, name)) for name in STRATEGIES.options() if getattr(self, name, None) is not None
        }

    @property
    def overflow_mode(self) -> str:
        return plain(self.overflow)

    def request(self, strategy: str, corpus_model: str):
        """The collection these settings ask for in a partition (resolved by chunkbench_core.stages.spec)."""
        from chunkbench_core.stages.spec import CollectionRequest

        return CollectionRequest(
            strategy=strategy,
            corpus_model=corpus_model,
            chunk_size=self.chunk_size,
            chunk_overlap=self.chunk_overlap,
            per_model_window=self.per_model_window,
            overflow=self.overflow_mode,
            boundary_model=self.boundary_model,
            options=self.chunker_options(),
        )


def _option_fields() -> dict[str, Any]:
    """One field per strategy option (every strategy's, merged by name: chunking.registry), empty by default."""
    fields: dict[str, Any] = {}
    for option in STRATEGIES.options().values():
        kind: Any = Literal[option.choices] if option.choices else option.kind  # the choices: known only at run time
        fields[option.name] = (
            Optional[kind],
            Field(default=None, description=f"{option.help()}; empty: the strategy's default", **option.bounds),
        )
    return fields


def _registry_key() -> tuple:
    return tuple((s.name, s.option_names) for s in STRATEGIES.values())


@lru_cache(maxsize=8)
def _models(key: tuple) -> tuple[type[BaseModel], type[BaseModel]]:
    # the bases' common type is object (the methods are a plain mixin); the model made is a ChunkingBase
    bases = cast("tuple[type[BaseModel], ...]", (ChunkingBase, ChunkingMethods))
    chunking = create_model("ChunkingSettings", __base__=bases, __doc__=ChunkingBase.__doc__, **_option_fields())
    experiment = create_model(
        "ExperimentSettings",
        __base__=chunking,
        __doc__="Retrieval settings of one experiment run, plus the chunking settings naming the collection it scores.",
        __validators__={"known_retrievers": field_validator("retrievers")(_check_retrievers)},
        top_k=(int, Field(default=5, ge=1, description="Chunks retrieved per question.")),
        filter_by_document=(
            bool,
            Field(
                default=False,
                description="Each question searches only its own documents (every document its "
                "references name) instead of all documents (the Chroma protocol): the run's "
                "scope is own_documents, shown beside the shared runs, never ranked with "
                "them.",
            ),
        ),
        retrievers=(
            list[str],
            Field(
                default_factory=lambda: ["dense"],
                min_length=1,
                description="How the chunks are found, each one evaluated over the same collection: dense (the chunks "
                "nearest to the question's embedding) and hybrid (dense fused with a keyword ranking), or "
                "any registered retriever.",
            ),
        ),
        neighbor_prev=(
            int,
            Field(
                default=0,
                description="Neighbor expansion: chunks added before each hit (0..5). " + NEIGHBORS_DEFAULT_REASON,
            ),
        ),
        neighbor_next=(int, Field(default=0, description="Neighbor expansion: chunks added after each hit (0..5).")),
        expansion_strategies=(
            list[str],
            Field(
                default=list(STRATEGIES.with_capability("neighbor_expansion")),
                description="Strategies neighbor expansion applies to (default: those whose chunks are windows of "
                "running text).",
            ),
        ),
    )
    return chunking, experiment


def _check_retrievers(cls: Any, names: list[str]) -> list[str]:
    return _known_retrievers(names)


def _known_retrievers(names: list[str]) -> list[str]:
    """The retrievers named, each once; an unknown one is refused with the registered names."""
    from chunkbench_core.errors import ConfigError
    from chunkbench_core.retrievers import RETRIEVERS  # the registry as it is now (a test may add one)

    try:
        return RETRIEVERS.check(names)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def chunking_settings() -> type[BaseModel]:
    """The chunking settings, with every option of every strategy registered now (a strategy registered later is
    in the next call's)."""
    return _models(_registry_key())[0]


def experiment_settings() -> type[BaseModel]:
    """The experiment settings: the chunking settings naming the collection, plus retrieval."""
    return _models(_registry_key())[1]


class ParsingRunSettings(ParsingSettings, ParsingMethods):
    pass


def section_models() -> dict[str, type[BaseModel]]:
    """The model of each section of a run's settings (``chunkbench run --config FILE`` sections, flags)."""
    return {"parsing": ParsingRunSettings, "chunking": chunking_settings(), "experiment": experiment_settings()}


def choices(annotation: Any) -> list[str] | None:
    """The choices of a Literal (or Optional[Literal]) annotation, else None."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if typing.get_origin(candidate) is Literal:
            return [str(c) for c in typing.get_args(candidate)]
    return None
