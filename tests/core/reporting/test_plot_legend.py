"""The quality-vs-cost plot names the recommendation's classes, not tiers."""

from __future__ import annotations

import re

import pandas as pd

from chunkbench_core.reporting import plots


def test_the_legend_and_the_title_speak_of_the_recommendations_classes():
    board = pd.DataFrame([
        {"strategy": s, "corpus_model": "m", "rank_metric": "recall_at_512", "rank_mean": mean, "context_tokens": cost,
         "cost_axis": "context_tokens", "tier": tier, "class": cls, "recommended": rec, "on_frontier": rec,
         "rank_ci_low": mean - 0.05, "rank_ci_high": mean + 0.05}
        for s, mean, cost, tier, cls, rec in (
            ("fixed_size", 0.9, 900, 1, "best", False), ("semantic", 0.89, 400, 1, "within_margin", True),
            ("recursive", 0.85, 300, 2, "undecided", False), ("structural", 0.6, 200, 3, "worse", False))])
    points, metric, axis = plots.frontier_points(board)
    assert [p.verdict for p in points] == ["within the margin", "recommended", "undecided", "worse"]
    figure = plots.frontier_figure(points, metric, axis)
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert legend[:4] == ["1. fixed_size × m (within the margin)", "2. semantic × m (★ recommended)",
                          "3. recursive × m (undecided)", "4. structural × m (worse)"]
    title = figure.axes[0].get_title()
    assert not re.search(r"\btier\b", title) and "within the margin" in title and "undecided" in title and "worse" in title
    assert not any(re.search(r"\btier\b", text) for text in legend)
    faces = [line.get_markerfacecolor() for line in figure.axes[0].get_lines()
             if line.get_marker() in (*plots.MARKERS, "*")]
    assert faces[2] == "white" and faces[0] != "white"  # undecided hollow, within the margin filled


def test_the_same_points_are_drawn_once_and_other_points_again(monkeypatch):
    drawn = []
    real = plots.frontier_figure
    monkeypatch.setattr(plots, "frontier_figure", lambda *args: drawn.append(args) or real(*args))
    plots._frontier_png.cache_clear()
    points = [plots.FrontierPoint("fixed_size × m", 0.9, 900.0, 1, True, True, (0.85, 0.95), "best")]
    first = plots.frontier_png(points, "recall_at_512", "context_tokens")
    assert first.startswith(b"\x89PNG") and plots.frontier_png(list(points), "recall_at_512", "context_tokens") == first
    assert len(drawn) == 1  # the leaderboard's page and the managerial report share one drawing
    moved = [plots.FrontierPoint("fixed_size × m", 0.8, 900.0, 1, True, True, (0.75, 0.85), "best")]
    assert plots.frontier_png(moved, "recall_at_512", "context_tokens") != first and len(drawn) == 2
