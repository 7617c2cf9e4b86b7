"""Metadata values: rounded, units in names, nothing empty."""

import numpy as np

from chunkbench_pipelines.metadata import headline_metrics, pool_wait, rounded


def test_numbers_are_rounded_to_three_places_and_counts_stay_integers():
    assert rounded(0.04844358413853444) == 0.048
    assert rounded(np.int64(7)) == 7 and isinstance(rounded(np.int64(7)), int)
    metrics = {
        "n_questions": 30,
        "n_failed": 0,
        "recall": 0.95512345,
        "recall_ci_low": 0.9,
        "recall_ci_high": 0.99,
        "answer_similarity": float("nan"),
        "retrieval_ms": 12.34567,
        "judge_prompt_tokens": 1200,
    }
    assert headline_metrics(metrics) == {"recall": 0.955, "retrieval_ms": 12.346, "judge_prompt_tokens": 1200}
    # dollars keep fractions of a cent (a question costs far less than 0.001)
    assert headline_metrics({"cost_usd": 0.001123456, "judge_usd": 0.00056}) == {
        "cost_usd": 0.001123,
        "judge_usd": 0.00056,
    }


def test_pool_wait_is_absent_for_local_models():
    assert pool_wait({}) == {}
    assert pool_wait({"openai": 1.23456})["pool_wait_seconds"].value == {"openai": 1.235}


def test_the_leaderboard_table_reads_as_the_cli_table_and_stays_narrow():
    """The leaderboard asset's table: n and context tokens beside the ranking metric, the CLI's headers and values
    (tokens whole, the frontier as yes), and no dollar column when nothing costs money. Dagster's UI never wraps a
    column's name, so a column of zeros and long names made the table, and every text entry beside it, wider than
    the page."""
    from chunkbench_core.reporting.leaderboard import format_table
    from chunkbench_pipelines.assets.reports import leaderboard_table
    from tests.core.reporting.test_leaderboard_text import RECOMMENDATION, board

    local = board(True).assign(cost_usd=[0.0, 0.0])
    table = leaderboard_table(local).value
    names = [c.name for c in table.schema.columns]
    assert names == ["rank", "configuration", "n", "recall_at_512", "verdict", "tokens", "frontier"]
    assert not any("usd" in n or "$" in n for n in names)
    first = table.records[0].data
    assert first == {
        "rank": 1,
        "configuration": "semantic_parent_child × multilingual-e5-small",
        "n": 30,
        "recall_at_512": 0.91,
        "verdict": "highest mean",
        "tokens": 1686,
        "frontier": "yes",
    }
    # the same header words and values as the terminal's table
    cli = format_table(local, RECOMMENDATION).splitlines()
    assert {"n", "tokens", "frontier"} <= set(cli[0].split())
    assert "1,686" in cli[2].split() and "yes" in cli[2].split()
    # something costs money: the dollars are shown, as the CLI shows them
    priced = leaderboard_table(board(True).assign(projected_usd=[0.0123, 0.0045])).value
    assert "$ index+1k q" in [c.name for c in priced.schema.columns]
    assert [r.data["$ index+1k q"] for r in priced.records] == [0.0123, 0.0045]
