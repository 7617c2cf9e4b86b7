"""The expected wall time of a run, per corpus model x strategy and for parsing, before anything runs.

Inputs are what is known before the run: the documents (cl100k tokens of each parsed text, or file
sizes when nothing is parsed yet), the corpus models and strategies to run, the chunk size and
overlap, the question count, what the embedding cache already holds, and each engine's calibrated
rate (:mod:`chunkbench_core.estimate.calibration`). Nothing is chunked or embedded.

Per partition (corpus model x strategy), in the order a run builds them:

- **texts the corpus model embeds**, from the strategy's shape (registered with it, :func:`strategy_shape`): a
  document of ``T`` tokens becomes ``⌈(T − o) / (fill · size − o)⌉`` chunks, ``o`` the overlap
  it repeats on average (``overlap_share · chunk_overlap``: all of it for fixed windows, none for
  semantic groups) and ``fill`` how full its chunks run; contextual_retrieval puts a context
  before each. When a past build of the same strategy and chunk sizes was recorded
  (:class:`ObservedBuild`), its texts and tokens per corpus token replace the shape's guess;
- **the boundary model's pass** of a semantic strategy: every token once, in units of the
  strategy's kind (sentences, paragraphs, 50-token pieces). Units of the same kind and boundary
  model are the same texts for every strategy and corpus model, so only the first partition of
  a run pays for them (the embedding cache serves the others);
- **contextual_retrieval's LLM calls** when an LLM writes the contexts: one per chunk, paid by the
  first corpus model only (contexts are cached by document and chunk);
- **chunking** (tokenizing, splitting, checking: seconds per corpus token), **embedding** (the
  texts not in the cache, at the engine's rate), **indexing** (points written to the vector store
  and chunk rows to DuckDB), **retrieval** (each question embedded, by the first strategy of a
  model only, then searched: brute force in the embedded Qdrant, so time grows with the
  points; then each question checked and scored, and the LLM's answer and judge calls when one is
  configured) and a fixed **overhead** per partition (a pipeline step, its bookkeeping:
  :class:`PipelineTiming`).

Parsing: every document not parsed yet, at its format's rate (:class:`ParseRate`: seconds per
document plus seconds per MB; a default per format until parses were recorded on this machine).
Each engine's model load (its warm-up) counts once per run; the leaderboard and reports at the end.

Every stage's time is multiplied by the correction learnt from past runs for that engine and
stage (:mod:`chunkbench_core.estimate.feedback`); the uncorrected seconds are kept beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from .calibration import REMOTE, CalibrationStore, EngineRate, TimedBatch, fit_time, now_text
from .errors import EstimateError

#: the stages of a partition, in the order they run
PARTITION_STAGES = ("chunking", "boundary", "context", "embedding", "indexing", "retrieval", "overhead")
#: the stages of a run outside the partitions
RUN_STAGES = ("parsing", "warmup", "finishing")
#: the correction key of parsing (it belongs to no engine)
PARSING_KEY = "parsing"
#: a run longer than this (seconds) gets the cheaper options named
LONG_RUN_SECONDS = 30 * 60


# -- documents -----------------------------------------------------------------------------------
#: cl100k tokens per byte of a file not parsed yet, by format: plain text and Markdown run about 4.5 bytes
#: a token (0.21-0.22 measured on the sample corpus); DOCX files are zipped XML with styles (0.04-0.05 on
#: the sample's); PDFs carry fonts and images (a quarterly filing gives about 0.03-0.06). Rough: the
#: tokens per byte of the corpus's parsed files of the same format replace them (:func:`tokens_per_byte`),
#: and the parsed text gives the exact count.
DEFAULT_TOKENS_PER_BYTE: dict[str, float] = {
    "txt": 0.22,
    "md": 0.22,
    "csv": 0.3,
    "pdf": 0.05,
    "docx": 0.05,
    "doc": 0.1,
    "xlsx": 0.3,
}
UNKNOWN_TOKENS_PER_BYTE = 0.1


def document_format(name: str) -> str:
    """The format of a document by its extension, lower case without the dot ("none" without one)."""
    return PurePosixPath(name).suffix.lower().lstrip(".") or "none"


@dataclass(frozen=True)
class DocumentSize:
    """One document as the estimate sees it: cl100k tokens of its parsed text (None before it is parsed),
    its file size, and whether a parse is already stored (then parsing it costs nothing)."""

    document: str
    size_bytes: int
    tokens: int | None = None
    parsed: bool = False

    @property
    def format(self) -> str:
        return document_format(self.document)


def documents_from_parsed(
    parsed: Iterable[Any], sizes: Mapping[str, int] | None = None, count: Callable[[str], int] | None = None
) -> list[DocumentSize]:
    """DocumentSizes of parsed documents (``ParsedDocument``: ``document`` and ``markdown``), counted in cl100k
    tokens; ``sizes``: their file sizes by name, when known."""
    if count is None:
        from chunkbench_core.tokens import count_tokens

        count = count_tokens
    sizes = sizes or {}
    return [
        DocumentSize(
            d.document, int(sizes.get(d.document, len(d.markdown.encode("utf-8")))), int(count(d.markdown)), True
        )
        for d in parsed
    ]


def documents_from_scan(
    sources: Iterable[Any], parsed: Mapping[str, int] | None = None, stored: Iterable[str] = ()
) -> list[DocumentSize]:
    """DocumentSizes of a corpus scan (``SourceDocument``: ``document`` and ``size_bytes``); ``parsed``: the
    tokens of those already parsed, by name; ``stored``: names whose parse is stored though not counted."""
    parsed = parsed or {}
    stored = set(stored)
    return [
        DocumentSize(
            s.document, int(s.size_bytes), parsed.get(s.document), s.document in parsed or s.document in stored
        )
        for s in sources
    ]


def tokens_per_byte(documents: Sequence[DocumentSize]) -> dict[str, float]:
    """Tokens per byte by format: the defaults, replaced by what the corpus's parsed files of a format gave."""
    rates = dict(DEFAULT_TOKENS_PER_BYTE)
    totals: dict[str, list[float]] = {}
    for d in documents:
        if d.tokens is not None and d.size_bytes > 0:
            entry = totals.setdefault(d.format, [0.0, 0.0])
            entry[0] += d.tokens
            entry[1] += d.size_bytes
    rates.update({fmt: tokens / size for fmt, (tokens, size) in totals.items() if size > 0})
    return rates


