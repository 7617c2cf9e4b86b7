"""The margin, the three classes, costs that matter and the stability of the pick, on paired scores with a known truth.

Each data set is built so the truth is known (how far below the best a configuration really is, how noisy
its scores are); the assertions are what the rule must conclude from it.
"""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest

from chunkbench_core.errors import ConfigError
from chunkbench_core.evaluation import cost, diagnostics
from chunkbench_core.evaluation.recommendation import (
    RankingSettings,
    recommend,
    recommendation_warnings,
)
from chunkbench_core.evaluation.stability import resampled_picks, resample_weights, stability
from chunkbench_core.evaluation.statistics import (
    CLASS_BEST,
    CLASS_UNDECIDED,
    CLASS_WITHIN,
    CLASS_WORSE,
    compare_configurations,
    paired_bounds,
    questions_to_show_within,
)

MARGIN = 0.02


def rows(name: str, values, metric: str = "recall_at_512") -> list[dict]:
    return [
        {
            "strategy": name,
            "corpus_model": "m",
            "question_set": "s",
            "question_id": f"q{i:04d}",
            metric: float(v),
            "error": None,
        }
        for i, v in enumerate(values)
    ]


def costs(**tokens_and_ms) -> dict[str, dict]:
    """name=(context tokens, query ms) -> the cost rows of configurations ``name|m`` (nothing costs dollars)."""
    return {
        f"{name}|m": {"projected_usd": 0.0, "context_tokens": float(t), "query_ms": float(ms), "index_seconds": 10.0}
        for name, (t, ms) in tokens_and_ms.items()
    }


def classes(comparison) -> dict[str, str]:
    return {c.configuration: c.margin_class for c in comparison.configurations}


def base_scores(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.3, 0.7, n)


def test_truly_0005_below_the_best_on_500_questions_is_shown_within_the_margin_and_recommended_when_cheaper():
    rng = np.random.default_rng(1)
    best = base_scores(500, 1)
    close = best - 0.005 + rng.normal(0, 0.05, 500)
    far = best - 0.3
    data = rows("big", best) + rows("close", close) + rows("far", far)
    price = costs(big=(900, 10), close=(300, 10), far=(100, 10))
    comparison = compare_configurations(data, costs=price)
    assert comparison.best == "big|m" and comparison.margin == MARGIN
    assert classes(comparison) == {"big|m": CLASS_BEST, "close|m": CLASS_WITHIN, "far|m": CLASS_WORSE}
    result = {c.configuration: c for c in comparison.configurations}["close|m"]
    assert -MARGIN < result.lower_bound < result.versus_best.mean_difference < 0
    rec = recommend(comparison, price)
    assert rec.configuration == "close|m" and rec.decided
    assert "close × m is the cheapest of the 2 configurations shown within 0.02 of the best" in rec.reason
    assert "300 vs 900 context tokens per question" in rec.reason
    assert rec.stability.share >= 0.7
    # when it is not cheaper, the best stays the pick
    dearer = costs(big=(300, 10), close=(900, 10), far=(100, 10))
    assert recommend(compare_configurations(data, costs=dearer), dearer).configuration == "big|m"


@pytest.mark.parametrize("seed", range(8))
def test_truly_010_below_on_30_questions_is_shown_worse_and_never_recommended(seed):
    rng = np.random.default_rng(seed)
    best = base_scores(30, seed)
    worse = best - 0.10 + rng.normal(0, 0.08, 30)
    data = rows("good", best) + rows("cheap", worse)
    price = costs(good=(900, 10), cheap=(100, 5))
    comparison = compare_configurations(data, costs=price)
    assert classes(comparison) == {"good|m": CLASS_BEST, "cheap|m": CLASS_WORSE}
    rec = recommend(comparison, price)
    assert rec.configuration == "good|m"
    assert "every cheaper configuration is shown worse" in rec.reason
    assert "cheap|m" not in {name for name, _ in rec.stability.picks}  # not on a single resample either


def test_equal_in_expectation_but_noisy_on_30_questions_is_undecided_and_the_reason_says_how_many_questions_settle_it():
    rng = np.random.default_rng(4)
    best = base_scores(30, 4)
    noise = rng.normal(0, 0.25, 30)
    noisy = best + noise - noise.mean() - 0.002  # the same in expectation; a hair lower on these questions
    data = rows("steady", best) + rows("noisy", noisy)
    price = costs(steady=(900, 10), noisy=(300, 10))
    comparison = compare_configurations(data, costs=price)
    assert classes(comparison) == {"steady|m": CLASS_BEST, "noisy|m": CLASS_UNDECIDED}
    result = {c.configuration: c for c in comparison.configurations}["noisy|m"]
    expected = questions_to_show_within(result.versus_best.mean_difference, result.sd_difference, MARGIN)
    assert expected is not None and expected > 30 and result.questions_to_settle == expected
    rec = recommend(comparison, price)
    assert rec.configuration == "steady|m" and not rec.decided and rec.only_best_shown
    assert rec.candidate == "noisy|m" and rec.questions_to_settle == expected
    assert f"about {expected:,} questions would show it within 0.02" in rec.reason
    assert "Might be as good, cannot tell yet: noisy × m." in rec.reason
    found = {d.code: d.message for d in recommendation_warnings(comparison, rec)}
    assert "recommendation_undecided" in found
    assert f"about {expected:,} questions would settle it" in found["recommendation_undecided"]


