"""Per-configuration numbers the reports show: intervals, latency, tokens, failures.

Each function looks for optional columns and returns ``None`` / an empty mapping when
they are absent, so callers can leave the matching cell or paragraph out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd

from .columns import (
    LATENCY_PARTS,
    metric_by_name,
    interval,
    number,
    parse_json,
)
from .data import ReportData, configuration_rows
from .intervals import bootstrap_interval


def config_questions(data: ReportData, row: Mapping[str, Any], scored_only: bool = True) -> pd.DataFrame:
    """The question rows of one board row's run (without failed questions by default)."""
    q = data.questions
    if q.empty:
        return q
    key = ("questions", row["strategy"], row["corpus_model"], row.get("experiment_run_id"), scored_only)
    if key not in data.cache:
        data.cache[key] = _select_questions(q, row, scored_only)
    return data.cache[key]


def _select_questions(q: pd.DataFrame, row: Mapping[str, Any], scored_only: bool) -> pd.DataFrame:
    subset = q[configuration_rows(q, row)]
    if scored_only and "error" in subset.columns:
        subset = subset[subset["error"].isna() | (subset["error"] == "")]
    return subset


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    from_results: bool  # False: computed by the report (bootstrap over questions)


def metric_interval(data: ReportData, row: Mapping[str, Any], metric: str) -> Interval | None:
    """The run's recorded CI for ``metric``; else a bootstrap over its per-question values."""
    key = ("interval", row["strategy"], row["corpus_model"], row.get("experiment_run_id"), metric)
    if key not in data.cache:
        data.cache[key] = _metric_interval(data, row, metric)
    return data.cache[key]


def _metric_interval(data: ReportData, row: Mapping[str, Any], metric: str) -> Interval | None:
    recorded = interval(row, metric)
    if recorded is not None:
        return Interval(recorded[0], recorded[1], True)
    info = metric_by_name().get(metric)
    questions = config_questions(data, row)
    if info is None or info.question_column not in questions.columns:
        return None
    values = [number(v) for v in questions[info.question_column]]
    if info.name == "hallucination_rate":
        values = [None if v is None else float(v > 0) for v in values]
    bounds = bootstrap_interval(v for v in values if v is not None)
    return Interval(bounds[0], bounds[1], False) if bounds else None


def metric_value(data: ReportData, row: Mapping[str, Any], metric: str) -> float | None:
    """The run-level value, or the mean of the per-question column when the run has none."""
    recorded = number(row.get(metric))
    if recorded is not None:
        return recorded
    info = metric_by_name().get(metric)
    questions = config_questions(data, row)
    if info is None or info.question_column not in questions.columns:
        return None
    values = [v for v in (number(x) for x in questions[info.question_column]) if v is not None]
    if info.name == "hallucination_rate":
        values = [float(v > 0) for v in values]
    return sum(values) / len(values) if values else None


def latency_means(data: ReportData, row: Mapping[str, Any]) -> dict[str, float]:
    """Mean milliseconds per question: ``retrieval_ms`` and the parts present (embed, search, ...)."""
    questions = config_questions(data, row)
    out: dict[str, float] = {}
    for column in ("retrieval_ms", *LATENCY_PARTS):
        found = [number(v) for v in questions[column]] if column in questions.columns else []
        values = [v for v in found if v is not None]
        if values:
            out[column] = sum(values) / len(values)
        elif number(row.get(column)) is not None:
            out[column] = float(row[column])
    if "latency_ms" in questions.columns:  # JSON breakdown {stage: ms}
        sums: dict[str, list[float]] = {}
        for raw in questions["latency_ms"]:
            parsed = parse_json(raw, {})
            for stage, ms in parsed.items() if isinstance(parsed, dict) else []:
                if number(ms) is not None:
                    sums.setdefault(f"{stage}_ms", []).append(float(ms))
        for column, stage_values in sums.items():
            out.setdefault(column, sum(stage_values) / len(stage_values))
    return out


def token_totals(data: ReportData, row: Mapping[str, Any]) -> dict[str, float]:
    """Token sums of one run: ``*_tokens`` columns of the run, else of its questions, plus ``token_usage`` JSON."""
    totals: dict[str, float] = {}
    for column, raw in row.items():
        if str(column).endswith("_tokens") and number(raw) is not None:
            totals[str(column)] = float(raw)
    questions = config_questions(data, row, scored_only=False)
    for column in questions.columns:
        if (
            column.endswith("_tokens")
            and column not in totals
            and column not in ("context_tokens", "llm_context_tokens")
        ):
            values = [v for v in (number(x) for x in questions[column]) if v is not None]
            if values:
                totals[column] = float(sum(values))
    if "token_usage" in questions.columns:
        for raw in questions["token_usage"]:
            parsed = parse_json(raw, {})
            for name, count in _flat_counts(parsed):
                key = name if name.endswith("tokens") else f"{name}_tokens"
                totals[key] = totals.get(key, 0.0) + count
    return totals


#: what the run-level token counts of :func:`token_totals` are: a mean per question or the index's total (every
#: other count is a sum over the run's questions)
TOKEN_HEADERS = {
    "context_tokens": "context tokens / question",
    "llm_context_tokens": "LLM context tokens / question",
    "question_tokens": "question tokens / question",
    "embedded_tokens": "embedded tokens (index)",
}


def token_header(column: str) -> str:
    """A token count's column header saying what it counts: "context tokens / question" (a mean), "embedded
    tokens (index)", or "answer prompt tokens (sum)" for the counts summed over the questions."""
    return TOKEN_HEADERS.get(column) or f"{column.replace('_', ' ')} (sum)"


def _flat_counts(parsed: Any, prefix: str = "") -> list[tuple[str, float]]:
    if isinstance(parsed, dict):
        out: list[tuple[str, float]] = []
        for key, item in parsed.items():
            out += _flat_counts(item, f"{prefix}_{key}" if prefix else str(key))
        return out
    x = number(parsed)
    return [(prefix, x)] if x is not None and prefix else []


def n_failed(data: ReportData, row: Mapping[str, Any]) -> int:
    recorded = number(row.get("n_failed"))
    if recorded is not None:
        return int(recorded)
    questions = config_questions(data, row, scored_only=False)
    return int(questions["error"].notna().sum()) if "error" in questions.columns else 0
