"""The statistics computed without scipy.stats give scipy.stats' own numbers, to the last bit.

The bootstrap interval, the Friedman test and the normal and Student t quantiles are computed with numpy and
scipy.special (scipy.stats takes about 0.9 s of CPU to import in every process that scores a run). Here each one
is compared with the scipy.stats function it stands for, on many inputs: equality, not closeness, so every
interval, p-value and question count stored before is the one stored now.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from chunkbench_core.evaluation import statistics
from chunkbench_core.evaluation.statistics import bootstrap_ci, friedman, normal_quantile, power_statement, t_quantile


def samples(count: int, seed: int = 11):
    """Per-question values as runs give them: recalls in [0, 1], 0/1 hits with many ties, judge scores 1-10."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(2, 80))
        kind = i % 3
        if kind == 0:
            yield rng.random(n)
        elif kind == 1:
            yield rng.integers(0, 2, n).astype(float)
        else:
            yield rng.integers(1, 11, n).astype(float)


def scipy_interval(values: np.ndarray, confidence: float, resamples: int, seed: int, batch=None):
    result = stats.bootstrap(
        (values,),
        np.mean,
        n_resamples=resamples,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
        batch=batch,
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@pytest.mark.parametrize("confidence,resamples,seed", [(0.95, 2000, 0), (0.9, 999, 3), (0.99, 37, 5)])
def test_the_bootstrap_interval_is_scipys(confidence, resamples, seed):
    compared = 0
    for values in samples(60, seed):
        if np.all(values == values[0]):
            continue  # a constant sample gets (v, v) without resampling, as before
        assert bootstrap_ci(values, confidence, resamples, seed) == scipy_interval(values, confidence, resamples, seed)
        compared += 1
    assert compared > 50


def test_the_bootstrap_in_batches_is_scipys_in_the_same_batches(monkeypatch):
    monkeypatch.setattr(statistics, "BOOTSTRAP_VALUES_AT_ONCE", 1000)  # a batch of 1000 // n resamples
    for values in samples(12, 4):
        if np.all(values == values[0]):
            continue
        batch = max(1, 1000 // values.size)
        assert bootstrap_ci(values) == scipy_interval(values, 0.95, 2000, 0, batch=batch)


def test_friedman_is_scipys_with_and_without_ties():
    rng = np.random.default_rng(2)
    compared = 0
    for trial in range(150):
        n, k = int(rng.integers(2, 40)), int(rng.integers(3, 9))
        matrix = rng.random((n, k)) if trial % 2 else rng.integers(0, 4, (n, k)).astype(float)
        informative = matrix[~np.all(matrix == matrix[:, :1], axis=1)]
        if informative.shape[0] < 2:
            continue
        expected = stats.friedmanchisquare(*informative.T)
        assert friedman(matrix) == (float(expected.statistic), float(expected.pvalue))
        compared += 1
    assert compared > 100


def test_the_normal_and_t_quantiles_are_scipys():
    levels = [0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 1 - 0.05 / 13, 0.999]
    for level in levels:
        assert normal_quantile(level) == float(stats.norm.ppf(level))
        df = np.array([1, 2, 3, 4.5, 7, 12, 30, 99, 1000, 123456], dtype=float)
        assert np.array_equal(t_quantile(level, df), stats.t.ppf(level, df))
    assert np.isnan(t_quantile(0.95, np.array([0.0, 0.5]))).all()  # fewer than 1 degree of freedom


def test_the_power_statement_uses_scipys_normal_quantiles():
    statement = power_statement([0.1, -0.2, 0.05, 0.3, 0.0, 0.12])
    z = float(stats.norm.ppf(1 - statement.alpha / 2) + stats.norm.ppf(statement.power))
    assert statement.min_detectable_difference == z * statement.sd_difference / np.sqrt(6)
