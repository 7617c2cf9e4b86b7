"""Run config of the assets: every chunker, parser and retrieval setting, typed and described (launchpad).

``chunk_collections`` and ``experiment_results`` share the chunker settings: an experiment
names the collection it scores by them (a non-default value builds a collection of its own),
and fails at once when the collection on disk was built otherwise. ``chunkbench run`` fills
both from its flags or a ``--config`` file. The strategies' own options are not listed here:
they come from the strategy registry (each strategy's typed options model), so a new strategy's
options appear in the launchpad and on the command line without a line here.
"""

from enum import Enum
from functools import lru_cache
from typing import Any, Optional

from dagster import Config
from pydantic import Field, create_model

from chunkbench_core.chunking import STRATEGIES

class Overflow(Enum):
    error = "error"
    truncate = "truncate"


class DigitStyle(Enum):
    ascii = "ascii"
    persian = "persian"


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


NEIGHBORS_DEFAULT_REASON = (
    "Default 0: the leaderboard compares what each strategy retrieves, and expansion applies to fixed_size only "
    "(expansion_strategies), so expanding by default would give fixed_size up to seven times the context of the "
    "other strategies. The neighbor_sweep schedule measures 0/0 to 3/3 side by side in leaderboard_by_setting."
)


class ChunkingSettings(Config):
    """What every strategy takes: sizes, the window rule, the boundary model (the strategies' own options follow)."""

    chunk_size: Optional[int] = Field(
        default=None, description="Chunk size in cl100k tokens (empty: the same size for every corpus model, the "
                                  "smallest model window's default, so models are compared like for like). "
                                  "A non-default value builds a collection of its own (a sweep variant).")
    per_model_window: bool = Field(
        default=False, description="With an empty chunk_size: size the chunks to this corpus model's own window "
                                   "(512 tokens, shrunk to 3/4 of a smaller window) instead of the shared size; "
                                   "a sweep with a collection of its own.")
    chunk_overlap: Optional[int] = Field(
        default=None, description="Overlap in cl100k tokens for fixed_size/recursive/contextual_retrieval "
                                  "(empty: 50, at most a quarter of the size).")
    overflow: Overflow = Field(
        default=Overflow.error, description="'error': an embedded text over the corpus model's window fails the "
                                     "chunk_invariants check; 'truncate': allow it knowingly (the model truncates, "
                                     "counted in truncated_chunks).")
    boundary_model: Optional[str] = Field(
        default=None, description="The model that decides semantic cuts (empty: the shared default, "
                                  "`chunkbench defaults set boundary_model`, else CHUNKBENCH_BOUNDARY_MODEL, else "
                                  "MiniLM). An explicit model builds a collection of its own.")

    def chunker_options(self) -> dict[str, Any]:
        """The strategy options set (not empty), by name, as plain values (any strategy's: the collection spec
        keeps those its strategy takes)."""
        return {name: _plain(getattr(self, name)) for name in STRATEGIES.options()
                if getattr(self, name, None) is not None}

    @property
    def overflow_mode(self) -> str:
        return _plain(self.overflow)


def _option_fields() -> dict[str, Any]:
    """One run-config field per strategy option (every strategy's, merged by name: chunking.registry)."""
    fields: dict[str, Any] = {}
    for option in STRATEGIES.options().values():
        kind: Any = option.kind
        if option.choices:
            kind = Enum(f"{option.name.title().replace('_', '')}Choice", {c: c for c in option.choices})
        fields[option.name] = (Optional[kind], Field(default=None, description=f"{option.help()}; empty: the "
                                                                                "strategy's default", **option.bounds))
    return fields


def _registry_key() -> tuple:
    return tuple((s.name, tuple(s.option_names)) for s in STRATEGIES.values())


@lru_cache(maxsize=8)
def _config_classes(key: tuple) -> tuple[type[Config], type[Config]]:
    chunker = create_model("ChunkerConfig", __base__=ChunkingSettings, __doc__=ChunkingSettings.__doc__,
                           **_option_fields())
    expansion_default = list(STRATEGIES.with_capability("neighbor_expansion"))
    experiment = create_model(
        "ExperimentConfig", __base__=chunker,
        __doc__="Retrieval settings of one experiment run, plus the chunker settings naming the collection it scores.",
        top_k=(int, Field(default=5, description="Chunks retrieved per question.")),
        filter_by_document=(bool, Field(
            default=False, description="Search only the document of the question's reference (one document per "
                                       "question) instead of all documents (the Chroma protocol).")),
        neighbor_prev=(int, Field(default=0, description="Neighbor expansion: chunks added before each hit (0..5). "
                                                         + NEIGHBORS_DEFAULT_REASON)),
        neighbor_next=(int, Field(default=0, description="Neighbor expansion: chunks added after each hit (0..5).")),
        expansion_strategies=(list[str], Field(
            default=expansion_default, description="Strategies neighbor expansion applies to (default: those whose "
                                                   "chunks are windows of running text).")),
    )
    return chunker, experiment


def chunker_config() -> type[ChunkingSettings]:
    """The run config of ``chunk_collections``: sizes, window rule, boundary model and every strategy option,
    generated from the strategy registry as it is now (a strategy registered later is in the next call's)."""
    return _config_classes(_registry_key())[0]  # type: ignore[return-value]


def experiment_config() -> type[ChunkingSettings]:
    """The run config of ``experiment_results``: the chunker settings naming the collection, plus retrieval."""
    return _config_classes(_registry_key())[1]  # type: ignore[return-value]


class ParsingConfig(Config):
    """Parser settings (empty = the defaults); a changed value parses the documents again."""

    pdf_min_total_chars: Optional[int] = Field(
        default=None, description="PDF text-layer gate: a PDF with fewer non-blank characters in total is treated "
                                  "as scanned and rejected (default 100).")
    pdf_min_median_chars_per_page: Optional[int] = Field(
        default=None, description="PDF text-layer gate: a PDF with a lower median of characters per page is "
                                  "treated as scanned and rejected (default 40).")
    persian_digits: Optional[DigitStyle] = Field(
        default=None, description="Arabic-Indic and Persian digits are all rewritten to this one style: "
                                  "'ascii' (0-9, the default) or 'persian' (۰-۹).")

    def given(self) -> dict[str, Any]:
        return {k: _plain(v) for k, v in self.model_dump().items() if v is not None}


class ReportConfig(Config):
    """Which runs the reports show; both empty = the latest run of every configuration."""

    experiment_run_id: str = Field(
        default="", description="The reports of exactly this experiment run (the run ids are listed by "
                                "`chunkbench runs list` and on the decision board), written to reports/runs/run-<id>/ "
                                "with a link back to the latest reports. Empty: the latest reports.")
    batch: str = Field(
        default="", description="The reports of one batch: the runs of one `chunkbench run` or Dagster backfill "
                                "(the batch column of `chunkbench runs list`), compared with each other only, "
                                "written to reports/runs/batch-<id>/. Empty: the latest reports.")
