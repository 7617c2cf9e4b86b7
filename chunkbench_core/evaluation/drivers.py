"""What drives the scores: how much of their spread comes from the questions, and how much from the choice.

The per-question scores of a comparison (questions x configurations, the ranking metric) are split as in a
repeated-measures analysis of variance, the question being the repeated unit. Over the questions every
configuration scored (a complete, balanced table), with y the score of question q under configuration j,
m the grand mean and C the number of configurations:

- ``SS_total = Σ (y - m)²``;
- ``question``: ``C · Σ_q (mean_q - m)²``, of which ``category`` and ``document`` (the question's source
  documents) are the part between the questions' groups: ``Σ_g n_g (mean_g - m)²``, n_g its scores;
- ``strategy``, ``corpus_model`` and ``retriever``: ``Σ_l n_l (mean_l - m)²`` over the factor's levels (a factor
  with one level explains nothing);
- ``configuration``: the same over the configurations: the three factors and how they combine, everything a
  user chooses;
- ``strategy_x_category``: the strategy x category cells beyond their two main effects,
  ``Σ_{s,c} n_sc (mean_sc - m)² - SS_strategy - SS_category`` (clipped at 0);
- ``rest``: what neither the question nor the configuration explains, ``SS_total - SS_question -
  SS_configuration``: the question x configuration interplay.

Each share is eta squared, ``SS / SS_total``. Its 95% interval is a percentile bootstrap over the questions
(1,000 resamples, seed 0, each question drawn with all its scores: :func:`.statistics.resample_weights`),
all resamples at once as weighted sums.

:func:`verdict` reads the configuration's share against :data:`DEFAULT_INTERCHANGEABLE_SHARE`: its upper bound
below it, the configurations are interchangeable on these questions (recommend on cost alone); its lower bound
at or above it, the choice matters (the ranking's best leads); otherwise the interval is too wide to know
("cannot tell yet"). Every view says the verdict in :attr:`Verdict.sentence`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chunkbench_core.errors import ConfigError
from chunkbench_core.labels import configuration_label, split_configuration_key
from chunkbench_core.wording import plural

from .statistics import (
    BOOTSTRAP_VALUES_AT_ONCE,
    DEFAULT_CONFIDENCE,
    DEFAULT_SEED,
    DEFAULT_STABILITY_RESAMPLES,
    resample_weights,
)

#: Below this share of the scores' variance (the upper end of its 95% interval), the choice of configuration is
#: too small to matter: the configurations are interchangeable on these questions. 2 %: on the 0..1 metrics,
#: a spread between configurations that small is below the 0.02 margin on any question set whose questions
#: differ as much as real ones do (the sample's questions explain 60 to 80 % of the variance).
DEFAULT_INTERCHANGEABLE_SHARE = 0.02

#: the factors, in the order every view lists them, with their words
FACTORS: dict[str, str] = {
    "question": "the questions",
    "category": "the question's category",
    "document": "the question's documents",
    "configuration": "the configuration (strategy, corpus model and retriever together)",
    "strategy": "the strategy",
    "corpus_model": "the corpus model",
    "retriever": "the retriever",
    "strategy_x_category": "the strategy x category interplay",
    "rest": "the rest (how each question fares under each configuration)",
}
#: the factors nested in the questions' share (parts of it, not added to it)
WITHIN_QUESTION = ("category", "document")
#: the factors that are parts of the configuration's share
WITHIN_CONFIGURATION = ("strategy", "corpus_model", "retriever")

INTERCHANGEABLE = "interchangeable"
CANNOT_TELL = "cannot_tell"
MATTERS = "matters"
SINGLE = "single"
NO_DATA = "no_data"


def validate_share(value: Any, name: str = "interchangeable_share") -> float:
    """A share threshold from 0 (exclusive) to 1 (exclusive); ``"2%"`` or ``0.02``."""
    text = str(value).strip()
    try:
        share = float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise ConfigError(f"{name} must be a share such as 0.02 or 2%, got {value!r}") from None
    if not (0 < share < 1) or math.isnan(share):
        raise ConfigError(f"{name} must be above 0 and below 1 (e.g. 0.02 or 2%), got {value!r}")
    return share


@dataclass(frozen=True)
class Share:
    """One factor's share of the scores' variance (eta squared) with its bootstrap interval."""

    factor: str
    share: float
    ci_low: float
    ci_high: float
    levels: int  # how many levels the factor has in this comparison (1: it explains nothing)

    @property
    def words(self) -> str:
        return FACTORS.get(self.factor, self.factor)


@dataclass
class Decomposition:
    metric: str
    n_questions: int  # questions every configuration scored (the ones the split is over)
    n_scored: int  # questions any configuration scored
    n_configurations: int
    variance: float  # SS_total / number of scores
    shares: dict[str, Share] = field(default_factory=dict)
    resamples: int = DEFAULT_STABILITY_RESAMPLES
    seed: int = DEFAULT_SEED

    def share(self, factor: str) -> Share | None:
        return self.shares.get(factor)

    def to_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "factor": s.factor,
                "description": s.words,
                "share": s.share,
                "ci_low": s.ci_low,
                "ci_high": s.ci_high,
                "levels": s.levels,
                "metric": self.metric,
                "n_questions": self.n_questions,
                "n_scored": self.n_scored,
                "n_configurations": self.n_configurations,
                "within": "question"
                if s.factor in WITHIN_QUESTION
                else "configuration"
                if s.factor in WITHIN_CONFIGURATION
                else None,
            }
            for s in self.shares.values()
        ]


def _groups(labels: Sequence[Any]) -> tuple[np.ndarray, int]:
    """Each label's group index and the number of groups (first seen first)."""
    index: dict[Any, int] = {}
    codes = np.asarray([index.setdefault(label, len(index)) for label in labels], dtype=int)
    return codes, len(index)


