"""The leaderboard as terminal text and markdown: ranks, classes, missing values, width, what the rank means."""

import math

import pandas as pd

from chunkbench_core.reporting.leaderboard import format_markdown, format_table

RECOMMENDATION = {
    "strategy": "fixed_size",
    "corpus_model": "multilingual-e5-small",
    "rule": "cheapest_within_margin",
    "reason": "fixed_size × multilingual-e5-small is the cheapest of the 2 configurations shown within "
    "0.02 of the best.",
    "rank_metric": "recall_at_512",
    "metric_definition": "the share of the evidence text inside the first 512 tokens",
    "recommendation_stability": 0.62,
    "stability_resamples": 1000,
    "stability_runner_ups": "semantic_parent_child × multilingual-e5-small 38%",
}


def board(ranked: bool) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "rank": [1, 2] if ranked else [math.nan, math.nan],
            "class": ["best", "within_margin"] if ranked else [None, None],
            "tier": [1, 1] if ranked else [math.nan, math.nan],
            "margin": [0.02, 0.02] if ranked else [math.nan, math.nan],
            "lower_bound_vs_best": [math.nan, -0.013] if ranked else [math.nan, math.nan],
            "strategy": ["semantic_parent_child", "fixed_size"],
            "corpus_model": ["multilingual-e5-small"] * 2,
            "n_questions": [30, 30],
            "recall": [0.9, 0.955],
            "precision": [0.048, 0.037],
            "iou": [0.048, 0.037],
            "mrr": [0.839, 0.825],
            "hit_rate": [0.9, 1.0],
            "recall_expanded": [1.0, math.nan],
            "rank_metric": ["recall_at_512"] * 2 if ranked else [None, None],
            "rank_mean": [0.91, 0.9] if ranked else [math.nan, math.nan],
            "recall_at_512": [0.91, 0.9],
            "context_tokens": [1686.4, 946.0],
            "query_ms": [3.21, 2.9],
            "projected_usd": [0.0, 0.0],
            "cost_usd": [0.0004, 0.0],
            "on_frontier": [True, True] if ranked else [None, None],
            "verdict": ["highest mean", "recommended"] if ranked else ["not compared yet"] * 2,
            "index_seconds": [12.5, 3.3],
            "budget_auc": [0.8, 0.85],
        }
    )


def test_ranked_table_fits_120_columns_and_says_what_the_rank_means():
    text = format_table(board(True), RECOMMENDATION)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 120
    assert lines[0].split()[:3] == ["rank", "strategy", "corpus_model"] and "tier" not in lines[0].split()
    assert "recall_at_512" in lines[0] and "$ benchmark" in lines[0] and "bound" in lines[0]
    assert lines[2].split()[0] == "1" and lines[2].split()[-2:] == ["highest", "mean"]
    assert lines[3].split()[-1] == "recommended" and "946" in lines[3] and "-0.013" in lines[3]
    assert "rank: by mean recall_at_512 (the share of the evidence text inside the first 512 tokens)" in text
    words = " ".join(text.split())  # the notes are wrapped at 120 columns
    assert "within 0.02 = shown within 0.02 of the best" in words and "undecided = might be as good" in words
    assert (
        "Recommended: fixed_size × multilingual-e5-small (cheapest_within_margin; picked in 62% of 1,000 "
        "resamples of the questions (otherwise: semantic_parent_child × multilingual-e5-small 38%))."
    ) in " ".join(text.split())
    assert "| 1 | semantic_parent_child |" in format_markdown(board(True), RECOMMENDATION)


def test_the_verdict_follows_the_classes():
    ranked = board(True).assign(verdict=["highest mean", "within 0.02 of best"])
    lines = format_table(ranked, RECOMMENDATION).splitlines()
    assert lines[3].split()[-2:] == ["within", "0.02"]


def test_wide_table_prints_every_column():
    text = format_table(board(True), RECOMMENDATION, wide=True)
    for column in ("recall_expanded", "index_seconds", "budget_auc", "hit_rate"):
        assert column in text.splitlines()[0]
    header = text.splitlines()[0].split()
    assert text.splitlines()[3].split()[header.index("recall_expanded")] == "-"  # fixed_size's missing value


def test_unranked_table_says_so():
    text = format_table(board(False))
    assert text.splitlines()[2].split()[0] == "-"
    assert text.splitlines()[-1] == "rank: not compared yet (materialize the leaderboard asset)"


def test_empty_board():
    assert "no experiment has run yet" in format_table(board(True).iloc[0:0])


def test_dollar_columns_give_way_when_nothing_costs_money():
    """Local models without an LLM price: the context tokens decide, so the table shows them, not $0 columns."""
    free = board(True).assign(cost_usd=[0.0, 0.0])
    header = format_table(free, RECOMMENDATION).splitlines()[0]
    assert "$" not in header and "tokens" in header
    assert (
        "$ index+1k q" in format_table(board(True).assign(projected_usd=[0.01, 0.02]), RECOMMENDATION).splitlines()[0]
    )


def test_the_counts_line_is_printed_even_when_no_question_is_judge_only():
    from chunkbench_core.reporting.leaderboard import question_notes

    counted = board(True).assign(n_judge_only=[0, 0], n_documents_only=[0, 0])
    assert question_notes(counted, RECOMMENDATION) == ["questions: 30 scored (0 judge-only)."]
    counted = counted.assign(n_judge_only=[7, 7])
    assert question_notes(counted, RECOMMENDATION) == [
        "questions: 30 scored (7 judge-only, not scored without an LLM)."
    ]


def test_the_counts_are_printed_once_when_the_recommendation_says_them():
    """The reason ends with "Questions: N scored (...)": the notes under the table do not repeat them; without
    a recommendation (or with a reason that has no counts) the counts line stays."""
    from chunkbench_core.reporting.leaderboard import ranking_note

    counted = board(True).assign(n_judge_only=[0, 0], n_documents_only=[0, 0])
    counts = "30 scored (0 judge-only)."
    with_counts = {**RECOMMENDATION, "reason": RECOMMENDATION["reason"] + f" Questions: {counts}"}
    text = "\n".join(ranking_note(counted, with_counts))
    assert text.lower().count(f"questions: {counts}") == 1 and f"Questions: {counts}" in text
    text = "\n".join(ranking_note(counted, RECOMMENDATION))
    assert text.count(f"questions: {counts}") == 1


def test_long_names_keep_the_frontier_and_no_dollar_column_of_zeros():
    """Names too long for 120 columns: the optional columns give way, the frontier stays (every view shows it);
    a dollar column whose every value is 0 is never printed, even when another dollar column has amounts."""
    long = board(True).assign(
        corpus_model=["sentence-transformers-paraphrase-multilingual-mpnet-base-v2-long"] * 2,
        strategy_label=["semantic_parent_child", "contextual_retrieval (heading context)"],
    )
    header = format_table(long, RECOMMENDATION).splitlines()[0].split()
    assert "frontier" in header
    assert "$ index+1k q" not in " ".join(header)  # projected_usd is 0 for both; cost_usd is not
    priced = format_table(board(True), RECOMMENDATION).splitlines()[0]
    assert "$ benchmark" in priced and "$ index+1k q" not in priced
