"""Uncertainty and comparisons: bootstrap confidence intervals, paired tests, the best and the margin.

Everything is seeded, so the same per-question values always give the same numbers.

- ``bootstrap_ci``: percentile bootstrap of the mean, 95% by default, 2,000 resamples, seed 0: the draws and
  the interval of scipy.stats.bootstrap (method "percentile"), to the last bit. A constant sample gets the
  interval (v, v).
- ``paired_test``: two configurations scored on the same questions; the statistic is
  the mean per-question difference a - b; its p-value comes from a paired randomization
  (sign-flip) test (scipy.stats.permutation_test, permutation_type "samples", 9,999
  resamples, seed 0) - Fisher's randomization test, the default significance test of ranx
  for IR comparisons; two-sided, or one-sided when asked. Questions where either value is
  missing (NaN, e.g. a failed judge call) are left out of that pair.
- ``tests_against_best``: the same randomization test (one-sided) and a bootstrap interval of the
  mean difference, for every configuration against the best at once (vectorised).
- ``paired_bounds``: the one-sided lower confidence bound of mean(configuration - best)
  (Student t, Bonferroni over the comparisons), for many resamples of the questions at once.
- ``compare_configurations`` ranks the configurations, picks the best by ``BEST_RULE`` and
  classes every other one against it: shown within the margin, shown worse, or undecided.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chunkbench_core.metric_catalog import CATALOG
from chunkbench_core.metric_catalog import DEFAULT_RANK_METRIC as DEFAULT_RANK_METRIC  # the ranking's defaults,
from chunkbench_core.metric_catalog import DOCUMENT_RANK_METRIC as DOCUMENT_RANK_METRIC  # read from here too


def _scipy_stats():
    """scipy.stats, imported on first use: only :func:`paired_test`'s randomization test needs it. It takes about
    0.9 s of CPU to import, which every process that scores a run would otherwise pay (the commands, and each
    Dagster run process of a backfill)."""
    from scipy import stats

    return stats


def _special():
    """scipy.special, imported on first use (about 0.2 s): the normal, Student t and chi-square functions that
    scipy.stats' ``norm.ppf``, ``t.ppf`` and Friedman test call, with the same values."""
    from scipy import special

    return special


def normal_quantile(level: float) -> float:
    """The standard normal distribution's quantile at ``level`` (scipy.stats.norm.ppf)."""
    return float(_special().ndtri(level))


