"""Uncertainty and comparisons: bootstrap confidence intervals, paired tests, the best strategy.

Everything is seeded, so the same per-question values always give the same numbers.

- ``bootstrap_ci``: percentile bootstrap of the mean (scipy.stats.bootstrap), 95% by
  default, 2,000 resamples, seed 0. A constant sample gets the interval (v, v).
- ``paired_test``: two configurations scored on the same questions; the statistic is
  the mean per-question difference a - b; its p-value comes from a two-sided paired
  randomization (sign-flip) test (scipy.stats.permutation_test, permutation_type
  "samples", 9,999 resamples, seed 0) - Fisher's randomization test, the default
  significance test of ranx for IR comparisons. Questions where either value is
  missing (NaN, e.g. a failed judge call) are left out of that pair.
- ``compare_configurations`` picks the best configuration by ``BEST_RULE`` and tests
  every other one against it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
DEFAULT_BOOTSTRAP_RESAMPLES = 2000
DEFAULT_PERMUTATION_RESAMPLES = 9999
DEFAULT_ALPHA = 0.05

#: The documented rule behind ``best_strategy`` (also recorded with the comparison).
BEST_RULE = (
    "The best configuration has the highest mean answer_similarity (LLM judge) when every configuration was "
    "judged on at least 90% of its scored questions; otherwise the highest mean recall of the context the "
    "LLM would receive (recall_expanded: after neighbor expansion / parent context, equal to recall when none "
    "applies). Ties (equal means) go to the higher mean IoU of that context, then to the name in alphabetical "
    "order. Every other configuration is compared with the best one on the questions both scored (paired "
    "randomization test of the mean difference, two-sided); 'significantly_worse' means p < 0.05."
)
JUDGE_COVERAGE = 0.9


def _clean(values: Iterable[float | None]) -> np.ndarray:
    array = np.asarray([np.nan if v is None else float(v) for v in values], dtype=float)
    return array[~np.isnan(array)]


def mean(values: Iterable[float | None]) -> float:
    """Mean of the non-missing values (NaN when there are none)."""
    array = _clean(values)
    return float(array.mean()) if array.size else float("nan")


def bootstrap_ci(
    values: Iterable[float | None],
    confidence: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the mean of the non-missing values."""
    array = _clean(values)
    if array.size == 0:
        return float("nan"), float("nan")
    if array.size == 1 or np.all(array == array[0]):
        return float(array[0]), float(array[0])
    result = stats.bootstrap(
        (array,), np.mean, n_resamples=n_resamples, confidence_level=confidence, method="percentile",
        vectorized=True, rng=np.random.default_rng(seed),
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


@dataclass(frozen=True)
class PairedTest:
    n: int
    mean_a: float
    mean_b: float
    mean_difference: float  # mean of a - b over the paired questions
    ci_low: float
    ci_high: float
    p_value: float


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def paired_test(
    a: Sequence[float | None],
    b: Sequence[float | None],
    n_resamples: int = DEFAULT_PERMUTATION_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> PairedTest:
    """Two-sided paired randomization test of mean(a - b); ``a[i]`` and ``b[i]`` are the same question."""
    if len(a) != len(b):
        raise ValueError(f"paired samples must have the same length, got {len(a)} and {len(b)}")
    x = np.asarray([np.nan if v is None else float(v) for v in a], dtype=float)
    y = np.asarray([np.nan if v is None else float(v) for v in b], dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    if n == 0:
        nan = float("nan")
        return PairedTest(0, nan, nan, nan, nan, nan, nan)
    difference = x - y
    low, high = bootstrap_ci(difference, confidence=confidence, seed=seed)
    if np.all(difference == 0):
        p_value = 1.0
    else:
        result = stats.permutation_test(
            (x, y), _mean_difference, permutation_type="samples", vectorized=True, n_resamples=n_resamples,
            alternative="two-sided", rng=np.random.default_rng(seed),
        )
        p_value = float(result.pvalue)
    return PairedTest(n, float(x.mean()), float(y.mean()), float(difference.mean()), low, high, p_value)


@dataclass
class ConfigurationResult:
    configuration: str
    n_questions: int
    mean: float
    ci_low: float
    ci_high: float
    tie_break: float
    versus_best: PairedTest | None = None
    significantly_worse: bool = False


@dataclass
class Comparison:
    metric: str
    tie_break_metric: str
    best: str | None
    rule: str
    configurations: list[ConfigurationResult] = field(default_factory=list)

    def to_rows(self) -> list[dict[str, Any]]:
        rows = []
        for position, c in enumerate(self.configurations, start=1):  # configurations are in rank order
            t = c.versus_best
            rows.append({
                "configuration": c.configuration, "rank": position if not math.isnan(c.mean) else None,
                "metric": self.metric, "n_questions": c.n_questions,
                "mean": c.mean, "ci_low": c.ci_low, "ci_high": c.ci_high, "is_best": c.configuration == self.best,
                "n_paired": t.n if t else None, "difference_vs_best": t.mean_difference if t else None,
                "difference_ci_low": t.ci_low if t else None, "difference_ci_high": t.ci_high if t else None,
                "p_value_vs_best": t.p_value if t else None, "significantly_worse": c.significantly_worse,
            })
        return rows


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def choose_metric(per_configuration: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[str, str]:
    """(primary metric, tie-break metric) by ``BEST_RULE``."""
    judged_everywhere = bool(per_configuration) and all(
        rows and sum(not _is_missing(r.get("answer_similarity")) for r in rows) >= JUDGE_COVERAGE * len(rows)
        for rows in per_configuration.values()
    )
    if judged_everywhere:
        return "answer_similarity", "iou_expanded"
    return "recall_expanded", "iou_expanded"


def compare_configurations(
    rows: Sequence[Mapping[str, Any]],
    key: Sequence[str] = ("strategy", "corpus_model"),
    question_key: Sequence[str] = ("question_set", "question_id"),
    metric: str | None = None,
    tie_break_metric: str | None = None,
    alpha: float = DEFAULT_ALPHA,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Best configuration by ``BEST_RULE`` and a paired test of every other one against it.

    ``rows``: question_results rows (dicts) of the runs to compare, one per configuration
    x question; rows with an ``error`` are left out. A configuration is named by the
    ``key`` columns joined with ``|`` (e.g. ``fixed_size|all-minilm-l6-v2``).
    """
    grouped: dict[str, dict[tuple, Mapping[str, Any]]] = {}
    for row in rows:
        error = row.get("error")
        if error is not None and not _is_missing(error) and error != "":  # pandas gives NaN for no error
            continue
        name = "|".join(str(row[k]) for k in key)
        grouped.setdefault(name, {})[tuple(row[k] for k in question_key)] = row
    auto_metric, auto_tie = choose_metric({n: list(q.values()) for n, q in grouped.items()})
    metric = metric or auto_metric
    tie_break_metric = tie_break_metric or auto_tie
    results: list[ConfigurationResult] = []
    for name in sorted(grouped):
        values = [r.get(metric) for r in grouped[name].values()]
        low, high = bootstrap_ci(values, seed=seed)
        results.append(ConfigurationResult(name, len(values), mean(values), low, high,
                                           mean(r.get(tie_break_metric) for r in grouped[name].values())))
    ranked = sorted(
        (r for r in results if not math.isnan(r.mean)),
        key=lambda r: (-r.mean, -(r.tie_break if not math.isnan(r.tie_break) else -math.inf), r.configuration),
    )
    best = ranked[0].configuration if ranked else None
    if best is not None:
        best_rows = grouped[best]
        for result in results:
            if result.configuration == best:
                continue
            shared = sorted(set(best_rows) & set(grouped[result.configuration]), key=str)
            test = paired_test([grouped[result.configuration][q].get(metric) for q in shared],
                               [best_rows[q].get(metric) for q in shared], seed=seed)
            result.versus_best = test
            result.significantly_worse = bool(test.n and test.p_value < alpha and test.mean_difference < 0)
    order = {r.configuration: i for i, r in enumerate(ranked)}
    results.sort(key=lambda r: (order.get(r.configuration, len(order)), r.configuration))
    return Comparison(metric, tie_break_metric, best, BEST_RULE, results)
