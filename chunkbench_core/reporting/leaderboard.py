"""The leaderboard as text: a fixed-width table for the terminal and markdown for the UI."""

from __future__ import annotations

import math

import pandas as pd

from chunkbench_core.storage.results_db import LEADERBOARD_COLUMNS

from .columns import METRICS

FRACTIONS = tuple(m.name for m in METRICS if m.kind == "fraction")


def _cell(column: str, value: object) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "-"
    if column == "rank":
        return str(int(value))  # pandas gives a float column when a rank is missing
    if column in FRACTIONS:
        return f"{float(value):.3f}"
    return str(value)


def format_table(board: pd.DataFrame) -> str:
    """A plain-text table of the leaderboard columns (fractions with three decimals)."""
    if board.empty:
        return "(the leaderboard is empty: no experiment has run yet)"
    columns = [c for c in LEADERBOARD_COLUMNS if c in board.columns]
    rows = [[_cell(c, r[c]) for c in columns] for _, r in board.iterrows()]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(columns)]
    line = lambda cells: "  ".join(  # noqa: E731
        cell.rjust(w) if c in FRACTIONS or c in ("n_questions", "rank") else cell.ljust(w)
        for cell, w, c in zip(cells, widths, columns)
    )
    table = "\n".join([line(columns), line(["-" * w for w in widths]), *(line(r) for r in rows)])
    return table + "\n" + ranking_note(board)


def ranking_note(board: pd.DataFrame) -> str:
    """One line saying what the rank and the verdict mean."""
    metrics = [m for m in board.get("rank_metric", pd.Series(dtype=object)).dropna().unique()]
    if not metrics:
        return "rank: not compared yet (materialize the leaderboard asset)"
    return (f"rank: by mean {metrics[0]} over the questions (ties: IoU of the same context); "
            "verdict: paired randomization test against rank 1, p < 0.05 (SELECT * FROM comparison)")


def format_markdown(board: pd.DataFrame) -> str:
    if board.empty:
        return "_No experiment has run yet._"
    columns = [c for c in LEADERBOARD_COLUMNS if c in board.columns]
    head = "| " + " | ".join(columns) + " |\n|" + "|".join("---" for _ in columns) + "|\n"
    body = "".join("| " + " | ".join(_cell(c, r[c]) for c in columns) + " |\n" for _, r in board.iterrows())
    return head + body + "\n" + ranking_note(board) + "\n"