def _linear_quantiles(values: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The quantiles of ``values`` at ``levels`` by linear interpolation between order statistics (Hyndman and
    Fan's type 7), computed as scipy.stats.quantile computes them, so the bootstrap's interval is the one
    scipy.stats.bootstrap gives."""
    ordered = np.sort(values)
    n = float(ordered.size)
    position = levels * n + (1 - levels)  # 1-based position of the quantile among the order statistics
    upper = position // 1
    lower = upper - 1
    fraction = position % 1
    fraction[lower < 0] = 0
    lower = np.clip(lower, 0.0, n - 1).astype(np.int64)
    upper = np.clip(upper, 0.0, n - 1).astype(np.int64)
    return (1 - fraction) * ordered[lower] + fraction * ordered[upper]


DEFAULT_SEED = 0
DEFAULT_CONFIDENCE = 0.95
DEFAULT_BOOTSTRAP_RESAMPLES = 2000
#: resampled values held at once by a bootstrap (8 bytes each)
BOOTSTRAP_VALUES_AT_ONCE = 4_000_000
DEFAULT_PERMUTATION_RESAMPLES = 9999
DEFAULT_ALPHA = 0.05
#: the columns that name a question across configurations (the rows of one question are compared pairwise)
QUESTION_KEY = ("question_set", "question_id")

#: names a user may give for a metric -> the question_results column (the list of metrics' aliases and run names)
METRIC_ALIASES: dict[str, str] = CATALOG.aliases()
JUDGE_COVERAGE = 0.9
JUDGE_METRICS = frozenset(CATALOG.judge_scores())

#: The margin (delta) of metrics on the 0..1 scale (recall, MRR, budget_auc, ...): a configuration whose
#: mean is shown to be at most this far below the best counts as good as the best. README, "How the
#: recommendation is made", says why 0.02.
DEFAULT_MARGIN = 0.02
#: The margin of the LLM judge's 1-10 scores: the same share of the scale's range (0.02 x 9 points, rounded).
DEFAULT_JUDGE_MARGIN = 0.2
#: Means closer than this are equal: float noise never decides an order.
MEAN_TIE = 1e-9
#: Resamples of the questions the stability of the recommendation is measured on (seeded).
DEFAULT_STABILITY_RESAMPLES = 1000
#: Below this share of resamples picking the same configuration, the recommendation is called unstable.
STABLE_SHARE = 0.7

#: The classes of a configuration against the best (``comparison.class``).
CLASS_BEST = "best"
CLASS_WITHIN = "within_margin"
CLASS_WORSE = "worse"
CLASS_UNDECIDED = "undecided"
#: ``comparison.tier``: the classes in order (1: the best and those shown within the margin of it,
#: 2: undecided, 3: shown worse)
CLASS_TIER: dict[str, int] = {CLASS_BEST: 1, CLASS_WITHIN: 1, CLASS_UNDECIDED: 2, CLASS_WORSE: 3}

#: The documented rule behind the ranking and the classes (recorded with the comparison).
BEST_RULE = (
    "Configurations are ranked by the mean of the ranking metric over the questions each scored (by default "
    "recall_at_512: the share of the evidence inside the first 512 tokens of the context the LLM receives, so "
    "sending more text cannot win); means within 1e-9 of each other are equal, and the cheaper configuration, "
    "then the name, goes first. The first is the best. Every other configuration is compared with it on the "
    "questions both scored, d = its score - the best's score per question. It is shown within the margin of "
    "the best when the one-sided 95% lower confidence bound of mean(d) is above -margin (Student t bound; "
    "Bonferroni-corrected: each of the m - 1 bounds at level 0.05 / (m - 1), so all of them hold together with "
    "95% confidence); shown worse than the best when a one-sided paired randomization test finds it lower after "
    "Holm's correction over the m - 1 comparisons (adjusted p < 0.05) and it is not shown within the margin; "
    "undecided otherwise: it might be as good, these questions cannot tell yet."
)
RECOMMENDATION_RULES: dict[str, str] = {
    "cheapest_within_margin": (
        "the cheapest configuration shown within the margin of the best (the best always qualifies): fewest "
        "dollars to build the index and answer 1,000 questions, then fewest context tokens per question, then "
        "the fastest warm query, then the fastest index build; two costs within the cost tolerance of each other "
        "are equal and the next one decides"
    ),
    "highest_mean": "the configuration with the highest mean of the ranking metric",
}
#: earlier names of the rules, still accepted (the settings say the new name)
RULE_ALIASES: dict[str, str] = {"cheapest_in_tier_1": "cheapest_within_margin"}
DEFAULT_RECOMMENDATION_RULE = "cheapest_within_margin"
DEFAULT_POWER = 0.8


def canonical_metric(name: str) -> str:
    """The question_results column behind a metric name a user gave (``recall@k`` -> ``recall``)."""
    return CATALOG.canonical(name)


def default_margin(metric: str) -> float:
    """The margin of a ranking metric in its own units: 0.2 for the LLM judge's 1-10 scores, 0.02 otherwise."""
    return DEFAULT_JUDGE_MARGIN if canonical_metric(metric) in JUDGE_METRICS else DEFAULT_MARGIN


def metric_range(metric: str) -> float:
    """The width of a ranking metric's scale: 9 for the judge's 1-10 scores, 1 for the 0..1 metrics."""
    return 9.0 if canonical_metric(metric) in JUDGE_METRICS else 1.0


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
    return bootstrap_cis([values], confidence, n_resamples, seed)[0]


def bootstrap_cis(
    columns: Sequence[Iterable[float | None]],
    confidence: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> list[tuple[float, float]]:
    """:func:`bootstrap_ci` of each column. Every column of one size resamples the same positions (one seed), so
    they are drawn once for all of them: the draws were most of an interval's time (0.8 s of 0.9 s for 20,000
    values, and a run has one interval per metric)."""
    arrays = [_clean(values) for values in columns]
    intervals: list[tuple[float, float]] = [(float("nan"), float("nan"))] * len(arrays)
    by_size: dict[int, list[int]] = {}
    for i, array in enumerate(arrays):
        if array.size == 1 or (array.size and np.all(array == array[0])):
            intervals[i] = (float(array[0]), float(array[0]))
        elif array.size:
            by_size.setdefault(array.size, []).append(i)
    tail = (1 - confidence) / 2
    for size, members in by_size.items():
        # resampled means a batch at a time once resamples x values is big (20,000 questions: 320 MB at once);
        # below that, one draw, as always (the same draws, the same interval)
        batch = (
            n_resamples if size * n_resamples <= BOOTSTRAP_VALUES_AT_ONCE else max(1, BOOTSTRAP_VALUES_AT_ONCE // size)
        )
        rng = np.random.default_rng(seed)
        means: dict[int, list[np.ndarray]] = {i: [] for i in members}
        for start in range(0, n_resamples, batch):
            positions = rng.integers(0, size, (min(batch, n_resamples - start), size))
            for i in members:
                means[i].append(arrays[i][positions].mean(axis=-1))
        for i in members:
            low, high = _linear_quantiles(np.concatenate(means[i]), np.array([tail, 1 - tail]))
            intervals[i] = (float(low), float(high))
    return intervals


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
    alternative: str = "two-sided",
) -> PairedTest:
    """Paired randomization test of mean(a - b); ``a[i]`` and ``b[i]`` are the same question.

    ``alternative``: ``"two-sided"``, or ``"less"`` (a scores lower than b) / ``"greater"``, one-sided."""
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
            (x, y),
            _mean_difference,
            permutation_type="samples",
            vectorized=True,
            n_resamples=n_resamples,
            alternative=alternative,
            rng=np.random.default_rng(seed),
        )
        p_value = float(result.pvalue)
    return PairedTest(n, float(x.mean()), float(y.mean()), float(difference.mean()), low, high, p_value)


def resample_weights(
    n_questions: int, resamples: int = DEFAULT_STABILITY_RESAMPLES, seed: int = DEFAULT_SEED, size: int | None = None
) -> np.ndarray:
    """resamples x questions: how many times each question is drawn in each resample of ``size`` questions
    (default: as many as there are), drawn with replacement."""
    rng = np.random.default_rng(seed)
    size = n_questions if size is None else size
    if size == n_questions:
        drawn = rng.integers(0, n_questions, size=(resamples, n_questions))
        offsets = (np.arange(resamples) * n_questions)[:, None]
        counts = np.bincount((drawn + offsets).ravel(), minlength=resamples * n_questions)
        return counts.reshape(resamples, n_questions).astype(float)
    return rng.multinomial(size, np.full(n_questions, 1.0 / n_questions), size=resamples).astype(float)


def tests_against_best(
    values: np.ndarray,
    n_resamples: int = DEFAULT_PERMUTATION_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    bootstrap_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
) -> list[PairedTest]:
    """:func:`paired_test` (one-sided: lower than the best) of every column of ``values`` (questions x
    configurations, NaN: not scored) against column 0, all at once.

    The same randomization test: the statistic is mean(d), d = column - best over the questions both scored;
    its p-value is the share of random sign flips of d giving a mean as low or lower, counting the observed
    one, (1 + #{mean(s·d) <= mean(d)}) / (n_resamples + 1), or the exact share over every sign pattern when
    there are no more patterns than resamples. The interval of mean(d) is a percentile bootstrap. Vectorised:
    one matrix of signs and one of bootstrap counts serve every configuration, so 13 configurations x 500
    questions take a fraction of a second instead of a second each.
    """
    values = np.asarray(values, dtype=float)
    n_questions, m = values.shape
    if m < 2:
        return []
    valid = ~np.isnan(values)
    both = valid[:, 1:] & valid[:, [0]]
    d = np.where(both, np.nan_to_num(values[:, 1:]) - np.nan_to_num(values[:, [0]]), 0.0)
    counts = both.sum(axis=0)
    rng = np.random.default_rng(seed)
    flipped = np.empty((n_resamples, m - 1))
    for start in range(0, n_resamples, 2000):  # 2,000 sign vectors at a time: bounded memory
        size = min(2000, n_resamples - start)
        signs = rng.integers(0, 2, size=(size, n_questions)).astype(float) * 2 - 1
        flipped[start : start + size] = signs @ d
    weights = resample_weights(n_questions, bootstrap_resamples, seed)
    boot_sums, boot_counts = weights @ d, weights @ both.astype(float)
    tail = (1 - confidence) / 2
    tests = []
    for j in range(m - 1):
        n = int(counts[j])
        if n == 0:
            nan = float("nan")
            tests.append(PairedTest(0, nan, nan, nan, nan, nan, nan))
            continue
        column = d[both[:, j], j]
        observed = float(column.sum())
        tolerance = 1e-12 * max(1.0, abs(observed))
        nonzero = column[column != 0]
        if nonzero.size == 0:
            p_value = 1.0
        elif 2**nonzero.size <= n_resamples:  # every sign pattern
            patterns = ((np.arange(2**nonzero.size)[:, None] >> np.arange(nonzero.size)) & 1) * 2 - 1
            p_value = float(np.mean(patterns @ nonzero <= observed + tolerance))
        else:
            p_value = float((1 + np.sum(flipped[:, j] <= observed + tolerance)) / (n_resamples + 1))
        with np.errstate(invalid="ignore", divide="ignore"):
            means = boot_sums[:, j] / boot_counts[:, j]
        means = means[boot_counts[:, j] > 0]
        if np.all(column == column[0]):
            low = high = float(column[0])
        else:
            low, high = (float(x) for x in np.quantile(means, [tail, 1 - tail]))
        tests.append(
            PairedTest(
                n,
                float(values[both[:, j], j + 1].mean()),
                float(values[both[:, j], 0].mean()),
                observed / n,
                low,
                high,
                p_value,
            )
        )
    return tests


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
    n, k = informative.shape
    ranks, tie_sizes = _average_ranks(informative)
    # Friedman's statistic with the correction for ties, in scipy.stats.friedmanchisquare's order of operations
    ties = float(np.sum(tie_sizes * (tie_sizes * tie_sizes - 1)))
    correction = 1 - ties / (k * (k * k - 1) * n)
    rank_sums_squared = np.sum(np.sum(ranks, axis=0) ** 2)
    statistic = (12.0 / (k * n * (k + 1)) * rank_sums_squared - 3 * n * (k + 1)) / correction
    return float(statistic), float(_special().chdtrc(float(k - 1), statistic))


def _average_ranks(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ranks (1 = lowest, ties share their mean rank), and the size of every group of tied values
    in each row (a group of one included), for all rows at once."""
    rows, columns = matrix.shape
    order = np.argsort(matrix, axis=1, kind="stable")
    ordered = np.take_along_axis(matrix, order, axis=1)
    starts_group = np.ones(matrix.shape, dtype=bool)  # each row's first value starts a group: none spans two rows
    starts_group[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    starts = np.flatnonzero(starts_group)
    sizes = np.diff(np.append(starts, rows * columns))
    sorted_ranks = np.repeat(starts % columns + 1 + (sizes - 1) / 2, sizes).reshape(matrix.shape)
    ranks = np.empty(matrix.shape)
    np.put_along_axis(ranks, order, sorted_ranks, axis=1)
    return ranks, sizes.astype(float)


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


def power_statement(
    differences: Sequence[float],
    alpha: float = DEFAULT_ALPHA,
    power: float = DEFAULT_POWER,
    reference_sd: float | None = None,
) -> PowerStatement:
    """The power statement of paired differences (see :class:`PowerStatement`).

    ``reference_sd``: the spread of paired differences to size ``min_detectable_difference``
    with, when the top two are not typical (two configurations that answer every question
    alike have no spread at all); default: the spread of ``differences``.
    """
    d = _clean(differences)
    n = int(d.size)
    if n < 2:
        return PowerStatement(n, float("nan"), float("nan"), float(d.mean()) if n else float("nan"), None, alpha, power)
    z = normal_quantile(1 - alpha / 2) + normal_quantile(power)
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
    versus_best: PairedTest | None = None  # paired against the best; p_value one-sided (this one lower)
    significantly_worse: bool = False  # lower than the best, one-sided test after Holm's correction
    p_value_adjusted: float | None = None  # Holm-adjusted p of the one-sided test against the best
    effect_size: float | None = None  # Cohen's d_z against the best: mean(d) / sd(d), d = this - best
    lower_bound: float | None = None  # one-sided lower confidence bound of mean(d), Bonferroni-corrected
    sd_difference: float | None = None  # standard deviation of d over the paired questions
    margin_class: str | None = None  # CLASS_BEST, CLASS_WITHIN, CLASS_WORSE or CLASS_UNDECIDED
    questions_to_show_within: int | None = None  # questions that would show it within the margin, if d held
    questions_to_settle: int | None = None  # undecided: questions that would class it either way, if d held
    n_judge_only: int = 0  # questions without evidence (no spans, no source documents): not scored on evidence
    n_documents_only: int = 0  # questions scored at the document level only (source documents, no spans)
    n_evidence: int | None = None  # questions scored on evidence (spans or source documents); None: unknown
    judged: bool = False  # an LLM judge scored its questions

    @property
    def tier(self) -> int | None:
        """The class in order: 1 best or shown within the margin, 2 undecided, 3 shown worse."""
        return CLASS_TIER.get(self.margin_class or "")


@dataclass(frozen=True)
class ScoreTable:
    """The per-question values behind a comparison: ``values[i, j]`` is question ``questions[i]`` of
    configuration ``names[j]`` (NaN where it was not scored); ``names`` in rank order."""

    names: tuple[str, ...]
    questions: tuple[tuple, ...]
    values: np.ndarray


@dataclass
class Comparison:
    metric: str
    best: str | None
    rule: str
    margin: float = DEFAULT_MARGIN
    alpha: float = DEFAULT_ALPHA
    configurations: list[ConfigurationResult] = field(default_factory=list)
    friedman_statistic: float = float("nan")
    friedman_p: float = float("nan")
    n_complete: int = 0  # questions every configuration scored (the Friedman test's blocks)
    power: PowerStatement | None = None
    metric_note: str = ""  # why the metric or the margin in force differs from the one asked for, if it does
    scores: ScoreTable | None = None

    @property
    def n_compared(self) -> int:
        """How many configurations are compared with the best (the m - 1 of the corrections)."""
        return max(0, sum(1 for c in self.configurations if c.margin_class is not None) - 1)

    @property
    def tier_of(self) -> dict[str, int | None]:
        return {c.configuration: c.tier for c in self.configurations}

    def members(self, *classes: str) -> list[str]:
        """The configurations of these classes, in rank order."""
        return [c.configuration for c in self.configurations if c.margin_class in classes]

    def within_margin(self) -> list[str]:
        """The best and every configuration shown within the margin of it, in rank order."""
        return self.members(CLASS_BEST, CLASS_WITHIN)

    def to_rows(self) -> list[dict[str, Any]]:
        rows = []
        power = self.power
        for position, c in enumerate(self.configurations, start=1):  # configurations are in rank order
            t = c.versus_best
            rows.append(
                {
                    "configuration": c.configuration,
                    "rank": position if not math.isnan(c.mean) else None,
                    "class": c.margin_class,
                    "tier": c.tier,
                    "metric": self.metric,
                    "margin": self.margin,
                    "n_questions": c.n_questions,
                    "mean": c.mean,
                    "ci_low": c.ci_low,
                    "ci_high": c.ci_high,
                    "is_best": c.configuration == self.best,
                    "n_paired": t.n if t else None,
                    "difference_vs_best": t.mean_difference if t else None,
                    "difference_ci_low": t.ci_low if t else None,
                    "difference_ci_high": t.ci_high if t else None,
                    "lower_bound_vs_best": c.lower_bound,
                    "sd_difference": c.sd_difference,
                    "effect_size": c.effect_size,
                    "p_value_vs_best": t.p_value if t else None,
                    "p_value_adjusted": c.p_value_adjusted,
                    "significantly_worse": c.significantly_worse,
                    "questions_to_show_within": c.questions_to_show_within,
                    "questions_to_settle": c.questions_to_settle,
                    "n_compared": self.n_compared,
                    "friedman_statistic": self.friedman_statistic,
                    "friedman_p": self.friedman_p,
                    "n_complete": self.n_complete,
                    "min_detectable_difference": power.min_detectable_difference if power else None,
                    "questions_to_separate": power.questions_to_separate if power else None,
                }
            )
        return rows


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def choose_metric(
    per_configuration: Mapping[str, Sequence[Mapping[str, Any]]], requested: str | None = None
) -> tuple[str, str]:
    """(metric, note): the requested metric, or the default budgeted one.

    A judge metric (``answer_similarity``, ...) is used only when every configuration was
    judged on at least 90% of its scored questions; any other metric only when every
    configuration has values of it. Otherwise the default is used and the note says why.
    When the default has no values because the questions have no evidence spans, only source
    documents, the ranking falls back to the document level (:data:`DOCUMENT_RANK_METRIC`) and the
    note says so.
    """

    def covered(name: str) -> bool:
        needed = JUDGE_COVERAGE if name in JUDGE_METRICS else 1e-9
        return bool(per_configuration) and all(
            rows and sum(not _is_missing(r.get(name)) for r in rows) >= needed * len(rows)
            for rows in per_configuration.values()
        )

    metric = canonical_metric(requested) if requested else DEFAULT_RANK_METRIC
    note = ""
    if metric != DEFAULT_RANK_METRIC and not covered(metric):
        why = (
            "not every configuration was judged on 90% of its questions"
            if metric in JUDGE_METRICS
            else "not every configuration has values of it"
        )
        note = f"{requested} was asked for, but {why}; ranked by {DEFAULT_RANK_METRIC} instead"
        metric = DEFAULT_RANK_METRIC
    if metric == DEFAULT_RANK_METRIC and not covered(metric) and covered(DOCUMENT_RANK_METRIC):
        fallback = (
            f"the questions have no evidence spans, only source documents, so the ranking is at the "
            f"document level: {DOCUMENT_RANK_METRIC}, the share of a question's source documents among "
            "the documents of the top-k chunks"
        )
        note = (note.removesuffix(f"; ranked by {DEFAULT_RANK_METRIC} instead") + "; " + fallback) if note else fallback
        metric = DOCUMENT_RANK_METRIC
    return metric, note


# -- the margin: lower confidence bounds of paired differences against the best ---------------------------


@dataclass(frozen=True)
class PairedBounds:
    """Per resample (rows) and configuration (columns): the paired differences d = configuration - best over
    the questions both scored, weighted by how often each question is in the resample."""

    mean: np.ndarray
    sd: np.ndarray
    n: np.ndarray
    lower: np.ndarray  # one-sided lower confidence bound of mean(d); NaN with fewer than 2 paired questions


def t_quantile(level: float, df: np.ndarray | float) -> np.ndarray:
    """Student's t quantile at ``level`` for each degrees-of-freedom value (NaN below 1)."""
    df = np.asarray(df, dtype=float)
    out = np.full(df.shape, np.nan)
    ok = df >= 1
    if ok.any():
        unique = np.unique(df[ok])
        quantiles = _special().stdtrit(unique, level)  # scipy.stats.t.ppf(level, unique)
        out[ok] = quantiles[np.searchsorted(unique, df[ok])]
    return out


def paired_bounds(
    values: np.ndarray, weights: np.ndarray, best: np.ndarray, alpha: float = DEFAULT_ALPHA, comparisons: int = 1
) -> PairedBounds:
    """The one-sided lower confidence bounds of mean(configuration - best), for many resamples at once.

    ``values``: questions x configurations (NaN: not scored); ``weights``: resamples x questions, how many
    times each question is in each resample (a row of ones: the questions as they are); ``best``: the best
    configuration's column in each resample. Over the questions both scored, with w the weights:
    ``mean = Σ w·d / N``, ``sd² = (Σ w·d² - N·mean²) / (N - 1)``, ``N = Σ w``, and the bound is
    ``mean - t(1 - alpha / comparisons, N - 1) · sd / sqrt(N)`` (Bonferroni over ``comparisons``).
    """
    values = np.asarray(values, dtype=float)
    weights = np.asarray(weights, dtype=float)
    best = np.asarray(best, dtype=int)
    valid = ~np.isnan(values)
    filled = np.where(valid, values, 0.0)
    shape = (weights.shape[0], values.shape[1])
    total, first, second = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for k in np.unique(best):
        rows = best == k
        both = valid & valid[:, [k]]
        d = np.where(both, filled - filled[:, [k]], 0.0)
        w = weights[rows]
        total[rows] = w @ both.astype(float)
        first[rows] = w @ d
        second[rows] = w @ (d * d)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_d = np.where(total > 0, first / np.where(total > 0, total, 1), np.nan)
        variance = (second - total * mean_d**2) / (total - 1)
        sd = np.where(total > 1, np.sqrt(np.clip(variance, 0.0, None)), np.nan)
        t = t_quantile(1 - alpha / max(1, comparisons), total - 1)
        lower = np.where(total > 1, mean_d - t * sd / np.sqrt(np.where(total > 0, total, 1)), np.nan)
    return PairedBounds(mean_d, sd, total, lower)


def questions_to_show_within(
    mean_difference: float,
    sd: float,
    margin: float,
    alpha: float = DEFAULT_ALPHA,
    comparisons: int = 1,
    limit: int = 10_000_000,
) -> int | None:
    """How many questions would show a configuration within ``margin`` of the best if its observed mean
    difference and spread held: the smallest n with ``mean - t(1 - alpha / comparisons, n - 1) · sd / sqrt(n)
    > -margin``. None when no number would (the observed difference is ``margin`` or more below) or more than
    ``limit`` would."""
    gap = mean_difference + margin
    if not (gap > 0) or not (sd >= 0):
        return None
    if sd == 0:
        return 2
    return _questions_for(gap, sd, 1 - alpha / max(1, comparisons), limit)


def questions_to_show_worse(
    mean_difference: float, sd: float, alpha: float = DEFAULT_ALPHA, comparisons: int = 1, limit: int = 10_000_000
) -> int | None:
    """How many questions would show a configuration worse than the best if its observed mean difference and
    spread held (a one-sided paired t-test at ``alpha / comparisons``, the strictest step of Holm's
    correction, approximating the randomization test). None when it is not observed lower."""
    if not (mean_difference < 0) or not (sd >= 0):
        return None
    if sd == 0:
        return 2
    return _questions_for(-mean_difference, sd, 1 - alpha / max(1, comparisons), limit)


def _questions_for(gap: float, sd: float, level: float, limit: int) -> int | None:
    """The smallest n >= 2 with t(level, n - 1) · sd / sqrt(n) < gap."""
    special = _special()
    n = max(2, math.floor((normal_quantile(level) * sd / gap) ** 2) + 1)  # t > z: a lower bound
    for _ in range(100):
        if n > limit:
            return None
        needed = max(2, math.floor((float(special.stdtrit(n - 1, level)) * sd / gap) ** 2) + 1)
        if needed <= n:
            return n
        n = needed
    return n if n <= limit else None


# -- ranking --------------------------------------------------------------------------------------------


def rank_order(
    means: Mapping[str, float],
    costs: Mapping[str, Mapping[str, Any]] | None = None,
    cost_tolerance: float | None = None,
) -> list[str]:
    """Configurations with a mean, highest first. Means within :data:`MEAN_TIE` of the first of a run of
    equal means are equal; those go cheapest first (:func:`.cost.cost_order`; without costs all cost the
    same), then by name."""
    from . import cost

    tolerance = cost.DEFAULT_COST_TOLERANCE if cost_tolerance is None else cost_tolerance
    ranked = sorted((n for n, m in means.items() if not math.isnan(m)), key=lambda n: (-means[n], n))
    order: list[str] = []
    i = 0
    while i < len(ranked):
        j = i + 1
        while j < len(ranked) and means[ranked[i]] - means[ranked[j]] <= MEAN_TIE:
            j += 1
        group = ranked[i:j]
        order += cost.cost_order(group, costs or {}, tolerance) if len(group) > 1 else group
        i = j
    return order


def compare_configurations(
    rows: Sequence[Mapping[str, Any]],
    key: Sequence[str] = ("strategy", "corpus_model"),
    metric: str | None = None,
    margin: float | None = None,
    costs: Mapping[str, Mapping[str, Any]] | None = None,
    cost_tolerance: float | None = None,
    recorded: Mapping[str, Mapping[str, Any]] | None = None,
) -> Comparison:
    """Rank, classes and tests of every configuration by ``BEST_RULE``.

    ``rows``: question_results rows (dicts) of the runs to compare, one per configuration
    x question; rows with an ``error`` are left out. A configuration is named by the
    ``key`` columns joined with ``|`` (e.g. ``fixed_size|all-minilm-l6-v2``). ``metric``:
    the ranking metric asked for (default :data:`DEFAULT_RANK_METRIC`); ``margin``: in the
    metric's units (default :func:`default_margin`); ``costs``: configuration -> cost columns
    (:data:`.cost.COST_ORDER`), which order equal means. ``recorded``: configuration -> its run's
    ``experiment_metrics`` row; a configuration's confidence interval of the ranking metric is the one its
    run recorded (``<run_name>_ci_low`` / ``_ci_high``) when the recorded mean is the mean of these rows,
    so every view shows one interval; computed here only when the run recorded none. A question is named by
    :data:`QUESTION_KEY`; the tests are at level :data:`DEFAULT_ALPHA` and the resamples drawn from
    :data:`DEFAULT_SEED`, as :data:`BEST_RULE` says.
    """
    alpha, seed = DEFAULT_ALPHA, DEFAULT_SEED
    grouped: dict[str, dict[tuple, Mapping[str, Any]]] = {}
    for row in rows:
        error = row.get("error")
        if error is not None and not _is_missing(error) and error != "":  # pandas gives NaN for no error
            continue
        name = "|".join(str(row[k]) for k in key)
        grouped.setdefault(name, {})[tuple(row[k] for k in QUESTION_KEY)] = row
    metric, note = choose_metric({n: list(q.values()) for n, q in grouped.items()}, metric)
    margin, margin_note = _margin_for(metric, margin, fell_back=bool(note))
    note = "; ".join(n for n in (note, margin_note) if n)
    results: dict[str, ConfigurationResult] = {}
    for name in sorted(grouped):
        values = [r.get(metric) for r in grouped[name].values()]
        low, high = _recorded_interval((recorded or {}).get(name), metric, mean(values)) or bootstrap_ci(
            values, seed=seed
        )
        # the questions scored by the ranking metric (judge-only ones, and any it does not apply to, left out)
        scored = sum(not _is_missing(v) for v in values)
        results[name] = ConfigurationResult(name, scored, mean(values), low, high, **_counts(grouped[name].values()))
    names = rank_order({n: r.mean for n, r in results.items()}, costs, cost_tolerance)
    comparison = Comparison(
        metric, names[0] if names else None, BEST_RULE, margin=margin, alpha=alpha, metric_note=note
    )
    if names:
        questions = tuple(sorted({q for n in names for q in grouped[n]}, key=str))
        matrix = np.asarray(
            [[_number(grouped[n].get(q, {}).get(metric)) for n in names] for q in questions], dtype=float
        ).reshape(len(questions), len(names))
        comparison.scores = ScoreTable(tuple(names), questions, matrix)
        _classify(comparison, [results[n] for n in names], seed)
    order = {n: i for i, n in enumerate(names)}
    comparison.configurations = sorted(
        results.values(), key=lambda r: (order.get(r.configuration, len(order)), r.configuration)
    )
    return comparison


def _recorded_interval(row: Mapping[str, Any] | None, metric: str, computed_mean: float) -> tuple[float, float] | None:
    """The interval of ``metric`` a run recorded in its ``experiment_metrics`` row, when that row's mean is
    ``computed_mean`` (the same questions); None otherwise."""
    if not row:
        return None
    run_name = CATALOG.run_name_of(metric)
    values: list[Any] = [row.get(run_name), row.get(f"{run_name}_ci_low"), row.get(f"{run_name}_ci_high")]
    if any(_is_missing(v) or type(v).__name__ == "NAType" for v in values):
        return None
    recorded_mean, low, high = (float(v) for v in values)
    if math.isnan(computed_mean) or abs(recorded_mean - computed_mean) > 1e-9:
        return None
    return low, high


def _flag(value: Any) -> bool:
    return False if _is_missing(value) or type(value).__name__ == "NAType" else bool(value)


def _counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """How a configuration's questions were scored: judge-only, at the document level only, on evidence."""
    rows = list(rows)
    if not rows or "judge_only" not in rows[0]:
        return {}
    judge_only = [r for r in rows if _flag(r.get("judge_only"))]
    documents = [
        r
        for r in rows
        if not _flag(r.get("judge_only")) and not _is_missing(r.get("n_references")) and int(r["n_references"]) == 0
    ]
    judged = any(not _is_missing(r.get(m)) for r in rows for m in JUDGE_METRICS)
    return {
        "n_judge_only": len(judge_only),
        "n_documents_only": len(documents),
        "n_evidence": len(rows) - len(judge_only),
        "judged": judged,
    }


def _number(value: Any) -> float:
    return float("nan") if _is_missing(value) else float(value)


def _margin_for(metric: str, margin: float | None, fell_back: bool) -> tuple[float, str]:
    """The margin in force for ``metric`` and a note when the one asked for could not be used."""
    if margin is None:
        return default_margin(metric), ""
    margin = float(margin)
    if fell_back and margin >= metric_range(metric):  # a margin for judge scores, and the metric fell back
        return default_margin(metric), (
            f"the margin {margin:g} does not fit {metric} (a 0..1 scale); "
            f"its default {default_margin(metric):g} is used"
        )
    return margin, ""


def _classify(comparison: Comparison, ranked: Sequence[ConfigurationResult], seed: int) -> None:
    """Friedman over the complete questions, bounds and tests against the best, classes, power of the top two."""
    scores = comparison.scores
    assert scores is not None
    values, names, alpha, margin = scores.values, scores.names, comparison.alpha, comparison.margin
    complete = ~np.isnan(values).any(axis=1)
    comparison.n_complete = int(complete.sum())
    if len(names) >= 3 and comparison.n_complete:
        comparison.friedman_statistic, comparison.friedman_p = friedman(values[complete])
    ranked[0].margin_class = CLASS_BEST
    if len(names) == 1:
        return
    compared = len(names) - 1
    bounds = paired_bounds(values, np.ones((1, values.shape[0])), np.zeros(1, dtype=int), alpha, compared)
    tests = tests_against_best(values, seed=seed)
    tested = [i for i, t in enumerate(tests) if t.n]
    adjusted = holm([tests[i].p_value for i in tested])
    for position, result in enumerate(ranked[1:]):
        j = position + 1
        test = tests[position]
        result.versus_best = test
        result.p_value_adjusted = adjusted[tested.index(position)] if position in tested else float("nan")
        result.significantly_worse = bool(test.n and result.p_value_adjusted < alpha and test.mean_difference < 0)
        d_mean, sd, lower = float(bounds.mean[0, j]), float(bounds.sd[0, j]), float(bounds.lower[0, j])
        result.lower_bound = None if math.isnan(lower) else lower
        result.sd_difference = None if math.isnan(sd) else sd
        result.effect_size = (d_mean / sd if sd > 0 else 0.0 if d_mean == 0 else None) if not math.isnan(sd) else None
        if result.lower_bound is not None and result.lower_bound > -margin:
            result.margin_class = CLASS_WITHIN
        elif result.significantly_worse:
            result.margin_class = CLASS_WORSE
        else:
            result.margin_class = CLASS_UNDECIDED
        if result.margin_class != CLASS_WITHIN and not math.isnan(sd):
            result.questions_to_show_within = questions_to_show_within(d_mean, sd, margin, alpha, compared)
        if result.margin_class == CLASS_UNDECIDED and not math.isnan(sd):
            candidates = [
                n
                for n in (result.questions_to_show_within, questions_to_show_worse(d_mean, sd, alpha, compared))
                if n is not None
            ]
            result.questions_to_settle = min(candidates) if candidates else None
    top_two = values[:, :2]
    paired = top_two[~np.isnan(top_two).any(axis=1)]
    spreads = [float(s) for s in bounds.sd[0, 1:] if not math.isnan(s) and s > 0]
    # the typical spread of differences against the best sizes what these questions can detect
    comparison.power = power_statement(
        list(paired[:, 0] - paired[:, 1]), alpha, reference_sd=float(np.median(spreads)) if spreads else None
    )
