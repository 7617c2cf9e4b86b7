"""The recommendation: which configuration to use, by a documented rule, and why in plain words.

Inputs are the :class:`.statistics.Comparison` (ranking metric, margin, classes, tests, power) and
each configuration's costs (``projected_usd``, ``context_tokens``, ``query_ms``,
``index_seconds``; see :mod:`.cost`). Rules (:data:`.statistics.RECOMMENDATION_RULES`):

- ``cheapest_within_margin`` (default): the cheapest of the configurations shown within the margin
  of the best (the best always qualifies). What it claims can be defended: the pick is shown to
  lose at most the margin against the best, and costs less than everything else shown to be as good.
  When nothing but the best could be shown within the margin, the best is recommended and the reason
  says how many questions would show a cheaper candidate within it, if its observed difference held.
  (``cheapest_in_tier_1``, its earlier name, is still accepted, with a message.)
- ``highest_mean``: the configuration with the highest mean of the ranking metric.

Either way the rule is applied again to 1,000 resamples of the questions (:mod:`.stability`):
``recommendation_stability`` is the share that pick the same configuration. The recommendation is
*undecided* when the best is recommended only because nothing cheaper could be shown within the
margin, or when that share is below 70%; the diagnostics then say so, with the questions that would
settle it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chunkbench_core.errors import ConfigError
from chunkbench_core.labels import configuration_label, split_configuration_key
from chunkbench_core.metric_catalog import CATALOG
from chunkbench_core.wording import plural, scored_counts

from . import budget, cost
from .drivers import CANNOT_TELL, DEFAULT_INTERCHANGEABLE_SHARE, MATTERS, Verdict, validate_share
from .stability import Stability, choose, questions_for_stable_pick
from .stability import stability as measure_stability
from .statistics import (
    CLASS_UNDECIDED,
    CLASS_WORSE,
    DEFAULT_RANK_METRIC,
    DEFAULT_RECOMMENDATION_RULE,
    DEFAULT_SEED,
    DEFAULT_STABILITY_RESAMPLES,
    RECOMMENDATION_RULES,
    RULE_ALIASES,
    STABLE_SHARE,
    Comparison,
    canonical_metric,
    default_margin,
    metric_range,
)

#: how many names a list in the reason shows before "and N more"
LISTED = 4


def class_words(margin_class: str | None, margin: float | None = None) -> str:
    """A configuration's class against the best in words, as every view says it."""
    m = "the margin" if margin is None or (isinstance(margin, float) and math.isnan(margin)) else f"{margin:g}"
    return {
        "best": "best (highest mean)",
        "within_margin": f"within {m} of the best (shown)",
        "undecided": "undecided: might be as good, cannot tell yet",
        "worse": "worse than the best (shown)",
    }.get(margin_class or "", "not compared yet")


def metric_definition(metric: str) -> str:
    """A plain-language definition of a ranking metric (the list of metrics' definition; a budget the list does not
    name, such as a configured ``recall_at_300``, in the same words as the listed ones)."""
    if metric not in CATALOG and metric.startswith("recall_at_") and metric.removeprefix("recall_at_").isdigit():
        tokens = int(metric.removeprefix("recall_at_"))
        return f"the share of the evidence text inside the first {tokens:,} tokens of the context the LLM receives"
    return CATALOG.definition(metric)


def resolve_rule(rule: str) -> tuple[str, str]:
    """(the rule's id, a note when an earlier name was given); a ConfigError names the rules for anything else."""
    if rule in RULE_ALIASES:
        new = RULE_ALIASES[rule]
        return new, (
            f"the recommendation rule {rule} is now called {new} (set CHUNKBENCH_RECOMMENDATION_RULE={new}); "
            "it now picks the cheapest configuration shown within the margin of the best, not the cheapest "
            "one the tests could not tell from it"
        )
    if rule not in RECOMMENDATION_RULES:
        raise ConfigError(f"recommendation_rule must be one of {', '.join(RECOMMENDATION_RULES)}, got {rule!r}")
    return rule, ""


