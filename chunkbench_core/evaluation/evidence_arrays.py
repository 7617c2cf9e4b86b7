"""Evidence metrics of every question of a batch at once, from arrays of offsets and ranks.

The formulas are those of :mod:`.metrics` (one question at a time), computed here for a whole batch of questions
without a Python loop over their chunks: the retrieved chunks and the references of all questions are laid out
as :class:`Intervals` (owner question, document, ``[start, end)``, rank), the pairs that meet are found by a
join on (question, document), and every union of intervals is one sort and one running maximum.

The coordinate is the character offset for the span metrics; a metric over pages uses the same shape with page
numbers as ``[first_page, last_page + 1)``: :func:`meeting_pairs` and :func:`union_lengths` do not care what the
coordinate counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Intervals:
    """Half-open intervals ``[start, end)``, each belonging to one question of a batch (``owner``, its position) and
    one document (``document``, a code); ``rank``: 1-based position in its question's ranking (hits), else 0."""

    owner: np.ndarray
    document: np.ndarray
    start: np.ndarray
    end: np.ndarray
    rank: np.ndarray

    @classmethod
    def of(cls, rows: Iterable[tuple[int, int, int, int, int]]) -> "Intervals":
        table = np.asarray(list(rows), dtype=np.int64).reshape(-1, 5)
        return cls(*(np.ascontiguousarray(table[:, i]) for i in range(5)))

    def __len__(self) -> int:
        return len(self.owner)

    @property
    def lengths(self) -> np.ndarray:
        return np.maximum(self.end - self.start, 0)


