"""The leaderboard as text: a fixed-width table for the terminal and markdown for the UI."""

from __future__ import annotations

import math

import pandas as pd

from chunkbench_core.storage.results_db import LEADERBOARD_COLUMNS

FRACTIONS = ("recall", "precision", "iou", "mrr", "hit_rate")


def _cell(column: str, value: object) -> str:
    if column in FRACTIONS:
        return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{float(value):.3f}"
    return str(value)


def format_table(board: pd.DataFrame) -> str:
    """A plain-text table of the leaderboard columns (fractions with three decimals)."""
    if board.empty:
        return "(the leaderboard is empty: no experiment has run yet)"
    columns = [c for c in LEADERBOARD_COLUMNS if c in board.columns]
    rows = [[_cell(c, r[c]) for c in columns] for _, r in board.iterrows()]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(columns)]
    line = lambda cells: "  ".join(  # noqa: E731
        cell.rjust(w) if c in FRACTIONS or c == "n_questions" else cell.ljust(w)
        for cell, w, c in zip(cells, widths, columns)
    )
    return "\n".join([line(columns), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def format_markdown(board: pd.DataFrame) -> str:
    if board.empty:
        return "_No experiment has run yet._"
    columns = [c for c in LEADERBOARD_COLUMNS if c in board.columns]
    head = "| " + " | ".join(columns) + " |\n|" + "|".join("---" for _ in columns) + "|\n"
    body = "".join("| " + " | ".join(_cell(c, r[c]) for c in columns) + " |\n" for _, r in board.iterrows())
    return head + body