def rule_text(rule: str, tolerance: float = cost.DEFAULT_COST_TOLERANCE) -> str:
    """The rule in words, with the cost tolerance in force."""
    text = RECOMMENDATION_RULES[resolve_rule(rule)[0]]
    return text.replace("the cost tolerance", f"{tolerance:.0%}") if "cost tolerance" in text else text


def _number_setting(name: str, raw: Any, example: str) -> float:
    text = str(raw).strip()
    percent = text.endswith("%")
    try:
        value = float(text.removesuffix("%")) / (100 if percent else 1)
    except ValueError:
        raise ConfigError(f"{name} must be a number, e.g. {example}, got {raw!r}") from None
    return value


@dataclass(frozen=True)
class RankingSettings:
    """How configurations are ranked and recommended: the ranking metric, the rule, the context budgets,
    the margin (in the ranking metric's units; None: 0.02 on the 0..1 metrics, 0.2 on the judge's 1-10
    scores) and the cost tolerance (costs within this share of each other are equal)."""

    rank_metric: str = DEFAULT_RANK_METRIC
    recommendation_rule: str = DEFAULT_RECOMMENDATION_RULE
    budgets: tuple[int, ...] = budget.DEFAULT_BUDGETS
    margin: float | None = None
    cost_tolerance: float = cost.DEFAULT_COST_TOLERANCE
    #: below this share of the scores' variance (the upper end of its interval) the configurations are
    #: interchangeable and the pick is on cost alone (evaluation.drivers)
    interchangeable_share: float = DEFAULT_INTERCHANGEABLE_SHARE
    #: what the settings changed on the way (an earlier rule name), said in the recommendation's reason
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.rank_metric, str) or not self.rank_metric.strip():
            raise ConfigError(
                f"rank_metric must be a metric name such as {DEFAULT_RANK_METRIC!r}, got {self.rank_metric!r}"
            )
        object.__setattr__(self, "rank_metric", canonical_metric(self.rank_metric))
        listed = CATALOG.get(self.rank_metric)
        if listed is not None and not listed.higher_is_better:
            raise ConfigError(
                f"rank_metric {listed.run_name!r}: lower is better for it, and the ranking puts the "
                f"highest mean first; choose a metric where higher is better, such as "
                f"{DEFAULT_RANK_METRIC!r}"
            )
        rule, note = resolve_rule(self.recommendation_rule)
        if note:
            warnings.warn(note[0].upper() + note[1:] + ".", FutureWarning, stacklevel=3)
            object.__setattr__(self, "recommendation_rule", rule)
            object.__setattr__(self, "notes", (*self.notes, note))
        object.__setattr__(self, "budgets", budget.validate_budgets(self.budgets))
        if self.rank_metric.startswith("recall_at_"):
            value = self.rank_metric.removeprefix("recall_at_")
            if not value.isdigit() or int(value) not in self.budgets:
                raise ConfigError(
                    f"rank_metric {self.rank_metric!r} needs the budget {value} among the context "
                    f"budgets {list(self.budgets)}"
                )
        if self.margin is not None:
            margin = float(self.margin)
            scale = metric_range(self.rank_metric)
            if not (0 < margin < scale) or math.isnan(margin):
                raise ConfigError(
                    f"margin must be above 0 and below {scale:g} in the units of {self.rank_metric} "
                    f"(e.g. {default_margin(self.rank_metric):g}), got {self.margin!r}"
                )
            object.__setattr__(self, "margin", margin)
        tolerance = float(self.cost_tolerance)
        if not (0 <= tolerance < 1):
            raise ConfigError(
                f"cost_tolerance must be a share from 0 up to 1 (e.g. 0.05 for 5%), got {self.cost_tolerance!r}"
            )
        object.__setattr__(self, "cost_tolerance", tolerance)
        object.__setattr__(self, "interchangeable_share", validate_share(self.interchangeable_share))

    @property
    def margin_in_force(self) -> float:
        """The margin given, else the default of the ranking metric's scale."""
        return self.margin if self.margin is not None else default_margin(self.rank_metric)

    @classmethod
    def from_text(
        cls,
        rank_metric: str | None = None,
        recommendation_rule: str | None = None,
        budgets: str | Sequence[int] | None = None,
        margin: str | float | None = None,
        cost_tolerance: str | float | None = None,
        interchangeable_share: str | float | None = None,
    ) -> RankingSettings:
        """From settings as text (``"256,512,1024"`` budgets, ``"5%"`` or ``"0.05"`` tolerance); empty values
        keep the defaults."""
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
                    raise ConfigError(
                        f"context budgets must be whole numbers of tokens separated by commas, got {budgets!r}"
                    ) from None
            else:
                kwargs["budgets"] = tuple(budgets)
        if margin not in (None, ""):
            kwargs["margin"] = _number_setting("margin", margin, "0.02 (in the ranking metric's units)")
        if cost_tolerance not in (None, ""):
            kwargs["cost_tolerance"] = _number_setting("cost_tolerance", cost_tolerance, "0.05 or 5%")
        if interchangeable_share not in (None, ""):
            kwargs["interchangeable_share"] = validate_share(interchangeable_share)
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
    margin: float
    cost_tolerance: float
    within_margin: list[str] = field(default_factory=list)  # the best and those shown within the margin
    undecided: list[str] = field(default_factory=list)  # might be as good, cannot tell yet
    n_worse: int = 0
    n_questions: int = 0
    difference_vs_best: float | None = None
    lower_bound_vs_best: float | None = None
    min_detectable_difference: float | None = None
    questions_to_separate: int | None = None
    highest_mean: str | None = None
    stability: Stability | None = None
    decided: bool = True  # False: the best only because nothing cheaper could be shown, or unstable
    only_best_shown: bool = False  # the best is recommended only because nothing cheaper could be shown
    candidate: str | None = None  # the cheaper configuration that might be as good and is nearest to being shown
    questions_to_settle: int | None = None  # questions that would show ``candidate`` within the margin, if it held
    questions_for_stable_pick: int | None = None  # questions that would make the pick stable (>= 70%)
    verdict: str | None = None  # whether the choice matters (evaluation.drivers): interchangeable, cannot_tell, ...
    verdict_sentence: str | None = None  # the verdict in words, as every view says it

    @property
    def questions_needed(self) -> int | None:
        """The one figure every view calls "questions needed": about how many questions would decide the
        recommendation if the scores so far held, the larger of the questions that would settle the rule
        (``questions_to_settle``) and those that would make the pick stable (``questions_for_stable_pick``); None
        when it is decided, or when no number of questions like these would decide it."""
        if self.decided:
            return None
        wanted = [
            n
            for n in (self.questions_to_settle if self.only_best_shown else None, self.questions_for_stable_pick)
            if n is not None
        ]
        return max(wanted) if wanted else None

    @property
    def retriever(self) -> str:
        """How the recommended configuration finds chunks (its key names it when it is not dense)."""
        return split_configuration_key(self.configuration)[2]

    @property
    def recommendation_stability(self) -> float | None:
        return self.stability.share if self.stability else None

    def runner_ups_text(self, labels: Mapping[str, str] | None = None, limit: int = 3) -> str:
        """``"recursive x e5 21%, semantic x minilm 8%"``: the other picks on the resamples, most often first."""
        if not self.stability:
            return ""
        return ", ".join(f"{_label(n, labels)} {share:.0%}" for n, share in self.stability.runner_ups[:limit])

    def to_row(self, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        s = self.stability
        return {
            "strategy": self.strategy,
            "corpus_model": self.corpus_model,
            "retriever": self.retriever,
            "configuration": self.configuration,
            "rule": self.rule,
            "rule_text": self.rule_text,
            "reason": self.reason,
            "rank_metric": self.metric,
            "metric_definition": self.metric_definition,
            "rank_mean": self.mean,
            "margin": self.margin,
            "cost_tolerance": self.cost_tolerance,
            "n_within_margin": len(self.within_margin),
            "within_margin": ", ".join(self.within_margin),
            "undecided": ", ".join(self.undecided),
            "n_worse": self.n_worse,
            "n_questions": self.n_questions,
            "difference_vs_best": self.difference_vs_best,
            "lower_bound_vs_best": self.lower_bound_vs_best,
            "recommendation_stability": s.share if s else None,
            "stability_resamples": s.resamples if s else None,
            "stability_runner_ups": self.runner_ups_text(labels) if s else None,
            "decided": self.decided,
            "candidate": self.candidate,
            "questions_to_settle": self.questions_to_settle,
            "questions_for_stable_pick": self.questions_for_stable_pick,
            "min_detectable_difference": self.min_detectable_difference,
            "questions_to_separate": self.questions_to_separate,
            "highest_mean": self.highest_mean,
            "questions_needed": self.questions_needed,
            "verdict": self.verdict,
            "verdict_sentence": self.verdict_sentence,
        }


def _label(configuration: str, labels: Mapping[str, str] | None = None) -> str:
    """``strategy × corpus_model`` (:func:`chunkbench_core.labels.configuration_label`), with the strategy's label
    when given (e.g. "contextual_retrieval (heading context)")."""
    strategy, model, retriever = split_configuration_key(configuration)
    return (
        configuration_label((labels or {}).get(configuration, strategy), model, retriever=retriever)
        if model
        else configuration
    )


def _number(value: float | None, places: int = 3) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{places}f}"


