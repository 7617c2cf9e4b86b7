"""One confidence interval per configuration: every view shows the interval its run recorded for the ranking
metric, never a second bootstrap draw of its own."""

from __future__ import annotations

import re

from chunkbench_core.reporting.leaderboard import format_table
from chunkbench_core.storage.results_db import ResultsDB

from .conftest import read


def _recorded(results: ResultsDB) -> dict[str, tuple[float, float]]:
    frame = results.query(
        """SELECT l.strategy || ' × ' || l.corpus_model AS configuration, m.recall_ci_low, m.recall_ci_high
           FROM leaderboard l JOIN experiment_metrics m USING (experiment_run_id, strategy, corpus_model)
           WHERE m.created_at = l.created_at"""
    )
    return {r.configuration: (float(r.recall_ci_low), float(r.recall_ci_high)) for r in frame.itertuples()}


def test_the_views_show_the_interval_the_run_recorded(extended_results, extended_reports):
    recorded = _recorded(extended_results)
    # the fixture's recorded intervals (mean - 0.15, mean + 0.1) are not what a bootstrap of its questions gives
    assert recorded and all(high > low for low, high in recorded.values())
    board = extended_results.leaderboard()
    assert set(board["rank_metric"]) == {"recall"}
    for row in board.itertuples():
        low, high = recorded[f"{row.strategy} × {row.corpus_model}"]
        assert (row.rank_ci_low, row.rank_ci_high) == (low, high), row.strategy
    comparison = extended_results.query("SELECT strategy, corpus_model, ci_low, ci_high FROM comparison")
    for row in comparison.itertuples():
        assert (row.ci_low, row.ci_high) == recorded[f"{row.strategy} × {row.corpus_model}"]
    # the CLI's wide table prints the same bounds
    wide = format_table(board, extended_results.recommendation(), wide=True)
    best = board.iloc[0]
    low, high = recorded[f"{best['strategy']} × {best['corpus_model']}"]
    assert f"{low:.3f}" in wide and f"{high:.3f}" in wide
    # the managerial report: the recommendation's sentence and the key-figure card give one interval
    managerial = read(extended_reports.managerial)
    sentence = re.search(r"id='rank-metric'>.*?95% CI ([0-9.]+)–([0-9.]+)", managerial, flags=re.S)
    card = re.search(
        r"<div class='label'>Recall</div><div class='value'>[^<]*</div><div class='ci'>95% CI "
        r"([0-9.]+)–([0-9.]+)</div>",
        managerial,
    )
    assert sentence and card
    assert sentence.groups() == card.groups()
    recommended = extended_results.recommendation()
    assert sentence.groups() == tuple(
        f"{v:.3f}" for v in recorded[f"{recommended['strategy']} × {recommended['corpus_model']}"]
    )
