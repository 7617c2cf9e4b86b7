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


def _scipy_stats():
    """scipy.stats, imported on first use: it takes about 1.5 s to import, which every command that only
    scores (the Chroma protocol, ``chunkbench ask``) would otherwise pay."""
    from scipy import stats

    return stats


DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
DEFAULT_BOOTSTRAP_RESAMPLES = 2000
DEFAULT_PERMUTATION_RESAMPLES = 9999
DEFAULT_ALPHA = 0.05

#: The default ranking metric: evidence recall of the first 512 context tokens (evaluation.budget).
#: Budgeted, so no configuration can rank higher by sending the LLM more text; chosen over
#: budget_auc and the other budgets by a measurement on the Chroma corpora (README, "Choosing the
#: ranking metric").
DEFAULT_RANK_METRIC = "recall_at_512"

#: names a user may give for a metric -> the question_results column
METRIC_ALIASES: dict[str, str] = {
    "recall@k": "recall", "precision@k": "precision", "iou@k": "iou", "mrr": "reciprocal_rank",
    "mrr@k": "reciprocal_rank", "hit_rate": "hit", "success@k": "hit", "ndcg@k": "ndcg",
}
#: the tie-break of each ranking metric (the same family, measured on the whole context)
TIE_BREAKS: dict[str, str] = {"answer_similarity": "budget_auc", "budget_auc": "iou_expanded"}
DEFAULT_TIE_BREAK = "budget_auc"
JUDGE_COVERAGE = 0.9
JUDGE_METRICS = frozenset({"answer_similarity", "context_relevance", "faithfulness"})

#: The documented rule behind the ranking, the tiers and the recommendation (recorded with the comparison).
BEST_RULE = (
    "Configurations are ranked by the mean of the ranking metric over the questions each scored (by default "
    "recall_at_512: the share of the evidence inside the first 512 tokens of the context the LLM receives, so "
    "sending more text cannot win); equal means go to the tie-break metric, then to the name. A Friedman test "
    "over the configurations, on the questions all of them scored, asks whether any of them differ; when it "
    "finds no difference (p >= 0.05) all of them share tier 1. Otherwise tier 1 holds the best configuration "
    "and every configuration that paired randomization tests cannot tell from it after Holm's correction "
    "(adjusted p >= 0.05); tier 2 is built the same way from the best of the rest, and so on."
)
RECOMMENDATION_RULES: dict[str, str] = {
    "cheapest_in_tier_1": (
        "the cheapest configuration in tier 1: fewest dollars to build the index and answer 1,000 questions, "
        "then fewest context tokens per question, then the fastest query, then the fastest index build"),
    "highest_mean": "the configuration with the highest mean of the ranking metric",
}
DEFAULT_RECOMMENDATION_RULE = "cheapest_in_tier_1"
DEFAULT_POWER = 0.8