def document_tokens(documents: Sequence[DocumentSize]) -> tuple[list[float], int]:
    """Each document's tokens (the parsed count, or its size times its format's tokens per byte), and how many
    were guessed from file sizes."""
    rates = tokens_per_byte(documents)
    out, guessed = [], 0
    for d in documents:
        if d.tokens is not None:
            out.append(float(d.tokens))
        else:
            out.append(d.size_bytes * rates.get(d.format, UNKNOWN_TOKENS_PER_BYTE))
            guessed += 1
    return out, guessed


# -- parsing -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParseRate:
    """Seconds to parse one document of a format: ``seconds_per_document + seconds_per_mb · MB``."""

    format: str
    seconds_per_document: float
    seconds_per_mb: float
    source: str = "default"  # "default" or "recorded"
    documents: int = 0  # parses it was fitted on

    def seconds(self, size_bytes: float) -> float:
        return self.seconds_per_document + self.seconds_per_mb * size_bytes / 1_000_000


#: Parsing defaults per format (seconds per document, seconds per MB), set high on purpose: text PDFs run
#: a page or two per 0.1 s; a spreadsheet is read cell by cell; a legacy .doc is converted by LibreOffice
#: first. Parses recorded on this machine replace them (:func:`parse_rates_from_records`).
DEFAULT_PARSE_RATES: dict[str, ParseRate] = {
    fmt: ParseRate(fmt, per_document, per_mb)
    for fmt, per_document, per_mb in (
        ("pdf", 0.3, 2.0),
        ("docx", 0.2, 1.0),
        ("doc", 3.0, 1.0),
        ("xlsx", 0.3, 4.0),
        ("csv", 0.05, 1.0),
        ("md", 0.02, 0.3),
        ("txt", 0.02, 0.3),
        ("none", 0.1, 1.0),
    )
}
UNKNOWN_PARSE_RATE = ParseRate("other", 0.3, 2.0)


def parse_rates_from_records(rows: Iterable[Mapping[str, Any]], min_documents: int = 3) -> dict[str, ParseRate]:
    """Parse rates fitted on recorded parses (``document`` or ``format``, ``size_bytes``, ``parse_seconds``),
    per format with at least ``min_documents`` parses."""
    by_format: dict[str, list[TimedBatch]] = {}
    for row in rows:
        try:
            seconds, size = float(row["parse_seconds"]), float(row["size_bytes"])
        except (KeyError, TypeError, ValueError):
            continue
        if not (math.isfinite(seconds) and math.isfinite(size)) or seconds < 0 or size < 0:
            continue
        fmt = str(row.get("format") or document_format(str(row.get("document") or "")))
        by_format.setdefault(fmt, []).append(TimedBatch(1, size / 1_000_000, 0.0, seconds))
    rates = {}
    for fmt, batches in by_format.items():
        if len(batches) >= min_documents:
            per_document, per_mb = fit_time(batches)
            rates[fmt] = ParseRate(fmt, per_document, per_mb, "recorded", len(batches))
    return rates


def load_parse_rates(store: CalibrationStore, machine: str) -> dict[str, ParseRate]:
    """The recorded parse rates of this machine kept in the calibration file."""
    out = {}
    for fmt, raw in (store.read()["parse_rates"].get(machine) or {}).items():
        try:
            out[fmt] = ParseRate(**raw)
        except TypeError:
            continue
    return out


