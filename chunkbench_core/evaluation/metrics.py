"""Evidence metrics: character-level overlap of retrieved chunks with reference spans.

One pure function per metric. Spans are ``Span(document, start, end)`` half-open
character ranges in a document's parsed markdown; spans of different documents never
intersect. Definitions follow the Chroma chunking report (Smith & Troynikov 2024; its data
set and protocol: chunkbench_core/datasets/chroma_general_evaluation/), with R the reference spans and C
the retrieved chunks in rank order:

- ``numerator = |∪_{c∈C, r∈R} (c ∩ r)|`` — evidence characters retrieved, counted once;
- ``recall = numerator / Σ_{r∈R} |r|``;
- ``precision = numerator / Σ_{c∈C} |c|`` — every retrieved chunk counts in the
  denominator, chunks of other documents and repeated (overlapping) characters included;
- ``IoU = numerator / (Σ_{c∈C} |c| + Σ_{r∈R} |r \\ ∪C|)``;
- ``precision_omega``: precision when every chunk of the collection that meets a
  reference is retrieved (touching ranges count as meeting, as in the reference code).

Ranking metrics (hit rate, MRR, nDCG) are not computed here but in :mod:`.ranking` (trec_eval's
definitions over arrays); :func:`evidence_characters` gives their graded relevance, and
:func:`hit` / :func:`reciprocal_rank` are kept as small cross-checks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from .questions import Span


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Union of spans: sorted, overlapping or touching spans of one document merged."""
    by_document: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for s in spans:
        if s.end > s.start:
            by_document[s.document].append((s.start, s.end))
    merged: list[Span] = []
    for document in sorted(by_document):
        current_start, current_end = None, None
        for start, end in sorted(by_document[document]):
            if current_end is not None and start <= current_end:
                current_end = max(current_end, end)
                continue
            if current_start is not None:
                merged.append(Span(document, current_start, current_end))  # type: ignore[arg-type]  # a span is open here: both ends are set
            current_start, current_end = start, end
        if current_start is not None:
            merged.append(Span(document, current_start, current_end))  # type: ignore[arg-type]  # a span is open here: both ends are set
    return merged


def total_length(spans: Iterable[Span]) -> int:
    """Σ len(s), overlaps counted as many times as they occur."""
    return sum(len(s) for s in spans)


def union_length(spans: Iterable[Span]) -> int:
    """|∪ s|: characters covered at least once."""
    return total_length(merge_spans(spans))


def intersection(a: Span, b: Span) -> Span | None:
    """a ∩ b, or None when the spans are in different documents or do not meet.

    Touching spans (a.end == b.start) meet in an empty span, as in the reference code.
    """
    if a.document != b.document:
        return None
    start, end = max(a.start, b.start), min(a.end, b.end)
    return Span(a.document, start, end) if start <= end else None


def overlaps(a: Span, b: Span) -> bool:
    """True when a and b share at least one character."""
    meet = intersection(a, b)
    return meet is not None and meet.end > meet.start


def evidence_retrieved(retrieved: Sequence[Span], references: Sequence[Span]) -> int:
    """numerator = |∪_{c∈C, r∈R} (c ∩ r)|."""
    parts = [m for c in retrieved for r in references if (m := intersection(c, r)) is not None]
    return union_length(parts)


def recall(retrieved: Sequence[Span], references: Sequence[Span]) -> float:
    """recall = numerator / Σ_{r∈R} |r|  (0 when there are no reference characters)."""
    denominator = total_length(references)
    return evidence_retrieved(retrieved, references) / denominator if denominator else 0.0


def precision(retrieved: Sequence[Span], references: Sequence[Span]) -> float:
    """precision = numerator / Σ_{c∈C} |c|  (retrieved characters counted with repeats)."""
    denominator = total_length(retrieved)
    return evidence_retrieved(retrieved, references) / denominator if denominator else 0.0


def missed_evidence(retrieved: Sequence[Span], references: Sequence[Span]) -> int:
    """Σ_{r∈R} |r \\ ∪C|: reference characters no retrieved chunk covers."""
    covered = merge_spans(retrieved)
    missed = 0
    for r in references:
        inside = union_length(m for c in covered if (m := intersection(c, r)) is not None)
        missed += len(r) - inside
    return missed


def iou(retrieved: Sequence[Span], references: Sequence[Span]) -> float:
    """IoU = numerator / (Σ_{c∈C} |c| + Σ_{r∈R} |r \\ ∪C|)."""
    denominator = total_length(retrieved) + missed_evidence(retrieved, references)
    return evidence_retrieved(retrieved, references) / denominator if denominator else 0.0


