"""Searching and scoring many questions over many chunks: the batched search against one search per question.

    python benchmarks/scale_search.py [--scale 1.0] [--questions N] [--single N] [--top-k 5] [--block-mb 64]
                                      [--rounds 1] [--no-minilm] [--encode-too] [--keep DIR]

At ``--scale 1`` it writes a corpus of 650 generated documents cut into about 65,000 chunks, and 20,000 questions
whose evidence is a sentence of one chunk (``--scale 0.1``: a tenth of both). Everything is generated from fixed
seeds, in a temporary folder (nothing of yours is read or written). The chunks get clustered random unit vectors
of MiniLM's size (384) and go into the embedded vector store, and their rows and cl100k token ids into a results
folder, as a build would put them (the encoding's time is printed apart: a build pays it once).

1. Search speed: every question is searched and scored through ``run_retrieval`` (what a partition's experiment
   runs: the build's token ids read as a run reads them, their reading timed with the run), with precomputed
   question vectors, batched (the default); then the first ``--single`` questions (2,000
   by default; 0: all of them) one search per question with each question scored alone (the store's batched
   scoring made to fail, so the run falls back to the per-question search it used before; the metrics'
   per-question formulas), in this one process. One search per question takes the same time for every question,
   so its time for all of them is its time for the subsample scaled by their count (said so in the output). It
   prints each one's time, the questions per second, the speed-up, and checks that both give the same hits,
   scores and metric values for every question of the subsample.
   With ``--encode-too`` the batched run is timed once more encoding every chunk's tokens instead (a build made
   before the ids were stored), and checked to give the same hits, scores and metric values.
2. Second run (unless ``--no-minilm``): a new set of questions is embedded with MiniLM (the local engine, its own
   batch size) and searched and scored over the same collection, as a second ``chunkbench run`` over cached chunk
   embeddings does; the figure covers embedding, search, scoring and the run's means with their intervals (not
   Dagster's start or the results' writing: benchmarks/second_run.py runs the whole stage, phase by phase).

Peak memory: the process's peak resident memory (ru_maxrss) after each part. Targets (2 idle cores, scale 1):
search and scoring at least 6x faster than one search per question and under 15 s; peak memory under 2 GB; the
second run under 90 s. The machine may be shared: compare the figures of one run with each other.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core.chunking.base import Chunk, make_chunk_id
from chunkbench_core.errors import VectorStoreError
from chunkbench_core.evaluation.experiment import (
    QueryLatency,
    ResolvedQuestion,
    RetrievalOptions,
    aggregate,
    collection_chunks,
    run_retrieval,
)
from chunkbench_core.evaluation.questions import Question, Span
from chunkbench_core.evaluation.search import SearchSettings
from chunkbench_core.stages.collections import read_build_chunks, read_build_tokens
from chunkbench_core.storage.history import build_rows_key
from chunkbench_core.storage.records import ChunkRecord, CollectionBuild, now
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore, collection_name
from chunkbench_core.tokens import encode_many, ids_bytes

DIMENSION = 384
CHUNKS_PER_DOCUMENT = 100
WORDS = (
    "harbour tide ferry quay lantern rope anchor gull beacon pier north south river valley bridge mill barley "
    "wheel stone market square tower bell clock winter summer spring autumn rain snow wind storm ledger invoice "
    "contract tenant council permit survey record archive"
).split()


class PrecomputedQueries:
    """Question vectors made beforehand (the search-speed part times search and scoring, not a model)."""

    load_seconds = 0.0

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def embed(self, texts, purpose, use_cache=True):  # noqa: ARG002 - the Embedder's signature
        return np.stack([self.vectors[t] for t in texts])


def sentence(rng: np.random.Generator, tag: str) -> str:
    return f"Entry {tag}: the {' '.join(rng.choice(WORDS, size=int(rng.integers(8, 16))))} was logged. "


def make_corpus(n_documents: int, seed: int = 3) -> tuple[list[Chunk], np.ndarray, dict[str, list[tuple[int, int]]]]:
    """Chunks of about eight sentences each (their text and offsets in their document), clustered unit vectors,
    and each chunk's sentences (document offsets)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_documents, DIMENSION)).astype(np.float32)
    chunks: list[Chunk] = []
    sentences: dict[str, list[tuple[int, int]]] = {}
    vectors = np.empty((n_documents * CHUNKS_PER_DOCUMENT, DIMENSION), dtype=np.float32)
    for d in range(n_documents):
        name = f"report_{d:04d}.md"
        offset = 0
        for index in range(CHUNKS_PER_DOCUMENT):
            parts = [sentence(rng, f"{d}-{index}-{s}") for s in range(8)]
            text = "".join(parts)
            chunk = Chunk(
                make_chunk_id("fixed_size", name, index),
                name,
                "fixed_size",
                index,
                offset,
                offset + len(text),
                text,
                len(text) // 4,
            )
            cursor = offset
            sentences[chunk.chunk_id] = []
            for part in parts:
                sentences[chunk.chunk_id].append((cursor, cursor + len(part) - 1))
                cursor += len(part)
            chunks.append(chunk)
            vectors[len(chunks) - 1] = centres[d] + 0.9 * rng.standard_normal(DIMENSION)
            offset += len(text)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return chunks, vectors, sentences