def save_parse_rates(store: CalibrationStore, machine: str, rates: Mapping[str, ParseRate]) -> None:
    from dataclasses import asdict

    def change(data: dict[str, Any]) -> None:
        data["parse_rates"].setdefault(machine, {}).update({fmt: asdict(r) for fmt, r in rates.items()})

    store.update(change)


# -- strategies ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class StrategyShape:
    """What a strategy embeds, per corpus token, without running it (each strategy registers its own:
    ``register_strategy(shape=...)``).

    The shipped strategies' shapes were measured with the real chunkers (MiniLM as the boundary model, the
    strategies' default cut rules, 192/48 tokens) on two kinds of text: the Chroma benchmark's long plain documents
    (State of the Union, chat logs) and the sample corpus's short sectioned ones (handbook, FAQ, policy, release
    notes); each value lies between the two. Fixed windows run full; recursive cuts at a separator before the size
    and repeats about half the overlap; semantic groups cut at the document's largest distances (the top 5 %)
    mostly run to the size. A recorded build of the corpus replaces them (:class:`ObservedBuild`).

    ``fill``: an embedded chunk's mean length (its overlap included) as a share of the chunk size;
    ``overlap_share``: how much of chunk_overlap a chunk repeats on average (0: none; a recursive cut at a
    separator repeats less than the full overlap); ``boundary_unit``: what the boundary model embeds
    (None: nothing) and ``boundary_unit_tokens`` the mean cl100k tokens of one; ``context``: a context
    before each embedded text (``context_tokens`` of them from headings, an LLM's instead when one writes
    them); ``chunking_seconds_per_token``: the chunker's own work (split, count, check), embeddings left out.
    """

    fill: float
    overlap_share: float = 1.0
    boundary_unit: str | None = None
    boundary_unit_tokens: float = 0.0
    context: bool = False
    context_tokens: float = 0.0
    chunking_seconds_per_token: float = 2e-6


#: a strategy registered without a shape is estimated as size-driven chunks half full (and said to be)
UNKNOWN_SHAPE = StrategyShape(fill=0.5, overlap_share=0.5)


def strategy_shape(strategy: str) -> StrategyShape:
    """The shape the strategy registered with (``register_strategy(shape=...)``), else :data:`UNKNOWN_SHAPE`."""
    from chunkbench_core.chunking import STRATEGIES

    registered = STRATEGIES.get(strategy)
    return StrategyShape(**registered.shape) if registered is not None and registered.shape else UNKNOWN_SHAPE


#: tokens an LLM writes for one context (as in the cost estimate)
LLM_CONTEXT_TOKENS = 60.0


@dataclass(frozen=True)
class ObservedBuild:
    """A recorded build of a strategy (its ``index_costs`` row) on a corpus of ``corpus_tokens`` tokens: the
    texts it embedded and their tokens, at the chunk sizes it was built with."""

    strategy: str
    chunk_size: int
    chunk_overlap: int
    corpus_tokens: float
    n_embedded: int
    embedded_tokens: float
    boundary_texts: int = 0

    def matches(self, strategy: str, chunk_size: int, chunk_overlap: int) -> bool:
        return (self.strategy, self.chunk_size, self.chunk_overlap) == (
            strategy,
            chunk_size,
            chunk_overlap,
        ) and self.corpus_tokens > 0


@dataclass(frozen=True)
class StrategyWork:
    """What one strategy does to a corpus: texts and tokens the corpus model embeds, boundary units, chunks."""

    texts: float
    tokens: float
    boundary_texts: float
    boundary_tokens: float
    chunks: float
    source: str  # "shape" or "recorded build"


