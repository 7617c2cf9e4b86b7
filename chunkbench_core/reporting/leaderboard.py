"""The leaderboard as text: a fixed-width table for the terminal and markdown for the UI.

The default table fits 120 columns: rank, configuration, the ranking metric, the lower confidence
bound of its difference to the best, context tokens, query time, cost, the frontier and the
verdict; ``wide=True`` prints every column of the ``leaderboard`` view. Below the table, the same
words as the reports: what the ranking metric and the verdicts mean, and the recommendation with
its stability and its reason.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard, TypeVar

import pandas as pd

from chunkbench_core.labels import configuration_label, named_retriever
from chunkbench_core.storage.results_db import LEADERBOARD_COLUMNS

from .columns import metrics_catalog, plural

#: fraction columns besides the registered metrics (evaluation.metric_registry) that are fractions
FRACTION_COLUMNS = {"rank_mean", "rank_ci_low", "rank_ci_high", "difference_vs_best", "lower_bound_vs_best", "margin"}


def fractions() -> set[str]:
    """The columns shown as fractions: every registered metric that is one (its run-level name), and the ranks'."""
    return {m.name for m in metrics_catalog(every=True) if m.kind == "fraction"} | FRACTION_COLUMNS


WIDTH = 120
#: the default columns; "metric" stands for the ranking metric's own column
COMPACT = (
    "rank",
    "strategy",
    "corpus_model",
    "retriever",
    "n_questions",
    "metric",
    "lower_bound_vs_best",
    "context_tokens",
    "query_ms",
    "projected_usd",
    "cost_usd",
    "on_frontier",
    "verdict",
)
HEADERS = {
    "n_questions": "n",
    "context_tokens": "tokens",
    "on_frontier": "frontier",
    "query_ms": "ms",
    "projected_usd": "$ index+1k q",
    "cost_usd": "$ benchmark",
    "lower_bound_vs_best": "bound",
}
#: dollar columns (evaluation.cost)
USD = {"projected_usd", "cost_usd", "index_usd", "query_usd_per_1000", "caption_usd", "answer_usd", "judge_usd"}
RIGHT = {
    "rank",
    "tier",
    "n_questions",
    "questions_to_settle",
    "context_tokens",
    "query_ms",
    "index_seconds",
    "search_seconds",
    "n_chunks",
    "embedded_tokens",
    "points",
    "storage_bytes",
    "cold_query_ms",
    "effect_size",
    "p_value_vs_best",
    "p_value_adjusted",
} | USD
#: dropped first when the table is still too wide (the warm query time is in the reports and ``--wide``); the
#: frontier never: every view shows it, and a table that still does not fit keeps it and runs past the width
OPTIONAL = ("cost_usd", "query_ms", "lower_bound_vs_best", "context_tokens")


_T = TypeVar("_T")


def _missing(value: object) -> bool:
    return value is None or (not isinstance(value, str) and pd.isna(value))


def _known(value: _T | None) -> TypeGuard[_T]:
    """Not :func:`_missing` (a guard, so that the type checker sees the value is there)."""
    return not _missing(value)


def cell(column: str, value: Any) -> str:
    """A value as every text view shows it (``value``: a table cell, of whatever type its column holds)."""
    if _missing(value):
        return "-"
    if column in (
        "rank",
        "tier",
        "n_questions",
        "n_chunks",
        "points",
        "embedded_tokens",
        "storage_bytes",
        "questions_to_settle",
    ):
        return (
            f"{int(value):,}"
            if column in ("embedded_tokens", "storage_bytes", "questions_to_settle")
            else str(int(value))
        )
    if column == "margin":
        return f"{float(value):g}"
    if column == "on_frontier" or column == "recommended":
        return "yes" if bool(value) else ""
    if column == "context_tokens":
        return f"{float(value):,.0f}"
    if column in ("query_ms", "cold_query_ms"):
        return f"{float(value):.1f}"
    if column in ("index_seconds", "search_seconds"):
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


def costs_money(board: pd.DataFrame, columns: Sequence[str] = ("projected_usd", "cost_usd")) -> bool:
    """Whether any configuration of ``board`` has a dollar amount other than zero in ``columns`` (a dollar column of
    zeros is shown nowhere)."""
    return any(
        pd.to_numeric(board[c], errors="coerce").fillna(0).abs().sum() > 0 for c in columns if c in board.columns
    )


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
        elif column in USD and not costs_money(board, (column,)):
            continue  # nothing costs money here (the cost that decides is then the context tokens): no zeros
        elif column == "retriever" and (
            "retriever" not in board.columns or set(board["retriever"].fillna("dense")) <= {"dense"}
        ):
            continue  # one retriever compared (dense, as every run before retrievers): nothing to tell apart
        elif column == "strategy" and "strategy_label" in board.columns:
            out.append(("strategy", "strategy_label"))  # contextual_retrieval without an LLM: heading context
        elif column in board.columns:
            out.append((HEADERS.get(column, column), column))
    return out


