"""Ranking metrics of retrieved chunks, computed by ir-measures (trec_eval via pytrec_eval).

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
need the ranking. The ranking is passed in our order (trec_eval sorts by score, so
each item gets the score ``n - position``: no ties, no re-ordering).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: our column names, each an ir-measures measure family (:func:`measures`)
MEASURES: tuple[str, ...] = ("hit", "reciprocal_rank", "ndcg")


def measures() -> dict[str, Any]:
    """Our column name -> ir-measures measure family. ir-measures is imported here, when a ranking is scored or named:
    it takes about 0.13 s to import, which every process that loads the metric registry would otherwise pay."""
    from ir_measures import RR, Success, nDCG

    return {"hit": Success, "reciprocal_rank": RR, "ndcg": nDCG}


def canonical_name(column: str, k: int) -> str:
    """The ir-measures name of one of our ranking columns at cutoff k, e.g. ``nDCG@5``."""
    return str(measures()[column] @ k)


def ranking_scores(
    rankings: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    cutoff: int | Mapping[str, int],
    with_ndcg: bool = True,
) -> dict[str, dict[str, float]]:
    """Success@k, RR@k and nDCG@k per question.

    ``rankings``: question key -> chunk ids in rank order. ``qrels``: question key ->
    chunk id -> graded relevance (> 0 relevant). ``cutoff``: k, one for all or per question.
    Returns question key -> {"hit", "reciprocal_rank", "ndcg"}; a question with no relevant
    chunk or an empty ranking scores 0 (trec_eval would leave it out).
    """
    import ir_measures
    from ir_measures import RR, Qrel, Success, nDCG

    out: dict[str, dict[str, float]] = {}
    by_cutoff: dict[int, list[str]] = defaultdict(list)
    for key, ranking in rankings.items():
        relevant = {doc: int(rel) for doc, rel in qrels.get(key, {}).items() if int(rel) > 0}
        k = cutoff if isinstance(cutoff, int) else cutoff[key]
        if not ranking or not relevant or k < 1:
            out[key] = {column: 0.0 for column in MEASURES}
            continue
        by_cutoff[k].append(key)
    for k, keys in sorted(by_cutoff.items()):
        measures = [Success @ k, RR @ k] + ([nDCG @ k] if with_ndcg else [])
        names = {str(Success @ k): "hit", str(RR @ k): "reciprocal_rank", str(nDCG @ k): "ndcg"}
        run = list(_scored(rankings, keys))
        judged = [Qrel(key, doc, rel) for key in keys for doc, rel in sorted(qrels[key].items()) if rel > 0]
        for key in keys:
            out[key] = {column: 0.0 for column in MEASURES}
        for metric in ir_measures.iter_calc(measures, judged, run):
            out[metric.query_id][names[str(metric.measure)]] = float(metric.value)
    if not with_ndcg:  # the judged set is incomplete: an ideal ordering cannot be known
        for scores in out.values():
            scores["ndcg"] = float("nan")
    return out


def _scored(rankings: Mapping[str, Sequence[str]], keys: Iterable[str]) -> Iterable[Any]:
    from ir_measures import ScoredDoc

    for key in keys:
        ranking = list(dict.fromkeys(rankings[key]))  # trec_eval needs unique ids per query
        n = len(ranking)
        for position, doc in enumerate(ranking):
            yield ScoredDoc(key, doc, float(n - position))


def library_version() -> str:
    """ir-measures version (recorded in provenance)."""
    import ir_measures

    return f"ir-measures {ir_measures.__version__}"