def _margin_text(margin: float) -> str:
    return f"{margin:g}"


def cost_difference(a: Mapping[str, Any], b: Mapping[str, Any], tolerance: float) -> str:
    """What makes ``a`` cheaper or dearer than ``b`` in words (``"486 vs 759 context tokens per question"``),
    "" when they cost the same."""
    decided = cost.deciding_cost(a, b, tolerance)
    if decided is None:
        return ""
    column, x, y = decided

    def show(value: float) -> str:
        if math.isinf(value):
            return "unknown"
        if column == "projected_usd":
            return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"
        if column == "context_tokens":
            return f"{value:,.0f}"
        return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"

    return f"{show(x)} vs {show(y)} {cost.COST_WORDS[column]}"


def _names(names: Sequence[str], labels: Mapping[str, str] | None) -> str:
    shown = [_label(n, labels) for n in names[:LISTED]]
    more = len(names) - LISTED
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def recommend(
    comparison: Comparison,
    costs: Mapping[str, Mapping[str, Any]],
    settings: RankingSettings | None = None,
    labels: Mapping[str, str] | None = None,
    resamples: int = DEFAULT_STABILITY_RESAMPLES,
    choice: Verdict | None = None,
) -> Recommendation | None:
    """The recommended configuration by the rule of ``settings`` (default: the default settings) with its reason and
    stability; None when nothing was ranked. Its cost tolerance is the settings', and what the settings changed on
    the way (their notes) is said first in the reason; the stability's resamples are drawn from
    :data:`DEFAULT_SEED`.

    ``labels``: the strategy's label per configuration, used in the reason's text; ``choice``: whether the choice matters
    (:func:`.drivers.verdict`): its sentence opens the reason, and when the configurations are interchangeable
    the pick is the cheapest of them all, on cost alone."""
    settings = settings or RankingSettings()
    rule, renamed = resolve_rule(settings.recommendation_rule)
    cost_tolerance, notes, seed = settings.cost_tolerance, settings.notes, DEFAULT_SEED
    if comparison.best is None:
        return None
    best = comparison.best
    results = {c.configuration: c for c in comparison.configurations}
    means = {n: c.mean for n, c in results.items()}
    within = comparison.within_margin() or [best]
    undecided = comparison.members(CLASS_UNDECIDED)
    worse = comparison.members(CLASS_WORSE)
    tolerance = cost_tolerance
    if choice is not None and choice.interchangeable and len(results) > 1:
        return _on_cost_alone(comparison, costs, settings, labels, choice)
    chosen = choose(rule, best, within, costs, cost_tolerance, means)
    steady = measure_stability(comparison, costs, rule, chosen, cost_tolerance, resamples, seed)

    def cheaper(a: str, b: str) -> bool:
        return cost.compare_costs(costs.get(a, {}), costs.get(b, {}), tolerance) < 0

    def name(configuration: str) -> str:
        return _label(configuration, labels)

    margin, metric = comparison.margin, comparison.metric
    n = results[chosen].n_questions
    cheaper_undecided = [c for c in undecided if cheaper(c, chosen)]
    only_best = rule != "highest_mean" and chosen == best and bool(cheaper_undecided)
    candidate, settle = None, None
    if cheaper_undecided:
        reachable = [
            (results[c].questions_to_show_within, c)
            for c in cheaper_undecided
            if results[c].questions_to_show_within is not None
        ]
        if reachable:
            settle, candidate = min(reachable)
        else:  # every cheaper one scores a margin or more below: showing them worse settles it
            counts = [results[c].questions_to_settle for c in cheaper_undecided]
            candidate = cheaper_undecided[0]
            known = [c for c in counts if c is not None]
            settle = max(known) if counts and len(known) == len(counts) else None
    unstable = steady.resamples > 0 and steady.share < STABLE_SHARE
    stable_questions = (
        questions_for_stable_pick(comparison, costs, rule, tolerance, resamples, seed) if unstable else None
    )

    parts = [note[0].upper() + note[1:] + "." for note in (*notes, renamed, comparison.metric_note) if note]
    if choice is not None and choice.kind in (MATTERS, CANNOT_TELL):
        parts.append(choice.sentence)
    best_result = results[best]
    if len(results) == 1:
        parts.append("Only one configuration ran, so there is nothing to compare it with.")
    elif rule == "highest_mean":
        parts.append(f"{name(best)} has the highest mean ({_number(best_result.mean)} on {plural(n, 'question')}).")
        others = [c for c in within if c != best]
        if others:
            parts.append(
                f"{plural(len(others), 'other configuration')} {'is' if len(others) == 1 else 'are'} shown "
                f"within {_margin_text(margin)} of it; the cheapest of them is "
                f"{name(choose('cheapest_within_margin', best, within, costs, tolerance, means))}."
            )
    elif chosen == best:
        head = f"{name(best)} has the highest mean ({_number(best_result.mean)} on {plural(n, 'question')})"
        if len(within) > 1:
            next_one = choose(rule, best, [c for c in within if c != best], costs, tolerance, means)
            versus = cost_difference(costs.get(best, {}), costs.get(next_one, {}), tolerance)
            parts.append(
                f"{head} and is the cheapest of the {len(within)} configurations shown within "
                f"{_margin_text(margin)} of it" + (f" ({versus} for {name(next_one)})." if versus else ".")
            )
        elif candidate is not None:
            c = results[candidate]
            difference = c.versus_best.mean_difference if c.versus_best else float("nan")
            # as many places as it takes for the figure not to read as the margin itself ("0.0203", not "0.020")
            at_margin = math.isclose(-difference, margin, rel_tol=0, abs_tol=1e-9)  # float noise is no difference
            places = next((p for p in (3, 4, 5) if at_margin or round(-difference, p) != margin), 5)
            text = (
                f"{head}, and no cheaper configuration could be shown within {_margin_text(margin)} of it. "
                f"The nearest cheaper one, {name(candidate)} "
                f"({cost_difference(costs.get(candidate, {}), costs.get(best, {}), tolerance)}), scores "
                f"{_number(-difference, places)} below the best"
            )
            beyond = (
                f", {'more than' if -difference > margin and not at_margin else 'as much as'} the "
                f"{_margin_text(margin)} margin"
            )
            if c.questions_to_show_within is not None:
                text += (
                    f"; if that difference held, about {c.questions_to_show_within:,} questions would show it "
                    f"within {_margin_text(margin)}."
                )
            elif settle is not None:
                text += (
                    f"{beyond}; if that held, about {settle:,} questions would show every cheaper configuration worse."
                )
            else:
                text += f"{beyond}."
            parts.append(text)
        elif any(cheaper(c, best) for c in results if c != best):
            parts.append(f"{head}; every cheaper configuration is shown worse than it.")
        else:
            parts.append(f"{head}, and no configuration costs less.")
    else:
        c = results[chosen]
        paired = c.versus_best.n if c.versus_best else n
        if c.sd_difference == 0 and c.versus_best and c.versus_best.mean_difference == 0:
            how_close = f"the same score on each of the {plural(paired, 'question')}"
        else:
            below = -(c.lower_bound or 0.0)
            how_close = f"{_number(c.mean)} vs {_number(best_result.mean)} on {plural(paired, 'question')}; " + (
                f"at most {_number(below)} below it with 95% confidence"
                if below >= 0.0005
                else "not below it, with 95% confidence"
            )
        parts.append(
            f"{name(chosen)} is the cheapest of the {len(within)} configurations shown within {_margin_text(margin)} "
            f"of the best, {name(best)} ({how_close})"
            + (
                f": {cost_difference(costs.get(chosen, {}), costs.get(best, {}), tolerance)}."
                if cost_difference(costs.get(chosen, {}), costs.get(best, {}), tolerance)
                else "."
            )
        )
    if undecided:
        parts.append(f"Might be as good, cannot tell yet: {_names(undecided, labels)}.")
    if worse:
        parts.append(f"Shown worse than the best: {plural(len(worse), 'configuration')}.")
    counted = results[chosen]
    if counted.n_evidence is not None:  # always: how many questions the figures rest on
        parts.append(
            f"Questions: {scored_counts(counted.n_evidence, counted.n_judge_only, counted.n_documents_only, counted.judged)}."
        )
    power = comparison.power
    chosen_result = results[chosen]
    return Recommendation(
        configuration=chosen,
        strategy=split_configuration_key(chosen)[0],
        corpus_model=split_configuration_key(chosen)[1] or chosen,
        rule=rule,
        rule_text=rule_text(rule, tolerance),
        reason=" ".join(parts),
        metric=metric,
        metric_definition=metric_definition(metric),
        mean=chosen_result.mean,
        margin=margin,
        cost_tolerance=tolerance,
        within_margin=within,
        undecided=undecided,
        n_worse=len(worse),
        n_questions=n,
        difference_vs_best=chosen_result.versus_best.mean_difference if chosen_result.versus_best else 0.0,
        lower_bound_vs_best=chosen_result.lower_bound if chosen != best else 0.0,
        min_detectable_difference=power.min_detectable_difference if power else None,
        questions_to_separate=power.questions_to_separate if power else None,
        highest_mean=best,
        stability=steady,
        decided=not (only_best or unstable),
        only_best_shown=only_best,
        candidate=candidate,
        questions_to_settle=settle if only_best else None,
        questions_for_stable_pick=stable_questions,
        verdict=choice.kind if choice else None,
        verdict_sentence=choice.sentence if choice else None,
    )


