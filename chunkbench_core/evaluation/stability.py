"""How stable the recommendation is: the whole rule applied again to resamples of the questions.

The questions are drawn with replacement (a bootstrap: each resample has as many questions as were
scored; 1,000 resamples, seed 0). On each resample the rule runs exactly as on the questions
themselves: every configuration's mean; the best (means within 1e-9 are equal: the cheaper, then the
name, goes first); the one-sided lower confidence bound of each configuration's paired difference to
that best (:func:`.statistics.paired_bounds`); the configurations shown within the margin; the
cheapest of them (:func:`choose`). ``recommendation_stability`` is the share of resamples that pick
the configuration picked on the questions themselves; the other picks are the runner-ups, with their
shares.

:func:`questions_for_stable_pick` asks how many questions would make the pick stable if the questions
scored so far are representative: it draws resamples of n' > n questions from them (the same rule,
the bounds computed on n' questions) and returns the smallest n' on a grid where one configuration is
picked in at least 70% of them.

Vectorised: a resample is a row of counts (how many times each question was drawn), so every
resample's means and paired sums are matrix products; the last step (the cheapest of a set) runs
once per distinct set of configurations.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import cost
from .statistics import (
    DEFAULT_ALPHA,
    DEFAULT_SEED,
    DEFAULT_STABILITY_RESAMPLES,
    MEAN_TIE,
    STABLE_SHARE,
    Comparison,
    ScoreTable,
    paired_bounds,
    resample_weights,
)

#: the most questions :func:`questions_for_stable_pick` looks at
STABLE_PICK_LIMIT = 20_000


def choose(
    rule: str,
    best: str,
    within: Sequence[str],
    costs: Mapping[str, Mapping[str, Any]],
    tolerance: float = cost.DEFAULT_COST_TOLERANCE,
    means: Mapping[str, float] | None = None,
) -> str:
    """The rule itself: ``highest_mean`` picks ``best``; ``cheapest_within_margin`` the cheapest of ``within``
    (the best and those shown within the margin of it; :func:`.cost.cheapest`, equal costs to the higher
    mean, then the name)."""
    if rule == "highest_mean":
        return best
    return cost.cheapest(list(within) or [best], costs, tolerance, means)


@dataclass(frozen=True)
class Stability:
    pick: str
    share: float  # of the resamples that pick ``pick``
    resamples: int
    seed: int
    picks: tuple[tuple[str, float], ...]  # every configuration picked, with its share, most often first

    @property
    def runner_ups(self) -> list[tuple[str, float]]:
        return [(name, share) for name, share in self.picks if name != self.pick]


def resampled_picks(
    scores: ScoreTable,
    weights: np.ndarray,
    costs: Mapping[str, Mapping[str, Any]],
    rule: str,
    margin: float,
    alpha: float = DEFAULT_ALPHA,
    tolerance: float = cost.DEFAULT_COST_TOLERANCE,
) -> list[str]:
    """The rule's pick on each resample (a row of ``weights``)."""
    names = list(scores.names)
    values = scores.values
    valid = ~np.isnan(values)
    totals = weights @ valid.astype(float)
    sums = weights @ np.where(valid, values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(totals > 0, sums / np.where(totals > 0, totals, 1), -np.inf)
    top = means.max(axis=1)
    tied = means >= (top - MEAN_TIE)[:, None]
    best = np.argmax(means, axis=1)
    several = np.flatnonzero(tied.sum(axis=1) > 1)
    ties: dict[bytes, int] = {}
    for b in several:  # equal means: the cheaper, then the name (as the ranking)
        pattern = tied[b].tobytes()
        if pattern not in ties:
            group = [names[j] for j in np.flatnonzero(tied[b])]
            ties[pattern] = names.index(cost.cheapest(group, costs, tolerance))
        best[b] = ties[pattern]
    if rule == "highest_mean" or len(names) == 1:
        return [names[j] for j in best]
    bounds = paired_bounds(values, weights, best, alpha, len(names) - 1)
    with np.errstate(invalid="ignore"):
        within = bounds.lower > -margin
    within[np.arange(len(best)), best] = True
    groups: dict[bytes, list[str]] = {}
    picks = []
    for r in range(len(best)):
        pattern = within[r].tobytes()
        if pattern not in groups:
            members = [names[j] for j in np.flatnonzero(within[r])]
            groups[pattern] = cost.cheapest_group(members, costs, tolerance)
        group = groups[pattern]
        if len(group) == 1:
            picks.append(group[0])
        else:  # the same cost: the higher mean in this resample, then the name
            picks.append(min(group, key=lambda n: (-means[r, names.index(n)], n)))
    return picks


def stability(
    comparison: Comparison,
    costs: Mapping[str, Mapping[str, Any]],
    rule: str,
    pick: str,
    tolerance: float = cost.DEFAULT_COST_TOLERANCE,
    resamples: int = DEFAULT_STABILITY_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Stability:
    """How often the rule picks ``pick`` (its pick on the questions themselves) on resamples of the questions."""
    scores = comparison.scores
    if scores is None or len(scores.names) < 2 or not len(scores.questions) or resamples < 1:
        return Stability(pick, 1.0, 0, seed, ((pick, 1.0),))
    weights = resample_weights(len(scores.questions), resamples, seed)
    counted = Counter(resampled_picks(scores, weights, costs, rule, comparison.margin, comparison.alpha, tolerance))
    shares = tuple(sorted(((n, c / resamples) for n, c in counted.items()), key=lambda x: (-x[1], x[0])))
    return Stability(pick, counted.get(pick, 0) / resamples, resamples, seed, shares)


def questions_for_stable_pick(
    comparison: Comparison,
    costs: Mapping[str, Mapping[str, Any]],
    rule: str,
    tolerance: float = cost.DEFAULT_COST_TOLERANCE,
    resamples: int = DEFAULT_STABILITY_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> int | None:
    """About how many questions would make one pick stable (:data:`STABLE_SHARE` of the resamples), if the questions
    scored so far are representative: resamples of n' questions drawn from them, n' growing by half each
    step from 1.5 n; None when even :data:`STABLE_PICK_LIMIT` questions would not."""
    target, limit = STABLE_SHARE, STABLE_PICK_LIMIT
    scores = comparison.scores
    if scores is None or len(scores.names) < 2 or not len(scores.questions):
        return None
    n = len(scores.questions)
    size = n
    while size < limit:
        size = min(limit, max(size + 1, math.ceil(size * 1.5)))
        weights = resample_weights(n, resamples, seed, size=size)
        counted = Counter(resampled_picks(scores, weights, costs, rule, comparison.margin, comparison.alpha, tolerance))
        if counted.most_common(1)[0][1] >= target * resamples:
            return _round_up(size)
    return None


def _round_up(n: int) -> int:
    """Two significant digits, rounded up ("about 1,300 questions", never an invented precision)."""
    if n < 100:
        return n
    step = 10 ** (len(str(n)) - 2)
    return -(-n // step) * step
