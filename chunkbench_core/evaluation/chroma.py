"""Reproduce the all-MiniLM-L6-v2 table of Chroma's chunking report with chunkbench's own code.

The protocol of the report (see ``chunkbench_core/datasets/chroma_general_evaluation/README.md``):
the five corpora in ONE collection, no document filter, 5 chunks per question, MiniLM. Every step
is the pipeline's code: the .md parser (``chunkbench_core.parsing.parse``), the chunkers of
``chunkbench_core.chunking``, ``Embedder`` (MiniLM int8 ONNX), ``VectorStore`` (Qdrant's embedded
engine), the Chroma CSV importer and ``experiment.run_retrieval`` / ``aggregate`` (character metrics
of ``evaluation.metrics``).

Rows are ``strategy:size:overlap`` configurations: the published table has fixed_size and
recursive at 250/125, 250/0 and 200/0 and cluster_semantic at 250 and 200. ``recursive_chroma`` is
a reproduction-only splitter following the report's recursive rules (:class:`ChromaRecursiveSplitter`,
not a pipeline strategy), compared with the published recursive rows: it measures how much of the
recursive gap comes from our recursive chunker's different rules.

Used by ``chunkbench reproduce chroma`` and ``benchmarks/chroma_reproduction.py``.
"""

from __future__ import annotations

import csv
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from chunkbench_core.chunking import STRATEGIES, Chunk, Chunker, make_chunker
from chunkbench_core.tokens import TokenIndex, count_tokens
from chunkbench_core.datasets import CHROMA_DIR
from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.errors import ConfigError, QuestionSetError
from chunkbench_core.evaluation.experiment import (
    ResolvedQuestion,
    RetrievalOptions,
    aggregate,
    collection_chunks,
    resolve_questions,
    run_retrieval,
)
from chunkbench_core.evaluation.questions import load_chroma_csv
from chunkbench_core.parsing import parse
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.storage.vector_store import VectorStore

#: the data set shipped with chunkbench (corpora/, questions/chroma_general.csv, published_minilm.csv)
DEFAULT_DATA = CHROMA_DIR
TOP_K = 5
MODEL_ID = "all-minilm-l6-v2"
QUESTION_SET_NAME = "chroma_general"
CSV_COLUMNS = ("chunker", "size", "overlap", "recall", "precision", "precision_omega", "iou")
METRICS = ("recall", "precision", "precision_omega", "iou")
#: the rows of the published MiniLM table
PUBLISHED_CONFIGS: tuple[tuple[str, int, int], ...] = (
    ("recursive", 250, 125),
    ("fixed_size", 250, 125),
    ("recursive", 250, 0),
    ("fixed_size", 250, 0),
    ("recursive", 200, 0),
    ("fixed_size", 200, 0),
    ("cluster_semantic", 250, 0),
    ("cluster_semantic", 200, 0),
)
#: the published rows, then the reproduction-only recursive splitter at the recursive rows' sizes
CONFIGS: tuple[tuple[str, int, int], ...] = PUBLISHED_CONFIGS + (
    ("recursive_chroma", 250, 125),
    ("recursive_chroma", 250, 0),
    ("recursive_chroma", 200, 0),
)
#: how far (percentage points) our fixed_size and recursive rows may be from the published ones
TARGETS = {"recall": 3.0, "iou": 1.0}
TARGETED = ("fixed_size", "recursive")


@dataclass
class ConfigResult:
    chunker: str
    size: int
    overlap: int
    scores: dict[str, float] = field(default_factory=dict)  # percent
    n_chunks: int = 0
    mean_tokens: float = 0.0  # cl100k tokens per chunk
    n_questions: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    def csv_row(self) -> dict[str, Any]:
        return {
            "chunker": self.chunker,
            "size": self.size,
            "overlap": self.overlap,
            **{m: round(self.scores[m], 1) for m in METRICS},
        }


@dataclass
class Reproduction:
    """What a run measured: one result per configuration run, and the target check of a full run."""

    results: list[ConfigResult]
    full: bool  # every question of every corpus: comparable with the published table
    misses: list[str] = field(default_factory=list)  # targeted rows outside the targets (full runs only)

    @property
    def targets_met(self) -> bool:
        return self.full and not self.misses


def questions_file(data: Path) -> Path:
    """The question CSV of a data folder: ``questions/chroma_general.csv`` (as shipped), or the
    source repository's ``questions_df.csv`` when the folder is a copy of the original layout."""
    shipped = data / "questions" / f"{QUESTION_SET_NAME}.csv"
    return shipped if shipped.is_file() else data / "questions_df.csv"


