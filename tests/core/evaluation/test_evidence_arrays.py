"""The span and document metrics over arrays give exactly the values of their per-question formulas
(chunkbench_core.evaluation.metrics), on generated batches (overlapping, touching, empty and reversed spans,
several documents, repeated sources) and on the sample's questions against its chunks."""

from __future__ import annotations

import dataclasses
import random

import pytest

from chunkbench_core.chunking import make_chunker
from chunkbench_core.datasets import SAMPLE_CORPUS, SAMPLE_QUESTIONS
from chunkbench_core.evaluation import evidence_arrays as arrays
from chunkbench_core.evaluation import metrics
from chunkbench_core.evaluation.experiment import resolve_questions
from chunkbench_core.evaluation.metric_registry import METRICS, Scored, score
from chunkbench_core.evaluation.questions import Question, Span, load_question_sets
from chunkbench_core.evaluation.retrieval import RetrievedChunk
from chunkbench_core.parsing import parse

ONE_AT_A_TIME = {
    "recall": lambda q: metrics.recall(q.spans, q.references),
    "precision": lambda q: metrics.precision(q.spans, q.references),
    "iou": lambda q: metrics.iou(q.spans, q.references),
    "doc_hit": lambda q: metrics.document_hit(q.hit_documents, q.documents),
    "doc_recall": lambda q: metrics.document_recall(q.hit_documents, q.documents),
    "doc_reciprocal_rank": lambda q: metrics.document_reciprocal_rank(q.hit_documents, q.documents),
}


def _generated(seed: int, n: int = 1500) -> list[Scored]:
    rng = random.Random(seed)
    documents = ["a.md", "b.pdf", "c.txt", "d.docx"]
    batch = []
    for i in range(n):
        hits = []
        for rank in range(1, rng.randint(0, 8) + 1):
            start = rng.randint(0, 400)
            hits.append(
                RetrievedChunk(rank, f"chunk{rank}", rng.choice(documents), start, start + rng.randint(-3, 90), 0.5)
            )
        if hits and rng.random() < 0.2:
            hits.append(hits[0])  # the same chunk twice (a context that repeats it)
        references = []
        for _ in range(rng.randint(0, 4)):
            start = rng.randint(0, 400)
            references.append(Span(rng.choice(documents), start, start + rng.randint(-2, 70)))
        if hits and rng.random() < 0.2:
            references.append(Span(hits[0].document, hits[0].end, hits[0].end + 5))  # touching a hit
        sources = tuple(rng.choice(documents) for _ in range(rng.randint(0, 3)))  # repeats allowed
        batch.append(
            Scored(
                str(i),
                Question(id=str(i), question="?"),
                tuple(references),
                tuple(hits),
                tuple(hits),
                5,
                documents=sources,
            )
        )
    return batch


def _assert_equal(batch: list[Scored]) -> int:
    """Every array metric equals its per-question formula on every question; returns the values compared."""
    compared = 0
    for name, formula in ONE_AT_A_TIME.items():
        metric = METRICS[name]
        applicable = [q for q in batch if metric.applies_to(q)]
        got = list(metric.function(applicable))
        want = [formula(q) for q in applicable]
        assert got == want, name
        compared += len(got)
    return compared


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_array_metrics_equal_the_per_question_formulas_on_generated_batches(seed):
    assert _assert_equal(_generated(seed)) > 3000


def test_the_expanded_variants_score_the_context_over_arrays(seed=4):
    batch = _generated(seed, 300)
    scored = score(batch, [METRICS["recall_expanded"], METRICS["iou_expanded"]])
    for q, values in zip(batch, scored):
        if q.has_evidence:
            assert values["recall_expanded"] == metrics.recall([c.span for c in q.context], q.references)
            assert values["iou_expanded"] == metrics.iou([c.span for c in q.context], q.references)


def test_array_metrics_equal_the_per_question_formulas_on_the_sample():
    """The sample's questions (located in its parsed markdown) against its fixed-size chunks: each question's
    ranking is the chunks of its documents nearest its evidence, then chunks of other documents."""
    parsed = []
    for path in sorted(SAMPLE_CORPUS.iterdir()):
        if path.suffix in (".md", ".txt"):  # quick to parse; the other formats change nothing here
            document = parse(str(path))
            document.document = path.name
            parsed.append(document)
    documents = {d.document: d.markdown for d in parsed}
    sets, _ = load_question_sets(SAMPLE_QUESTIONS)
    resolved, _ = resolve_questions(sets, documents)
    resolved = [rq for rq in resolved if set(rq.documents) <= set(documents)]
    assert len(resolved) >= 5
    chunker = make_chunker("fixed_size", chunk_size=60, chunk_overlap=10)
    chunks = [c for document in parsed for c in chunker.chunk(document)]
    rng = random.Random(8)
    batch = []
    for rq in resolved:
        anchor = rq.references[0] if rq.references else Span(rq.documents[0], 0, 0)
        near = sorted(chunks, key=lambda c: (c.document != anchor.document, abs(c.start - anchor.start), c.chunk_id))
        ranking = near[:3] + rng.sample(chunks, 4)
        hits = tuple(
            RetrievedChunk(r, c.chunk_id, c.document, c.start, c.end, 0.5) for r, c in enumerate(ranking, start=1)
        )
        batch.append(Scored(rq.key, rq.question, tuple(rq.references), hits, hits, 5, documents=rq.documents))
    assert _assert_equal(batch) >= 5


def test_union_lengths_of_groups_never_merge_across_groups():
    import numpy as np

    group = np.array([0, 1, 0, 1, 2])
    start = np.array([0, 5, 3, 0, 7])
    end = np.array([4, 10, 8, 6, 7])  # group 2: one empty interval
    assert arrays.union_lengths(group, start, end, 4).tolist() == [8, 10, 0, 0]


def test_graded_relevance_of_a_batch_equals_each_question_own():
    """The qrels of a batch at once (pool, hits and context, a chunk met by several references counted once) equal
    each question's own (:attr:`Scored.qrels` on a question alone)."""
    batch = _generated(5, 400)
    pooled = [dataclasses.replace(q, pool=tuple(q.hits[::-1]) + tuple(q.context[:1]), cache={}) for q in batch]
    alone = [dataclasses.replace(q, cache={}).qrels for q in pooled]
    arrays.fill_graded_relevance(pooled)
    assert [q.cache["qrels"] for q in pooled] == alone
    assert sum(len(j) for j in alone) > 100


def test_budget_scores_of_a_batch_equal_each_question_own():
    """Context tokens, recall within each budget (the crossing chunk cut at a token) and the budget AUC of many
    questions at once equal :func:`budget.budget_scores` of each."""
    from chunkbench_core.evaluation import budget

    rng = random.Random(6)
    words = "harbour tide ferry quay lantern rope anchor gull beacon pier north south".split()
    contexts, references = [], []
    for q in _generated(7, 300):
        chunks = [
            dataclasses.replace(c, text=" ".join(rng.choice(words) for _ in range(rng.randint(0, 400))))
            for c in q.context
        ]
        contexts.append(chunks)
        references.append(q.references)
    budgets = (16, 256, 700)
    together = budget.batch_budget_scores(contexts, references, budgets)
    assert together == [budget.budget_scores(c, r, budgets) for c, r in zip(contexts, references)]
    assert len({round(s["recall_at_16"], 6) for s in together}) > 5  # the cuts made a difference
