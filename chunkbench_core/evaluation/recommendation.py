"""The recommendation: which configuration to use, by a documented rule, and why in plain words.

Inputs are the :class:`.statistics.Comparison` (ranking metric, tiers, tests, power) and
each configuration's costs (``projected_usd``, ``context_tokens``, ``query_ms``,
``index_seconds``; see :mod:`.cost`). Rules (:data:`.statistics.RECOMMENDATION_RULES`):

- ``cheapest_in_tier_1`` (default): among the configurations statistically tied with the
  best (tier 1), the cheapest by :func:`.cost.cost_key`. A team can defend it: nothing in
  tier 1 is measurably better, so paying more buys nothing these questions can show.
- ``highest_mean``: the configuration with the highest mean of the ranking metric.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chunkbench_core.errors import ConfigError
from chunkbench_core.labels import configuration_label
from chunkbench_core.wording import plural

from . import budget, cost
from .statistics import (
    DEFAULT_RANK_METRIC,
    DEFAULT_RECOMMENDATION_RULE,
    RECOMMENDATION_RULES,
    Comparison,
    canonical_metric,
)

#: what each ranking metric means, for people
METRIC_DEFINITIONS: dict[str, str] = {
    "budget_auc": "the area under evidence recall vs context budget (256 to 2,048 tokens, log scale)",
    "recall": "the share of the evidence text inside the top-k retrieved chunks",
    "recall_expanded": "the share of the evidence text inside the whole context (neighbors and parents included)",
    "precision": "the share of the retrieved text that is evidence",
    "iou": "the overlap of retrieved text and evidence over their union",
    "reciprocal_rank": "1 / the rank of the first chunk holding evidence (MRR)",
    "hit": "whether any of the top-k chunks holds evidence",
    "ndcg": "nDCG of the ranking, graded by evidence characters",
    "answer_similarity": "the LLM judge's 1-10 score of the answer against the expected answer",
    "context_relevance": "the LLM judge's 1-10 score of how relevant the context is",
    "faithfulness": "the LLM judge's 1-10 score of how faithful the answer is to the context",
}


def metric_definition(metric: str) -> str:
    """A plain-language definition of a ranking metric."""
    if metric.startswith("recall_at_") and metric.removeprefix("recall_at_").isdigit():
        tokens = int(metric.removeprefix("recall_at_"))
        return f"the share of the evidence text inside the first {tokens:,} tokens of the context the LLM receives"
    return METRIC_DEFINITIONS.get(metric, metric)


@dataclass(frozen=True)
class RankingSettings:
    """The one setting of the ranking metric, the recommendation rule and the context budgets."""

    rank_metric: str = DEFAULT_RANK_METRIC
    recommendation_rule: str = DEFAULT_RECOMMENDATION_RULE
    budgets: tuple[int, ...] = budget.DEFAULT_BUDGETS

    def __post_init__(self) -> None:
        if not isinstance(self.rank_metric, str) or not self.rank_metric.strip():
            raise ConfigError(f"rank_metric must be a metric name such as {DEFAULT_RANK_METRIC!r}, "
                              f"got {self.rank_metric!r}")
        object.__setattr__(self, "rank_metric", canonical_metric(self.rank_metric))
        if self.recommendation_rule not in RECOMMENDATION_RULES:
            raise ConfigError(f"recommendation_rule must be one of {', '.join(RECOMMENDATION_RULES)}, "
                              f"got {self.recommendation_rule!r}")
        object.__setattr__(self, "budgets", budget.validate_budgets(self.budgets))
        if self.rank_metric.startswith("recall_at_"):
            value = self.rank_metric.removeprefix("recall_at_")
            if not value.isdigit() or int(value) not in self.budgets:
                raise ConfigError(f"rank_metric {self.rank_metric!r} needs the budget {value} among the context "
                                  f"budgets {list(self.budgets)}")

    @classmethod
    def from_text(cls, rank_metric: str | None = None, recommendation_rule: str | None = None,
                  budgets: str | Sequence[int] | None = None) -> RankingSettings:
        """From settings as text (``"256,512,1024"`` budgets); empty values keep the defaults."""
        kwargs: dict[str, Any] = {}
        if rank_metric:
            kwargs["rank_metric"] = rank_metric
        if recommendation_rule:
            kwargs["recommendation_rule"] = recommendation_rule
        if budgets:
            if isinstance(budgets, str):
                try:
                    kwargs["budgets"] = tuple(int(b) for b in budgets.replace(" ", "").split(",") if b)
                except ValueError:
                    raise ConfigError(f"context budgets must be whole numbers of tokens separated by commas, "
                                      f"got {budgets!r}") from None
            else:
                kwargs["budgets"] = tuple(budgets)
        return cls(**kwargs)


@dataclass
class Recommendation:
    configuration: str
    strategy: str
    corpus_model: str
    rule: str
    rule_text: str
    reason: str
    metric: str
    metric_definition: str
    mean: float
    tier_size: int
    tier_members: list[str] = field(default_factory=list)
    n_questions: int = 0
    min_detectable_difference: float | None = None
    questions_to_separate: int | None = None
    highest_mean: str | None = None

    def to_row(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy, "corpus_model": self.corpus_model, "configuration": self.configuration,
            "rule": self.rule, "rule_text": self.rule_text, "reason": self.reason, "rank_metric": self.metric,
            "metric_definition": self.metric_definition, "rank_mean": self.mean, "tier_size": self.tier_size,
            "tier_members": ", ".join(self.tier_members), "n_questions": self.n_questions,
            "min_detectable_difference": self.min_detectable_difference,
            "questions_to_separate": self.questions_to_separate, "highest_mean": self.highest_mean,
        }


def _label(configuration: str, labels: Mapping[str, str] | None = None) -> str:
    """``strategy × corpus_model`` (:func:`chunkbench_core.labels.configuration_label`), with the strategy's label
    when given (e.g. "contextual_retrieval (heading context)")."""
    strategy, _, model = configuration.partition("|")
    return configuration_label((labels or {}).get(configuration, strategy), model) if model else configuration


def _number(value: float | None, places: int = 3) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{places}f}"


def _cost_phrase(costs: Mapping[str, Any], axis: str) -> str:
    tokens = costs.get("context_tokens")
    token_text = f"{tokens:,.0f} context tokens per question" if isinstance(tokens, (int, float)) and not (
        isinstance(tokens, float) and math.isnan(tokens)) else "unknown context size"
    if axis == "projected_usd":
        return f"${costs.get('projected_usd') or 0:,.2f} to build the index and answer 1,000 questions, {token_text}"
    return token_text


def recommend(comparison: Comparison, costs: Mapping[str, Mapping[str, Any]],
              rule: str = DEFAULT_RECOMMENDATION_RULE,
              labels: Mapping[str, str] | None = None) -> Recommendation | None:
    """The recommended configuration by ``rule`` with its reason; None when nothing was ranked.

    ``labels``: the strategy's label per configuration, used in the reason's text."""
    def _label_of(configuration: str) -> str:
        return _label(configuration, labels)

    if rule not in RECOMMENDATION_RULES:
        raise ConfigError(f"recommendation rule must be one of {', '.join(RECOMMENDATION_RULES)}, got {rule!r}")
    if comparison.best is None:
        return None
    results = {c.configuration: c for c in comparison.configurations}
    tier1 = comparison.tier_members(1) or [comparison.best]
    axis = cost.cost_axis(list(costs.values()))
    if rule == "cheapest_in_tier_1":
        chosen = min(tier1, key=lambda n: (cost.cost_key(costs.get(n, {})), -results[n].mean, n))
    else:
        chosen = comparison.best
    strategy, corpus_model = chosen.split("|", 1)
    metric = comparison.metric
    definition = metric_definition(metric)
    power = comparison.power
    n = results[chosen].n_questions
    parts = []
    if comparison.metric_note:
        parts.append(comparison.metric_note[0].upper() + comparison.metric_note[1:] + ".")
    if len(results) == 1:
        parts.append("Only one configuration ran, so there is nothing to compare it with.")
    elif len(tier1) == 1:
        parts.append(f"{_label_of(comparison.best)} is measurably better than every other configuration "
                     f"({_number(results[comparison.best].mean)} on {plural(n, 'question')}).")
    else:
        parts.append(f"{len(tier1)} configurations are tied for first (tier 1): the {plural(n, 'question')} cannot tell "
                     f"them apart.")
    if rule == "cheapest_in_tier_1" and len(tier1) > 1:
        text = f"{_label_of(chosen)} is the cheapest of them ({_cost_phrase(costs.get(chosen, {}), axis)})"
        if chosen == comparison.best:
            text += " and also has the highest mean."
        elif abs(results[comparison.best].mean - results[chosen].mean) < 0.0005:
            text += f"; {_label_of(comparison.best)} has the same mean ({_number(results[chosen].mean)})."
        else:
            text += (f"; the highest mean is {_label_of(comparison.best)} ({_number(results[comparison.best].mean)} "
                     f"vs {_number(results[chosen].mean)}), a difference these questions cannot confirm.")
        parts.append(text)
    if power is not None and power.min_detectable_difference == power.min_detectable_difference:
        if power.questions_to_separate is None:
            text = "The top two score the same on every question; more questions like these would not separate them"
            if power.min_detectable_difference > 0.0005:
                text += (f" (with {plural(power.n_questions, 'question')}, differences of about "
                         f"{_number(power.min_detectable_difference)} in {metric} can be detected at 80% power)")
            parts.append(text + ".")
        else:
            parts.append(f"With {plural(power.n_questions, 'question')}, a difference of "
                         f"{_number(power.min_detectable_difference)} in {metric} can be detected (80% power); "
                         f"separating the top two ({_number(power.top_two_difference)} apart) would take about "
                         f"{power.questions_to_separate:,} questions.")
    return Recommendation(
        configuration=chosen, strategy=strategy, corpus_model=corpus_model, rule=rule,
        rule_text=RECOMMENDATION_RULES[rule], reason=" ".join(parts), metric=metric, metric_definition=definition,
        mean=results[chosen].mean, tier_size=len(tier1), tier_members=tier1, n_questions=n,
        min_detectable_difference=power.min_detectable_difference if power else None,
        questions_to_separate=power.questions_to_separate if power else None, highest_mean=comparison.best)
