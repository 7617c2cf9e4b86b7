"""Metadata values: rounded, units in names, nothing empty."""

import numpy as np

from chunkbench_pipelines.metadata import headline_metrics, pool_wait, rounded


def test_numbers_are_rounded_to_three_places_and_counts_stay_integers():
    assert rounded(0.04844358413853444) == 0.048
    assert rounded(np.int64(7)) == 7 and isinstance(rounded(np.int64(7)), int)
    metrics = {"n_questions": 30, "n_failed": 0, "recall": 0.95512345, "recall_ci_low": 0.9, "recall_ci_high": 0.99,
               "answer_similarity": float("nan"), "retrieval_ms": 12.34567, "judge_prompt_tokens": 1200}
    assert headline_metrics(metrics) == {"recall": 0.955, "retrieval_ms": 12.346, "judge_prompt_tokens": 1200}
    # dollars keep fractions of a cent (a question costs far less than 0.001)
    assert headline_metrics({"cost_usd": 0.001123456, "judge_usd": 0.00056}) == {"cost_usd": 0.001123, "judge_usd": 0.00056}


def test_pool_wait_is_absent_for_local_models():
    assert pool_wait({}) == {}
    assert pool_wait({"openai": 1.23456})["pool_wait_seconds"].value == {"openai": 1.235}
