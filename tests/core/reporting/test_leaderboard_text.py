"""The leaderboard as terminal text and markdown: ranks, missing values, and what the rank means."""

import math

import pandas as pd

from chunkbench_core.reporting.leaderboard import format_markdown, format_table


def board(ranked: bool) -> pd.DataFrame:
    return pd.DataFrame({
        "rank": [1, 2] if ranked else [math.nan, math.nan],
        "strategy": ["semantic_parent_child", "fixed_size"],
        "corpus_model": ["all-minilm-l6-v2"] * 2,
        "n_questions": [30, 30],
        "recall": [0.9, 0.955], "precision": [0.048, 0.037], "iou": [0.048, 0.037], "mrr": [0.839, 0.825],
        "hit_rate": [0.9, 1.0], "recall_expanded": [1.0, math.nan],
        "rank_metric": ["recall_expanded"] * 2 if ranked else [None, None],
        "verdict": ["best", "not significantly worse"] if ranked else ["not compared yet"] * 2,
    })


def test_ranked_table_says_what_the_rank_means():
    lines = format_table(board(True)).splitlines()
    assert lines[0].split()[:3] == ["rank", "strategy", "corpus_model"]
    assert lines[2].split()[0] == "1" and lines[2].split()[-1] == "best"
    assert lines[3].split()[9] == "-"  # fixed_size's missing recall_expanded
    assert lines[-1].startswith("rank: by mean recall_expanded")
    assert "| 1 | semantic_parent_child |" in format_markdown(board(True))


def test_unranked_table_says_so():
    text = format_table(board(False))
    assert text.splitlines()[2].split()[0] == "-"
    assert text.splitlines()[-1] == "rank: not compared yet (materialize the leaderboard asset)"


def test_empty_board():
    assert "no experiment has run yet" in format_table(board(True).iloc[0:0])
