"""The leaderboard as text: a fixed-width table for the terminal and markdown for the UI.

The default table fits 120 columns: rank, tier, configuration, the ranking metric, context
tokens, query time, cost, the frontier and the verdict; ``wide=True`` prints every column
of the ``leaderboard`` view. Below the table, the same words as the reports: what the
ranking metric is, what a tier is, and the recommendation with its reason.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from typing import Any

import pandas as pd

from chunkbench_core.storage.results_db import LEADERBOARD_COLUMNS

from .columns import metrics_catalog

#: fraction columns besides the registered metrics (evaluation.metric_registry) that are fractions
FRACTION_COLUMNS = {"rank_mean", "rank_ci_low", "rank_ci_high", "difference_vs_best"}


def fractions() -> set[str]:
    """The columns shown as fractions: every registered metric that is one (its run-level name), and the ranks'."""
    return {m.name for m in metrics_catalog(every=True) if m.kind == "fraction"} | FRACTION_COLUMNS
WIDTH = 120
#: the default columns; "metric" stands for the ranking metric's own column
COMPACT = ("rank", "tier", "strategy", "corpus_model", "n_questions", "metric", "context_tokens", "query_ms",
           "projected_usd", "cost_usd", "on_frontier", "verdict")
HEADERS = {"n_questions": "n", "context_tokens": "tokens", "on_frontier": "frontier",
           "projected_usd": "$ index+1k q", "cost_usd": "$ benchmark"}
#: dollar columns (evaluation.cost)
USD = {"projected_usd", "cost_usd", "index_usd", "query_usd_per_1000", "caption_usd", "answer_usd", "judge_usd"}
RIGHT = {"rank", "tier", "n_questions", "context_tokens", "query_ms", "index_seconds", "n_chunks",
         "embedded_tokens", "points", "storage_bytes", "cold_query_ms",
         "effect_size", "p_value_vs_best", "p_value_adjusted"} | USD
#: dropped first when the table is still too wide
OPTIONAL = ("cost_usd", "query_ms", "on_frontier", "context_tokens")


def _missing(value: object) -> bool:
    return value is None or (not isinstance(value, str) and pd.isna(value))


def cell(column: str, value: object) -> str:
    """A value as every text view shows it."""
    if _missing(value):
        return "-"
    if column in ("rank", "tier", "n_questions", "n_chunks", "points", "embedded_tokens", "storage_bytes"):
        return f"{int(value):,}" if column in ("embedded_tokens", "storage_bytes") else str(int(value))
    if column == "on_frontier" or column == "recommended":
        return "yes" if bool(value) else ""
    if column == "context_tokens":
        return f"{float(value):,.0f}"
    if column in ("query_ms", "cold_query_ms"):
        return f"{float(value):.1f}"
    if column in ("index_seconds",):
        return f"{float(value):.1f}"
    if column in USD:
        return usd_text(float(value))
    if column in ("p_value_vs_best", "p_value_adjusted", "effect_size"):
        return f"{float(value):.3f}"
    if column in fractions() or isinstance(value, float):
        return f"{float(value):.3f}"
    return str(value)


def usd_text(value: float) -> str:
    """Dollars: cents from $0.01 up, four decimals below (so a fraction of a cent is not shown as 0.00)."""
    if value == 0:
        return "0"
    return f"{value:,.2f}" if abs(value) >= 0.01 else f"{value:.4f}"


def rank_metric(board: pd.DataFrame) -> str | None:
    metrics = [m for m in board.get("rank_metric", pd.Series(dtype=object)).dropna().unique()]
    return str(metrics[0]) if metrics else None


def _costs_money(board: pd.DataFrame) -> bool:
    return any(pd.to_numeric(board[c], errors="coerce").fillna(0).abs().sum() > 0
               for c in ("projected_usd", "cost_usd") if c in board.columns)


def _columns(board: pd.DataFrame, wide: bool) -> list[tuple[str, str]]:
    """(header, source column) pairs."""
    if wide:
        names = [c for c in board.columns if c not in ("created_at",)]
        return [(c, c) for c in names]
    metric = rank_metric(board)
    out = []
    for column in COMPACT:
        if column == "metric":
            source = metric if metric and metric in board.columns else "rank_mean"
            out.append((metric or "rank_mean", source))
        elif column in USD and not _costs_money(board):
            continue  # nothing costs money: the cost that decides is the context tokens
        elif column == "strategy" and "strategy_label" in board.columns:
            out.append(("strategy", "strategy_label"))  # contextual_retrieval without an LLM: heading context
        elif column in board.columns:
            out.append((HEADERS.get(column, column), column))
    return out