def totals(owner: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Σ values per owner 0..n-1 (int64 sums stay exact)."""
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, owner, values.astype(np.int64))
    return out


def union_lengths(group: np.ndarray, start: np.ndarray, end: np.ndarray, n: int) -> np.ndarray:
    """|∪ [start, end)| of each group 0..n-1 (intervals of different groups never merge; empty ones count 0)."""
    keep = end > start
    group, start, end = group[keep], start[keep], end[keep]
    if not len(group):
        return np.zeros(n, dtype=np.int64)
    width = int(end.max()) + 1  # each group gets a stretch of the line of its own
    begin, finish = group * width + start, group * width + end
    order = np.argsort(begin, kind="stable")
    begin, finish, group = begin[order], finish[order], group[order]
    reach = np.maximum.accumulate(finish)
    before = np.concatenate(([np.iinfo(np.int64).min], reach[:-1]))
    return totals(group, np.maximum(finish - np.maximum(begin, before), 0), n)


def meeting_pairs(a: Intervals, b: Intervals) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(index in a, index in b, start, end) of every pair of the same question and document that meets (touching
    counts, in an empty intersection): :func:`.metrics.intersection` for every pair at once."""
    n = int(max(a.owner.max(initial=-1), b.owner.max(initial=-1))) + 1
    order = np.argsort(b.owner, kind="stable")
    counts = np.bincount(b.owner, minlength=n)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    repeats = counts[a.owner] if len(a) else np.zeros(0, dtype=np.int64)
    left = np.repeat(np.arange(len(a)), repeats)
    step = np.arange(int(repeats.sum())) - np.repeat(np.cumsum(repeats) - repeats, repeats)
    right = order[np.repeat(first[a.owner] if len(a) else np.zeros(0, dtype=np.int64), repeats) + step]
    same = a.document[left] == b.document[right]
    left, right = left[same], right[same]
    start = np.maximum(a.start[left], b.start[right])
    end = np.minimum(a.end[left], b.end[right])
    meet = start <= end
    return left[meet], right[meet], start[meet], end[meet]


@dataclass(frozen=True)
class EvidenceArrays:
    """A batch of questions as arrays: the ranking scored (``hits``), the evidence spans (``references``) and the
    source documents (``sources``, intervals of no extent), documents coded alike."""

    n: int
    hits: Intervals
    references: Intervals
    sources: Intervals

    @classmethod
    def of(cls, batch: Sequence[Any]) -> "EvidenceArrays":
        """From :class:`.metric_registry.Scored` questions (their ``hits``, ``references`` and ``documents``)."""
        codes: dict[str, int] = {}

        def code(document: str) -> int:
            return codes.setdefault(document, len(codes))

        hits = Intervals.of(
            (i, code(h.document), h.start, h.end, r) for i, q in enumerate(batch) for r, h in enumerate(q.hits, start=1)
        )
        references = Intervals.of(
            (i, code(s.document), s.start, s.end, 0) for i, q in enumerate(batch) for s in q.references
        )
        sources = Intervals.of((i, code(d), 0, 0, 0) for i, q in enumerate(batch) for d in dict.fromkeys(q.documents))
        return cls(len(batch), hits, references, sources)


def arrays_of(batch: Sequence[Any]) -> EvidenceArrays:
    """The batch's arrays, made once for every metric that scores the same batch (kept on its first question)."""
    if not batch:
        return EvidenceArrays.of(batch)
    key = ("evidence_arrays", tuple(id(q) for q in batch))
    cache = batch[0].cache
    if key not in cache:
        cache[key] = EvidenceArrays.of(batch)
    return cache[key]


def _share(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (as the per-question formulas)."""
    out = np.zeros(len(numerator), dtype=np.float64)
    np.divide(numerator.astype(np.float64), denominator.astype(np.float64), out=out, where=denominator != 0)
    return out


def evidence_retrieved(a: EvidenceArrays) -> np.ndarray:
    """numerator = |∪_{c∈C, r∈R} (c ∩ r)| of each question (evidence characters retrieved, counted once)."""
    left, _, start, end = meeting_pairs(a.hits, a.references)
    owner, document = a.hits.owner[left], a.hits.document[left]
    width = int(max(a.hits.document.max(initial=0), a.references.document.max(initial=0))) + 1
    keys, group = np.unique(owner * width + document, return_inverse=True)  # one group per question x document
    return totals(keys // width, union_lengths(group.reshape(-1), start, end, len(keys)), a.n)


def missed_evidence(a: EvidenceArrays) -> np.ndarray:
    """Σ_{r∈R} |r \\ ∪C| of each question: reference characters no retrieved chunk covers."""
    _, right, start, end = meeting_pairs(a.hits, a.references)
    inside = union_lengths(right, start, end, len(a.references))
    return totals(a.references.owner, a.references.lengths - inside, a.n)


def recall(a: EvidenceArrays) -> np.ndarray:
    """recall = numerator / Σ_{r∈R} |r| (0 without reference characters)."""
    return _share(evidence_retrieved(a), totals(a.references.owner, a.references.lengths, a.n))


def precision(a: EvidenceArrays) -> np.ndarray:
    """precision = numerator / Σ_{c∈C} |c| (retrieved characters counted with repeats)."""
    return _share(evidence_retrieved(a), totals(a.hits.owner, a.hits.lengths, a.n))


def iou(a: EvidenceArrays) -> np.ndarray:
    """IoU = numerator / (Σ_{c∈C} |c| + Σ_{r∈R} |r \\ ∪C|)."""
    return _share(evidence_retrieved(a), totals(a.hits.owner, a.hits.lengths, a.n) + missed_evidence(a))


def _from_sources(a: EvidenceArrays) -> np.ndarray:
    """Whether each hit comes from one of its question's source documents."""
    width = int(max(a.hits.document.max(initial=0), a.sources.document.max(initial=0))) + 1
    return np.isin(a.hits.owner * width + a.hits.document, a.sources.owner * width + a.sources.document)


def document_hit(a: EvidenceArrays) -> np.ndarray:
    """doc_hit@k: 1 if a retrieved chunk comes from a source document, else 0."""
    return (np.bincount(a.hits.owner[_from_sources(a)], minlength=a.n) > 0).astype(np.float64)


def document_recall(a: EvidenceArrays) -> np.ndarray:
    """doc_recall@k = |documents of the retrieved chunks ∩ S| / |S| (0 when S is empty)."""
    width = int(max(a.hits.document.max(initial=0), a.sources.document.max(initial=0))) + 1
    found = np.unique(a.hits.owner[_from_sources(a)] * width + a.hits.document[_from_sources(a)])
    return _share(np.bincount(found // width, minlength=a.n), np.bincount(a.sources.owner, minlength=a.n))


def document_reciprocal_rank(a: EvidenceArrays) -> np.ndarray:
    """1 / rank of the first retrieved chunk from a source document (0 if none)."""
    member = _from_sources(a)
    first = np.full(a.n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, a.hits.owner[member], a.hits.rank[member])
    out = np.zeros(a.n, dtype=np.float64)
    found = first != np.iinfo(np.int64).max
    out[found] = 1.0 / first[found]
    return out


def fill_graded_relevance(batch: Sequence[Any]) -> None:
    """Each question's graded relevance (:attr:`.metric_registry.Scored.qrels`: chunk id -> evidence characters
    it holds, for every candidate holding some) for the questions of ``batch`` that have none yet, all at once:
    :func:`.metrics.evidence_characters` of every candidate (the pool, the hits, the context), in that order."""
    todo = [q for q in batch if "qrels" not in q.cache]
    if not todo:
        return
    codes: dict[str, int] = {}

    def code(document: str) -> int:
        return codes.setdefault(document, len(codes))

    candidates = [c for q in todo for c in (*(q.pool or ()), *q.cache.get("hits_before", q.hits), *q.context)]
    owners = [
        i
        for i, q in enumerate(todo)
        for _ in range(len(q.pool or ()) + len(q.cache.get("hits_before", q.hits)) + len(q.context))
    ]
    chunks = Intervals.of((i, code(c.document), c.start, c.end, 0) for i, c in zip(owners, candidates))
    references = Intervals.of(
        (i, code(s.document), s.start, s.end, 0) for i, q in enumerate(todo) for s in q.references
    )
    left, _, start, end = meeting_pairs(chunks, references)
    gains = union_lengths(left, start, end, len(chunks))
    judged: list[dict[str, int]] = [{} for _ in todo]
    for position in np.flatnonzero(gains > 0).tolist():
        judged[owners[position]][candidates[position].chunk_id] = int(gains[position])
    for q, relevant in zip(todo, judged):
        q.cache["qrels"] = relevant