def _on_cost_alone(
    comparison: Comparison,
    costs: Mapping[str, Mapping[str, Any]],
    settings: RankingSettings,
    labels: Mapping[str, str] | None,
    choice: Verdict,
) -> Recommendation:
    """The configurations are interchangeable on these questions: the cheapest of them all, on cost alone."""
    rule, renamed = resolve_rule(settings.recommendation_rule)
    tolerance, notes, seed = settings.cost_tolerance, settings.notes, DEFAULT_SEED
    results = {c.configuration: c for c in comparison.configurations if not math.isnan(c.mean)}
    means = {n: c.mean for n, c in results.items()}
    chosen = cost.cheapest(list(results), costs, tolerance, means)
    best = comparison.best or chosen
    parts = [note[0].upper() + note[1:] + "." for note in (*notes, renamed, comparison.metric_note) if note]
    parts.append(choice.sentence)
    others = [c for c in results if c != chosen]
    next_one = cost.cheapest(others, costs, tolerance, means) if others else None
    versus = cost_difference(costs.get(chosen, {}), costs.get(next_one, {}), tolerance) if next_one else ""
    parts.append(
        f"{_label(chosen, labels)} is the cheapest of the {len(results)} configurations"
        + (f" ({versus} for {_label(next_one, labels)})" if versus and next_one else "")
        + f"; it scores {_number(results[chosen].mean)}, the highest mean {_number(results[best].mean)}."
    )
    counted = results[chosen]
    if counted.n_evidence is not None:
        parts.append(
            f"Questions: {scored_counts(counted.n_evidence, counted.n_judge_only, counted.n_documents_only, counted.judged)}."
        )
    power = comparison.power
    versus_best = counted.versus_best
    return Recommendation(
        configuration=chosen,
        strategy=split_configuration_key(chosen)[0],
        corpus_model=split_configuration_key(chosen)[1] or chosen,
        rule=rule,
        rule_text=rule_text(rule, tolerance),
        reason=" ".join(parts),
        metric=comparison.metric,
        metric_definition=metric_definition(comparison.metric),
        mean=counted.mean,
        margin=comparison.margin,
        cost_tolerance=tolerance,
        within_margin=comparison.within_margin() or [best],
        undecided=comparison.members(CLASS_UNDECIDED),
        n_worse=len(comparison.members(CLASS_WORSE)),
        n_questions=counted.n_questions,
        difference_vs_best=versus_best.mean_difference if versus_best else 0.0,
        lower_bound_vs_best=counted.lower_bound if chosen != best else 0.0,
        min_detectable_difference=power.min_detectable_difference if power else None,
        questions_to_separate=power.questions_to_separate if power else None,
        highest_mean=best,
        stability=Stability(chosen, 1.0, 0, seed, ((chosen, 1.0),)),
        decided=True,
        verdict=choice.kind,
        verdict_sentence=choice.sentence,
    )


