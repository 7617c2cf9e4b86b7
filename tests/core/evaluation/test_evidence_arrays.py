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
from chunkbench_core.evaluation.experiment import CollectionChunk, resolve_questions
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


@pytest.mark.parametrize("budgets", [(16, 256, 700), (700, 1, 64, 16), (300,)])
def test_budget_scores_of_a_batch_equal_each_question_own(budgets):
    """Context tokens, recall within each budget (the crossing chunk cut at a token; budgets in any order) and the
    budget AUC of many questions at once equal :func:`budget.budget_scores` of each."""
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
    together = budget.batch_budget_scores(contexts, references, budgets)
    assert together == [budget.budget_scores(c, r, budgets) for c, r in zip(contexts, references)]
    assert [list(s) for s in together[:1]] == [list(budget.budget_scores(contexts[0], references[0], budgets))]
    smallest = f"recall_at_{min(budgets)}"
    assert len({round(s[smallest], 6) for s in together}) > 5  # the cuts made a difference


def _pooled(seed: int, n: int = 600) -> list[Scored]:
    """Questions with a pool (chunks of the collection: overlapping, touching, repeated, several documents, some
    holding no evidence), references (overlapping each other, empty, reversed, or none) and cutoffs from 0 to 6;
    a few without a pool."""
    rng = random.Random(seed)
    documents = ["a.md", "b.pdf", "c.txt"]
    batch = []
    for i in range(n):
        pool = []
        for j in range(rng.randint(0, 9)):
            start = rng.choice([rng.randint(0, 300), 40 * rng.randint(0, 7)])  # equal chunks: ties
            pool.append(CollectionChunk(f"c{j}", rng.choice(documents), start, start + rng.choice([40, 40, 80, 15])))
        if pool and rng.random() < 0.2:
            pool.append(pool[0])
        references = []
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            start = rng.randint(0, 320)
            references.append(Span(rng.choice(documents), start, start + rng.randint(-2, 120)))
        if pool and rng.random() < 0.2:  # a reference ending where a chunk starts: touching
            references.append(Span(pool[-1].document, pool[-1].start - 10, pool[-1].start))
        batch.append(
            Scored(
                str(i),
                Question(id=str(i), question="?"),
                tuple(references),
                (),
                (),
                rng.randint(0, 6),
                pool=None if rng.random() < 0.05 else tuple(pool),
                documents=tuple(rng.choice(documents) for _ in range(rng.randint(0, 3))),
            )
        )
    return batch


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_pool_metrics_over_arrays_equal_the_per_question_formulas(seed):
    """precision_omega, recall_ceiling (the greedy pick, ties to the first chunk) and doc_recall_ceiling of a batch
    at once equal each question's own formula; a question without a pool scores None."""
    batch = _pooled(seed)
    got = {
        q.key: row for q, row in zip(batch, score(batch, [METRICS[m] for m in ("precision_omega", "recall_ceiling")]))
    }
    compared = 0
    for q in batch:
        if not q.has_evidence or q.pool is None:
            assert got[q.key] == {"precision_omega": None, "recall_ceiling": None}
            continue
        spans = [c.span for c in q.pool]
        assert got[q.key]["precision_omega"] == metrics.precision_omega(spans, q.references), q
        assert got[q.key]["recall_ceiling"] == metrics.recall_ceiling(spans, q.references, q.cutoff), q
        compared += 1
    assert compared > 400
    assert sum(0 < row["recall_ceiling"] < 1 for row in got.values() if row["recall_ceiling"] is not None) > 50
    with_documents = [q for q in batch if q.has_documents]
    assert METRICS["doc_recall_ceiling"].function(with_documents) == [
        metrics.document_recall_ceiling(q.cutoff, q.documents) for q in with_documents
    ]


def test_the_greedy_ceiling_takes_what_a_pick_adds_when_chunks_overlap():
    """Overlapping chunks: the second pick is the one adding most beyond the first (not the second largest
    alone), and equal gains go to the first chunk in the collection's order."""
    references = (Span("a", 0, 100),)
    pool = (
        CollectionChunk("x", "a", 0, 60),
        CollectionChunk("y", "a", 10, 65),  # 55 of its own, 5 beyond x
        CollectionChunk("z", "a", 60, 100),  # 40, all beyond x
    )
    q = Scored("q", Question(id="q", question="?"), references, (), (), 2, pool=pool)
    assert (
        METRICS["recall_ceiling"].function([q])
        == [1.0]
        == [metrics.recall_ceiling([c.span for c in pool], references, 2)]
    )
    one = dataclasses.replace(q, cutoff=1, cache={})
    assert METRICS["recall_ceiling"].function([one]) == [0.6]
    # three chunks of 40 evidence characters: the first (the middle one) is picked, then 30 more (not 40)
    tied = (CollectionChunk("m", "a", 30, 70), CollectionChunk("l", "a", 0, 40), CollectionChunk("r", "a", 60, 100))
    first = dataclasses.replace(q, pool=tied, cache={})
    assert (
        METRICS["recall_ceiling"].function([first])
        == [0.7]
        == [metrics.recall_ceiling([c.span for c in tied], references, 2)]
    )


def test_a_batch_scores_every_question_as_it_scores_alone():
    """Every retrieval metric, the expanded ones included, of a batch mixing questions with and without neighbors
    in their context, pools, evidence spans and source documents equals the question scored alone."""
    rng = random.Random(11)
    words = "harbour tide ferry quay lantern rope anchor gull beacon pier".split()
    batch = []
    for q in _pooled(12, 300):
        hits = tuple(
            RetrievedChunk(rank, c.chunk_id, c.document, c.start, c.end, 0.5, text=" ".join(rng.sample(words, 5)))
            for rank, c in enumerate(rng.sample(q.pool or (), min(len(q.pool or ()), rng.randint(0, 4))), start=1)
        )
        neighbors = tuple(dataclasses.replace(h, role="neighbor", start=h.end, end=h.end + 30) for h in hits[:1])
        context = hits + neighbors if rng.random() < 0.5 else hits
        cutoff = len(hits) if rng.random() < 0.7 else len(hits) + 2
        batch.append(dataclasses.replace(q, hits=hits, context=context, cutoff=cutoff, cache={}))
    chosen = METRICS.values(source="retrieval")
    together = score(batch, chosen)
    alone = [score([dataclasses.replace(q, cache={})], chosen)[0] for q in batch]
    assert together == alone
    assert sum(row["recall_expanded"] not in (None, row["recall"]) for row in together) > 5  # neighbors counted
    assert sum(row["recall"] is None for row in together) > 10  # questions without evidence: not scored
