"""Whether the LLM judge and the evidence spans tell the same story, per configuration.

On the questions of a configuration that the judge scored and the evidence metrics scored alike:

- ``spearman``: Spearman's rank correlation between the judge's score (``context_relevance`` by default: how
  relevant the judge finds the context the retrieval gave, 1 to 10) and the evidence metric (the ranking metric,
  by default ``recall_at_512``); ties share their mean rank, as in scipy.stats.spearmanr;
- ``kappa``: Cohen's kappa on hit or miss: the judge's hit is a score of :data:`JUDGE_HIT` or more (above the
  middle of the 1-10 scale), the evidence's hit is the ``hit`` column (a top-k chunk holds evidence).
  ``kappa = (p_o - p_e) / (1 - p_e)``, p_o the share of questions where both say the same, p_e the share expected
  by chance from each side's rate of hits; 1 when both say the same on every question and chance alone would not
  (p_e = 1: both constant and equal, kappa is 1 when they agree);
- 95% percentile bootstrap intervals of both over the questions (1,000 resamples, seed 0).

A correlation near 1 says the judge ranks the questions as the spans do; a kappa near 0 says its hits agree no
more than chance would. Computed only when a judge ran.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chunkbench_core.wording import plural

from .statistics import (
    BOOTSTRAP_VALUES_AT_ONCE,
    DEFAULT_CONFIDENCE,
    DEFAULT_SEED,
    DEFAULT_STABILITY_RESAMPLES,
    _average_ranks,
    resample_weights,
)

#: a judge score at or above this (on 1 to 10) counts as a hit
JUDGE_HIT = 6.0
DEFAULT_JUDGE_METRIC = "context_relevance"
#: fewer paired questions than this: no agreement is computed
MIN_PAIRED = 3


@dataclass(frozen=True)
class Agreement:
    configuration: str
    judge_metric: str
    evidence_metric: str
    n_questions: int
    spearman: float
    spearman_ci_low: float
    spearman_ci_high: float
    kappa: float
    kappa_ci_low: float
    kappa_ci_high: float
    agreement: float  # share of questions where both say hit, or both miss

    def to_row(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def sentence(self, label: str | None = None) -> str:
        return (
            f"{label or self.configuration}: Spearman {_fmt(self.spearman)} ({_fmt(self.spearman_ci_low)} to "
            f"{_fmt(self.spearman_ci_high)}) between {self.judge_metric} and {self.evidence_metric}; on hit or "
            f"miss they agree on {self.agreement:.0%}, kappa {_fmt(self.kappa)} ({_fmt(self.kappa_ci_low)} to "
            f"{_fmt(self.kappa_ci_high)}), over {plural(self.n_questions, 'question')}."
        )


def _fmt(x: float) -> str:
    return "n/a" if x != x else f"{x:.2f}"


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's correlation of each row pair (resamples x questions), ties at their mean rank."""
    rx, _ = _average_ranks(x)
    ry, _ = _average_ranks(y)
    rx = rx - rx.mean(axis=1, keepdims=True)
    ry = ry - ry.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))


def _kappa_rows(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cohen's kappa and the observed agreement of each row pair of booleans."""
    observed = (a == b).mean(axis=1)
    pa, pb = a.mean(axis=1), b.mean(axis=1)
    expected = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(expected < 1, (observed - expected) / (1 - expected), np.where(observed == 1, 1.0, np.nan))
    return kappa, observed


def agreement(
    configuration: str,
    judge: Sequence[float | None],
    evidence: Sequence[float | None],
    hits: Sequence[float | bool | None],
    judge_metric: str = DEFAULT_JUDGE_METRIC,
    evidence_metric: str = "",
) -> Agreement | None:
    """The agreement of one configuration over the questions with all three values; None below :data:`MIN_PAIRED`.
    Its intervals are the module docstring's bootstrap (resamples, seed and confidence as it says); a judge's score
    of :data:`JUDGE_HIT` or more counts as finding the evidence."""
    resamples, seed, confidence, judge_hit = DEFAULT_STABILITY_RESAMPLES, DEFAULT_SEED, DEFAULT_CONFIDENCE, JUDGE_HIT
    rows = [
        (float(j), float(e), bool(h))
        for j, e, h in zip(judge, evidence, hits)
        if j is not None and e is not None and not _missing(j) and not _missing(e) and not _missing(h)
    ]
    if len(rows) < MIN_PAIRED:
        return None
    j = np.asarray([r[0] for r in rows])
    e = np.asarray([r[1] for r in rows])
    judged_hit = j >= judge_hit
    evidence_hit = np.asarray([r[2] for r in rows])
    rho = float(_spearman_rows(j[None, :], e[None, :])[0])
    kappa, observed = (float(v[0]) for v in _kappa_rows(judged_hit[None, :], evidence_hit[None, :]))
    # each resample as the indices drawn (the same draws as resample_weights' counts, expanded), a batch at a time
    counts = resample_weights(len(rows), resamples, seed).astype(int)
    batch = max(1, BOOTSTRAP_VALUES_AT_ONCE // len(rows))
    rhos, kappas = [], []
    for start in range(0, len(counts), batch):
        index = np.stack([np.repeat(np.arange(len(rows)), c) for c in counts[start : start + batch]])
        rhos.append(_spearman_rows(j[index], e[index]))
        kappas.append(_kappa_rows(judged_hit[index], evidence_hit[index])[0])
    tail = (1 - confidence) / 2

    def interval(values: np.ndarray) -> tuple[float, float]:
        values = values[~np.isnan(values)]
        if not values.size:
            return float("nan"), float("nan")
        low, high = np.quantile(values, [tail, 1 - tail])
        return float(low), float(high)

    rho_low, rho_high = interval(np.concatenate(rhos))
    kappa_low, kappa_high = interval(np.concatenate(kappas))
    return Agreement(
        configuration,
        judge_metric,
        evidence_metric,
        len(rows),
        rho,
        rho_low,
        rho_high,
        kappa,
        kappa_low,
        kappa_high,
        observed,
    )


def _missing(value: Any) -> bool:
    if value is None or type(value).__name__ == "NAType":
        return True
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True


def judge_agreements(
    rows: Sequence[Mapping[str, Any]], evidence_metric: str, judge_metric: str = DEFAULT_JUDGE_METRIC
) -> list[Agreement]:
    """Every configuration's agreement (``rows``: question_results rows of the compared runs, failed ones left
    out); [] when no judge scored anything."""
    by_configuration: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        error = row.get("error")
        if error not in (None, "") and error == error:
            continue
        by_configuration.setdefault(f"{row['strategy']}|{row['corpus_model']}", []).append(row)
    out = []
    for name in sorted(by_configuration):
        mine = by_configuration[name]
        if all(_missing(r.get(judge_metric)) for r in mine):
            continue
        found = agreement(
            name,
            [r.get(judge_metric) for r in mine],
            [r.get(evidence_metric) for r in mine],
            [r.get("hit") for r in mine],
            judge_metric,
            evidence_metric,
        )
        if found is not None:
            out.append(found)
    return out
