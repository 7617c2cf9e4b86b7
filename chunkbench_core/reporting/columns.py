"""What the reports know about result columns: the metric catalog (from the metric registry), optional columns,
formatting.

Every column beyond the base schema of ``results_db.TABLES`` is optional: the helpers
here return ``None`` (or leave a metric out) when a column is absent or empty, and the
renderers then omit the matching part of the page.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, Sequence

import pandas as pd

from chunkbench_core.metric_catalog import CATALOG
from chunkbench_core.provenance import HEADING_CONTEXT_LABEL, strategy_label  # noqa: F401  (re-exported)
from chunkbench_core.wording import plural  # noqa: F401  (re-exported: reports import it from here)

Kind = Literal["fraction", "score10", "ms", "count", "usd", "p_value", "value"]


@dataclass(frozen=True)
class Metric:
    """A run-level metric (``experiment_metrics`` column) and its per-question column, as the reports show it."""

    name: str
    label: str
    question_column: str
    kind: Kind
    description: str
    higher_is_better: bool = True


def metrics_catalog(every: bool = False) -> tuple[Metric, ...]:
    """The metrics the reports describe, from the list of metrics as it is now (chunkbench_core/metric_catalog.py);
    with ``every``, also the context variants no view shows."""
    chosen = CATALOG.values() if every else CATALOG.catalog()
    return tuple(Metric(m.run_name, m.label, m.name, m.kind, m.description, m.higher_is_better) for m in chosen)


def metric_by_name() -> dict[str, Metric]:
    """Run-level name -> metric (every registered one)."""
    return {m.name: m for m in metrics_catalog(every=True)}


#: the KPIs of the managerial report, in display order (shown when present): the budgeted metrics first (the
#: default ranking metric's family), then the rest in the list's order
KPI_METRICS: tuple[str, ...] = tuple(
    m.run_name for m in sorted(CATALOG.shown_in_order("kpis"), key=lambda m: m.group != "budget")
)

#: optional column name alternatives (first present wins)
GENERATED_ANSWER = ("generated_answer", "answer")
LATENCY_PARTS = ("embed_ms", "search_ms", "expand_ms", "generate_ms", "judge_ms")


def flag(value: Any) -> bool:
    """A boolean column's value: missing (None, NaN, NA) counts as False."""
    return not missing(value) and bool(value)


def natural_key(text: Any) -> tuple[Any, ...]:
    """Sort key that orders ``q2`` before ``q10``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", str(text)) if part)


def missing(value: Any) -> bool:
    """None, NaN, NaT and pandas' NA count as missing."""
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def number(value: Any) -> float | None:
    """A finite float, or None."""
    if missing(value) or isinstance(value, str):
        return None
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


def first_column(frame: pd.DataFrame | Iterable[str], names: Sequence[str]) -> str | None:
    """The first of ``names`` that is a column with at least one value."""
    columns = frame.columns if isinstance(frame, pd.DataFrame) else list(frame)
    for name in names:
        if name in columns and (not isinstance(frame, pd.DataFrame) or frame[name].notna().any()):
            return name
    return None


def has_values(frame: pd.DataFrame, column: str) -> bool:
    return column in frame.columns and bool(frame[column].notna().any())


def value(row: Mapping[str, Any], *names: str) -> Any:
    """The first non-missing value of ``names`` in ``row`` (a dict or a pandas row)."""
    for name in names:
        if name in row and not missing(row[name]):
            return row[name]
    return None


def present_metrics(frame: pd.DataFrame, names: Iterable[str] | None = None) -> list[Metric]:
    """The catalog metrics with at least one value in ``frame`` (run-level names)."""
    by_name = metric_by_name()
    wanted = list(names) if names is not None else [m.name for m in metrics_catalog()]
    return [by_name[n] for n in wanted if n in by_name and has_values(frame, n)]


def present_question_metrics(frame: pd.DataFrame) -> list[Metric]:
    """Catalog metrics whose per-question column has values in ``frame``."""
    return [m for m in metrics_catalog() if has_values(frame, m.question_column)]


def interval(row: Mapping[str, Any], metric: str) -> tuple[float, float] | None:
    """The ``<metric>_ci_low`` / ``<metric>_ci_high`` pair when both are present."""
    low, high = number(row.get(f"{metric}_ci_low")), number(row.get(f"{metric}_ci_high"))
    return (low, high) if low is not None and high is not None else None


def parse_json(text: Any, default: Any = None) -> Any:
    """A JSON column value, parsed; ``default`` when missing or invalid."""
    if missing(text):
        return default
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return default


def fmt(kind: Kind, raw: Any) -> str:
    """A display string (plain text, not yet escaped); ``–`` for a missing value."""
    if isinstance(raw, bool):
        return "yes" if raw else "no"
    x = number(raw)
    if x is None:
        return "–" if missing(raw) or not isinstance(raw, str) else raw
    if kind == "fraction":
        return f"{x:.3f}"
    if kind == "score10":
        return f"{x:.1f}"
    if kind == "ms":
        return f"{x:,.1f} ms" if x < 10_000 else f"{x / 1000:,.1f} s"
    if kind == "count":
        return f"{x:,.0f}"
    if kind == "usd":
        return f"${x:,.4f}" if x < 1 else f"${x:,.2f}"
    if kind == "p_value":  # three decimals always (1.000 beside 0.012), the smallest as a bound
        return "< 0.001" if x < 0.0005 else f"{x:.3f}"
    return f"{x:g}"