def make_questions(
    chunks: list[Chunk],
    vectors: np.ndarray,
    sentences: dict[str, list[tuple[int, int]]],
    n: int,
    seed: int,
    prefix: str,
) -> tuple[list[ResolvedQuestion], dict[str, np.ndarray]]:
    """``n`` questions, each about one sentence of one chunk (its evidence span), with a vector near that chunk's."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(chunks), size=n)
    questions, query_vectors = [], {}
    for i, pick in enumerate(picks):
        chunk = chunks[int(pick)]
        start, end = sentences[chunk.chunk_id][int(rng.integers(0, 8))]
        text = f"{prefix} {i}: what was logged about {' and '.join(rng.choice(WORDS, size=3))}?"
        question = Question(id=f"{prefix}{i:06d}", question=text)
        questions.append(ResolvedQuestion("scale", question, [Span(chunk.document, start, end)]))
        vector = vectors[int(pick)] + 0.35 * rng.standard_normal(DIMENSION).astype(np.float32)
        query_vectors[text] = (vector / np.linalg.norm(vector)).astype(np.float32)
    return questions, query_vectors


def per_question_registry():
    """The shipped metrics with each question scored on its own, as before the metrics over arrays: the span,
    document and pool formulas of ``metrics``, each question's budget scores and graded relevance computed alone."""
    import dataclasses

    from chunkbench_core.evaluation import metric_registry as registry
    from chunkbench_core.evaluation import metrics

    alone = {
        "recall": lambda q: metrics.recall(q.spans, q.references),
        "precision": lambda q: metrics.precision(q.spans, q.references),
        "iou": lambda q: metrics.iou(q.spans, q.references),
        "doc_hit": lambda q: metrics.document_hit(q.hit_documents, q.documents),
        "doc_recall": lambda q: metrics.document_recall(q.hit_documents, q.documents),
        "doc_reciprocal_rank": lambda q: metrics.document_reciprocal_rank(q.hit_documents, q.documents),
        "doc_recall_ceiling": lambda q: metrics.document_recall_ceiling(q.cutoff, q.documents),
        "recall_ceiling": lambda q: metrics.recall_ceiling([c.span for c in q.pool], q.references, q.cutoff),
        "precision_omega": lambda q: metrics.precision_omega([c.span for c in q.pool], q.references),
    }
    out = registry.MetricRegistry()
    for metric in registry.METRICS.values():
        if metric.base is not None:
            continue  # added again with its base
        if metric.name in alone:
            metric = dataclasses.replace(metric, function=registry.per_question(alone[metric.name]))
        elif metric.group == "budget":
            metric = dataclasses.replace(
                metric, function=registry.per_question(lambda q, column=metric.name: q.budget_scores.get(column))
            )
        elif metric.name in ("hit", "reciprocal_rank", "ndcg"):
            metric = dataclasses.replace(
                metric, function=lambda batch, ranked=metric.function: ([q.qrels for q in batch], ranked(batch))[1]
            )
        out.add(metric)
    return out


ROWS_KEY = "fixed_size__all-minilm-l6-v2"
BUILD = "scale"


def record_build(results: ResultsDB, chunks: list[Chunk]) -> float:
    """The chunk rows and their token ids, recorded as the collections stage records a build; returns the seconds
    the token ids took to encode (what the build pays once, for every run after it)."""
    started = time.perf_counter()
    token_ids = [ids_bytes(ids) for ids in encode_many([c.text for c in chunks])]
    encoding = time.perf_counter() - started
    at = now()
    results.record_build(
        CollectionBuild(
            rows_key=ROWS_KEY,
            chunks_key=build_rows_key(ROWS_KEY, BUILD),
            chunks=[
                ChunkRecord.of(
                    c,
                    corpus_model="all-minilm-l6-v2",
                    variant="",
                    build=BUILD,
                    chunking_params="{}",
                    point_id=None,
                    at=at,
                )
                for c in chunks
            ],
            collection={"build": BUILD},
            usage=[],
            token_ids=token_ids,
        )
    )
    return encoding