def _between(weights: np.ndarray, sums: np.ndarray, counts: np.ndarray, grand: np.ndarray) -> np.ndarray:
    """Σ_g n_g (mean_g - m)² per resample; ``sums``/``counts``: resamples x groups of the weighted scores and of
    the weighted number of scores."""
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.where(counts > 0, counts, 1), 0.0)
    return np.sum(counts * (means - grand[:, None]) ** 2, axis=1)


def _group_sums(weighted: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    """resamples x groups: the sum of each row of ``weighted`` (resamples x questions) over each group's questions.
    A dense questions x groups matrix while it is small (one matrix product); a sparse one beyond (thousands of
    documents would make the dense one gigabytes)."""
    q = len(codes)
    if q * n <= 4_000_000:
        member = np.zeros((q, n))
        member[np.arange(q), codes] = 1.0
        return weighted @ member
    from scipy import sparse

    member = sparse.csr_matrix((np.ones(q), (codes, np.arange(q))), shape=(n, q))
    return np.asarray(member @ weighted.T).T


def _sums_of_squares(
    values: np.ndarray,
    weights: np.ndarray,
    strategies: Sequence[str],
    models: Sequence[str],
    retrievers: Sequence[str],
    categories: Sequence[str] | None,
    documents: Sequence[str] | None,
) -> dict[str, np.ndarray]:
    """Every factor's sum of squares per resample (a row of ``weights``: how often each question is drawn)."""
    n_configurations = values.shape[1]
    total_weight = weights.sum(axis=1)
    n_scores = total_weight * n_configurations
    column_sums = weights @ values  # resamples x configurations
    grand = column_sums.sum(axis=1) / n_scores
    squares = weights @ (values**2).sum(axis=1)
    out: dict[str, np.ndarray] = {"total": squares - n_scores * grand**2}
    row_means = values.mean(axis=1)
    out["question"] = n_configurations * (weights @ row_means**2 - total_weight * grand**2)
    column_counts = np.repeat(total_weight[:, None], n_configurations, axis=1)
    out["configuration"] = _between(weights, column_sums, column_counts, grand)
    for factor, labels in (("strategy", strategies), ("corpus_model", models), ("retriever", retrievers)):
        codes, n = _groups(labels)
        member = np.zeros((n_configurations, n))
        member[np.arange(n_configurations), codes] = 1.0
        out[factor] = _between(weights, column_sums @ member, column_counts @ member, grand)
    row_sums = values.sum(axis=1)
    for factor, question_labels in (("category", categories), ("document", documents)):
        if question_labels is None:
            continue
        codes, n = _groups(question_labels)
        out[factor] = _between(
            weights, _group_sums(weights * row_sums, codes, n), _group_sums(weights, codes, n) * n_configurations, grand
        )
    if categories is not None:
        strategy_codes, n_strategies = _groups(strategies)
        category_codes, n_categories = _groups(categories)
        by_strategy = np.zeros((values.shape[0], n_strategies))  # each question's score sum per strategy
        width = np.zeros(n_strategies)
        for j, s in enumerate(strategy_codes):
            by_strategy[:, s] += values[:, j]
            width[s] += 1
        counts = _group_sums(weights, category_codes, n_categories)  # resamples x categories
        cells = np.zeros(weights.shape[0])
        for s in range(n_strategies):
            sums = _group_sums(weights * by_strategy[:, s], category_codes, n_categories)
            cells += _between(weights, sums, counts * width[s], grand)
        out["strategy_x_category"] = np.clip(cells - out["strategy"] - out["category"], 0.0, None)
    out["rest"] = np.clip(out["total"] - out["question"] - out["configuration"], 0.0, None)
    return out


def decompose(
    values: np.ndarray,
    configurations: Sequence[str],
    metric: str = "",
    categories: Sequence[Any] | None = None,
    documents: Sequence[Any] | None = None,
    retrievers: Sequence[str] | None = None,
    resamples: int = DEFAULT_STABILITY_RESAMPLES,
) -> Decomposition:
    """The shares of the scores' variance (module docstring).

    ``values``: questions x configurations (NaN: not scored); ``configurations``: each column's
    ``strategy|corpus_model`` name; ``categories`` / ``documents``: each question's (None: unknown; the factor is
    left out); ``retrievers``: each column's retriever (default: one). Questions some configuration did not score
    are left out. The intervals are bootstraps over the questions (``resamples`` of them) with the seed and confidence
    the module docstring says.
    """
    seed, confidence = DEFAULT_SEED, DEFAULT_CONFIDENCE
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[1] != len(configurations):
        raise ValueError(f"values must be questions x {len(configurations)} configurations, got {values.shape}")
    n_scored = int((~np.isnan(values)).any(axis=1).sum()) if values.size else 0
    complete = ~np.isnan(values).any(axis=1) if values.size else np.zeros(values.shape[0], dtype=bool)
    values = values[complete]
    keep = np.flatnonzero(complete)

    def known(labels: Sequence[Any] | None) -> list[str] | None:
        if labels is None:
            return None
        picked = [labels[int(i)] for i in keep]
        if all(label is None or label == "" or label == "(none)" for label in picked):
            return None
        return ["" if label is None else str(label) for label in picked]

    # a configuration's key names its retriever when it is not dense: the corpus model is the key's middle part
    parts = [split_configuration_key(c) for c in configurations]
    strategies = [strategy for strategy, _, _ in parts]
    models = [corpus_model or c for c, (_, corpus_model, _) in zip(configurations, parts)]
    column_retrievers = list(retrievers) if retrievers is not None else [retriever for _, _, retriever in parts]
    cats, docs = known(categories), known(documents)
    out = Decomposition(
        metric, int(values.shape[0]), n_scored, len(configurations), float("nan"), resamples=resamples, seed=seed
    )
    if values.shape[0] < 2 or values.shape[1] < 1:
        return out
    observed = _sums_of_squares(
        values, np.ones((1, values.shape[0])), strategies, models, column_retrievers, cats, docs
    )
    total = float(observed["total"][0])
    out.variance = total / values.size
    boot = None
    if resamples > 0:
        weights = resample_weights(values.shape[0], resamples, seed)
        # a batch of resamples at a time: each step makes a few temporaries the size of the batch's weights
        batch = max(1, BOOTSTRAP_VALUES_AT_ONCE // max(1, values.shape[0]))
        batches = [
            _sums_of_squares(values, weights[start : start + batch], strategies, models, column_retrievers, cats, docs)
            for start in range(0, resamples, batch)
        ]
        boot = {factor: np.concatenate([sums[factor] for sums in batches]) for factor in batches[0]}
    tail = (1 - confidence) / 2
    levels = {
        "question": values.shape[0],
        "configuration": len(set(configurations)),
        "strategy": len(set(strategies)),
        "corpus_model": len(set(models)),
        "retriever": len(set(column_retrievers)),
        "category": len(set(cats or [])),
        "document": len(set(docs or [])),
        "strategy_x_category": len(set(strategies)) * len(set(cats or [])),
        "rest": 0,
    }
    for factor in FACTORS:
        if factor not in observed:
            continue
        if total <= 1e-15:  # every score the same: nothing to explain
            out.shares[factor] = Share(factor, 0.0, 0.0, 0.0, levels[factor])
            continue
        share = float(observed[factor][0]) / total
        low = high = share
        if boot is not None:
            with np.errstate(invalid="ignore", divide="ignore"):
                drawn = np.where(
                    boot["total"] > 1e-15, boot[factor] / np.where(boot["total"] > 1e-15, boot["total"], 1), 0.0
                )
            low, high = (float(x) for x in np.quantile(drawn, [tail, 1 - tail]))
        out.shares[factor] = Share(factor, _clip(share), _clip(low), _clip(high), levels[factor])
    return out


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def percent(share: float) -> str:
    """``0.713`` -> ``"71 %"``; below 10 % one decimal (``"4.2 %"``, ``"0.3 %"``), below 0.1 % ``"under 0.1 %"``
    (never a 0 % that reads as nothing at all when something is there)."""
    if share != share:
        return "n/a"
    if 0 < share < 0.0005:
        return "under 0.1 %"
    if share < 0.0995:  # one decimal below 10 %: a share near a 2 % threshold reads on the right side of it
        return f"{share * 100:.1f} %".replace("0.0 %", "0 %")
    return f"{share * 100:.0f} %"


def interval_text(low: float, high: float) -> str:
    """``"95 % interval 9 % to 11 %"``, or ``"at most 3 % with 95 % confidence"`` when the low end is nothing."""
    if low < 0.0005:
        return f"at most {percent(high)} with 95 % confidence"
    return f"95 % interval {percent(low)} to {percent(high)}"


def drivers_sentence(decomposition: Decomposition) -> str:
    """``"On this corpus 71 % of the differences in recall_at_512 come from the questions, 4 % from the
    strategy."``: one plain sentence, the chosen factors with more than one level."""
    shares = decomposition.shares
    if "question" not in shares:
        return (
            f"Too few questions were scored by every configuration ({decomposition.n_questions}) to say what "
            "drives the scores."
        )
    if decomposition.variance == 0:
        return (
            f"Every configuration scores the same on each of the {plural(decomposition.n_questions, 'question')}:"
            " nothing differs."
        )
    parts = [
        f"{percent(shares['question'].share)} of the differences in {decomposition.metric} come from the questions"
    ]
    chosen = [f for f in WITHIN_CONFIGURATION if f in shares and shares[f].levels > 1]
    if not chosen and decomposition.n_configurations > 1:
        chosen = ["configuration"]
    parts += [f"{percent(shares[f].share)} from {FACTORS[f]}" for f in chosen]
    text = "On this corpus " + ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    over = f" (over the {plural(decomposition.n_questions, 'question')} every configuration scored"
    over += f", of {decomposition.n_scored})" if decomposition.n_scored != decomposition.n_questions else ")"
    rest = shares.get("rest")
    tail = (
        f"; the other {percent(rest.share)} from how each question fares under each configuration"
        if rest is not None and rest.share >= 0.005
        else ""
    )
    return text + over + tail + "."


@dataclass(frozen=True)
class Verdict:
    """Whether the choice of configuration matters on these questions, and the sentence every view shows."""

    kind: str  # INTERCHANGEABLE, CANNOT_TELL, MATTERS, SINGLE or NO_DATA
    share: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float
    sentence: str

    @property
    def interchangeable(self) -> bool:
        return self.kind == INTERCHANGEABLE

    def to_row(self) -> dict[str, Any]:
        return {
            "verdict": self.kind,
            "verdict_sentence": self.sentence,
            "configuration_share": self.share,
            "configuration_share_ci_low": self.ci_low,
            "configuration_share_ci_high": self.ci_high,
            "interchangeable_share": self.threshold,
        }


def verdict(
    decomposition: Decomposition,
    threshold: float = DEFAULT_INTERCHANGEABLE_SHARE,
    best: str | None = None,
    separate: str = "",
) -> Verdict:
    """The verdict on the configuration's share (module docstring); ``best``: the ranking's first, named when the
    choice matters; ``separate``: what would tell interchangeable configurations apart (a sentence)."""
    share = decomposition.share("configuration")
    if decomposition.n_configurations < 2:
        return Verdict(SINGLE, None, None, None, threshold, "Only one configuration ran: nothing to choose between.")
    if share is None:
        return Verdict(NO_DATA, None, None, None, threshold, drivers_sentence(decomposition))
    limit = f"{threshold * 100:g} %"  # the setting as given: "2 %", "0.5 %"
    interval = f"{percent(share.share)} of the differences ({interval_text(share.ci_low, share.ci_high)})"
    if share.ci_high < threshold:
        text = (
            f"The configurations are interchangeable on this corpus: the choice explains {interval}, below "
            f"{limit}. Pick on cost alone."
        )
        kind = INTERCHANGEABLE
    elif share.ci_low >= threshold:
        text = f"The choice matters on this corpus: it explains {interval}" + (f"; {best} leads." if best else ".")
        kind = MATTERS
    else:
        text = (
            f"Cannot tell yet whether the choice matters: it explains {interval}, an interval too wide to say "
            f"whether it is below {limit}. More questions would narrow it."
        )
        kind = CANNOT_TELL
    if separate and kind == INTERCHANGEABLE:
        text += " " + separate
    return Verdict(kind, share.share, share.ci_low, share.ci_high, threshold, text)


#: a kind of question with this many questions or fewer is too small to name as what would separate them
#: (the breakdowns' "too small to read")
SMALL_GROUP = 3


def _label(configuration: str, labels: Mapping[str, str] | None = None) -> str:
    """``strategy × corpus_model``, the strategy by its label when given (as the recommendation names it)."""
    strategy, model, retriever = split_configuration_key(configuration)
    if not model:
        return configuration
    return configuration_label((labels or {}).get(configuration, strategy), model, retriever=retriever)


def separating_questions(
    comparison: Any,
    question_labels: Mapping[tuple, tuple[str | None, str | None]],
    labels: Mapping[str, str] | None = None,
) -> str:
    """What would tell the configurations apart, in one sentence: the category whose questions separate the
    configurations most (the largest gap between the highest and the lowest mean in it, over more than
    :data:`SMALL_GROUP` questions), the two leading there and about how many questions of that kind would show
    the difference if it held (:func:`.statistics.power_statement`); without categories, the top two over all
    the questions. ``question_labels``: question key -> (category, documents)."""
    from .statistics import power_statement

    scores = getattr(comparison, "scores", None)
    if scores is None or len(scores.names) < 2:
        return ""
    values = scores.values
    complete = ~np.isnan(values).any(axis=1)
    categories = [(question_labels.get(q) or (None, None))[0] for q in scores.questions]
    groups: dict[str, list[int]] = {}
    for i, category in enumerate(categories):
        if complete[i] and category not in (None, "", "(none)"):
            groups.setdefault(str(category), []).append(i)
    candidates = []
    for category, rows in groups.items():
        if len(rows) <= SMALL_GROUP:
            continue
        means = values[rows].mean(axis=0)
        order = np.argsort(-means, kind="stable")
        candidates.append((float(means[order[0]] - means[order[-1]]), category, rows, order))
    if candidates:
        gap, category, rows, order = max(candidates, key=lambda c: (c[0], c[1]))
        if gap <= 0:
            return ""
        first, second = int(order[0]), int(order[1])
        d = values[rows, first] - values[rows, second]
        needed = power_statement(list(d)).questions_to_separate
        lead = float(d.mean())
        text = (
            f"What would separate them: questions in category {category}, where "
            f"{_label(scores.names[first], labels)} scores {lead:.3f} above {_label(scores.names[second], labels)}"
            f" over {plural(len(rows), 'question')}"
        )
        if needed is not None and lead > 0:
            return text + f"; about {needed:,} questions of that kind would show it if it held."
        return text + "."
    paired = values[complete][:, :2]
    needed = power_statement(list(paired[:, 0] - paired[:, 1])).questions_to_separate if len(paired) > 1 else None
    if needed is None:
        return (
            "What would separate them: questions on which they differ; on these, the top two score the same "
            "on every question."
        )
    return (
        f"What would separate them: questions on which they differ; about {needed:,} questions like these would "
        f"separate the top two if their difference held."
    )
