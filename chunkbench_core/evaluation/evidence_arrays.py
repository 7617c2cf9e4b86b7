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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


class DocumentCodes:
    """Document name -> a small integer, shared by every interval of one batch (so two intervals meet only when
    their documents' codes are equal)."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def of(self, names: Sequence[str]) -> np.ndarray:
        codes = self._codes
        for name in dict.fromkeys(names):
            if name not in codes:
                codes[name] = len(codes)
        return np.fromiter(map(codes.__getitem__, names), dtype=np.int64, count=len(names))


def flatten(groups: Sequence[Sequence[Any]]) -> tuple[list[Any], np.ndarray]:
    """The items of every group, group after group, and the group (its position in ``groups``) of each."""
    items = [item for group in groups for item in group]
    sizes = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
    return items, np.repeat(np.arange(len(groups), dtype=np.int64), sizes)


def _ranks(owner: np.ndarray) -> np.ndarray:
    """1, 2, 3 ... within each run of equal, consecutive owners."""
    if not len(owner):
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    return np.arange(1, len(owner) + 1) - np.repeat(starts, np.diff(np.r_[starts, len(owner)]))


@dataclass(frozen=True)
class Intervals:
    """Half-open intervals ``[start, end)``, each belonging to one question of a batch (``owner``, its position) and
    one document (``document``, a code of :class:`DocumentCodes`); ``rank``: 1-based position among its owner's
    intervals (for hits: the rank in the question's ranking)."""

    owner: np.ndarray
    document: np.ndarray
    start: np.ndarray
    end: np.ndarray
    rank: np.ndarray

    @classmethod
    def of_items(cls, items: Sequence[Any], owner: np.ndarray, codes: DocumentCodes) -> "Intervals":
        """From objects with ``document``, ``start`` and ``end`` (spans, chunks), the items of one owner
        consecutive (as :func:`flatten` lays them out)."""
        return cls(
            owner,
            codes.of([item.document for item in items]),
            np.fromiter([item.start for item in items], dtype=np.int64, count=len(items)),  # a list is quicker
            np.fromiter([item.end for item in items], dtype=np.int64, count=len(items)),
            _ranks(owner),
        )

    @classmethod
    def of_groups(cls, groups: Sequence[Sequence[Any]], codes: DocumentCodes) -> "Intervals":
        """``groups[i]``'s spans or chunks, owned by i."""
        items, owner = flatten(groups)
        return cls.of_items(items, owner, codes)

    def take(self, index: np.ndarray) -> "Intervals":
        """The intervals at ``index`` (positions or a mask)."""
        return Intervals(self.owner[index], self.document[index], self.start[index], self.end[index], self.rank[index])

    @staticmethod
    def joined(parts: Sequence["Intervals"]) -> "Intervals":
        """The intervals of every part, part after part."""
        return Intervals(
            *(np.concatenate([getattr(p, f) for p in parts]) for f in ("owner", "document", "start", "end", "rank"))
        )

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
    """A batch of questions as arrays: the ranking scored (``hits``; for the pool's metrics, :func:`pool_arrays`,
    the collection's chunks that meet the evidence), the evidence spans (``references``), the source documents
    (``sources``, each once, intervals of no extent), documents coded alike, and each question's k (``cutoff``)."""

    n: int
    hits: Intervals
    references: Intervals
    sources: Intervals
    cutoff: np.ndarray

    @classmethod
    def of(cls, batch: Sequence[Any], pool: bool = False) -> "EvidenceArrays":
        """From :class:`.metric_registry.Scored` questions (their ``hits``, or their ``pool`` when ``pool``, their
        ``references``, ``documents`` and ``cutoff``)."""
        codes = DocumentCodes()
        ranked = [q.pool or () for q in batch] if pool else [q.hits for q in batch]
        documents, owner = flatten([q.documents for q in batch])
        document = codes.of(documents)
        width = int(document.max(initial=0)) + 1
        unique = np.unique(owner * width + document)  # each source document of a question once
        none = np.zeros(len(unique), dtype=np.int64)
        return cls(
            len(batch),
            Intervals.of_groups(ranked, codes),
            Intervals.of_groups([q.references for q in batch], codes),
            Intervals(unique // width, unique % width, none, none, none),
            np.fromiter((q.cutoff for q in batch), dtype=np.int64, count=len(batch)),
        )


def _cached(batch: Sequence[Any], pool: bool) -> EvidenceArrays:
    """The batch's arrays, made once for every metric that scores the same batch (kept on its first question)."""
    if not batch:
        return EvidenceArrays.of(batch, pool)
    key = ("pool_arrays" if pool else "evidence_arrays", tuple(map(id, batch)))
    cache = batch[0].cache
    if key not in cache:
        cache[key] = EvidenceArrays.of(batch, pool)
    return cache[key]


def arrays_of(batch: Sequence[Any]) -> EvidenceArrays:
    """The arrays of the batch's rankings (made once for every metric that scores the same batch)."""
    return _cached(batch, pool=False)


def pool_arrays(batch: Sequence[Any]) -> EvidenceArrays:
    """The arrays of the batch's pools in place of their rankings: every chunk of the collection that meets a
    question's evidence, in the collection's order (a question without a pool has none)."""
    return _cached(batch, pool=True)


def _share(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (as the per-question formulas)."""
    out = np.zeros(len(numerator), dtype=np.float64)
    np.divide(numerator.astype(np.float64), denominator.astype(np.float64), out=out, where=denominator != 0)
    return out


def question_unions(owner: np.ndarray, document: np.ndarray, start: np.ndarray, end: np.ndarray, n: int) -> np.ndarray:
    """|∪ [start, end)| of each question 0..n-1, intervals of different documents apart."""
    width = int(document.max(initial=0)) + 1
    keys, group = np.unique(owner * width + document, return_inverse=True)  # one group per question x document
    return totals(keys // width, union_lengths(group.reshape(-1), start, end, len(keys)), n)


def merged(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group, start, end) of ∪ [start, end) of each group as disjoint intervals, by group then start (intervals of
    different groups never merge; empty ones are left out)."""
    keep = end > start
    group, start, end = group[keep], start[keep], end[keep]
    if not len(group):
        return group, start, end
    low = min(int(start.min()), 0)
    width = int(end.max()) - low + 1  # each group gets a stretch of the line of its own
    begin, finish = group * width + (start - low), group * width + (end - low)
    order = np.argsort(begin, kind="stable")
    begin, finish, group = begin[order], finish[order], group[order]
    reach = np.maximum.accumulate(finish)
    first = np.flatnonzero(np.r_[True, begin[1:] > reach[:-1]])  # where a new stretch of covered line begins
    group = group[first]
    return group, begin[first] - group * width + low, np.maximum.reduceat(finish, first) - group * width + low


def evidence_retrieved(a: EvidenceArrays) -> np.ndarray:
    """numerator = |∪_{c∈C, r∈R} (c ∩ r)| of each question (evidence characters retrieved, counted once)."""
    left, _, start, end = meeting_pairs(a.hits, a.references)
    return question_unions(a.hits.owner[left], a.hits.document[left], start, end, a.n)


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


def document_recall_ceiling(a: EvidenceArrays) -> np.ndarray:
    """doc_recall_ceiling@k = min(1, k / |S|) (0 when S is empty)."""
    return np.minimum(1.0, _share(a.cutoff, np.bincount(a.sources.owner, minlength=a.n)))


# -- the pool's metrics: ``hits`` are every chunk of the collection that meets the evidence (:func:`pool_arrays`)


def precision_omega(a: EvidenceArrays) -> np.ndarray:
    """precision_omega = numerator(T) / |∪T ∪ ∪R| with T the chunks that meet a reference (touching counts): the
    per-question formula's ``|∪T ∪ (R \\ ∪T)|``; 0 when T holds no evidence."""
    left, _, _, _ = meeting_pairs(a.hits, a.references)
    touching = a.hits.take(np.unique(left))
    numerator = evidence_retrieved(a)  # a chunk meeting no reference adds nothing to it
    covered = question_unions(
        np.concatenate((touching.owner, a.references.owner)),
        np.concatenate((touching.document, a.references.document)),
        np.concatenate((touching.start, a.references.start)),
        np.concatenate((touching.end, a.references.end)),
        a.n,
    )
    return np.where(numerator > 0, _share(numerator, covered), 0.0)


def recall_ceiling(a: EvidenceArrays) -> np.ndarray:
    """The recall of the ``cutoff`` chunks picked one at a time, each adding the most evidence characters not yet
    covered (the first in the collection's order among equals; none once nothing adds any), as
    :func:`.metrics.recall_ceiling`: every question's pick of a round at once."""
    total = totals(a.references.owner, a.references.lengths, a.n)
    left, _, start, end = meeting_pairs(a.hits, a.references)
    chunk, start, end = merged(left, start, end)  # each chunk's evidence, as disjoint pieces
    pieces = Intervals(a.hits.owner[chunk], a.hits.document[chunk], start, end, chunk)  # rank: the chunk
    gain = totals(chunk, end - start, len(a.hits))  # evidence characters of each chunk
    left_open = gain > 0  # the candidates not picked yet
    covered = np.zeros(a.n, dtype=np.int64)
    taken = pieces.take(np.zeros(0, dtype=np.int64))  # the evidence of the picked chunks, disjoint pieces
    width = int(a.hits.document.max(initial=0)) + 1
    for step in range(int(a.cutoff.max(initial=0))):
        inside, _, meet_start, meet_end = meeting_pairs(pieces, taken)
        adds = gain - totals(pieces.rank[inside], meet_end - meet_start, len(a.hits))
        candidates = np.flatnonzero(left_open & (adds > 0) & (a.cutoff[a.hits.owner] > step))
        if not len(candidates):
            break
        question = a.hits.owner[candidates]
        order = np.lexsort((candidates, -adds[candidates], question))  # by question, most added, first
        best = candidates[order][np.r_[True, question[order][1:] != question[order][:-1]]]
        left_open[best] = False
        covered[a.hits.owner[best]] += adds[best]
        picked = pieces.take(np.isin(chunk, best))
        group, begin, finish = merged(
            np.concatenate((taken.owner, picked.owner)) * width + np.concatenate((taken.document, picked.document)),
            np.concatenate((taken.start, picked.start)),
            np.concatenate((taken.end, picked.end)),
        )
        taken = Intervals(group // width, group % width, begin, finish, np.zeros(len(group), dtype=np.int64))
    return _share(covered, total)


def fill_graded_relevance(batch: Sequence[Any]) -> None:
    """Each question's graded relevance (:attr:`.metric_registry.Scored.qrels`: chunk id -> evidence characters
    it holds, for every candidate holding some) for the questions of ``batch`` that have none yet, all at once:
    :func:`.metrics.evidence_characters` of every candidate (the pool, the hits, the context), in that order."""
    todo = [q for q in batch if "qrels" not in q.cache]
    if not todo:
        return
    codes = DocumentCodes()
    # a context that is the ranking (no neighbors) holds nothing more: its chunks are not judged twice
    candidates, owner = flatten(
        [
            (*(q.pool or ()), *ranked, *(q.context if q.context != ranked else ()))
            for q in todo
            for ranked in (q.cache.get("hits_before", q.hits),)
        ]
    )
    chunks = Intervals.of_items(candidates, owner, codes)
    left, _, start, end = meeting_pairs(chunks, Intervals.of_groups([q.references for q in todo], codes))
    gains = union_lengths(left, start, end, len(chunks))
    judged: list[dict[str, int]] = [{} for _ in todo]
    relevant = np.flatnonzero(gains > 0)
    for position, question, gain in zip(relevant.tolist(), owner[relevant].tolist(), gains[relevant].tolist()):
        judged[question][candidates[position].chunk_id] = gain
    for q, relevant_chunks in zip(todo, judged):
        q.cache["qrels"] = relevant_chunks