def questions_needed_text(recommendation: Mapping[str, Any] | None) -> str:
    """The one sentence every view gives the "questions needed" figure (:attr:`Recommendation.questions_needed`):
    "Questions needed: about 624 (30 were scored) to decide the recommendation, if the scores so far held."; ""
    when it is decided or no number would."""
    if not recommendation:
        return ""
    raw_needed, scored = recommendation.get("questions_needed"), recommendation.get("n_questions")
    try:
        needed = int(raw_needed) if raw_needed is not None else None
    except (TypeError, ValueError):
        needed = None
    if needed is None:
        return ""
    try:
        of = f" ({int(scored):,} were scored)" if scored is not None else ""
    except (TypeError, ValueError):
        of = ""
    return (
        f"Questions needed: about {needed:,}{of} to decide the recommendation (settle the rule and make the "
        "pick stable), if the scores so far held."
    )


def recommendation_warnings(
    comparison: Comparison, recommendation: Recommendation | None, labels: Mapping[str, str] | None = None
) -> list[Any]:
    """The diagnostics about the recommendation: too few questions (or a top two alike on every question), a
    rule that cannot decide yet, an unstable pick (:mod:`.diagnostics`)."""
    from . import diagnostics

    if recommendation is None:
        return []
    identical = None
    scores = comparison.scores
    if scores is not None and len(scores.names) > 1:
        pair = scores.values[:, :2]
        pair = pair[~np.isnan(pair).any(axis=1)]
        if len(pair) and bool(np.all(pair[:, 0] == pair[:, 1])):
            identical = (_label(scores.names[0], labels), _label(scores.names[1], labels))
    s = recommendation.stability
    return diagnostics.collect(
        diagnostics.too_few_questions(recommendation.n_questions, identical),
        diagnostics.recommendation_undecided(
            _label(recommendation.configuration, labels),
            _label(recommendation.candidate, labels) if recommendation.candidate else None,
            recommendation.margin,
            recommendation.questions_to_settle,
            recommendation.n_questions,
        )
        if recommendation.only_best_shown
        else None,
        diagnostics.recommendation_unstable(
            _label(recommendation.configuration, labels),
            s.share,
            s.resamples,
            recommendation.runner_ups_text(labels),
            recommendation.questions_for_stable_pick,
            recommendation.n_questions,
        )
        if s
        else None,
    )