def check_data(data: Path) -> None:
    """Raise ConfigError naming what is missing when ``data`` is not a Chroma evaluation folder."""
    missing = [
        name
        for name, path in (
            ("corpora/", data / "corpora"),
            (f"questions/{QUESTION_SET_NAME}.csv (or questions_df.csv)", questions_file(data)),
            ("published_minilm.csv", data / "published_minilm.csv"),
        )
        if not path.exists()
    ]
    if missing:
        raise ConfigError(f"{data} is not a Chroma evaluation data folder: it has no {', no '.join(missing)}")


def load_corpora(data: Path, corpora: Sequence[str] | None = None) -> list[ParsedDocument]:
    """The corpora parsed by the pipeline's parser; their text must be the file's text exactly."""
    paths = sorted((data / "corpora").glob("*.md"))
    if corpora:
        wanted = set(corpora)
        unknown = wanted - {p.stem for p in paths}
        if unknown:
            raise ConfigError(f"unknown corpus: {', '.join(sorted(unknown))} (have {', '.join(p.stem for p in paths)})")
        paths = [p for p in paths if p.stem in wanted]
    documents = []
    for path in paths:
        parsed = parse(str(path))
        parsed.document = path.name
        raw = path.read_text(encoding="utf-8")
        if parsed.markdown != raw:
            raise ConfigError(
                f"{path}: the parser changed the text, so the questions' character offsets would not line up"
            )
        documents.append(parsed)
    return documents


def load_questions(data: Path, documents: Sequence[ParsedDocument], limit: int | None = None) -> list[ResolvedQuestion]:
    """The questions about ``documents`` (the first ``limit`` in file order), located at their offsets."""
    qs = load_chroma_csv(questions_file(data), name=QUESTION_SET_NAME)
    names = {d.document for d in documents}
    qs.questions = [q for q in qs.questions if all(r.document in names for r in q.references)]
    if limit is not None:
        qs.questions = qs.questions[:limit]
    resolved, errors = resolve_questions([qs], {d.document: d.markdown for d in documents})
    if errors:
        raise QuestionSetError(str(questions_file(data)), f"{len(errors)} questions do not resolve; first: {errors[0]}")
    return resolved


def published_table(data: Path) -> dict[tuple[str, int, int], dict[str, float]]:
    with (data / "published_minilm.csv").open(encoding="utf-8", newline="") as handle:
        return {
            (r["chunker"], int(r["size"]), int(r["overlap"])): {m: float(r[m]) for m in METRICS}
            for r in csv.DictReader(handle)
        }


# -- reproduction only: the report's recursive splitter, as spans --------------------------------------
CHROMA_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")


class ChromaRecursiveSplitter(Chunker):
    """The recursive splitter of the Chroma report, re-implemented here from its documented behaviour.

    Reproduction only (not a pipeline strategy). Differences from our ``recursive``:
    separators ["\\n\\n", "\\n", ".", "?", "!", " ", ""] tried in that order, the FIRST one
    present in a span is used for all of it (no heading level, no Persian punctuation,
    "." splits even inside "3.5"); the separator starts the piece after it; a piece
    is kept when it has FEWER than chunk_size tokens (each piece counted on its own),
    otherwise it is split with the remaining separators; kept pieces are merged only
    with their siblings, dropping pieces from the front until the running total is
    within chunk_overlap; chunks are stripped of surrounding whitespace.
    """

    name = "recursive_chroma"

    def _count(self, text: str, start: int, end: int) -> int:
        return count_tokens(text[start:end])

    def _split(self, text: str, start: int, end: int, separators: Sequence[str], out: list[tuple[int, int]]) -> None:
        chosen = ""
        rest: tuple[str, ...] = ()
        for i, separator in enumerate(separators):
            if separator == "" or text.find(separator, start, end) >= 0:
                chosen, rest = separator, tuple(separators[i + 1 :])
                break
        if chosen == "":
            pieces = [(i, i + 1) for i in range(start, end)]
        else:
            cuts, at = [], text.find(chosen, start, end)
            while at >= 0:
                cuts.append(at)
                at = text.find(chosen, at + len(chosen), end)
            bounds = [start, *cuts, end]
            pieces = [(a, b) for a, b in pairwise(bounds) if b > a]
        kept: list[tuple[int, int, int]] = []
        for a, b in pieces:
            size = self._count(text, a, b)
            if size < self.chunk_size:
                kept.append((a, b, size))
                continue
            if kept:
                self._merge(text, kept, out)
                kept = []
            if rest:
                self._split(text, a, b, rest, out)
            else:
                out.append((a, b))
        if kept:
            self._merge(text, kept, out)

    def _merge(self, text: str, pieces: list[tuple[int, int, int]], out: list[tuple[int, int]]) -> None:
        window: list[tuple[int, int, int]] = []
        total = 0
        for piece in pieces:
            size = piece[2]
            if window and total + size > self.chunk_size:
                out.append((window[0][0], window[-1][1]))
                while window and (total > self.chunk_overlap or total + size > self.chunk_size):
                    total -= window.pop(0)[2]
            window.append(piece)
            total += size
        if window:
            out.append((window[0][0], window[-1][1]))

    def spans(self, text: str, tokens: TokenIndex) -> list[tuple[int, int]]:
        raw: list[tuple[int, int]] = []
        if text:
            self._split(text, 0, len(text), CHROMA_SEPARATORS, raw)
        spans = []
        for start, end in raw:
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if end > start:
                spans.append((start, end))
        return spans


