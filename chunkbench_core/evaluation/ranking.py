"""Ranking metrics of retrieved chunks (Success@k, RR@k, nDCG@k), with trec_eval's definitions, computed for
every question of a run at once over arrays.

Relevance of a chunk to a question is graded: the number of evidence characters it
holds, ``|∪_{r∈R} (chunk ∩ r)|`` (:func:`.metrics.evidence_characters`); a chunk
holding none is not relevant. With that:

- ``Success@k`` (hit rate): 1 if a relevant chunk is among the first k, else 0;
- ``RR@k`` (its mean is MRR@k): 1 / rank of the first relevant chunk among the first k (0 if none);
- ``nDCG@k``: Σ_{i≤k} gain_i / log2(i + 1) divided by the same sum for the ideal
  ordering of every relevant chunk of the collection (trec_eval's ``ndcg_cut``,
  linear gain = evidence characters).

The judged set (qrels) of a question is every chunk of the collection that meets one
of its references, so nDCG needs the collection's chunk list; RR and Success only
need the ranking. A ranking is taken in our order (rank 1 first): trec_eval sorts a run by score, and the
retrieval already ordered tied scores by chunk id, so there is nothing left to re-order. A chunk id listed
twice counts once, at its first rank (trec_eval needs unique ids per question).

The values equal ir-measures' (trec_eval through pytrec_eval for Success and nDCG, MS MARCO's code for RR), to
1e-12: a test scores random runs with ties both ways. ir-measures scored one question at a time in Python, about
a quarter of the scoring time of a run of 20,000 questions; over arrays it is a small part of a second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import metadata

import numpy as np

#: our column names (each the name of a trec_eval / ir-measures measure family: :data:`MEASURE_NAMES`)
MEASURES: tuple[str, ...] = ("hit", "reciprocal_rank", "ndcg")
#: our column name -> the measure's name in ir-measures (``Success@5``) and the papers
MEASURE_NAMES: dict[str, str] = {"hit": "Success", "reciprocal_rank": "RR", "ndcg": "nDCG"}


def canonical_name(column: str, k: int) -> str:
    """The ir-measures name of one of our ranking columns at cutoff k, e.g. ``nDCG@5``."""
    return f"{MEASURE_NAMES[column]}@{k}"


def ranking_arrays(
    rankings: Sequence[Sequence[str]],
    qrels: Sequence[Mapping[str, int]],
    cutoffs: Sequence[int],
    with_ndcg: bool = True,
) -> dict[str, np.ndarray]:
    """Success@k, RR@k and nDCG@k of every question (position i: ``rankings[i]``, chunk ids in rank order,
    against ``qrels[i]``, chunk id -> graded relevance, > 0 relevant, cut at ``cutoffs[i]``): column -> float64
    array. A question with no relevant chunk, an empty ranking or a cutoff below 1 scores 0 (trec_eval would
    leave it out); ``with_ndcg=False`` (the judged set is incomplete: an ideal ordering cannot be known) gives
    NaN nDCG."""
    n = len(rankings)
    if len(qrels) != n or len(cutoffs) != n:
        raise ValueError(f"{n} rankings, {len(qrels)} judged sets and {len(cutoffs)} cutoffs do not match")
    k = np.fromiter(cutoffs, dtype=np.int64, count=n)
    # every judged chunk's gain, and which questions can score (a relevant chunk, a ranking, k >= 1)
    judged_owner = np.repeat(np.arange(n, dtype=np.int64), [len(judged) for judged in qrels])
    judged_gain = np.array([int(g) for judged in qrels for g in judged.values()], dtype=np.int64)
    relevant = judged_gain > 0
    sizes = np.fromiter(map(len, rankings), dtype=np.int64, count=n)
    scored = (np.bincount(judged_owner[relevant], minlength=n) > 0) & (sizes > 0) & (k >= 1)
    # each question's ranking cut at its k: its first k distinct ids (an id listed again counts at its first rank)
    ids = [doc for ranking in rankings for doc in ranking]
    codes: dict[str, int] = {}
    code = np.fromiter((codes.setdefault(doc, len(codes)) for doc in ids), dtype=np.int64, count=len(ids))
    owner = np.repeat(np.arange(n, dtype=np.int64), sizes)
    first = np.zeros(len(ids), dtype=bool)
    first[np.unique(owner * max(len(codes), 1) + code, return_index=True)[1]] = True
    kept = np.flatnonzero(first & scored[owner])
    rank = _ranks_within(owner[kept])
    within = rank <= k[owner[kept]]
    kept, rank = kept[within], rank[within]
    owner = owner[kept]
    gain = np.array(
        [max(int(qrels[i].get(ids[j], 0)), 0) for i, j in zip(owner.tolist(), kept.tolist())], dtype=np.float64
    )
    relevant_at = gain > 0
    # the first relevant rank of each question (a sentinel above every rank when none)
    first_rank = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_rank, owner[relevant_at], rank[relevant_at])
    found = first_rank != np.iinfo(np.int64).max
    hit = found.astype(np.float64)
    reciprocal = np.zeros(n, dtype=np.float64)
    reciprocal[found] = 1.0 / first_rank[found]
    out = {"hit": hit, "reciprocal_rank": reciprocal}
    if not with_ndcg:
        out["ndcg"] = np.full(n, np.nan)
        return out
    # rank by rank in rank order, as trec_eval adds them (the entries of a question are consecutive, ranks rising)
    dcg = _ordered_sums(owner, gain / np.log2(rank + 1.0), n)
    # the ideal ordering: each question's k largest gains, largest first
    best = np.flatnonzero(relevant & scored[judged_owner])
    best = best[np.lexsort((-judged_gain[best], judged_owner[best]))]
    ideal_rank = _ranks_within(judged_owner[best])
    within = ideal_rank <= k[judged_owner[best]]
    best, ideal_rank = best[within], ideal_rank[within]
    ideal = _ordered_sums(judged_owner[best], judged_gain[best].astype(np.float64) / np.log2(ideal_rank + 1.0), n)
    ndcg = np.zeros(n, dtype=np.float64)
    positive = scored & (ideal > 0)
    ndcg[positive] = dcg[positive] / ideal[positive]
    out["ndcg"] = ndcg
    return out


def _ranks_within(owner: np.ndarray) -> np.ndarray:
    """1, 2, 3 ... within each run of equal, consecutive owners."""
    if not len(owner):
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    lengths = np.diff(np.r_[starts, len(owner)])
    return np.arange(len(owner)) - np.repeat(starts, lengths) + 1


def _ordered_sums(owner: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Σ values per owner 0..n-1, each added in its order (``np.add.at`` adds unbuffered, left to right: the same
    float64 sum as trec_eval's loop over ranks)."""
    out = np.zeros(n, dtype=np.float64)
    np.add.at(out, owner, values)
    return out


