"""Bootstrap intervals, the paired test and the best-strategy rule: seeded and deterministic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chunkbench_core.evaluation.statistics import (
    BEST_RULE,
    bootstrap_ci,
    compare_configurations,
    paired_test,
)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = list(np.random.default_rng(7).random(200))
    first = bootstrap_ci(values)
    assert first == bootstrap_ci(values)  # same inputs, same interval
    low, high = first
    assert low < float(np.mean(values)) < high
    assert 0.02 < high - low < 0.2  # about ±1.96 * 0.29 / sqrt(200)
    assert bootstrap_ci(values, seed=1) != first


def test_bootstrap_degenerate_and_missing_values():
    assert bootstrap_ci([0.5, 0.5, 0.5]) == (0.5, 0.5)
    assert bootstrap_ci([1.0, None, float("nan")]) == (1.0, 1.0)
    low, high = bootstrap_ci([])
    assert math.isnan(low) and math.isnan(high)


def test_paired_test_identical_and_clearly_different():
    a = [0.1 * (i % 10) for i in range(100)]
    same = paired_test(a, a)
    assert same.p_value == 1.0 and same.mean_difference == 0.0
    worse = [v - 0.2 for v in a]
    test = paired_test(worse, a)
    assert test.mean_difference == pytest.approx(-0.2)
    assert test.p_value < 0.001
    assert test.ci_high < 0
    assert paired_test(worse, a) == test  # deterministic


def test_paired_test_skips_questions_missing_on_either_side():
    test = paired_test([1.0, None, 0.0, 1.0], [0.0, 1.0, float("nan"), 0.0])
    assert test.n == 2 and test.mean_difference == 1.0


def rows(strategy: str, values: list[float], **extra) -> list[dict]:
    return [
        {
            "strategy": strategy,
            "corpus_model": "m",
            "question_set": "s",
            "question_id": f"q{i}",
            "recall_at_512": v,
            "budget_auc": 0.1,
            "error": None,
            **extra,
        }
        for i, v in enumerate(values)
    ]


def test_best_by_the_budgeted_metric_and_every_other_one_classed_against_it():
    rng = np.random.default_rng(3)
    base = list(rng.random(60))
    better = list(base)
    better[0] += 0.05  # c beats a on two questions and loses on one: higher mean, not significantly
    better[1] += 0.05
    better[2] -= 0.04
    data = rows("a", base) + rows("b", [v * 0.5 for v in base]) + rows("c", better)
    comparison = compare_configurations(data)
    assert comparison.metric == "recall_at_512" and comparison.rule == BEST_RULE
    assert comparison.best == "c|m"
    by_name = {c.configuration: c for c in comparison.configurations}
    assert [c.configuration for c in comparison.configurations] == ["c|m", "a|m", "b|m"]
    assert by_name["b|m"].significantly_worse and by_name["b|m"].p_value_adjusted < 0.05
    assert not by_name["a|m"].significantly_worse  # apart on three questions only: not significant
    assert by_name["c|m"].versus_best is None
    # a is at most a few thousandths below c with 95% confidence: within the margin; b is shown worse
    assert [by_name[n].margin_class for n in ("c|m", "a|m", "b|m")] == ["best", "within_margin", "worse"]
    assert [by_name[n].tier for n in ("c|m", "a|m", "b|m")] == [1, 1, 3]
    assert -0.02 < by_name["a|m"].lower_bound < by_name["a|m"].versus_best.mean_difference
    assert compare_configurations(data).to_rows() == comparison.to_rows()


def test_equal_means_go_to_the_cheaper_then_to_the_name():
    data = rows("b", [0.5, 0.5]) + rows("a", [0.5, 0.5])
    assert compare_configurations(data).best == "a|m"
    cheaper_b = {"a|m": {"context_tokens": 900.0}, "b|m": {"context_tokens": 100.0}}
    assert compare_configurations(data, costs=cheaper_b).best == "b|m"


def test_a_judge_metric_is_used_only_when_every_configuration_was_judged():
    data = rows("a", [0.9, 0.9], answer_similarity=5.0) + rows("b", [0.1, 0.1], answer_similarity=8.0)
    comparison = compare_configurations(data, metric="answer_similarity")
    assert comparison.metric == "answer_similarity" and comparison.best == "b|m"
    assert compare_configurations(data).metric == "recall_at_512"  # the default never switches by itself
    data[0]["answer_similarity"] = None  # a judged on 1 of 2 questions: below 90%, back to the default
    fallback = compare_configurations(data, metric="answer_similarity")
    assert fallback.best == "a|m" and fallback.metric == "recall_at_512"
    assert "answer_similarity was asked for" in fallback.metric_note


def test_rows_from_a_dataframe_with_nan_for_missing_values():
    import pandas as pd

    data = rows("a", [0.9, 0.8, 0.7]) + rows("b", [0.1, 0.2, 0.3])
    data[1]["error"] = "retrieval: boom"
    data[0]["error"] = float("nan")  # what a DuckDB/pandas NULL often becomes
    records = pd.DataFrame(data).to_dict("records")
    comparison = compare_configurations(records)
    assert comparison.best == "a|m"
    assert {c.configuration: c.n_questions for c in comparison.configurations} == {"a|m": 2, "b|m": 3}


def test_intervals_of_many_columns_are_each_columns_own():
    """bootstrap_cis draws the resamples once for the columns of one size: each interval is the one bootstrap_ci
    gives that column alone, with missing values, constant and empty columns, several sizes, and a size whose
    resamples are drawn in batches."""
    from chunkbench_core.evaluation.statistics import BOOTSTRAP_VALUES_AT_ONCE, bootstrap_ci, bootstrap_cis

    rng = np.random.default_rng(8)
    batched = BOOTSTRAP_VALUES_AT_ONCE // 1000 + 7  # more values than one draw of 2,000 resamples takes
    columns: list[list[float | None]] = [list(rng.random(n)) for n in (2, 9, 9, 300, batched, batched)]
    columns[3][4], columns[4][0] = None, float("nan")
    columns += [[0.25] * 12, [], [None, None], [1.0]]
    for column, (low, high) in zip(columns, bootstrap_cis(columns, n_resamples=2000)):
        alone = bootstrap_ci(column, n_resamples=2000)
        assert (low, high) == alone or (math.isnan(low) and math.isnan(alone[0]) and math.isnan(high))
    assert bootstrap_cis(columns)[1] != bootstrap_cis(columns)[2]  # same size, other values: another interval