REPRODUCTION_CHUNKERS: dict[str, type[Chunker]] = {ChromaRecursiveSplitter.name: ChromaRecursiveSplitter}
PUBLISHED_AS = {"recursive_chroma": "recursive"}  # which published row a reproduction-only chunker is compared with


def published_key(chunker: str, size: int, overlap: int) -> tuple[str, int, int]:
    return PUBLISHED_AS.get(chunker, chunker), size, overlap


def known_chunker(strategy: str) -> bool:
    return strategy in STRATEGIES or strategy in REPRODUCTION_CHUNKERS


def make_config_chunker(strategy: str, size: int, overlap: int, embedder: Embedder) -> Chunker:
    """The pipeline chunker; a strategy that needs boundary embeddings gets MiniLM (as in the report)."""
    params: dict[str, Any] = {"chunk_size": size, "chunk_overlap": overlap}
    if strategy in REPRODUCTION_CHUNKERS:
        return REPRODUCTION_CHUNKERS[strategy](**params)
    if STRATEGIES[strategy].capabilities.boundary_model:
        params["embed"] = lambda texts: embedder.embed(list(texts), "document")
    return make_chunker(strategy, **params)


def run_config(
    strategy: str,
    size: int,
    overlap: int,
    documents: Sequence[ParsedDocument],
    questions: Sequence[ResolvedQuestion],
    embedder: Embedder,
    store: VectorStore,
) -> ConfigResult:
    result = ConfigResult(strategy, size, overlap)
    t0 = time.perf_counter()
    chunker = make_config_chunker(strategy, size, overlap, embedder)
    chunks: list[Chunk] = [c for d in documents for c in chunker.chunk(d)]
    t1 = time.perf_counter()
    vectors = embedder.embed([c.text_to_embed for c in chunks], "document")
    t2 = time.perf_counter()
    name = f"chroma_{strategy}_{size}_{overlap}"
    store.ensure_collection(name, embedder.spec.dimension)
    store.replace_points(name, chunks, vectors)
    t3 = time.perf_counter()
    outcomes = run_retrieval(
        questions,
        embedder,
        store,
        name,
        RetrievalOptions(top_k=TOP_K, filter_by_document=False, strategy=strategy, chunks=collection_chunks(chunks)),
    )
    summary = aggregate(outcomes)
    t4 = time.perf_counter()
    failed = [o.error for o in outcomes if o.error]
    if failed:
        result.error = f"{len(failed)} questions failed, first: {failed[0]}"
    result.scores = {m: 100 * float(summary[m]) for m in METRICS}
    result.n_chunks = len(chunks)
    result.mean_tokens = sum(c.token_count for c in chunks) / max(1, len(chunks))
    result.n_questions = int(summary["n_questions"])
    result.seconds = {"chunk": t1 - t0, "embed": t2 - t1, "index": t3 - t2, "retrieve_score": t4 - t3, "total": t4 - t0}
    return result


def format_row(r: ConfigResult, published: dict[str, float] | None) -> str:
    cells = []
    for m in METRICS:
        ours = r.scores[m]
        if published is None:
            cells.append(f"{ours:6.1f} /    -  /    -  ")
        else:
            cells.append(f"{ours:6.1f} / {published[m]:5.1f} / {ours - published[m]:+5.1f}")
    return (
        f"{r.chunker:<17}{r.size:>5}{r.overlap:>5}  "
        + "  ".join(cells)
        + f"  {r.n_chunks:>6} {r.mean_tokens:6.1f} {r.seconds['total']:7.1f}s"
    )


def header() -> str:
    metric_cells = "  ".join(f"{m + ' ours/pub/diff':<21}" for m in METRICS)
    return f"{'chunker':<17}{'size':>5}{'ovl':>5}  {metric_cells}  {'chunks':>6} {'tokens':>6} {'time':>8}"