def strategy_work(
    strategy: str,
    tokens: Sequence[float],
    chunk_size: int,
    chunk_overlap: int,
    llm_context: bool = False,
    observed: ObservedBuild | None = None,
) -> StrategyWork:
    """The texts ``strategy`` embeds for documents of ``tokens`` cl100k tokens each (module rule)."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise EstimateError(f"chunk_size must be a positive integer (cl100k tokens), got {chunk_size!r}")
    if isinstance(chunk_overlap, bool) or not isinstance(chunk_overlap, int) or not 0 <= chunk_overlap < chunk_size:
        raise EstimateError(
            f"chunk_overlap must be an integer from 0 to chunk_size - 1 ({chunk_size - 1}), got {chunk_overlap!r}"
        )
    shape = strategy_shape(strategy)
    total = float(sum(tokens))
    boundary_texts = 0.0
    if shape.boundary_unit:
        unit = min(shape.boundary_unit_tokens, float(chunk_size))
        boundary_texts = sum(math.ceil(t / unit) for t in tokens if t > 0)
    if observed is not None and observed.matches(strategy, chunk_size, chunk_overlap):
        scale = total / observed.corpus_tokens
        texts = observed.n_embedded * scale
        boundary = observed.boundary_texts * scale if observed.boundary_texts else boundary_texts
        return StrategyWork(
            texts, observed.embedded_tokens * scale, boundary, total if boundary else 0.0, texts, "recorded build"
        )
    length = max(1.0, shape.fill * chunk_size)
    overlap = chunk_overlap * shape.overlap_share
    stride = max(1.0, length - overlap)
    texts = embedded = 0.0
    for t in tokens:
        if t <= 0:
            continue
        n = 1 if t <= length else math.ceil((t - overlap) / stride)
        texts += n
        embedded += t + (n - 1) * overlap
    if shape.context:
        embedded += texts * (LLM_CONTEXT_TOKENS if llm_context else shape.context_tokens)
    return StrategyWork(
        texts,
        embedded,
        float(boundary_texts),
        total if shape.boundary_unit else 0.0,
        texts,
        "shape" if strategy_shape(strategy) is not UNKNOWN_SHAPE else "unknown strategy: size-driven guess",
    )


# -- the other costs -----------------------------------------------------------------------------
@dataclass(frozen=True)
class StoreTiming:
    """The vector store: writing a point (``seconds_per_point`` at 768 dimensions, scaled by the model's), a
    search (``seconds_per_query + seconds_per_searched_point · points``, or the ``filtered_`` cost per point
    with a per-document filter), and a chunk row written to DuckDB. The defaults are the embedded Qdrant
    engine's (qdrant-edge) as measured on this project's machines: 20,000 points of 768 dimensions written
    in under a second, an exact filtered search over them in about half a millisecond; the other stores in
    :data:`STORE_TIMINGS`."""

    seconds_per_point: float = 0.05e-3
    seconds_per_query: float = 0.001
    seconds_per_searched_point: float = 0.1e-6
    filtered_seconds_per_searched_point: float = 0.05e-6
    seconds_per_chunk_row: float = 0.1e-3
    # a collection created or replaced, its rows and records written: the indexing stage of the runs recorded on
    # this project's 2-core machines, less their points and rows, per build (0.08 to 0.4 s; 0.5 counted each of
    # the demo's 18 builds 0.4 s too long)
    seconds_per_build: float = 0.2


#: Store timings by engine (``VectorStore.engine``). "client": qdrant-client's local mode, a search in pure
#: Python (measured: 20,000 points written in about 17 s on a path, a search ~34 ms, ~150 ms filtered);
#: "server": a Qdrant server on the network, a round trip per search and per upsert batch (a guess on the
#: safe side: the first run's correction replaces it).
STORE_TIMINGS: dict[str, StoreTiming] = {
    "edge": StoreTiming(),
    "client": StoreTiming(
        seconds_per_point=0.85e-3,
        seconds_per_query=0.002,
        seconds_per_searched_point=1.6e-6,
        filtered_seconds_per_searched_point=7.4e-6,
    ),
    "server": StoreTiming(
        seconds_per_point=0.2e-3,
        seconds_per_query=0.005,
        seconds_per_searched_point=0.05e-6,
        filtered_seconds_per_searched_point=0.05e-6,
    ),
}


@dataclass(frozen=True)
class PipelineTiming:
    """The fixed costs around the work: a pipeline step per partition (``partition_overhead_seconds``: a
    Dagster run of the partition's assets, its events and metadata), an experiment's own work besides the
    searches (``experiment_seconds`` once, ``seconds_per_question`` for checking and scoring each question,
    writing its rows), and the leaderboard and reports at the end (``finishing_seconds`` plus
    ``finishing_seconds_per_partition``). Rough values on the safe side; the corrections learnt from runs
    adjust them. A run outside the pipeline (a script calling the core functions) has no step overhead
    and no finish: ``PipelineTiming(partition_overhead_seconds=0, finishing_seconds=0,
    finishing_seconds_per_partition=0)``.

    The values are what the stage clock measured in the runs recorded on this project's 2-core machines
    (``run_estimates``: each partition's step less its stages, the retrieval stage, the finishing stage; runs of
    2 to 18 partitions, idle and busy): a step's overhead 0.6 to 1.3 s (median about 0.9; 1.0 here), an
    experiment of 30 questions 0.45 to 0.55 s besides its searches and query embeddings, the finish 2 to 6 s
    (about 2.5 s plus 0.1 s a partition). The first values, guessed on the safe side (3 s a step, 10 s plus
    0.5 s a partition for the finish), made the demo's estimate twice its time: 72 of its 135 s."""

    partition_overhead_seconds: float = 1.0
    experiment_seconds: float = 0.25
    seconds_per_question: float = 0.005
    finishing_seconds: float = 2.5
    finishing_seconds_per_partition: float = 0.1


@dataclass(frozen=True)
class LLMTiming:
    """An LLM's calls: None when no LLM is configured (no contexts, answers or judge calls)."""

    seconds_per_call: float = 3.0
    answers: bool = True  # answer and judge each question (2 calls per question and partition)


@dataclass(frozen=True)
class RunShape:
    """What is run: models x strategies in the run's order, sizes, questions and the fixed costs (``store``: the
    vector store's timing; ``pipeline``: the steps around the work; ``llm``: the LLM's calls, None without one)."""

    corpus_models: Sequence[str]
    strategies: Sequence[str]
    chunk_size: int
    chunk_overlap: int
    n_questions: int = 0
    question_tokens: float = 20.0
    filter_by_document: bool = False
    boundary_model: str | None = None
    dimensions: Mapping[str, int] = field(default_factory=dict)
    cache_enabled: bool = True
    store: StoreTiming = field(default_factory=StoreTiming)
    pipeline: PipelineTiming = field(default_factory=PipelineTiming)
    llm: LLMTiming | None = None

    def __post_init__(self) -> None:
        if not self.corpus_models:
            raise EstimateError(
                "no corpus model to estimate: name at least one (or leave the choice to the "
                "registry's available models)"
            )
        if not self.strategies:
            raise EstimateError("no strategy to estimate: name at least one")
        if isinstance(self.n_questions, bool) or not isinstance(self.n_questions, int) or self.n_questions < 0:
            raise EstimateError(f"n_questions must be an integer >= 0, got {self.n_questions!r}")


#: cached texts of a partition's corpus-model pass: a callable (corpus model, strategy, predicted texts) ->
#: texts already in the cache, or {(corpus model, strategy): count}
CachedTexts = Callable[[str, str, int], int] | Mapping[tuple[str, str], int] | None


def _cached_count(cached: CachedTexts, model: str, strategy: str, texts: int) -> int:
    if cached is None:
        return 0
    value = cached(model, strategy, texts) if callable(cached) else cached.get((model, strategy), 0)
    return max(0, min(texts, int(value or 0)))


def coverage_cache(fractions: Mapping[tuple[str, str], float]) -> Callable[[str, str, int], int]:
    """A CachedTexts from the share of each partition's texts the cache holds (:func:`cache_coverage`)."""

    def cached(model: str, strategy: str, texts: int) -> int:
        return round(texts * max(0.0, min(1.0, fractions.get((model, strategy), 0.0))))

    return cached


def text_keys(texts: Iterable[str], prefix: str = "") -> list[str]:
    """The embedding cache's keys of ``texts``: sha256 of each text with the model's task prefix applied."""
    import hashlib

    return [hashlib.sha256((prefix + t).encode("utf-8")).hexdigest() for t in texts]


def cache_coverage(
    previous: Mapping[str, Sequence[str]],
    document_tokens: Mapping[str, float],
    unchanged: Iterable[str],
    count_cached: Callable[[list[str]], int],
    prefix: str = "",
) -> float:
    """The share of a partition's texts the embedding cache holds, without chunking anything.

    ``previous``: the embedded texts of the partition's last build by document (its ``chunks`` rows);
    ``unchanged``: documents whose content is the same since then; ``count_cached(keys)``: how many of the
    keys the cache holds. The last build's texts of the unchanged documents are probed (their keys, with the
    model's ``prefix``); the hit rate, times those documents' share of the corpus tokens, is the share.
    """
    keep = [d for d in unchanged if d in previous and d in document_tokens]
    total = float(sum(document_tokens.values()))
    texts = [t for d in keep for t in previous[d]]
    if not texts or total <= 0:
        return 0.0
    hits = max(0, min(len(texts), int(count_cached(text_keys(texts, prefix)))))
    return hits / len(texts) * sum(document_tokens[d] for d in keep) / total


# -- the estimate --------------------------------------------------------------------------------
@dataclass(frozen=True)
class PartitionEstimate:
    """The expected time of one corpus model x strategy, by stage (corrected), and what it embeds."""

    corpus_model: str
    strategy: str
    texts: int
    cached: int
    tokens: float
    boundary_texts: int
    boundary_cached: int
    context_calls: int
    seconds: Mapping[str, float]
    raw_seconds: Mapping[str, float]
    source: str = "shape"

    @property
    def total(self) -> float:
        return float(sum(self.seconds.values()))

    @property
    def to_embed(self) -> int:
        return self.texts - self.cached


@dataclass(frozen=True)
class RunEstimate:
    """The expected wall time of a run: its partitions, parsing, the models' warm-ups and the finish."""

    partitions: tuple[PartitionEstimate, ...]
    parsing_seconds: float
    raw_parsing_seconds: float
    documents_to_parse: Mapping[str, int]  # format -> documents not parsed yet
    warmup_seconds: Mapping[str, float]  # corpus or boundary model -> its load, once per run
    finishing_seconds: float
    rates: Mapping[str, EngineRate]
    n_documents: int
    corpus_tokens: float
    tokens_guessed: int  # documents whose tokens come from their file size
    keys: Mapping[str, str] = field(default_factory=dict)  # model -> the id of its EngineKey (corrections)
    boundary_model: str | None = None
    created_at: str = ""

    @property
    def total(self) -> float:
        return (
            sum(p.total for p in self.partitions)
            + self.parsing_seconds
            + sum(self.warmup_seconds.values())
            + self.finishing_seconds
        )

    def by_model(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for p in self.partitions:
            out[p.corpus_model] = out.get(p.corpus_model, 0.0) + p.total
        for model, seconds in self.warmup_seconds.items():
            if model in out:
                out[model] += seconds
        return out

    def by_strategy(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for p in self.partitions:
            out[p.strategy] = out.get(p.strategy, 0.0) + p.total
        return out

    def scalable_seconds(self) -> float:
        """The part of the total that grows with the corpus (everything but warm-ups, per-partition overhead,
        the questions and the finish): what a sampled corpus shrinks."""
        per_partition = sum(
            p.seconds.get(s, 0.0)
            for p in self.partitions
            for s in ("chunking", "boundary", "context", "embedding", "indexing")
        )
        return per_partition + self.parsing_seconds

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (what a run keeps to compare with its actual times)."""
        return {
            "created_at": self.created_at,
            "total_seconds": self.total,
            "parsing_seconds": self.parsing_seconds,
            "raw_parsing_seconds": self.raw_parsing_seconds,
            "documents_to_parse": dict(self.documents_to_parse),
            "warmup_seconds": dict(self.warmup_seconds),
            "finishing_seconds": self.finishing_seconds,
            "n_documents": self.n_documents,
            "corpus_tokens": self.corpus_tokens,
            "tokens_guessed": self.tokens_guessed,
            "keys": dict(self.keys),
            "boundary_model": self.boundary_model,
            "rates": {m: {"source": r.source, "key": r.key.id} for m, r in self.rates.items()},
            "partitions": [
                {
                    "corpus_model": p.corpus_model,
                    "strategy": p.strategy,
                    "texts": p.texts,
                    "cached": p.cached,
                    "tokens": p.tokens,
                    "boundary_texts": p.boundary_texts,
                    "boundary_cached": p.boundary_cached,
                    "context_calls": p.context_calls,
                    "seconds": dict(p.seconds),
                    "raw_seconds": dict(p.raw_seconds),
                    "source": p.source,
                }
                for p in self.partitions
            ],
        }


Corrections = Callable[[str, str], float] | None


def _correction(corrections: Corrections, key_id: str, stage: str) -> float:
    if corrections is None:
        return 1.0
    value = corrections(key_id, stage)
    return value if math.isfinite(value) and value > 0 else 1.0


@dataclass(frozen=True)
class Learnt:
    """What past runs and this machine tell the estimate: ``cached``, the texts the embedding cache holds per
    partition; ``corrections(key id, stage)``, the learnt corrections (``CalibrationStore.correction``);
    ``observed``, recorded builds by strategy; ``tokens_per_cl100k``, a model's tokens per cl100k token measured
    on this corpus (else its calibration's); ``parse_rates``, recorded parse rates by format (the defaults fill
    the rest)."""

    cached: CachedTexts = None
    corrections: Corrections = None
    observed: Mapping[str, ObservedBuild] = field(default_factory=dict)
    tokens_per_cl100k: Mapping[str, float] = field(default_factory=dict)
    parse_rates: Mapping[str, ParseRate] = field(default_factory=dict)


def estimate_run(
    documents: Sequence[DocumentSize], run: RunShape, rates: Mapping[str, EngineRate], learnt: Learnt | None = None
) -> RunEstimate:
    """The expected wall time of ``run`` on ``documents`` (module rule).

    ``rates``: an EngineRate of every corpus model and of the boundary model (a missing one is an error
    naming it: calibrate it first); ``run`` carries the store's, the pipeline's and the LLM's timing;
    ``learnt``: what past runs left (the cache's texts, corrections, observed builds, parse rates).
    """
    store, pipeline, llm = run.store, run.pipeline, run.llm
    learnt = learnt or Learnt()
    cached, corrections, parse_rates = learnt.cached, learnt.corrections, learnt.parse_rates
    observed = learnt.observed
    ratios = learnt.tokens_per_cl100k
    boundary_model = run.boundary_model
    needs_boundary = any(strategy_shape(s).boundary_unit for s in run.strategies)
    missing = [
        m
        for m in (*run.corpus_models, *([boundary_model] if needs_boundary and boundary_model else []))
        if m not in rates
    ]
    if missing:
        raise EstimateError(
            f"no calibrated rate for {', '.join(sorted(set(missing)))}: calibrate the engine "
            "(a few seconds, cached) or record a run of a remote model first"
        )
    if needs_boundary and not boundary_model:
        raise EstimateError("semantic strategies need the boundary model's rate: give RunShape.boundary_model")
    keys = {m: rates[m].key.id for m in rates}
    tokens, guessed = document_tokens(documents)
    total_tokens = float(sum(tokens))
    partitions: list[PartitionEstimate] = []
    paid_units: set[tuple[str, str]] = set()
    paid_contexts: set[str] = set()
    queried: set[str] = set()
    for model in run.corpus_models:
        rate = rates[model]
        ratio = ratios.get(model)
        dimension = int(run.dimensions.get(model, 768))
        for strategy in run.strategies:
            shape = strategy_shape(strategy)
            llm_context = llm is not None and shape.context
            work = strategy_work(
                strategy, tokens, run.chunk_size, run.chunk_overlap, llm_context, observed.get(strategy)
            )
            texts = round(work.texts)
            n_cached = _cached_count(cached, model, strategy, texts)
            uncached_share = (texts - n_cached) / texts if texts else 0.0
            raw: dict[str, float] = dict.fromkeys(PARTITION_STAGES, 0.0)
            raw["chunking"] = total_tokens * shape.chunking_seconds_per_token
            boundary_texts = boundary_cached = 0
            if shape.boundary_unit and boundary_model:
                boundary_texts = round(work.boundary_texts)
                unit = (boundary_model, shape.boundary_unit)
                boundary_cached = boundary_texts if run.cache_enabled and unit in paid_units else 0
                paid_units.add(unit)
                if boundary_texts > boundary_cached:
                    raw["boundary"] = rates[boundary_model].seconds(
                        boundary_texts, work.boundary_tokens, ratios.get(boundary_model)
                    )
            context_calls = 0
            if llm_context and llm is not None:
                context_calls = round(work.chunks)
                if strategy not in paid_contexts or not run.cache_enabled:
                    raw["context"] = context_calls * llm.seconds_per_call
                paid_contexts.add(strategy)
            raw["embedding"] = rate.seconds(texts * uncached_share, work.tokens * uncached_share, ratio)
            raw["indexing"] = store.seconds_per_build + texts * (
                store.seconds_per_point * dimension / 768 + store.seconds_per_chunk_row
            )
            per_point = (
                store.filtered_seconds_per_searched_point
                if run.filter_by_document
                else store.seconds_per_searched_point
            )
            search = run.n_questions * (store.seconds_per_query + per_point * texts)
            questions = 0.0
            if model not in queried or not run.cache_enabled:
                questions = rate.seconds(run.n_questions, run.n_questions * run.question_tokens, ratio)
            queried.add(model)
            answers = 2 * run.n_questions * llm.seconds_per_call if llm is not None and llm.answers else 0.0
            scoring = pipeline.experiment_seconds + run.n_questions * pipeline.seconds_per_question
            raw["retrieval"] = search + questions + answers + scoring
            raw["overhead"] = pipeline.partition_overhead_seconds
            seconds = {}
            for stage, value in raw.items():
                key = keys.get(boundary_model or model, keys[model]) if stage == "boundary" else keys[model]
                seconds[stage] = value * _correction(corrections, key, stage)
            partitions.append(
                PartitionEstimate(
                    model,
                    strategy,
                    texts,
                    n_cached,
                    work.tokens,
                    boundary_texts,
                    boundary_cached,
                    context_calls,
                    seconds,
                    raw,
                    work.source,
                )
            )
    to_parse: dict[str, int] = {}
    raw_parsing = 0.0
    rates_by_format = {**DEFAULT_PARSE_RATES, **(parse_rates or {})}
    for d in documents:
        if not d.parsed:
            to_parse[d.format] = to_parse.get(d.format, 0) + 1
            raw_parsing += rates_by_format.get(d.format, UNKNOWN_PARSE_RATE).seconds(d.size_bytes)
    models_used = [*run.corpus_models, *([boundary_model] if needs_boundary and boundary_model else [])]
    warmup = {m: rates[m].warmup_seconds for m in dict.fromkeys(models_used) if rates[m].key.machine != REMOTE}
    return RunEstimate(
        partitions=tuple(partitions),
        parsing_seconds=raw_parsing * _correction(corrections, PARSING_KEY, "parsing"),
        raw_parsing_seconds=raw_parsing,
        documents_to_parse=to_parse,
        warmup_seconds=warmup,
        finishing_seconds=pipeline.finishing_seconds + pipeline.finishing_seconds_per_partition * len(partitions),
        rates=dict(rates),
        n_documents=len(documents),
        corpus_tokens=total_tokens,
        tokens_guessed=guessed,
        keys=keys,
        boundary_model=boundary_model if needs_boundary else None,
        created_at=now_text(),
    )


# -- what a person reads -------------------------------------------------------------------------
def duration(seconds: float) -> str:
    """``45 s``, ``6 min``, ``1 h 20 min``, ``2 days 3 h``: rounded the way a person says it."""
    if not math.isfinite(seconds):
        return "unknown"
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{max(1, round(seconds))} s" if seconds >= 0.5 else "under 1 s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} day{'s' if days > 1 else ''} {hours} h" if hours else f"{days} day{'s' if days > 1 else ''}"


#: what a sampled corpus of n documents keeps, in words ("it keeps 12 of 27 questions, ..."); raises EstimateError
#: when the CLI would refuse that sample (then it is not suggested)
SampleTeller = Callable[[int], str]


def render_estimate(
    estimate: RunEstimate,
    limit_seconds: float = LONG_RUN_SECONDS,
    n_evidence_documents: int | None = None,
    tell_sample: SampleTeller | None = None,
) -> str:
    """The estimate as a person reads it in a terminal: per corpus model and strategy the texts to embed, those
    the cache holds and the expected time; parsing, the total, where the rates come from, and the cheaper
    options when the run is expected to take longer than ``limit_seconds``."""
    rows = [("corpus model", "strategy", "texts", "cached", "time")]
    for p in estimate.partitions:
        rows.append((p.corpus_model, p.strategy, f"{p.texts:,}", f"{p.cached:,}", duration(p.total)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["expected time on this machine:"]
    for i, row in enumerate(rows):
        lines.append(
            "  "
            + "  ".join(
                cell.ljust(widths[j]) if j < 2 else cell.rjust(widths[j]) for j, cell in enumerate(row)
            ).rstrip()
        )
        if i == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    n_parse = sum(estimate.documents_to_parse.values())
    if n_parse:
        formats = ", ".join(
            f"{n} {fmt.upper()}"
            for fmt, n in sorted(estimate.documents_to_parse.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        lines.append(f"parsing: {n_parse} document(s) to parse ({formats}), about {duration(estimate.parsing_seconds)}")
    else:
        lines.append(
            f"parsing: every document is parsed already ({estimate.n_documents:,} documents, "
            f"{estimate.corpus_tokens:,.0f} tokens)"
        )
    if estimate.tokens_guessed:
        lines.append(
            f"  ({estimate.tokens_guessed} document(s) counted from their file size: the texts are a "
            "rough guess until they are parsed)"
        )
    sources = []
    for model, rate in estimate.rates.items():
        where = {
            "measured": "timed on this machine",
            "recorded": "from recorded runs",
            "default": "a conservative default, no run recorded yet",
        }[rate.source]
        sources.append(f"{model}: {where}")
    if sources:
        lines.append("rates: " + "; ".join(sources))
    lines.append(f"total: about {duration(estimate.total)}")
    advice = cheaper_options(estimate, limit_seconds, n_evidence_documents, tell_sample)
    if advice:
        lines.append(advice)
    return "\n".join(lines)


def _share(part: float, total: float) -> str:
    return f"{100 * part / total:.0f}%" if total > 0 else "0%"


def sample_size_within(
    estimate: RunEstimate, limit_seconds: float, n_evidence_documents: int | None = None
) -> int | None:
    """The documents a sampled corpus could keep for the run to fit in ``limit_seconds`` (the corpus-bound
    time taken as proportional to the documents kept), or None when no sample fits or none is needed."""
    if estimate.total <= limit_seconds or estimate.n_documents < 2:
        return None
    scalable = estimate.scalable_seconds()
    fixed = estimate.total - scalable
    if scalable <= 0 or fixed >= limit_seconds:
        return None
    n = int(estimate.n_documents * (limit_seconds - fixed) / scalable)
    if n < max(1, n_evidence_documents or 1) or n >= estimate.n_documents:
        return None
    return n


def cheaper_options(
    estimate: RunEstimate,
    limit_seconds: float = LONG_RUN_SECONDS,
    n_evidence_documents: int | None = None,
    tell_sample: SampleTeller | None = None,
) -> str | None:
    """None when the run is expected within ``limit_seconds``; else one sentence naming the cheaper options:
    the slowest model's share (and running without it), the slowest strategies, and a sampled corpus
    (``tell_sample(n)``: what that sample keeps, said with it; a sample it refuses is not suggested)."""
    total = estimate.total
    if total <= limit_seconds:
        return None
    options = []
    models = estimate.by_model()
    if len(models) > 1:
        slow, seconds = max(models.items(), key=lambda kv: kv[1])
        others = [m for m in models if m != slow]
        options.append(
            f"{slow} takes {_share(seconds, total)} of it (without it: --corpus-model "
            f"{' --corpus-model '.join(others)}, about {duration(total - seconds)})"
        )
    strategies = sorted(estimate.by_strategy().items(), key=lambda kv: -kv[1])
    if len(strategies) > 2:
        top = strategies[:2]
        options.append(
            f"{' and '.join(s for s, _ in top)} take {_share(sum(v for _, v in top), total)} "
            "(fewer strategies: --strategy NAME for each one to keep)"
        )
    n = sample_size_within(estimate, limit_seconds, n_evidence_documents)
    kept = None
    if n is not None and tell_sample is not None:
        try:
            kept = tell_sample(n)
        except EstimateError:
            n = None
    if n is not None:
        expected = total - estimate.scalable_seconds() * (1 - n / estimate.n_documents)
        what = kept or (
            f"every document holding evidence and a seeded sample of the others, {n} of {estimate.n_documents}"
        )
        options.append(f"a sampled corpus, --sample-documents {n} ({what}), about {duration(expected)}")
    elif estimate.n_documents > 1:
        options.append(
            "a sampled corpus (--sample-documents N: every document holding evidence and a seeded sample of the others)"
        )
    text = f"This run is expected to take about {duration(total)}, over {duration(limit_seconds)}. "
    if not options:
        return text + "Nothing can be left out to make it cheaper (one model, one or two strategies, one document)."
    return text + "Cheaper: " + "; or ".join(options) + "."