def test_the_questions_to_show_within_the_margin_follow_the_t_bound():
    from scipy import stats

    n = questions_to_show_within(-0.005, 0.1, MARGIN, comparisons=13)
    level = 1 - 0.05 / 13
    assert -0.005 - stats.t.ppf(level, n - 1) * 0.1 / math.sqrt(n) > -MARGIN  # n questions are enough
    assert -0.005 - stats.t.ppf(level, n - 2) * 0.1 / math.sqrt(n - 1) <= -MARGIN  # and n - 1 are not
    assert questions_to_show_within(-0.03, 0.1, MARGIN) is None  # observed beyond the margin: never
    assert questions_to_show_within(-0.01, 0.0, MARGIN) == 2


def test_the_lower_bound_is_the_bonferroni_t_bound_of_the_paired_differences():
    from scipy import stats

    rng = np.random.default_rng(9)
    values = rng.uniform(0, 1, (40, 4))
    values[3, 2] = np.nan  # a question the third configuration did not score: left out of its pair
    bounds = paired_bounds(values, np.ones((1, 40)), np.array([0]), 0.05, comparisons=3)
    for j in (1, 2):
        keep = ~np.isnan(values[:, j])
        d = values[keep, j] - values[keep, 0]
        expected = d.mean() - stats.t.ppf(1 - 0.05 / 3, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
        assert bounds.lower[0, j] == pytest.approx(expected)
        assert bounds.n[0, j] == d.size


def test_09_tokens_cheaper_but_20x_slower_is_not_the_cheaper_one():
    slow = {"context_tokens": 448.0, "query_ms": 912.0, "projected_usd": 0.0, "index_seconds": 30.0}
    fast = {"context_tokens": 448.9, "query_ms": 43.0, "projected_usd": 0.0, "index_seconds": 30.0}
    assert cost.compare_costs(fast, slow) == -1 and cost.compare_costs(slow, fast) == 1
    assert cost.cheapest(["slow", "fast"], {"slow": slow, "fast": fast}) == "fast"
    assert cost.deciding_cost(fast, slow) == ("query_ms", 43.0, 912.0)
    # through the whole rule: both shown within the margin (the same scores), the fast one is picked
    scores = base_scores(60, 2)
    data = rows("slow", scores) + rows("fast", scores)
    price = {"slow|m": slow, "fast|m": fast}
    rec = recommend(compare_configurations(data, costs=price), price)
    assert rec.configuration == "fast|m" and "43.0 vs 912 ms per query (warm)" in rec.reason
    # dollars still come first; 5% apart or less is equal; the tolerance is a setting
    assert (
        cost.compare_costs(
            {"projected_usd": 1.00, "context_tokens": 900}, {"projected_usd": 1.04, "context_tokens": 100}
        )
        == 1
    )
    assert cost.compare_costs({"projected_usd": 1.00}, {"projected_usd": 1.04}, tolerance=0.01) == -1


def test_the_cheapest_does_not_depend_on_the_order_the_names_come_in():
    table = {
        "a": {"context_tokens": 100.0, "query_ms": 50.0},
        "b": {"context_tokens": 104.0, "query_ms": 10.0},
        "c": {"context_tokens": 108.0, "query_ms": 5.0},
    }
    for order in (["a", "b", "c"], ["c", "b", "a"], ["b", "c", "a"]):
        assert cost.cheapest(order, table) == "b"  # within 5% of the fewest tokens: a and b; b is faster
    assert cost.cost_order(["a", "b", "c"], table) == ["b", "a", "c"]


def test_equal_means_give_the_same_order_on_every_run_whatever_the_row_order_and_float_noise():
    scores = base_scores(40, 3)
    data = (
        rows("zeta", scores)
        + rows("alpha", scores + 1e-12)  # equal up to float noise: a tie
        + rows("mid", scores)
        + rows("low", scores - 0.2)
    )
    price = costs(zeta=(100, 10), alpha=(800, 10), mid=(400, 10), low=(50, 10))
    expected = ["zeta|m", "mid|m", "alpha|m", "low|m"]  # the tie goes to the cheaper, not to 1e-12 more
    for seed in range(5):
        shuffled = list(data)
        random.Random(seed).shuffle(shuffled)
        comparison = compare_configurations(shuffled, costs=price)
        assert [c.configuration for c in comparison.configurations] == expected
        assert comparison.best == "zeta|m"
    without_costs = compare_configurations(data)  # nothing known about costs: the name decides
    assert [c.configuration for c in without_costs.configurations][:3] == ["alpha|m", "mid|m", "zeta|m"]


def test_stability_is_reproducible_with_the_same_seed_and_resamples_the_whole_rule():
    rng = np.random.default_rng(6)
    best = base_scores(50, 6)
    data = (
        rows("a", best)
        + rows("b", best - 0.004 + rng.normal(0, 0.04, 50))
        + rows("c", best - 0.01 + rng.normal(0, 0.2, 50))
    )
    price = costs(a=(900, 10), b=(500, 10), c=(100, 10))
    comparison = compare_configurations(data, costs=price)
    pick = recommend(comparison, price).configuration
    first = stability(comparison, price, "cheapest_within_margin", pick, seed=7)
    again = stability(comparison, price, "cheapest_within_margin", pick, seed=7)
    assert first == again and first.resamples == 1000
    assert sum(share for _, share in first.picks) == pytest.approx(1.0)
    assert stability(comparison, price, "cheapest_within_margin", pick, seed=8) != first
    # resample 0 is the whole rule applied to one bootstrap resample: redo it by hand
    weights = resample_weights(50, 3, seed=7)
    picks = resampled_picks(comparison.scores, weights, price, "cheapest_within_margin", MARGIN)
    for row, picked in zip(weights, picks):
        drawn = [i for i, w in enumerate(row) for _ in range(int(w))]
        questions = [comparison.scores.questions[i] for i in drawn]
        resampled = [
            {
                "strategy": n.split("|")[0],
                "corpus_model": "m",
                "question_set": "s",
                "question_id": f"{q[1]}#{k}",
                "recall_at_512": comparison.scores.values[i, j],
                "error": None,
            }
            for k, (i, q) in enumerate(zip(drawn, questions))
            for j, n in enumerate(comparison.scores.names)
        ]
        by_hand = compare_configurations(resampled, costs=price)
        assert recommend(by_hand, price, resamples=0).configuration == picked


def test_an_unstable_pick_is_said_with_the_other_picks_and_the_questions_that_would_settle_it():
    rng = np.random.default_rng(12)
    base = base_scores(30, 12)
    data = rows("x", base) + rows("y", base + rng.normal(0, 0.03, 30))  # about the same mean
    price = costs(x=(500, 10), y=(500, 10))  # and the same cost: the best of each resample is the pick
    comparison = compare_configurations(data, costs=price)
    rec = recommend(comparison, price)
    assert rec.stability.share < 0.7 and not rec.decided and rec.stability.runner_ups
    found = {d.code: d.message for d in recommendation_warnings(comparison, rec)}
    assert (
        "recommendation_unstable" in found
        and "resamples of the questions (otherwise:" in found["recommendation_unstable"]
    )


def test_too_few_questions_speaks_when_the_top_two_tie_on_every_question():
    scores = base_scores(40, 5)
    data = rows("a", scores) + rows("b", scores) + rows("c", scores - 0.3)
    price = costs(a=(100, 10), b=(200, 10), c=(50, 10))
    comparison = compare_configurations(data, costs=price)
    rec = recommend(comparison, price)
    found = {d.code: d.message for d in recommendation_warnings(comparison, rec)}
    assert "a × m and b × m, score the same on every one of the 40 questions" in found["too_few_questions"]
    assert diagnostics.too_few_questions(40) is None
    assert diagnostics.too_few_questions(12).code == "too_few_questions"


def test_the_highest_mean_rule_stays_available_and_the_old_rule_name_is_accepted_with_a_message():
    rng = np.random.default_rng(2)
    best = base_scores(200, 2)
    data = rows("big", best) + rows("small", best - 0.002 + rng.normal(0, 0.02, 200))
    price = costs(big=(900, 10), small=(300, 10))
    comparison = compare_configurations(data, costs=price)
    assert recommend(comparison, price, RankingSettings(recommendation_rule="highest_mean")).configuration == "big|m"
    assert recommend(comparison, price).configuration == "small|m"
    with pytest.warns(FutureWarning, match="now called cheapest_within_margin"):
        settings = RankingSettings.from_text(recommendation_rule="cheapest_in_tier_1")
    assert settings.recommendation_rule == "cheapest_within_margin"
    old = recommend(comparison, price, settings)
    assert old.rule == "cheapest_within_margin" and old.configuration == "small|m"
    assert old.reason.startswith("The recommendation rule cheapest_in_tier_1 is now called cheapest_within_margin")
    with pytest.raises(ConfigError, match="cheapest_within_margin, highest_mean"):
        recommend(comparison, price, RankingSettings(recommendation_rule="nope"))


def test_margin_and_cost_tolerance_are_settings_checked_where_built():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert RankingSettings().margin_in_force == 0.02
        assert RankingSettings.from_text("answer_similarity").margin_in_force == 0.2
        assert RankingSettings.from_text(margin="0.05").margin == 0.05
        assert RankingSettings.from_text(cost_tolerance="10%").cost_tolerance == pytest.approx(0.10)
    for kwargs, message in (
        ({"margin": "abc"}, "margin must be a number"),
        ({"margin": "0"}, "above 0"),
        ({"margin": "1.5"}, "below 1"),
        ({"cost_tolerance": "1.2"}, "cost_tolerance"),
        ({"rank_metric": "answer_similarity", "margin": "9"}, "below 9"),
    ):
        with pytest.raises(ConfigError, match=message):
            RankingSettings.from_text(**kwargs)


def test_the_margin_is_in_the_metrics_units():
    rng = np.random.default_rng(8)
    judged = rng.integers(5, 10, 80).astype(float)
    data = rows("a", judged, "answer_similarity") + rows(
        "b", judged - 0.05 + rng.normal(0, 0.3, 80), "answer_similarity"
    )
    for row in data:
        row["recall_at_512"] = 0.5
    comparison = compare_configurations(data, metric="answer_similarity")
    assert comparison.metric == "answer_similarity" and comparison.margin == 0.2
    assert compare_configurations(data, metric="answer_similarity", margin=0.5).margin == 0.5
    # a judge margin asked for, but the judge metric fell back to the default: the default's margin, said
    for row in data[:30]:
        row["answer_similarity"] = None
    fallback = compare_configurations(data, metric="answer_similarity", margin=0.5 * 9)
    assert fallback.metric == "recall_at_512" and fallback.margin == 0.02 and "does not fit" in fallback.metric_note


def test_a_cheaper_one_more_than_the_margin_below_is_said_in_plain_words():
    rng = np.random.default_rng(4)
    best = base_scores(30, 4)
    noise = rng.normal(0, 0.25, 30)
    below = best + noise - noise.mean() - 0.023  # 0.023 below the best on these questions, too noisy to show worse
    comparison = compare_configurations(
        rows("steady", best) + rows("noisy", below), costs=costs(steady=(900, 10), noisy=(300, 10))
    )
    assert classes(comparison) == {"steady|m": CLASS_BEST, "noisy|m": CLASS_UNDECIDED}
    rec = recommend(comparison, costs(steady=(900, 10), noisy=(300, 10)))
    assert rec.configuration == "steady|m"
    assert "scores 0.023 below the best, more than the 0.02 margin" in rec.reason
    assert " less" not in rec.reason and "or more" not in rec.reason


def test_a_difference_that_rounds_to_the_margin_is_written_with_the_places_that_tell_them_apart():
    rng = np.random.default_rng(4)
    best = base_scores(30, 4)
    noise = rng.normal(0, 0.25, 30)
    below = best + noise - noise.mean() - 0.0203  # 0.020 at three places: it would read as the margin itself
    comparison = compare_configurations(
        rows("steady", best) + rows("noisy", below), costs=costs(steady=(900, 10), noisy=(300, 10))
    )
    rec = recommend(comparison, costs(steady=(900, 10), noisy=(300, 10)))
    assert "scores 0.0203 below the best, more than the 0.02 margin" in rec.reason
    # the margin itself, up to float noise (0.6 / 30 questions), is the margin: "as much as", at three places
    exact = best - 0.6 / 30 + noise - noise.mean()
    comparison = compare_configurations(
        rows("steady", best) + rows("noisy", exact), costs=costs(steady=(900, 10), noisy=(300, 10))
    )
    rec = recommend(comparison, costs(steady=(900, 10), noisy=(300, 10)))
    assert "scores 0.020 below the best, as much as the 0.02 margin" in rec.reason


def test_the_reason_counts_the_questions_even_when_none_is_judge_only():
    data = [
        {**r, "judge_only": False, "n_references": 1}
        for r in rows("a", base_scores(30, 2)) + rows("b", base_scores(30, 3))
    ]
    rec = recommend(compare_configurations(data), costs(a=(100, 1), b=(100, 1)))
    assert rec.reason.endswith("Questions: 30 scored (0 judge-only).")