def target_misses(
    results: Sequence[ConfigResult], published: dict[tuple[str, int, int], dict[str, float]]
) -> tuple[list[str], list[str]]:
    """(targeted rows outside the targets, the recall / IoU difference of every targeted row)."""
    misses: list[str] = []
    diffs: list[str] = []
    for r in results:
        key = published_key(r.chunker, r.size, r.overlap)
        pub = published.get(key)
        if pub is None or key[0] not in TARGETED:
            continue
        for m, tolerance in TARGETS.items():
            if abs(r.scores[m] - pub[m]) > tolerance:
                misses.append(f"{r.chunker} {r.size}/{r.overlap} {m} {r.scores[m] - pub[m]:+.2f}")
        diffs.append(
            f"{r.chunker} {r.size}/{r.overlap}: recall {r.scores['recall'] - pub['recall']:+.2f}, "
            f"IoU {r.scores['iou'] - pub['iou']:+.2f}"
        )
    return misses, diffs


def run(
    data: Path = DEFAULT_DATA,
    out: Path | None = None,
    limit: int | None = None,
    corpora: Sequence[str] | None = None,
    configs: Sequence[tuple[str, int, int]] = CONFIGS,
    work: Path | None = None,
    print_fn: Callable[[str], Any] = print,
) -> Reproduction:
    """Run ``configs`` on the data set, print ours / published / difference per row, and the targets.

    ``limit`` keeps the first N questions (file order) of the selected ``corpora``; both make a quick
    slice whose numbers are not comparable with the published table (no target check then).
    ``out`` writes our rows as CSV with the columns of published_minilm.csv.
    """
    check_data(data)
    if limit is not None and limit < 1:
        raise ConfigError(f"limit must be at least 1 question, got {limit}")
    started = time.perf_counter()
    documents = load_corpora(data, corpora)
    questions = load_questions(data, documents, limit)
    published = published_table(data)
    full = not corpora and limit is None
    print_fn(
        f"{len(documents)} corpora, {len(questions)} questions, top {TOP_K}, "
        f"model {MODEL_ID}, one collection, no document filter"
        + ("" if full else " (a slice: published numbers are for the full set)")
    )
    embedder = Embedder(get_model(MODEL_ID))
    results: list[ConfigResult] = []
    with tempfile.TemporaryDirectory(prefix="chroma-repro-", dir=work) as tmp, VectorStore(local_root=tmp) as store:
        print_fn(header())
        for strategy, size, overlap in configs:
            if not known_chunker(strategy):
                print_fn(
                    f"{strategy:<17}{size:>5}{overlap:>5}  missing: no {strategy!r} strategy "
                    f"(have {', '.join([*STRATEGIES, *REPRODUCTION_CHUNKERS])})"
                )
                continue
            result = run_config(strategy, size, overlap, documents, questions, embedder, store)
            results.append(result)
            print_fn(format_row(result, published.get(published_key(strategy, size, overlap))))
            print_fn("    " + ", ".join(f"{k} {v:.1f}s" for k, v in result.seconds.items() if k != "total"))
            if result.error:
                print_fn(f"  ! {result.error}")
    if any(r.chunker in REPRODUCTION_CHUNKERS for r in results):
        print_fn(
            "recursive_chroma: reproduction-only splitter with the report's separator rules (not a pipeline "
            "strategy), compared with the published recursive rows"
        )
    reproduction = Reproduction(results, full)
    if full:
        reproduction.misses, diffs = target_misses(results, published)
        if diffs:
            print_fn("differences (points): " + "; ".join(diffs))
            print_fn(
                "targets (recall within 3 points, IoU within 1 point, fixed_size and recursive): "
                + ("all met" if not reproduction.misses else "missed: " + "; ".join(reproduction.misses))
            )
    print_fn(f"total {time.perf_counter() - started:.1f}s")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
            writer.writeheader()
            for r in results:
                writer.writerow(r.csv_row())
    return reproduction


def parse_configs(text: str) -> list[tuple[str, int, int]]:
    """``strategy:size:overlap,...`` -> configurations; a malformed item is a ConfigError naming it."""
    configs = []
    for item in text.split(","):
        parts = item.strip().split(":")
        try:
            strategy, size, overlap = parts[0], int(parts[1]), int(parts[2])
            if len(parts) != 3 or not strategy or size < 1 or not 0 <= overlap < size:
                raise ValueError
        except (IndexError, ValueError):
            raise ConfigError(
                f"configuration {item.strip()!r}: expected strategy:size:overlap with whole numbers, "
                "size at least 1 and 0 <= overlap < size, e.g. fixed_size:250:0"
            ) from None
        configs.append((strategy, size, overlap))
    return configs