def forget_tokens() -> None:
    """Nothing is remembered between timed runs: each takes its chunks' tokens from the build's ids it reads (a
    chunk's tokens are remembered within a process)."""
    from chunkbench_core.evaluation import budget

    budget.forget_tokens()


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fingerprint(outcomes) -> list[tuple]:
    """What a run found and scored for each question, to compare two runs."""
    return [
        (
            o.resolved.key,
            o.error,
            tuple((h.chunk_id, h.rank, h.score) for h in o.retrieved),
            tuple(sorted((k, v) for k, v in o.values.items() if v is not None)),
        )
        for o in outcomes
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="share of 65,000 chunks and 20,000 questions")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--block-mb", type=int, default=SearchSettings().block_mb)
    parser.add_argument("--questions", type=int, help="questions, whatever the scale (default 20,000 x scale)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each kind, alternated (the best counts)")
    parser.add_argument(
        "--single",
        type=int,
        default=2000,
        help="questions searched one at a time for the comparison (0: all; default 2,000)",
    )
    parser.add_argument("--no-minilm", action="store_true", help="leave out the second run with MiniLM")
    parser.add_argument(
        "--encode-too",
        action="store_true",
        help="also time the batched run encoding every chunk's tokens (a build made before they were stored)",
    )
    parser.add_argument("--keep", type=Path, help="build the store in this folder and keep it")
    args = parser.parse_args(argv)
    if not 0 < args.scale <= 4:
        parser.error("--scale must be above 0 and at most 4")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.single < 0:
        parser.error("--single must be 0 (all the questions) or more")
    settings = SearchSettings(block_mb=args.block_mb)
    n_documents = max(1, round(650 * args.scale))
    n_questions = args.questions if args.questions else max(1, round(20_000 * args.scale))
    if n_questions < 1:
        parser.error("--questions must be at least 1")
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="chunkbench-scale-"))
    os.environ.setdefault("CHUNKBENCH_HOME", str(workdir / "home"))  # MiniLM's fused graph is built here
    started = time.perf_counter()
    chunks, vectors, sentences = make_corpus(n_documents)
    questions, query_vectors = make_questions(chunks, vectors, sentences, n_questions, 11, "Q")
    print(
        f"corpus: {len(chunks):,} chunks in {n_documents} documents, {n_questions:,} questions with evidence, "
        f"top_k {args.top_k}, blocks of {settings.block_mb} MB (generated in {time.perf_counter() - started:.1f} s)"
    )
    name = collection_name("fixed_size", "all-minilm-l6-v2")
    pool = collection_chunks(chunks)
    try:
        with VectorStore(local_root=workdir / "qdrant") as store:
            started = time.perf_counter()
            store.ensure_collection(name, DIMENSION)
            store.replace_points(name, chunks, vectors)
            results = ResultsDB(workdir / "results")
            encoding = record_build(results, chunks)
            _, chunk_rows = read_build_chunks(results, ROWS_KEY, BUILD)  # what the experiment stage reads first
            print(
                f"collection built in {time.perf_counter() - started:.1f} s, of which encoding the chunks' token ids "
                f"{encoding:.2f} s (once, at the build); peak memory so far {peak_mb():,.0f} MB"
            )
            embedder = PrecomputedQueries(query_vectors)
            reads: list[float] = []

            def timed_run(label: str, asked, stored: bool = True, **options):
                latency = QueryLatency()
                forget_tokens()
                began, cpu = time.perf_counter(), time.process_time()
                # as the experiment stage does; not ``stored``: as a build made before the ids were stored
                token_ids = read_build_tokens(results, ROWS_KEY, BUILD, chunk_rows) if stored else None
                reading = time.perf_counter() - began
                if stored:
                    reads.append(reading)
                outcomes = run_retrieval(
                    asked,
                    embedder,
                    store,
                    name,
                    RetrievalOptions(  # type: ignore[arg-type]  # a stand-in embedder
                        top_k=args.top_k, chunks=pool, latency=latency, search=settings, token_ids=token_ids, **options
                    ),
                )
                cpu = time.process_time() - cpu
                total = time.perf_counter() - began
                seconds = reading + latency.search_seconds  # the ids' reading is part of the run now
                print(
                    f"{label:<40} search and scoring {seconds:7.2f} s "
                    f"({len(asked) / seconds:8,.0f} questions/s; "
                    f"{f'reading the token ids {reading:.2f} s of it' if stored else 'every chunk encoded'}), "
                    f"whole call {total:7.2f} s, CPU {cpu:7.2f} s; peak memory {peak_mb():,.0f} MB"
                )
                return outcomes, seconds, cpu

            def refuse(*_args, **_kwargs):
                raise VectorStoreError("one search per question, for comparison")

            # the first call of a process imports the ranking library and opens the collection: not timed
            warm_up = RetrievalOptions(top_k=args.top_k, chunks=pool)  # a handful of chunks encoded: forgotten below
            run_retrieval(questions[:20], embedder, store, name, warm_up)  # type: ignore[arg-type]  # a stand-in embedder
            subsample = questions[: args.single] if args.single else questions
            scale = n_questions / len(subsample)
            same, batched_s, single_s = True, [], []
            same_encoded, encoded_s = True, []
            for _ in range(args.rounds):  # alternated, so a busy spell of the machine hits both
                batched, seconds, cpu = timed_run(f"batched search, {n_questions:,} questions", questions)
                batched_s.append((seconds, cpu))
                store.score_candidates = refuse  # type: ignore[method-assign]  # batched search refused on purpose
                single, seconds, cpu = timed_run(
                    f"one search per question, {len(subsample):,}", subsample, registry=per_question_registry()
                )
                single_s.append((seconds * scale, cpu * scale))
                del store.score_candidates
                same = same and fingerprint(batched[: len(subsample)]) == fingerprint(single)
                if args.encode_too:
                    encoded, seconds, cpu = timed_run(
                        f"batched, encoding (ids not stored), {n_questions:,}", questions, stored=False
                    )
                    encoded_s.append(seconds)
                    same_encoded = same_encoded and fingerprint(encoded) == fingerprint(batched)
                    del encoded
                del batched, single
            (wall_b, cpu_b), (wall_s, cpu_s) = min(batched_s), min(single_s)
            scaled = (
                ""
                if scale == 1
                else (
                    f" (one search per question timed on the first {len(subsample):,} "
                    f"questions and scaled by {scale:.1f} to {n_questions:,}: "
                    f"{wall_s:.1f} s)"
                )
            )
            print(
                f"speed-up of the batched search and the metrics over arrays (best of {args.rounds}): "
                f"{wall_s / wall_b:.1f}x wall time, {cpu_s / cpu_b:.1f}x CPU time{scaled}; same hits, scores "
                f"and metric values for every question compared: {'yes' if same else 'NO'}"
            )
            print(
                f"token ids of {len(chunks):,} chunks: read by a run in {min(reads):.2f} s, encoded by the build in "
                f"{encoding:.2f} s ({min(reads) / encoding:.0%} of encoding them)"
                + (
                    f"; the batched run encoding them instead took {min(encoded_s):.1f} s, "
                    f"{min(encoded_s) / wall_b:.2f}x the run reading them, with the same hits, scores and metric "
                    f"values for every question: {'yes' if same_encoded else 'NO'}"
                    if encoded_s
                    else ""
                )
            )
            print(
                f"search and scoring of {n_questions:,} questions over {len(chunks):,} chunks: {wall_b:.1f} s "
                f"({n_questions / wall_b:,.0f} questions/s; target under 15 s and at least 6x, at scale 1 on 2 "
                f"idle cores); peak memory so far {peak_mb():,.0f} MB (target under 2 GB)"
            )
            if not args.no_minilm:
                from chunkbench_core.embedding import Embedder, get_model

                fresh, _ = make_questions(chunks, vectors, sentences, n_questions, 12, "New question")
                minilm = Embedder(get_model("all-minilm-l6-v2"))
                began = time.perf_counter()
                minilm.embed(["warm up"], "query", use_cache=False)
                load = time.perf_counter() - began
                began = time.perf_counter()
                latency = QueryLatency()
                forget_tokens()
                outcomes = run_retrieval(
                    fresh,
                    minilm,
                    store,
                    name,
                    RetrievalOptions(
                        top_k=args.top_k,
                        chunks=pool,
                        latency=latency,
                        search=settings,
                        token_ids=read_build_tokens(results, ROWS_KEY, BUILD, chunk_rows),
                    ),
                )
                summary = aggregate(outcomes)
                total = time.perf_counter() - began
                print(
                    f"second run, {n_questions:,} new questions embedded with MiniLM: {total:.1f} s "
                    f"(search and scoring {latency.search_seconds:.1f} s, means and intervals included; model "
                    f"load {load:.1f} s before); {summary['n_questions']:,} scored; peak memory {peak_mb():,.0f} MB"
                )
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0 if same and same_encoded else 1


if __name__ == "__main__":
    raise SystemExit(main())