def canonical_metric(name: str) -> str:
    """The question_results column behind a metric name a user gave (``recall@k`` -> ``recall``)."""
    key = name.strip()
    return METRIC_ALIASES.get(key.lower(), key)


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
    result = _scipy_stats().bootstrap(
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
        result = _scipy_stats().permutation_test(
            (x, y), _mean_difference, permutation_type="samples", vectorized=True, n_resamples=n_resamples,
            alternative="two-sided", rng=np.random.default_rng(seed),
        )
        p_value = float(result.pvalue)
    return PairedTest(n, float(x.mean()), float(y.mean()), float(difference.mean()), low, high, p_value)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values: p_(i) · (m − i + 1), made monotone, capped at 1 (input order kept)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for position, i in enumerate(order):
        value = min(1.0, (m - position) * p_values[i])
        running = max(running, value)
        adjusted[i] = running
    return adjusted


def friedman(matrix: np.ndarray) -> tuple[float, float]:
    """Friedman's chi-square and p-value; ``matrix`` rows are questions, columns configurations.

    Needs at least 3 configurations and 2 questions (NaN otherwise); constant rows tell
    nothing, and a matrix of constant rows gives p = 1.
    """
    if matrix.ndim != 2 or matrix.shape[1] < 3 or matrix.shape[0] < 2:
        return float("nan"), float("nan")
    informative = matrix[~np.all(matrix == matrix[:, :1], axis=1)]
    if informative.shape[0] < 2:
        return 0.0, 1.0
    result = _scipy_stats().friedmanchisquare(*informative.T)
    return float(result.statistic), float(result.pvalue)


@dataclass(frozen=True)
class PowerStatement:
    """How big a difference these questions can show, and how many would separate the top two.

    With d the per-question differences between the best and the runner-up (n questions,
    standard deviation s), a two-sided paired test at level alpha with the given power
    detects a mean difference of ``min_detectable_difference = (z_{1-alpha/2} + z_power) · s / sqrt(n)``
    (normal approximation; s is the median spread of the differences of every configuration against
    the best when the comparison computes it); separating the observed difference D needs about
    ``questions_to_separate = ceil(((z_{1-alpha/2} + z_power) · s / D)^2)`` questions.
    """

    n_questions: int
    sd_difference: float
    min_detectable_difference: float
    top_two_difference: float
    questions_to_separate: int | None  # None: the top two score the same on every question
    alpha: float = DEFAULT_ALPHA
    power: float = DEFAULT_POWER


def power_statement(differences: Sequence[float], alpha: float = DEFAULT_ALPHA,
                    power: float = DEFAULT_POWER, reference_sd: float | None = None) -> PowerStatement:
    """The power statement of paired differences (see :class:`PowerStatement`).

    ``reference_sd``: the spread of paired differences to size ``min_detectable_difference``
    with, when the top two are not typical (two configurations that answer every question
    alike have no spread at all); default: the spread of ``differences``.
    """
    d = _clean(differences)
    n = int(d.size)
    if n < 2:
        return PowerStatement(n, float("nan"), float("nan"), float(d.mean()) if n else float("nan"), None,
                              alpha, power)
    norm = _scipy_stats().norm
    z = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
    sd = float(d.std(ddof=1))
    observed = float(abs(d.mean()))
    needed = None if observed == 0 else max(2, math.ceil((z * sd / observed) ** 2)) if sd > 0 else 2
    spread = sd if reference_sd is None or not reference_sd > 0 else reference_sd
    return PowerStatement(n, sd, z * spread / math.sqrt(n), observed, needed, alpha, power)


@dataclass
class ConfigurationResult:
    configuration: str
    n_questions: int
    mean: float
    ci_low: float
    ci_high: float
    tie_break: float
    versus_best: PairedTest | None = None
    significantly_worse: bool = False  # vs the best, after Holm's correction
    p_value_adjusted: float | None = None  # Holm-adjusted p of the test against the best
    effect_size: float | None = None  # Cohen's d_z against the best: mean(d) / sd(d), d = this - best
    tier: int | None = None


@dataclass
class Comparison:
    metric: str
    tie_break_metric: str
    best: str | None
    rule: str
    configurations: list[ConfigurationResult] = field(default_factory=list)
    friedman_statistic: float = float("nan")
    friedman_p: float = float("nan")
    n_complete: int = 0  # questions every configuration scored (the Friedman test's blocks)
    power: PowerStatement | None = None
    metric_note: str = ""  # why the metric in force differs from the one asked for, if it does

    @property
    def tier_of(self) -> dict[str, int | None]:
        return {c.configuration: c.tier for c in self.configurations}

    def tier_members(self, tier: int = 1) -> list[str]:
        return [c.configuration for c in self.configurations if c.tier == tier]

    def to_rows(self) -> list[dict[str, Any]]:
        rows = []
        power = self.power
        for position, c in enumerate(self.configurations, start=1):  # configurations are in rank order
            t = c.versus_best
            rows.append({
                "configuration": c.configuration, "rank": position if not math.isnan(c.mean) else None,
                "tier": c.tier, "metric": self.metric, "tie_break_metric": self.tie_break_metric,
                "n_questions": c.n_questions, "mean": c.mean, "ci_low": c.ci_low, "ci_high": c.ci_high,
                "is_best": c.configuration == self.best,
                "n_paired": t.n if t else None, "difference_vs_best": t.mean_difference if t else None,
                "difference_ci_low": t.ci_low if t else None, "difference_ci_high": t.ci_high if t else None,
                "effect_size": c.effect_size,
                "p_value_vs_best": t.p_value if t else None, "p_value_adjusted": c.p_value_adjusted,
                "significantly_worse": c.significantly_worse,
                "friedman_statistic": self.friedman_statistic, "friedman_p": self.friedman_p,
                "n_complete": self.n_complete,
                "min_detectable_difference": power.min_detectable_difference if power else None,
                "questions_to_separate": power.questions_to_separate if power else None,
            })
        return rows


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def choose_metric(per_configuration: Mapping[str, Sequence[Mapping[str, Any]]],
                  requested: str | None = None) -> tuple[str, str, str]:
    """(metric, tie-break metric, note): the requested metric, or the default budgeted one.

    A judge metric (``answer_similarity``, ...) is used only when every configuration was
    judged on at least 90% of its scored questions; any other metric only when every
    configuration has values of it. Otherwise the default is used and the note says why.
    """
    metric = canonical_metric(requested) if requested else DEFAULT_RANK_METRIC
    note = ""
    if metric != DEFAULT_RANK_METRIC:
        needed = JUDGE_COVERAGE if metric in JUDGE_METRICS else 1e-9
        covered = bool(per_configuration) and all(
            rows and sum(not _is_missing(r.get(metric)) for r in rows) >= needed * len(rows)
            for rows in per_configuration.values()
        )
        if not covered:
            why = ("not every configuration was judged on 90% of its questions" if metric in JUDGE_METRICS
                   else "not every configuration has values of it")
            note = f"{requested} was asked for, but {why}; ranked by {DEFAULT_RANK_METRIC} instead"
            metric = DEFAULT_RANK_METRIC
    tie = TIE_BREAKS.get(metric, DEFAULT_TIE_BREAK)
    if tie == metric:
        tie = "iou_expanded"
    return metric, tie, note


def _values(rows: Mapping[tuple, Mapping[str, Any]], questions: Sequence[tuple], metric: str) -> list[float | None]:
    return [rows[q].get(metric) for q in questions]


def _tests_against(leader: str, others: Sequence[str], grouped: Mapping[str, Mapping[tuple, Mapping[str, Any]]],
                   metric: str, seed: int) -> dict[str, tuple[PairedTest, float]]:
    """Paired tests of ``others`` against ``leader`` with Holm-adjusted p-values."""
    tests = {}
    for name in others:
        shared = sorted(set(grouped[leader]) & set(grouped[name]), key=str)
        tests[name] = paired_test(_values(grouped[name], shared, metric), _values(grouped[leader], shared, metric),
                                  seed=seed)
    names = [n for n in others if tests[n].n]
    adjusted = holm([tests[n].p_value for n in names])
    return {n: (tests[n], adjusted[names.index(n)] if n in names else float("nan")) for n in others}


def compare_configurations(
    rows: Sequence[Mapping[str, Any]],
    key: Sequence[str] = ("strategy", "corpus_model"),
    question_key: Sequence[str] = ("question_set", "question_id"),
    metric: str | None = None,
    tie_break_metric: str | None = None,
    alpha: float = DEFAULT_ALPHA,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Rank, tiers and tests of every configuration by ``BEST_RULE``.

    ``rows``: question_results rows (dicts) of the runs to compare, one per configuration
    x question; rows with an ``error`` are left out. A configuration is named by the
    ``key`` columns joined with ``|`` (e.g. ``fixed_size|all-minilm-l6-v2``). ``metric``:
    the ranking metric asked for (default :data:`DEFAULT_RANK_METRIC`).
    """
    grouped: dict[str, dict[tuple, Mapping[str, Any]]] = {}
    for row in rows:
        error = row.get("error")
        if error is not None and not _is_missing(error) and error != "":  # pandas gives NaN for no error
            continue
        name = "|".join(str(row[k]) for k in key)
        grouped.setdefault(name, {})[tuple(row[k] for k in question_key)] = row
    metric, auto_tie, note = choose_metric({n: list(q.values()) for n, q in grouped.items()}, metric)
    tie_break_metric = tie_break_metric or auto_tie
    results: dict[str, ConfigurationResult] = {}
    for name in sorted(grouped):
        values = [r.get(metric) for r in grouped[name].values()]
        low, high = bootstrap_ci(values, seed=seed)
        results[name] = ConfigurationResult(name, len(values), mean(values), low, high,
                                            mean(r.get(tie_break_metric) for r in grouped[name].values()))
    ranked = sorted(
        (r for r in results.values() if not math.isnan(r.mean)),
        key=lambda r: (-r.mean, -(r.tie_break if not math.isnan(r.tie_break) else -math.inf), r.configuration),
    )
    comparison = Comparison(metric, tie_break_metric, ranked[0].configuration if ranked else None, BEST_RULE,
                            metric_note=note)
    if ranked:
        _tiers(comparison, ranked, grouped, alpha, seed)
    order = {r.configuration: i for i, r in enumerate(ranked)}
    comparison.configurations = sorted(results.values(), key=lambda r: (order.get(r.configuration, len(order)),
                                                                         r.configuration))
    return comparison


def _tiers(comparison: Comparison, ranked: Sequence[ConfigurationResult],
           grouped: Mapping[str, Mapping[tuple, Mapping[str, Any]]], alpha: float, seed: int) -> None:
    """Friedman over the complete questions, tests against the best (Holm), tiers, power of the top two."""
    metric = comparison.metric
    names = [r.configuration for r in ranked]
    complete = sorted(set.intersection(*(
        {q for q, row in grouped[n].items() if not _is_missing(row.get(metric))} for n in names)), key=str)
    comparison.n_complete = len(complete)
    if len(names) >= 3 and complete:
        matrix = np.asarray([[float(grouped[n][q][metric]) for n in names] for q in complete], dtype=float)
        comparison.friedman_statistic, comparison.friedman_p = friedman(matrix)
    best = names[0]
    by_name = {r.configuration: r for r in ranked}
    for name, (test, adjusted) in _tests_against(best, names[1:], grouped, metric, seed).items():
        result = by_name[name]
        result.versus_best = test
        result.p_value_adjusted = adjusted
        result.significantly_worse = bool(test.n and adjusted < alpha and test.mean_difference < 0)
        shared = sorted(set(grouped[best]) & set(grouped[name]), key=str)
        d = _clean(np.asarray(_values(grouped[name], shared, metric), dtype=float)
                   - np.asarray(_values(grouped[best], shared, metric), dtype=float))
        sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
        result.effect_size = float(d.mean() / sd) if sd > 0 else (0.0 if d.size and d.mean() == 0 else None)
    if len(names) > 1:
        shared = sorted(set(grouped[names[0]]) & set(grouped[names[1]]), key=str)
        differences = (np.asarray(_values(grouped[names[0]], shared, metric), dtype=float)
                       - np.asarray(_values(grouped[names[1]], shared, metric), dtype=float))
        spreads = []
        for name in names[1:]:
            pair = sorted(set(grouped[best]) & set(grouped[name]), key=str)
            diff = _clean(np.asarray(_values(grouped[name], pair, metric), dtype=float)
                          - np.asarray(_values(grouped[best], pair, metric), dtype=float))
            if diff.size > 1 and diff.std(ddof=1) > 0:
                spreads.append(float(diff.std(ddof=1)))
        # the typical spread of differences against the best sizes what these questions can detect
        comparison.power = power_statement(differences, alpha, reference_sd=float(np.median(spreads)) if spreads else None)
    no_difference = len(names) >= 3 and not (comparison.friedman_p < alpha)  # NaN: no evidence either
    remaining = list(names)
    tier = 1
    while remaining:
        leader, rest = remaining[0], remaining[1:]
        if no_difference:
            members = list(remaining)
        elif leader == best:
            members = [leader] + [n for n in rest if not by_name[n].significantly_worse]
        else:
            tests = _tests_against(leader, rest, grouped, metric, seed)
            members = [leader] + [n for n, (t, p) in tests.items() if not (t.n and p < alpha and t.mean_difference < 0)]
        for name in members:
            by_name[name].tier = tier
        remaining = [n for n in remaining if n not in members]
        tier += 1


