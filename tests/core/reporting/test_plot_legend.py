"""The quality-vs-cost plot names the recommendation's classes, not tiers."""

from __future__ import annotations

import re

import pandas as pd

from chunkbench_core.reporting import plots


def test_the_legend_and_the_title_speak_of_the_recommendations_classes():
    board = pd.DataFrame(
        [
            {
                "strategy": s,
                "corpus_model": "m",
                "rank_metric": "recall_at_512",
                "rank_mean": mean,
                "context_tokens": cost,
                "cost_axis": "context_tokens",
                "tier": tier,
                "class": cls,
                "recommended": rec,
                "on_frontier": rec,
                "rank_ci_low": mean - 0.05,
                "rank_ci_high": mean + 0.05,
            }
            for s, mean, cost, tier, cls, rec in (
                ("fixed_size", 0.9, 900, 1, "best", False),
                ("semantic", 0.89, 400, 1, "within_margin", True),
                ("recursive", 0.85, 300, 2, "undecided", False),
                ("structural", 0.6, 200, 3, "worse", False),
            )
        ]
    )
    points, metric, axis = plots.frontier_points(board)
    assert [p.verdict for p in points] == ["within the margin", "recommended", "undecided", "worse"]
    figure = plots.frontier_figure(points, metric, axis)
    legend = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert legend[:4] == [
        "1. fixed_size × m (within the margin)",
        "2. semantic × m (★ recommended)",
        "3. recursive × m (undecided)",
        "4. structural × m (worse)",
    ]
    title = figure.axes[0].get_title()
    assert (
        not re.search(r"\btier\b", title) and "within the margin" in title and "undecided" in title and "worse" in title
    )
    assert not any(re.search(r"\btier\b", text) for text in legend)
    faces = [
        line.get_markerfacecolor() for line in figure.axes[0].get_lines() if line.get_marker() in (*plots.MARKERS, "*")
    ]
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


def test_the_points_numbers_overlap_neither_each_other_nor_other_points():
    """Ties on score and cost (the same point several times) and a tight cluster, as on a small corpus: each
    number stays readable, off the other numbers and markers, inside the axes."""
    spots = [(0.95, 500.0)] * 3 + [(0.93, 505.0), (0.94, 498.0), (0.5, 2000.0), (0.5, 2000.0), (0.92, 510.0)]
    points = [
        plots.FrontierPoint(
            f"strategy_{i} × a-corpus-model-with-a-long-name",
            quality,
            cost,
            2,
            recommended=i == 0,
            margin_class="best" if i == 0 else "undecided",
        )
        for i, (quality, cost) in enumerate(spots)
    ]
    figure = plots.frontier_figure(points, "recall_at_512", "context_tokens")
    renderer = figure.canvas.get_renderer()
    axes = figure.axes[0]
    numbers = [t for t in axes.texts if t.get_text().isdigit()]
    assert [t.get_text() for t in numbers] == [str(i + 1) for i in range(len(points))]
    boxes = [t.get_window_extent(renderer) for t in numbers]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (numbers[i].get_text(), a, b)
    frame = axes.get_window_extent(renderer)
    centres = axes.transData.transform([(p.cost, p.quality) for p in points])
    for text, box in zip(numbers, boxes):
        assert frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1), text.get_text()
        assert not any(box.contains(x, y) for x, y in centres), text.get_text()  # no number covers a point
