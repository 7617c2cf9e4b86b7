"""Ranking metrics over arrays: against hand-computed values, and equal to ir-measures (trec_eval) on random runs
with ties."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from chunkbench_core.evaluation.ranking import canonical_name, ranking_arrays, ranking_scores


def test_order_is_ours_not_trec_evals_docid_order():
    # relevant "a" (gain 10) at rank 3, "b" (gain 3) at rank 1
    scores = ranking_scores({"q": ["b", "z", "a"]}, {"q": {"a": 10, "b": 3}}, 5)["q"]
    assert scores["hit"] == 1.0
    assert scores["reciprocal_rank"] == 1.0
    dcg = 3 / math.log2(2) + 10 / math.log2(4)
    idcg = 10 / math.log2(2) + 3 / math.log2(3)
    assert scores["ndcg"] == pytest.approx(dcg / idcg)


def test_first_relevant_at_rank_two_and_cutoff():
    scores = ranking_scores({"q": ["x", "a", "y"]}, {"q": {"a": 1}}, 5)["q"]
    assert scores["reciprocal_rank"] == 0.5
    cut = ranking_scores({"q": ["x", "a", "y"]}, {"q": {"a": 1}}, 1)["q"]
    assert cut == {"hit": 0.0, "reciprocal_rank": 0.0, "ndcg": 0.0}


def test_ideal_ranking_includes_relevant_chunks_never_retrieved():
    scores = ranking_scores({"q": ["a"]}, {"q": {"a": 1, "b": 1}}, 5)["q"]
    assert scores["ndcg"] == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_no_relevant_chunk_or_empty_ranking_scores_zero():
    out = ranking_scores({"q1": ["a"], "q2": []}, {"q1": {}, "q2": {"a": 5}}, 5)
    assert out["q1"] == {"hit": 0.0, "reciprocal_rank": 0.0, "ndcg": 0.0}
    assert out["q2"] == {"hit": 0.0, "reciprocal_rank": 0.0, "ndcg": 0.0}


def test_per_question_cutoffs_and_missing_ndcg():
    out = ranking_scores(
        {"q1": ["x", "a"], "q2": ["x", "y", "a"]}, {"q1": {"a": 1}, "q2": {"a": 1}}, {"q1": 2, "q2": 3}, with_ndcg=False
    )
    assert out["q1"]["reciprocal_rank"] == 0.5
    assert out["q2"]["reciprocal_rank"] == pytest.approx(1 / 3)
    assert math.isnan(out["q1"]["ndcg"])


def test_canonical_names_are_ir_measures_names():
    assert canonical_name("ndcg", 5) == "nDCG@5"
    assert canonical_name("reciprocal_rank", 5) == "RR@5"
    assert canonical_name("hit", 10) == "Success@10"


def reference_scores(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], k: int) -> dict:
    """What ir-measures gives for a scored run: Success@k and nDCG@k through pytrec_eval (trec_eval: score
    descending, then doc id descending), RR@k through MS MARCO's code (score descending, then doc id ascending)."""
    import ir_measures
    from ir_measures import RR, Qrel, ScoredDoc, Success, nDCG

    names = {str(Success @ k): "hit", str(RR @ k): "reciprocal_rank", str(nDCG @ k): "ndcg"}
    judged = [Qrel(q, d, r) for q, docs in qrels.items() for d, r in docs.items() if r > 0]
    scored = [ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    out: dict[str, dict[str, float]] = {}
    for metric in ir_measures.iter_calc([Success @ k, RR @ k, nDCG @ k], judged, scored):
        out.setdefault(metric.query_id, {})[names[str(metric.measure)]] = float(metric.value)
    return out


def ordered(docs: dict[str, float], ids_descending: bool) -> list[str]:
    """A scored run's ids in rank order: score descending, ties by id descending (trec_eval) or ascending."""
    by_id = sorted(docs, reverse=ids_descending)
    return sorted(by_id, key=lambda d: -docs[d])  # stable: ties keep the id order


@pytest.mark.parametrize("seed", range(6))
def test_equal_to_ir_measures_on_random_runs_with_ties(seed):
    rng = random.Random(seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(60):
        pool = [f"c{rng.randrange(40):02d}" for _ in range(rng.randrange(1, 25))]
        run[f"q{q}"] = {d: float(rng.randrange(6)) for d in pool}  # few score levels: many ties
        qrels[f"q{q}"] = {
            f"c{rng.randrange(40):02d}": rng.choice([1, 2, 7, 300, 1000]) for _ in range(rng.randrange(0, 8))
        }
    for k in (1, 3, 5, 10, 30):
        expected = reference_scores(run, qrels, k)
        keys = [q for q in run if any(r > 0 for r in qrels[q].values())]
        trec = ranking_arrays([ordered(run[q], True) for q in keys], [qrels[q] for q in keys], [k] * len(keys))
        marco = ranking_arrays([ordered(run[q], False) for q in keys], [qrels[q] for q in keys], [k] * len(keys))
        for i, q in enumerate(keys):
            assert trec["hit"][i] == pytest.approx(expected[q]["hit"], abs=1e-12)
            assert trec["ndcg"][i] == pytest.approx(expected[q]["ndcg"], abs=1e-12), (q, k)
            assert marco["reciprocal_rank"][i] == pytest.approx(expected[q]["reciprocal_rank"], abs=1e-12), (q, k)


def test_a_repeated_id_counts_once_at_its_first_rank():
    scores = ranking_scores({"q": ["x", "x", "a"]}, {"q": {"a": 1}}, 2)["q"]
    assert scores["reciprocal_rank"] == 0.5  # the ranking is x, a
    assert scores["ndcg"] == pytest.approx((1 / math.log2(3)) / 1.0)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="do not match"):
        ranking_arrays([["a"]], [], [5])


def _one_question(ranking: list[str], judged: dict[str, float], k: int) -> tuple[float, float, float]:
    """Success@k, RR@k and nDCG@k of one question, written plainly (trec_eval's definitions, rank order sums)."""
    relevant = sorted((int(g) for g in judged.values() if int(g) > 0), reverse=True)
    if not ranking or not relevant or k < 1:
        return 0.0, 0.0, 0.0
    seen = list(dict.fromkeys(ranking))[:k]
    gains = [max(int(judged.get(doc, 0)), 0) for doc in seen]
    first = next((rank for rank, gain in enumerate(gains, start=1) if gain > 0), None)
    dcg = ideal = 0.0
    for rank, gain in enumerate(gains, start=1):
        dcg += gain / float(np.log2(rank + 1.0))
    for rank, gain in enumerate(relevant[:k], start=1):
        ideal += gain / float(np.log2(rank + 1.0))
    return (1.0 if first else 0.0), (1.0 / first if first else 0.0), dcg / ideal


@pytest.mark.parametrize("seed", range(3))
def test_the_arrays_equal_each_question_scored_alone(seed):
    """Repeated ids, gains of 0, below 0 and fractional, empty rankings and judged sets, cutoffs from 0 up: every
    question of a batch gets exactly what it gets alone."""
    rng = random.Random(seed)
    rankings, qrels, cutoffs = [], [], []
    for _ in range(400):
        rankings.append([f"c{rng.randrange(12)}" for _ in range(rng.randrange(0, 9))])
        qrels.append({f"c{rng.randrange(12)}": rng.choice([0, -3, 1, 2.5, 7, 40]) for _ in range(rng.randrange(0, 6))})
        cutoffs.append(rng.randrange(0, 7))
    got = ranking_arrays(rankings, qrels, cutoffs)
    for i, expected in enumerate(map(_one_question, rankings, qrels, cutoffs)):
        assert (got["hit"][i], got["reciprocal_rank"][i], got["ndcg"][i]) == expected, (rankings[i], qrels[i])
    assert len({round(v, 6) for v in got["ndcg"].tolist()}) > 20
