"""Dagster metadata that reads well: numbers rounded, units in names, nothing empty."""

from __future__ import annotations

import math
import numbers
from typing import Mapping

from dagster import MetadataValue

PLACES = 3
# counts of the run, shown as dagster/row_count or not at all
_NOT_METRICS = (
    "n_questions",
    "n_failed",
    "n_judge_only",
    "n_documents_only",
    "n_located",
    "llm_priced",
    "corpus_sample",
)


def rounded(value: float | int, places: int = PLACES) -> float | int:
    """Integers stay integers; other numbers are rounded to ``places`` decimals."""
    if isinstance(value, numbers.Integral):  # int, bool, numpy integers
        return int(value)
    return round(float(value), places)


def headline_metrics(metrics: Mapping[str, float | int]) -> dict[str, float | int]:
    """The experiment's means (and LLM token and call counts), rounded; no confidence bounds, nothing unavailable."""
    out: dict[str, float | int] = {}
    for name, value in metrics.items():
        if name in _NOT_METRICS or "_ci_" in name or value is None:
            continue
        if isinstance(value, float) and math.isnan(value):
            continue
        out[name] = rounded(value, 6 if name.endswith("_usd") else PLACES)  # dollars: fractions of a cent show
    return out


def question_counts(metrics: Mapping[str, float | int]) -> dict[str, str | int]:
    """``questions``: "N scored (M judge-only, not scored without an LLM)", as every view says it, and the
    questions resting on located evidence not reviewed yet."""
    from chunkbench_core.wording import scored_counts

    out: dict[str, str | int] = {
        "questions": scored_counts(
            metrics.get("n_questions", 0),
            metrics.get("n_judge_only", 0),
            metrics.get("n_documents_only", 0),
            judged=bool(metrics.get("n_judged")),
        )
    }
    located = metrics.get("n_located")
    if located:
        out["questions_with_located_evidence"] = int(located)
    return out


def pool_wait(waited: Mapping[str, float]) -> dict[str, MetadataValue]:
    """``pool_wait_seconds`` ({pool: seconds}) when the partition held a provider pool; nothing for local models."""
    if not waited:
        return {}
    return {"pool_wait_seconds": MetadataValue.json({pool: rounded(s) for pool, s in sorted(waited.items())})}


def llm_run(report) -> dict[str, str | int]:
    """How the partition's LLM work ended (evaluation.llm.LLMRunReport): nothing when no LLM ran."""
    if report is None:
        return {}
    out: dict[str, str | int] = {"llm_questions_evaluated": int(report.evaluated)}
    skipped = int(report.skipped_deadline) + int(report.skipped_breaker)
    if skipped:
        out["llm_questions_skipped"] = skipped
    if report.stopped_because:
        out["llm_stopped_because"] = str(report.stopped_because)
    return out