def precision_omega(all_chunks: Sequence[Span], references: Sequence[Span]) -> float:
    """Precision when every chunk that meets a reference is retrieved (Chroma's precision Ω).

    With T = {c ∈ all_chunks : c ∩ r ≠ ∅ for some r} (touching counts):
    precision_omega = numerator(T) / |∪T ∪ (R \\ ∪T)|.
    """
    touching = [c for c in all_chunks if any(intersection(c, r) is not None for r in references)]
    numerator = evidence_retrieved(touching, references)
    if not numerator:
        return 0.0
    uncovered: list[Span] = []
    covered = merge_spans(touching)
    for r in references:
        cursor = r.start
        for c in (c for c in covered if c.document == r.document and c.end > r.start and c.start < r.end):
            if c.start > cursor:
                uncovered.append(Span(r.document, cursor, c.start))
            cursor = max(cursor, c.end)
        if cursor < r.end:
            uncovered.append(Span(r.document, cursor, r.end))
    return numerator / union_length([*touching, *uncovered])


def first_relevant_rank(retrieved: Sequence[Span], references: Sequence[Span]) -> int | None:
    """1-based rank of the first retrieved chunk that shares a character with a reference."""
    for rank, c in enumerate(retrieved, start=1):
        if any(overlaps(c, r) for r in references):
            return rank
    return None


def hit(retrieved: Sequence[Span], references: Sequence[Span]) -> float:
    """hit@k = 1 if any of the k retrieved chunks shares a character with a reference, else 0."""
    return 1.0 if first_relevant_rank(retrieved, references) is not None else 0.0


def reciprocal_rank(retrieved: Sequence[Span], references: Sequence[Span]) -> float:
    """RR@k = 1 / rank of the first relevant chunk (0 if none); MRR@k is its mean over questions."""
    rank = first_relevant_rank(retrieved, references)
    return 1.0 / rank if rank else 0.0


def evidence_characters(chunk: Span, references: Sequence[Span]) -> int:
    """|∪_{r∈R} (chunk ∩ r)|: evidence characters inside one chunk (its graded relevance for nDCG)."""
    return evidence_retrieved([chunk], references)


def character_scores(retrieved: Sequence[Span], references: Sequence[Span]) -> dict[str, float]:
    """recall, precision and IoU of one question's retrieved spans (order does not matter)."""
    return {
        "recall": recall(retrieved, references),
        "precision": precision(retrieved, references),
        "iou": iou(retrieved, references),
    }


# -- document-level evidence: "the answer is in these documents" ------------------------------------------
# With S the question's source documents and d_1 .. d_k the documents of the top-k chunks in rank order
# (a chunk lies in one document):
#
# - ``doc_hit@k = 1`` if some d_i is in S, else 0;
# - ``doc_recall@k = |{d_1 .. d_k} ∩ S| / |S|``: the share of the source documents that at least one of
#   the top-k chunks comes from;
# - ``doc_rr@k = 1 / min{i : d_i ∈ S}`` (0 if none); ``doc_mrr`` is its mean over questions;
# - ``doc_recall_ceiling@k = min(1, k / |S|)``: the best doc_recall@k any ranking could reach, since k
#   chunks come from at most k documents.


def document_hit(retrieved_documents: Sequence[str], sources: Iterable[str]) -> float:
    """doc_hit@k: 1 if a retrieved chunk comes from a source document, else 0."""
    wanted = set(sources)
    return 1.0 if any(d in wanted for d in retrieved_documents) else 0.0


def document_recall(retrieved_documents: Sequence[str], sources: Iterable[str]) -> float:
    """doc_recall@k = |documents of the retrieved chunks ∩ S| / |S| (0 when S is empty)."""
    wanted = set(sources)
    return len(wanted & set(retrieved_documents)) / len(wanted) if wanted else 0.0


def document_reciprocal_rank(retrieved_documents: Sequence[str], sources: Iterable[str]) -> float:
    """1 / rank of the first retrieved chunk from a source document (0 if none)."""
    wanted = set(sources)
    for rank, document in enumerate(retrieved_documents, start=1):
        if document in wanted:
            return 1.0 / rank
    return 0.0


def document_recall_ceiling(k: int, sources: Iterable[str]) -> float:
    """min(1, k / |S|): the best doc_recall@k that any k chunks can reach (each chunk is in one document)."""
    n = len(set(sources))
    return min(1.0, k / n) if n else 0.0


def recall_ceiling(all_chunks: Sequence[Span], references: Sequence[Span], k: int) -> float:
    """The best evidence recall k chunks of this chunking can reach: the recall of the k chunks picked one at a
    time, each adding the most evidence characters not yet covered.

    Exact when chunks do not overlap (then it is the recall of the k chunks holding the most evidence);
    with overlapping chunks it is a recall some k chunks do reach (the true best may be a little higher).
    """
    total = total_length(references)
    if not total or k < 1:
        return 0.0
    candidates = [c for c in all_chunks if evidence_characters(c, references) > 0]
    chosen: list[Span] = []
    covered = 0
    for _ in range(min(k, len(candidates))):
        best, best_gain = None, 0
        for c in candidates:
            gain = evidence_retrieved([*chosen, c], references) - covered
            if gain > best_gain:
                best, best_gain = c, gain
        if best is None:
            break
        chosen.append(best)
        candidates.remove(best)
        covered += best_gain
    return covered / total
