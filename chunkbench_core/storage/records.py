"""The rows the pipeline stages record, as typed records: one class per results table they write.

A stage builds records (``DocumentRecord.failed(...)``, ``ChunkRecord.of(chunk, ...)``) and hands them to the
results store (:class:`chunkbench_core.storage.results_db.ResultsDB`'s ``record_*`` methods), which turns
them into the table's rows; no stage writes a row by hand. The field names are the column names of
:data:`chunkbench_core.storage.results_db.TABLES` (the store fills any column a record leaves out with NULL).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator

if TYPE_CHECKING:
    import pandas as pd

    from chunkbench_core.chunking import Chunk


def now() -> dt.datetime:
    """The time of a record: UTC, without a zone (the tables' TIMESTAMP columns)."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class Record:
    """A row of one results table (the subclass's ``TABLE``)."""

    TABLE = ""

    def row(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]  # every record is a dataclass


@dataclass
class DocumentRecord(Record):
    """One document of the corpus as the last parse left it (table ``documents``)."""

    TABLE = "documents"
    document: str
    status: str  # parsed | failed
    path: str | None = None
    sha256: str | None = None
    size_bytes: int | None = None
    error: str | None = None
    parser: str | None = None
    n_chars: int | None = None
    n_units: int | None = None
    warnings: str = "[]"  # JSON list
    n_captions: int | None = None
    caption_tokens: int | None = None
    parsed_at: dt.datetime = field(default_factory=now)


@dataclass
class ChunkRecord(Record):
    """One chunk of one collection build (table ``chunks``)."""

    TABLE = "chunks"
    chunk_id: str
    point_id: str | None
    strategy: str
    corpus_model: str
    document: str
    chunk_index: int
    start_offset: int
    end_offset: int
    token_count: int
    content_type: str
    heading_path: str  # JSON list
    parent_id: str | None
    role: str
    previous_chunk_id: str | None
    next_chunk_id: str | None
    context_source: str | None
    text: str
    embedded_text: str | None
    chunking_params: str  # JSON object
    variant: str
    build: str
    materialized_at: dt.datetime
    page_start: int | None = None  # first and last page the chunk spans (1-based); NULL without pages
    page_end: int | None = None

    @classmethod
    def of(
        cls,
        chunk: "Chunk",
        *,
        corpus_model: str,
        variant: str,
        build: str,
        chunking_params: str,
        point_id: str | None,
        at: dt.datetime,
    ) -> "ChunkRecord":
        return cls(
            chunk_id=chunk.chunk_id,
            point_id=point_id,
            strategy=chunk.strategy,
            corpus_model=corpus_model,
            document=chunk.document,
            chunk_index=chunk.chunk_index,
            start_offset=chunk.start,
            end_offset=chunk.end,
            token_count=chunk.token_count,
            content_type=chunk.content_type,
            heading_path=json.dumps(chunk.heading_path, ensure_ascii=False),
            parent_id=chunk.parent_id,
            role=chunk.role,
            previous_chunk_id=chunk.previous_chunk_id,
            next_chunk_id=chunk.next_chunk_id,
            context_source=chunk.context_source,
            text=chunk.text,
            embedded_text=chunk.embedded_text,
            chunking_params=chunking_params,
            variant=variant,
            build=build,
            materialized_at=at,
            page_start=chunk.page_start,
            page_end=chunk.page_end,
        )


@dataclass
class IndexCostRecord(Record):
    """What building one collection took (table ``index_costs``; the formulas: evaluation.cost)."""

    TABLE = "index_costs"
    strategy: str
    corpus_model: str
    variant: str
    collection: str
    n_chunks: int
    n_embedded: int
    embedded_tokens: int
    boundary_tokens: int
    index_seconds: float
    context_calls: int
    context_input_tokens: int
    context_output_tokens: int
    embedding_usd: float
    context_usd: float
    index_usd: float
    points: int
    storage_bytes: int
    built_at: dt.datetime = field(default_factory=now)
    # the build's index time had nothing been cached (estimate.index_time): measured, derived or unknown
    index_seconds_uncached: float | None = None
    index_time_source: str = "measured"
    cached_texts: int = 0


@dataclass
class UsageRecord(Record):
    """One embedding call's usage at one stage of a partition (table ``embedding_usage``)."""

    TABLE = "embedding_usage"
    strategy: str
    corpus_model: str
    stage: str  # chunks (corpus embeddings) | boundary (semantic cuts) | queries
    usage: dict[str, Any]  # EmbeddingUsage.as_row()
    recorded_at: dt.datetime = field(default_factory=now)

    def row(self) -> dict[str, Any]:
        return {
            **self.usage,
            "stage": self.stage,
            "strategy": self.strategy,
            "corpus_model": self.corpus_model,
            "recorded_at": self.recorded_at,
        }


@dataclass
class CollectionBuild:
    """What one collection build records at once: its chunks, its build record and its embedding usage, under
    the collection's results key (``rows_key``) and the build's own key for the chunks (its cost follows, once
    the collection's points are counted: ``ResultsDB.record_index_cost``)."""

    rows_key: str
    chunks_key: str
    chunks: list[ChunkRecord]
    collection: dict[str, Any]  # provenance.collection_row: what the collection was built from
    usage: list[UsageRecord]
    #: each chunk's cl100k token ids as stored (chunkbench_core.tokens.ids_bytes), in the order of ``chunks``;
    #: empty: the build stores none (its runs encode the texts)
    token_ids: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.token_ids and len(self.token_ids) != len(self.chunks):
            raise ValueError(
                f"a build's token ids go one per chunk: {len(self.token_ids)} for {len(self.chunks)} chunks"
            )

    def token_rows(self) -> "pd.DataFrame":
        """The ``chunk_tokens`` rows of the build, one per chunk (a frame: tens of thousands of rows, no dicts)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "chunk_id": [c.chunk_id for c in self.chunks],
                "build": [c.build for c in self.chunks],
                "n_chars": [len(c.text) for c in self.chunks],
                "token_ids": self.token_ids,
            }
        )


def rows(records: Iterable[Record]) -> list[dict[str, Any]]:
    return [r.row() for r in records]


@dataclass
class ExperimentRun:
    """One experiment run against one collection: its question rows (with every metric value) and its summary
    (counts, the metrics' means with their intervals, latency, costs), recorded as the ``question_results`` and
    ``experiment_metrics`` rows of the run (the store keeps their metric values long)."""

    experiment_run_id: str
    strategy: str
    corpus_model: str
    variant: str
    top_k: int
    neighbor_prev: int
    neighbor_next: int
    budgets: list[int]
    provenance: dict[str, Any]
    summary: dict[str, Any]
    questions: list[dict[str, Any]]
    created_at: dt.datetime = field(default_factory=now)
    #: how the questions' chunks were found (chunkbench_core.retrievers)
    retriever: str = "dense"
    #: shared (every question searches every document) or own_documents (each only those its evidence names)
    scope: str = "shared"

    def _ids(self) -> dict[str, Any]:
        return {
            "experiment_run_id": self.experiment_run_id,
            "strategy": self.strategy,
            "corpus_model": self.corpus_model,
            "retriever": self.retriever,
            "scope": self.scope,
            "top_k": self.top_k,
            "created_at": self.created_at,
        }

    def question_rows(self) -> Iterator[dict[str, Any]]:
        """The question rows, stamped like the run's row (a run's sweep variants carry other stamps), one at a
        time: 20,000 of them are written without a stamped copy of them all."""
        ids = self._ids()
        for question in self.questions:
            yield {**ids, **question}

    def run_row(self) -> dict[str, Any]:
        return {
            **self._ids(),
            **self.summary,
            "variant": self.variant,
            "neighbor_prev": self.neighbor_prev,
            "neighbor_next": self.neighbor_next,
            "budgets": json.dumps(list(self.budgets)),
            "provenance": json.dumps(self.provenance, sort_keys=True, ensure_ascii=False),
        }
