"""Ranking metrics through ir-measures, against hand-computed values."""

from __future__ import annotations

import math

import pytest

from chunkbench_core.evaluation.ranking import canonical_name, ranking_scores


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
    out = ranking_scores({"q1": ["x", "a"], "q2": ["x", "y", "a"]}, {"q1": {"a": 1}, "q2": {"a": 1}},
                         {"q1": 2, "q2": 3}, with_ndcg=False)
    assert out["q1"]["reciprocal_rank"] == 0.5
    assert out["q2"]["reciprocal_rank"] == pytest.approx(1 / 3)
    assert math.isnan(out["q1"]["ndcg"])


def test_canonical_names_are_ir_measures_names():
    assert canonical_name("ndcg", 5) == "nDCG@5"
    assert canonical_name("reciprocal_rank", 5) == "RR@5"
    assert canonical_name("hit", 10) == "Success@10"
