"""Run config of the assets: every chunker, parser and retrieval setting, typed and described (launchpad).

``chunk_collections`` and ``experiment_results`` share the chunker settings: an experiment
names the collection it scores by them (a non-default value builds a collection of its own),
and fails at once when the collection on disk was built otherwise. ``chunkbench run`` fills
both from its flags or a ``--config`` file.
"""

from enum import Enum
from typing import Any, Optional

from dagster import Config
from pydantic import Field

from chunkbench_core.provenance import OPTION_DESCRIPTIONS, ChunkerOptions

class Overflow(Enum):
    error = "error"
    truncate = "truncate"


class ThresholdMode(Enum):
    absolute = "absolute"
    percentile = "percentile"


class ProseChunker(Enum):
    semantic = "semantic"
    fixed_size = "fixed_size"


class BaseChunker(Enum):
    recursive = "recursive"
    fixed_size = "fixed_size"


class ContextFailure(Enum):
    error = "error"
    headings = "headings"


class DigitStyle(Enum):
    ascii = "ascii"
    persian = "persian"


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


NEIGHBORS_DEFAULT_REASON = (
    "Default 0: the leaderboard compares what each strategy retrieves, and expansion applies to fixed_size only "
    "(expansion_strategies), so expanding by default would give fixed_size up to seven times the context of the "
    "other strategies. The neighbor_sweep schedule measures 0/0 to 3/3 (the design's 3/3) side by side in "
    "leaderboard_by_setting."
)


class ChunkerConfig(Config):
    """Chunker settings; empty = the default for the strategy and the corpus model's window."""

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
    threshold_mode: Optional[ThresholdMode] = Field(
        default=None, description=OPTION_DESCRIPTIONS["threshold_mode"])
    percentile: Optional[float] = Field(default=None, description=OPTION_DESCRIPTIONS["percentile"])
    threshold: Optional[float] = Field(default=None, description=OPTION_DESCRIPTIONS["threshold"])
    min_chunk_size: Optional[int] = Field(default=None, description=OPTION_DESCRIPTIONS["min_chunk_size"])
    parent_chunk_size: Optional[int] = Field(default=None, description=OPTION_DESCRIPTIONS["parent_chunk_size"])
    prose_chunker: Optional[ProseChunker] = Field(
        default=None, description=OPTION_DESCRIPTIONS["prose_chunker"])
    base_chunker: Optional[BaseChunker] = Field(
        default=None, description=OPTION_DESCRIPTIONS["base_chunker"])
    on_context_failure: Optional[ContextFailure] = Field(
        default=None, description=OPTION_DESCRIPTIONS["on_context_failure"])

    def chunker_options(self) -> ChunkerOptions:
        return ChunkerOptions(**{name: _plain(getattr(self, name)) for name in ChunkerOptions.__dataclass_fields__})

    @property
    def overflow_mode(self) -> str:
        return _plain(self.overflow)


class ExperimentConfig(ChunkerConfig):
    """Retrieval settings of one experiment run, plus the chunker settings naming the collection it scores."""

    top_k: int = Field(default=5, description="Chunks retrieved per question.")
    filter_by_document: bool = Field(
        default=False, description="Search only the document of the question's reference (the design's protocol) "
                                   "instead of all documents (the Chroma protocol).")
    neighbor_prev: int = Field(default=0, description="Neighbor expansion: chunks added before each hit (0..5). "
                                                      + NEIGHBORS_DEFAULT_REASON)
    neighbor_next: int = Field(default=0, description="Neighbor expansion: chunks added after each hit (0..5).")
    expansion_strategies: list[str] = Field(
        default=["fixed_size"], description="Strategies neighbor expansion applies to (the design: fixed_size only).")


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