def _render(board: pd.DataFrame, columns: list[tuple[str, str]], gap: int) -> list[str]:
    rows = [[cell(source, r[source]) for _, source in columns] for _, r in board.iterrows()]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, (h, _) in enumerate(columns)]

    def line(cells: list[str]) -> str:
        right = RIGHT | fractions()
        return (" " * gap).join(c.rjust(w) if source in right else c.ljust(w)
                                for c, w, (_, source) in zip(cells, widths, columns)).rstrip()

    return [line([h for h, _ in columns]), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def format_table(board: pd.DataFrame, recommendation: Mapping[str, Any] | None = None, wide: bool = False,
                 width: int = WIDTH) -> str:
    """The leaderboard as plain text; fits ``width`` columns unless ``wide``."""
    if board.empty:
        return "(the leaderboard is empty: no experiment has run yet)"
    columns = _columns(board, wide)
    lines = _render(board, columns, 2)
    if not wide:
        for gap_columns in (columns, *(
                [c for c in columns if c[1] not in OPTIONAL[: k + 1]] for k in range(len(OPTIONAL)))):
            for gap in (2, 1):
                lines = _render(board, gap_columns, gap)
                if max(len(x) for x in lines) <= width:
                    break
            if max(len(x) for x in lines) <= width:
                break
    notes = ranking_note(board, recommendation)
    wrap = width if not wide else 120
    return "\n".join(lines) + "\n" + "\n".join(textwrap.fill(n, wrap) for n in notes)


def ranking_note(board: pd.DataFrame, recommendation: Mapping[str, Any] | None = None) -> list[str]:
    """What the rank, the tier and the verdict mean, and the recommendation with its reason."""
    metric = rank_metric(board)
    if not metric:
        return ["rank: not compared yet (materialize the leaderboard asset)"]
    definition = f" ({recommendation['metric_definition']})" if recommendation and recommendation.get(
        "metric_definition") else ""
    notes = [f"rank: by mean {metric}{definition} over the questions. tier 1: configurations the tests cannot tell from "
             "the best (Friedman test, then paired randomization tests with Holm's correction, p < 0.05). "
             "frontier: no other configuration is both better and cheaper. (SELECT * FROM comparison)"]
    if recommendation:
        notes.append(f"Recommended: {recommendation['strategy']} x {recommendation['corpus_model']} "
                     f"({recommendation['rule']}). {recommendation['reason']}")
    return notes


def format_markdown(board: pd.DataFrame, recommendation: Mapping[str, Any] | None = None) -> str:
    if board.empty:
        return "_No experiment has run yet._"
    columns = _columns(board, False)
    head = "| " + " | ".join(h for h, _ in columns) + " |\n|" + "|".join("---" for _ in columns) + "|\n"
    body = "".join("| " + " | ".join(cell(s, r[s]) for _, s in columns) + " |\n" for _, r in board.iterrows())
    return head + body + "\n" + "\n\n".join(ranking_note(board, recommendation)) + "\n"


def round_value(value: Any, places: int = 3) -> Any:
    """A number rounded for metadata (None for missing); other values unchanged."""
    if _missing(value):
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int,)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, float) or hasattr(value, "item"):
        number = float(value)
        return None if math.isnan(number) else round(number, places)
    return value


def leaderboard_text(results: Any, wide: bool = False) -> str:
    """The leaderboard table, its notes and the warnings of the last comparison, as the command line prints them
    (``results``: a ResultsDB)."""
    text = format_table(results.leaderboard(), results.recommendation(), wide=wide)
    warnings = results.diagnostics()
    if warnings:
        text += "\n\nwarnings:\n" + "\n".join(f"- {w['message']}" for w in warnings)
    return text


__all__ = ["LEADERBOARD_COLUMNS", "cell", "format_markdown", "format_table", "leaderboard_text", "ranking_note",
           "round_value"]