def _render(board: pd.DataFrame, columns: list[tuple[str, str]], gap: int) -> list[str]:
    rows = [
        [
            short_verdict(cell(source, r[source])) if source == "verdict" else cell(source, r[source])
            for _, source in columns
        ]
        for _, r in board.iterrows()
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, (h, _) in enumerate(columns)]

    def line(cells: list[str]) -> str:
        right = RIGHT | fractions()
        return (
            (" " * gap)
            .join(c.rjust(w) if source in right else c.ljust(w) for c, w, (_, source) in zip(cells, widths, columns))
            .rstrip()
        )

    return [line([h for h, _ in columns]), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def format_table(
    board: pd.DataFrame, recommendation: Mapping[str, Any] | None = None, wide: bool = False, width: int = WIDTH
) -> str:
    """The leaderboard as plain text; fits ``width`` columns unless ``wide``."""
    if board.empty:
        return "(the leaderboard is empty: no experiment has run yet)"
    columns = _columns(board, wide)
    lines = _render(board, columns, 2)
    if not wide:
        for gap_columns in (
            columns,
            *([c for c in columns if c[1] not in OPTIONAL[: k + 1]] for k in range(len(OPTIONAL))),
        ):
            for gap in (2, 1):
                lines = _render(board, gap_columns, gap)
                if max(len(x) for x in lines) <= width:
                    break
            if max(len(x) for x in lines) <= width:
                break
    notes = ranking_note(board, recommendation)
    wrap = width if not wide else 120
    return "\n".join(lines) + "\n" + "\n".join(textwrap.fill(n, wrap) for n in notes)


def short_verdict(verdict: str) -> str:
    """The verdict as the compact table shows it: "within 0.02" for "within 0.02 of best", "worse" for "worse
    than best" (the note below the table says what each means)."""
    return verdict.removesuffix(" of best").removesuffix(" than best")


def stability_text(recommendation: Mapping[str, Any]) -> str:
    """ "picked in 62% of 1,000 resamples of the questions (otherwise: X 21%, Y 8%)", "" before it was measured."""
    share, resamples = recommendation.get("recommendation_stability"), recommendation.get("stability_resamples")
    if not _known(share) or not _known(resamples) or not resamples:
        return ""
    text = f"picked in {float(share):.0%} of {int(resamples):,} resamples of the questions"
    others = recommendation.get("stability_runner_ups")
    return text + (f" (otherwise: {others})" if not _missing(others) and others else "")


def questions_needed_text(recommendation: Mapping[str, Any] | None) -> str:
    from chunkbench_core.evaluation.recommendation import questions_needed_text as text

    return text(recommendation)


def ranking_note(board: pd.DataFrame, recommendation: Mapping[str, Any] | None = None) -> list[str]:
    """What the rank, the bound and the verdicts mean, and the recommendation with its stability and reason."""
    metric = rank_metric(board)
    if not metric:
        return ["rank: not compared yet (materialize the leaderboard asset)"]
    definition = (
        f" ({recommendation['metric_definition']})"
        if recommendation and recommendation.get("metric_definition")
        else ""
    )
    margins = [float(m) for m in board.get("margin", pd.Series(dtype=float)).dropna().unique()]
    margin = f"{margins[0]:g}" if margins else "the margin"
    compared = max(0, int(board["rank"].notna().sum()) - 1) if "rank" in board.columns else 0
    notes = [
        f"rank: by mean {metric}{definition} over the questions; equal means go to the cheaper, then the name. "
        f"bound: the 95% lower confidence bound of the mean difference to the best on the questions both scored "
        f"(Student t, Bonferroni over {plural(compared, 'comparison')}). verdict: within {margin} = shown within "
        f"{margin} of the best (bound above -{margin}); worse = shown lower than the best (one-sided paired "
        "randomization tests, Holm's correction, p < 0.05); undecided = might be as good, cannot tell yet. "
        "frontier: no other configuration is both better and cheaper. (SELECT * FROM comparison)"
    ]
    # the counts once: the recommendation's reason carries them when there is one ("Questions: N scored ...")
    in_reason = bool(recommendation and "Questions: " in str(recommendation.get("reason") or ""))
    notes += question_notes(board, recommendation, counts=not in_reason)
    if recommendation:
        steady = stability_text(recommendation)
        notes.append(
            f"Recommended: {recommended_label(board, recommendation)} "
            f"({recommendation['rule']}{'; ' + steady if steady else ''}). {recommendation['reason']}"
        )
        needed = questions_needed_text(recommendation)
        if needed:
            notes.append(needed)
        drivers = recommendation.get("drivers_sentence")
        if not _missing(drivers) and drivers:
            notes.append(f"What drives the scores: {drivers} (SELECT * FROM variance_decomposition)")
    return notes


def _counted_row(board: pd.DataFrame, recommendation: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The board row whose counts the notes give: the recommended configuration's, else the first."""
    if board.empty:
        return None
    if recommendation and "strategy" in board.columns:
        mine = board[
            (board["strategy"] == recommendation.get("strategy"))
            & (board["corpus_model"] == recommendation.get("corpus_model"))
        ]
        if "retriever" in board.columns and len(mine) > 1:  # the dense and the hybrid run of one collection
            wanted = named_retriever(recommendation.get("retriever"))
            mine = mine[[named_retriever(r) == wanted for r in mine["retriever"]]]
        if not mine.empty:
            return mine.iloc[0].to_dict()
    return board.iloc[0].to_dict()


def question_notes(
    board: pd.DataFrame, recommendation: Mapping[str, Any] | None = None, counts: bool = True
) -> list[str]:
    """How the questions were counted ("N scored (M judge-only, not scored without an LLM)", the same words as
    the reports and the Dagster metadata; left out with ``counts=False``, when the recommendation's reason says
    it), and how many rest on located evidence not reviewed yet."""
    from chunkbench_core.wording import plural as count, scored_counts

    row = _counted_row(board, recommendation)
    if row is None or _missing(row.get("n_questions")):
        return []
    judged = not _missing(row.get("n_judged")) and bool(row.get("n_judged"))
    notes = []
    # with its zeros: the reader sees how many questions the figures rest on, and that none were left out
    if counts:
        notes.append(
            "questions: "
            + scored_counts(row.get("n_questions"), row.get("n_judge_only"), row.get("n_documents_only"), judged)
            + "."
        )
    located = row.get("n_located")
    if _known(located) and int(located):
        scored = int(row["n_questions"])
        notes.append(
            f"located evidence: {int(located)} of the {count(scored, 'scored question')} "
            f"{'rests' if int(located) == 1 else 'rest'} on evidence found by `chunkbench questions locate` "
            "and not reviewed yet (marked "
            "evidence_origin = located or mixed in question_results); accept or reject them in "
            "`chunkbench questions review FILE` to make them ordinary references."
        )
    return notes


def board_row_label(row: Mapping[str, Any]) -> str:
    """A leaderboard row's configuration by its one label: its strategy as the board names it ("heading context"
    when no LLM wrote the context) × its corpus model (× its retriever when not dense)."""
    strategy, retriever = row.get("strategy_label"), row.get("retriever")
    return configuration_label(
        strategy if isinstance(strategy, str) else row["strategy"],
        row["corpus_model"],
        retriever=retriever if isinstance(retriever, str) else None,
    )


def recommended_label(board: pd.DataFrame, recommendation: Mapping[str, Any]) -> str:
    """The recommended configuration by the one label, as the CLI, the reports and the leaderboard asset's
    metadata all show it."""
    strategy, model = recommendation["strategy"], recommendation["corpus_model"]
    retriever = recommendation.get("retriever")
    retriever = retriever if isinstance(retriever, str) and retriever else "dense"
    rows = board[(board["strategy"] == strategy) & (board["corpus_model"] == model)] if not board.empty else board
    if not rows.empty and "retriever" in rows.columns:
        rows = rows[rows["retriever"].fillna("dense") == retriever]
    return (
        board_row_label(rows.iloc[0]) if not rows.empty else configuration_label(strategy, model, retriever=retriever)
    )


def class_labels(board: pd.DataFrame, margin_class: str) -> list[str]:
    """The labels of the board's configurations in ``margin_class`` (``undecided``, ``worse`` ...), best first."""
    if board.empty or "class" not in board.columns:
        return []
    return [board_row_label(row) for row in board.to_dict("records") if row.get("class") == margin_class]


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
    with results.one_reading():  # the run scores' pivot once for the table and the recommendation
        text = format_table(results.leaderboard(), results.recommendation(), wide=wide)
        warnings = results.diagnostics()
    if warnings:  # wrapped like the notes above them, each under its own dash
        text += "\n\nwarnings:\n" + "\n".join(
            textwrap.fill(w["message"], 120, initial_indent="- ", subsequent_indent="  ") for w in warnings
        )
    return text


__all__ = [
    "LEADERBOARD_COLUMNS",
    "board_row_label",
    "cell",
    "class_labels",
    "format_markdown",
    "format_table",
    "leaderboard_text",
    "ranking_note",
    "recommended_label",
    "round_value",
]