def fmt_metric(name: str, raw: Any) -> str:
    metric = metric_by_name().get(name)
    return fmt(metric.kind if metric else "value", raw)


def fmt_interval(name: str, bounds: tuple[float, float] | None) -> str:
    if bounds is None:
        return ""
    return f"{fmt_metric(name, bounds[0])}–{fmt_metric(name, bounds[1])}"


@dataclass(frozen=True)
class RunSettings:
    """The settings of one run that decide whether two runs are comparable (from provenance)."""

    corpus_model: str | None
    boundary_model: str | None
    neighbor_prev: int | None
    neighbor_next: int | None
    neighbors_applied: bool | None
    top_k: int | None
    chunk_size: Any
    chunk_overlap: Any
    question_set_hash: str | None
    variant: str | None
    # read from the collection the run scored (its build record): what the chunks were made from
    corpus_fingerprint: str | None = None
    settings_fingerprint: str | None = None
    context_source: str | None = None  # contextual_retrieval: "llm", "headings" or e.g. "headings, llm" (mixed)

    @property
    def neighbor_badge(self) -> str:
        """The neighbor badge: ``±P/N`` (previous / next chunks added around each hit); ``±?`` unrecorded."""
        if self.neighbor_prev is None and self.neighbor_next is None:
            return "±?"
        return f"±{self.neighbor_prev or 0}/{self.neighbor_next or 0}"


def _int(raw: Any) -> int | None:
    x = number(raw)
    return int(x) if x is not None else None


def run_settings(provenance: Mapping[str, Any] | None, row: Mapping[str, Any] | None = None) -> RunSettings:
    """Read the comparable settings from a provenance object.

    Accepts the neighbor settings nested (``neighbors: {neighbor_prev, neighbor_next,
    applied}``) or at the top level (``neighbor_prev`` / ``neighbor_next``); the chunk
    size from ``chunking_params`` or the top level.
    """
    p = dict(provenance or {})
    row = row or {}
    neighbors: Mapping[str, Any] = p["neighbors"] if isinstance(p.get("neighbors"), Mapping) else {}
    params: Mapping[str, Any] = p["chunking_params"] if isinstance(p.get("chunking_params"), Mapping) else {}
    applied = neighbors.get("applied")
    return RunSettings(
        corpus_model=p.get("corpus_model") or value(row, "corpus_model"),
        boundary_model=p.get("boundary_model") or p.get("boundary_model_id"),
        neighbor_prev=_int(neighbors.get("neighbor_prev", p.get("neighbor_prev"))),
        neighbor_next=_int(neighbors.get("neighbor_next", p.get("neighbor_next"))),
        neighbors_applied=bool(applied) if applied is not None else None,
        top_k=_int(p.get("top_k", value(row, "top_k"))),
        chunk_size=params.get("chunk_size", p.get("chunk_size")),
        chunk_overlap=params.get("chunk_overlap", p.get("chunk_overlap")),
        question_set_hash=p.get("question_set_hash"),
        variant=p.get("variant") or None,
        corpus_fingerprint=p.get("corpus_fingerprint") or None,
        settings_fingerprint=p.get("settings_fingerprint") or None,
        context_source=context_source_label(p.get("context_sources")),
    )


def context_source_label(sources: Any) -> str | None:
    """ "llm" / "headings" / "headings_fallback, llm" from a {source: count} mapping (None when absent)."""
    if not isinstance(sources, Mapping) or not sources:
        return None
    return ", ".join(sorted(str(k) for k, n in sources.items() if n))


def flatten(data: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Nested provenance as (dotted key, text) pairs; lists of scalars stay on one line."""
    items: list[tuple[str, str]] = []
    if isinstance(data, Mapping):
        if not data and prefix:
            items.append((prefix, "{}"))
        for key in sorted(data, key=str):
            items += flatten(data[key], f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(data, list) and any(isinstance(v, (Mapping, list)) for v in data):
        for i, item in enumerate(data):
            items += flatten(item, f"{prefix}[{i}]")
    elif isinstance(data, list):
        items.append((prefix, ", ".join(text(v) for v in data)))
    else:
        items.append((prefix, text(data)))
    return items


def text(raw: Any) -> str:
    """A plain display string: ``–`` for None, NaN and NaT (never "None" or "nan")."""
    return "–" if missing(raw) else str(raw)


def question_counts(row: Mapping[str, Any]) -> str:
    """ "N scored (M judge-only, not scored without an LLM)": how every view counts a run's questions (a board
    row: ``n_questions``, ``n_judge_only``, ``n_documents_only``, ``n_judged``)."""
    from chunkbench_core.wording import scored_counts

    return scored_counts(
        number(row.get("n_questions")) or 0,
        number(row.get("n_judge_only")) or 0,
        number(row.get("n_documents_only")) or 0,
        judged=bool(number(row.get("n_judged"))),
    )