def ranking_scores(
    rankings: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    cutoff: int | Mapping[str, int],
    with_ndcg: bool = True,
) -> dict[str, dict[str, float]]:
    """Success@k, RR@k and nDCG@k per question (:func:`ranking_arrays`).

    ``rankings``: question key -> chunk ids in rank order. ``qrels``: question key ->
    chunk id -> graded relevance (> 0 relevant). ``cutoff``: k, one for all or per question.
    Returns question key -> {"hit", "reciprocal_rank", "ndcg"}.
    """
    keys = list(rankings)
    cutoffs = [cutoff if isinstance(cutoff, int) else cutoff[key] for key in keys]
    values = ranking_arrays(
        [rankings[key] for key in keys], [qrels.get(key, {}) for key in keys], cutoffs, with_ndcg=with_ndcg
    )
    columns = {column: values[column].tolist() for column in MEASURES}
    return {key: {column: columns[column][i] for column in MEASURES} for i, key in enumerate(keys)}


def library_version() -> str:
    """What computed the ranking metrics (recorded in provenance): these arrays, with trec_eval's definitions, and
    the ir-measures release they are checked against."""
    try:
        reference = f"ir-measures {metadata.version('ir-measures')}"
    except metadata.PackageNotFoundError:
        reference = "ir-measures"
    return f"chunkbench ranking arrays (trec_eval definitions, equal to {reference})"
