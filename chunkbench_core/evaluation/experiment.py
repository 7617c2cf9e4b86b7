"""One experiment run for one strategy x corpus model: retrieve for every question, score it.

The pipeline calls ``resolve_questions`` (locate every reference in the parsed
documents), then ``run_retrieval`` (embed the questions with the corpus model's query
prefix, search the partition's collection) and ``aggregate``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from chunkbench_core.embedding.providers import Embedder
from chunkbench_core.errors import QuestionSetError
from chunkbench_core.storage.vector_store import VectorStore

from . import metrics
from .questions import Question, QuestionSet, Span, locate_reference

DEFAULT_TOP_K = 5


@dataclass
class ResolvedQuestion:
    question_set: str
    question: Question
    references: list[Span]


@dataclass
class RetrievedChunk:
    rank: int
    chunk_id: str
    document: str
    start: int
    end: int
    score: float | None

    @property
    def span(self) -> Span:
        return Span(self.document, self.start, self.end)


@dataclass
class QuestionOutcome:
    resolved: ResolvedQuestion
    retrieved: list[RetrievedChunk] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    retrieval_ms: float = 0.0
    error: str | None = None


def resolve_questions(
    sets: Sequence[QuestionSet], documents: Mapping[str, str]
) -> tuple[list[ResolvedQuestion], list[QuestionSetError]]:
    """Locate every reference of every question in ``documents`` (name -> parsed markdown).

    A question whose reference cannot be located is left out and reported as an error;
    the other questions go on.
    """
    resolved: list[ResolvedQuestion] = []
    errors: list[QuestionSetError] = []
    for qs in sets:
        for q in qs.questions:
            spans: list[Span] = []
            try:
                for i, ref in enumerate(q.references):
                    where = f"references[{i}].document"
                    if ref.document not in documents:
                        known = ", ".join(sorted(documents)) or "none"
                        raise QuestionSetError(
                            qs.path, f"document {ref.document!r} is not a parsed document of the corpus (parsed: {known})",
                            q.id, where,
                        )
                    spans.append(locate_reference(ref, documents[ref.document], qs.path, q.id, f"references[{i}].content"))
            except QuestionSetError as exc:
                errors.append(exc)
                continue
            resolved.append(ResolvedQuestion(qs.name, q, spans))
    return resolved, errors


def score_question(retrieved: Sequence[RetrievedChunk], references: Sequence[Span]) -> dict[str, float]:
    """Evidence metrics of one question's retrieved chunks (rank order)."""
    spans = [r.span for r in retrieved]
    return {
        "recall": metrics.recall(spans, references),
        "precision": metrics.precision(spans, references),
        "iou": metrics.iou(spans, references),
        "hit": metrics.hit(spans, references),
        "reciprocal_rank": metrics.reciprocal_rank(spans, references),
    }


def run_retrieval(
    questions: Sequence[ResolvedQuestion],
    embedder: Embedder,
    store: VectorStore,
    collection: str,
    top_k: int = DEFAULT_TOP_K,
    filter_by_document: bool = False,
) -> list[QuestionOutcome]:
    """Retrieve ``top_k`` chunks per question and score them against its references.

    Questions are embedded in one batch; with ``filter_by_document`` the search is
    restricted to the document of the question's first reference (the seeds' protocol);
    otherwise it searches every document (the Chroma protocol).
    """
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    outcomes: list[QuestionOutcome] = []
    if not questions:
        return outcomes
    started = time.perf_counter()
    vectors = embedder.embed([rq.question.question for rq in questions], "query")
    embed_ms = (time.perf_counter() - started) * 1000 / len(questions)
    for rq, vector in zip(questions, np.asarray(vectors)):
        outcome = QuestionOutcome(rq)
        document = rq.references[0].document if (filter_by_document and rq.references) else None
        t0 = time.perf_counter()
        hits = store.search(collection, vector, top_k, document=document)
        outcome.retrieval_ms = embed_ms + (time.perf_counter() - t0) * 1000
        outcome.retrieved = [
            RetrievedChunk(h.rank, h.payload["chunk_id"], h.payload["document"], int(h.payload["start"]),
                           int(h.payload["end"]), h.score)
            for h in hits
        ]
        outcome.scores = score_question(outcome.retrieved, rq.references)
        outcomes.append(outcome)
    return outcomes


METRIC_COLUMNS = ("recall", "precision", "iou", "hit", "reciprocal_rank")


def aggregate(outcomes: Sequence[QuestionOutcome]) -> dict[str, float | int]:
    """Means over scored questions: recall, precision, iou, mrr (mean RR@k), hit_rate (mean hit@k)."""
    scored = [o for o in outcomes if o.error is None]
    result: dict[str, float | int] = {"n_questions": len(scored), "n_failed": len(outcomes) - len(scored)}
    for column, name in zip(METRIC_COLUMNS, ("recall", "precision", "iou", "hit_rate", "mrr")):
        values = [o.scores[column] for o in scored]
        result[name] = float(np.mean(values)) if values else float("nan")
    return result


def outcome_row(outcome: QuestionOutcome) -> dict[str, Any]:
    """The ``question_results`` columns this module owns (the pipeline adds run ids)."""
    q = outcome.resolved.question
    return {
        "question_set": outcome.resolved.question_set,
        "question_id": q.id,
        "question": q.question,
        "category": q.category,
        "difficulty": q.difficulty,
        "n_references": len(outcome.resolved.references),
        "retrieved": json.dumps([r.__dict__ for r in outcome.retrieved], ensure_ascii=False),
        "retrieval_ms": outcome.retrieval_ms,
        "error": outcome.error,
        **{c: outcome.scores.get(c) for c in METRIC_COLUMNS},
    }
