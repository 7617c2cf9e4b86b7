"""Classes against the best, Holm's correction, the power statement, the frontier, the recommendation rule and diagnostics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chunkbench_core.errors import ConfigError
from chunkbench_core.evaluation import diagnostics
from chunkbench_core.evaluation.cost import LLMPrices, embedding_usd, pareto_frontier, query_usd_per_1000
from chunkbench_core.evaluation.recommendation import RankingSettings, recommend
from chunkbench_core.evaluation.statistics import compare_configurations, friedman, holm, power_statement, rank_order


def rows(strategy: str, values, metric: str = "recall_at_512") -> list[dict]:
    return [
        {
            "strategy": strategy,
            "corpus_model": "m",
            "question_set": "s",
            "question_id": f"q{i}",
            metric: float(v),
            "budget_auc": 0.0,
            "error": None,
        }
        for i, v in enumerate(values)
    ]


def test_holm_adjusts_step_down_and_keeps_order():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # 2 x 0.8 capped at 1, then kept monotone
    assert holm([]) == []


def test_friedman_needs_three_configurations_and_sees_constant_rows_as_no_evidence():
    rng = np.random.default_rng(0)
    noise = rng.random((40, 3))
    assert friedman(noise)[1] > 0.05
    shifted = noise + np.array([0.0, 0.5, 1.0])
    assert friedman(shifted)[1] < 0.001
    assert math.isnan(friedman(noise[:, :2])[0])
    assert friedman(np.ones((5, 3))) == (0.0, 1.0)


def test_classes_on_data_with_a_known_answer():
    """{a, b} on top (b = a plus symmetric noise), {c, d} 0.3 lower, e at the bottom."""
    rng = np.random.default_rng(11)
    base = rng.random(80) * 0.2
    data = (
        rows("a", base + 0.80)
        + rows("b", base + 0.80 + rng.normal(0, 0.002, 80))
        + rows("c", base + 0.50)
        + rows("d", base + 0.50 + rng.normal(0, 0.002, 80))
        + rows("e", base + 0.10)
    )
    comparison = compare_configurations(data)
    best = comparison.best
    assert best in ("a|m", "b|m")
    classes = {c.configuration: c.margin_class for c in comparison.configurations}
    assert classes == {
        "a|m": "best" if best == "a|m" else "within_margin",
        "b|m": "best" if best == "b|m" else "within_margin",
        "c|m": "worse",
        "d|m": "worse",
        "e|m": "worse",
    }
    assert {c.configuration: c.tier for c in comparison.configurations} == {
        "a|m": 1,
        "b|m": 1,
        "c|m": 3,
        "d|m": 3,
        "e|m": 3,
    }
    assert comparison.friedman_p < 0.001 and comparison.n_complete == 80
    by_name = {c.configuration: c for c in comparison.configurations}
    assert by_name["e|m"].effect_size < -2  # far below the best, in standard deviations of the differences
    assert by_name["c|m"].versus_best.mean_difference == pytest.approx(-0.30, abs=0.01)
    assert comparison.to_rows() == compare_configurations(data).to_rows()  # deterministic
    assert {r["class"] for r in comparison.to_rows()} == {"best", "within_margin", "worse"}


def test_no_difference_found_is_not_taken_for_equal():
    """30 noisy questions find no difference; that leaves the others undecided, never "as good as the best"."""
    rng = np.random.default_rng(5)
    data = rows("a", rng.random(30)) + rows("b", rng.random(30)) + rows("c", rng.random(30))
    comparison = compare_configurations(data)
    assert comparison.friedman_p > 0.05
    assert sorted(c.margin_class for c in comparison.configurations) == ["best", "undecided", "undecided"]
    assert all(
        c.questions_to_settle and c.questions_to_settle > 30
        for c in comparison.configurations
        if c.margin_class == "undecided"
    )


def test_power_statement_matches_the_normal_approximation():
    from scipy import stats

    differences = [0.1, -0.1] * 50  # mean 0
    sd = float(np.std(differences, ddof=1))
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)  # 2.8016
    statement = power_statement(differences)
    assert statement.n_questions == 100
    assert statement.min_detectable_difference == pytest.approx(z * sd / 10)
    assert statement.questions_to_separate is None  # no difference observed: no number of questions separates
    shifted = [d + 0.02 for d in differences]
    assert power_statement(shifted).questions_to_separate == math.ceil((z * sd / 0.02) ** 2)


def test_frontier_on_a_small_table():
    points = {
        "cheap_bad": (0.5, 1.0),
        "mid": (0.7, 2.0),
        "dominated": (0.6, 3.0),
        "best": (0.9, 5.0),
        "tie_mid": (0.7, 2.0),
        "nan": (float("nan"), 1.0),
    }
    assert pareto_frontier(points) == {"cheap_bad", "mid", "tie_mid", "best"}


def test_a_tie_on_score_and_tokens_goes_to_the_configuration_ranked_first():
    """Equal means and context tokens within the cost tolerance: the faster query decides, as in the ranking, so
    the configuration ranked (and recommended) first is on the frontier and the slower one is not, even with 2
    fewer tokens on the plot's axis."""
    points = {"fast": (0.8, 482.0), "slow": (0.8, 480.0), "cheap_bad": (0.5, 100.0)}
    costs = {
        "fast": {"context_tokens": 482.0, "query_ms": 10.0},
        "slow": {"context_tokens": 480.0, "query_ms": 40.0},
        "cheap_bad": {"context_tokens": 100.0, "query_ms": 50.0},
    }
    assert pareto_frontier(points) == {"slow", "cheap_bad"}  # the axis alone
    assert pareto_frontier(points, costs) == {"fast", "cheap_bad"}
    assert rank_order({"fast": 0.8, "slow": 0.8, "cheap_bad": 0.5}, costs)[0] == "fast"


def test_costs_follow_their_formulas():
    assert embedding_usd(2_000_000, 0.02) == pytest.approx(0.04)
    assert embedding_usd(1_000_000, 0.0, 1_000_000, 0.13) == pytest.approx(0.13)
    assert query_usd_per_1000(10, 500, 0.02, LLMPrices(), 100) == pytest.approx(1000 * 10 * 0.02 / 1e6)
    priced = query_usd_per_1000(10, 500, 0.0, LLMPrices(0.15, 0.60), 100)
    assert priced == pytest.approx(1000 * ((500 + 10 + 60) * 0.15 + 100 * 0.60) / 1e6)


def test_recommendation_is_the_cheapest_within_the_margin_and_switchable_to_highest_mean():
    rng = np.random.default_rng(2)
    base = rng.random(60) * 0.3 + 0.5
    data = rows("big", base + 0.01) + rows("small", base) + rows("bad", base - 0.4)
    comparison = compare_configurations(data)
    assert comparison.best == "big|m"
    costs = {
        "big|m": {"projected_usd": 0.0, "context_tokens": 4000.0},
        "small|m": {"projected_usd": 0.0, "context_tokens": 900.0},
        "bad|m": {"projected_usd": 0.0, "context_tokens": 100.0},
    }
    assert comparison.within_margin() == ["big|m", "small|m"]  # 0.01 below on every question: within 0.02
    rec = recommend(comparison, costs)
    assert rec.configuration == "small|m" and rec.rule == "cheapest_within_margin"
    assert "cheapest" in rec.reason and "0.02" in rec.reason and "900 vs 4,000 context tokens" in rec.reason
    labelled = recommend(comparison, costs, labels={"small|m": "small (heading context)"})
    assert "small (heading context) × m is the cheapest" in labelled.reason and "small × m" not in labelled.reason
    assert recommend(comparison, costs, RankingSettings(recommendation_rule="highest_mean")).configuration == "big|m"
    with pytest.raises(ConfigError):
        recommend(comparison, costs, RankingSettings(recommendation_rule="nope"))


def test_ranking_settings_are_validated_where_built():
    assert RankingSettings.from_text("recall@k").rank_metric == "recall"
    assert RankingSettings.from_text(budgets="128, 512").budgets == (128, 512)
    for kwargs in ({"recommendation_rule": "cheapest"}, {"budgets": "a,b"}, {"rank_metric": "recall_at_300"}):
        with pytest.raises(ConfigError):
            RankingSettings.from_text(**kwargs)


def test_diagnostics_fire_on_the_cases_they_describe():
    assert (
        diagnostics.one_chunk_per_document({"a": [1, 1, 2], "b": [1, 1], "c": [5, 6]}).code == "one_chunk_per_document"
    )
    assert diagnostics.one_chunk_per_document({"a": [4, 5], "b": [1, 1], "c": [5, 6]}) is None
    assert (
        diagnostics.evidence_longer_than_chunks([900, 1000], {"x|m": [300, 400], "y|m": [2000]}).message.count("x|m")
        == 1
    )
    assert diagnostics.evidence_longer_than_chunks([100], {"x|m": [300]}) is None
    same = [[0.5, 0.5, 0.5]] * 50 + [[0.1, 0.9, 0.5]]
    assert diagnostics.no_disagreement(same).code == "no_disagreement"
    assert diagnostics.no_disagreement([[0.1, 0.9]] * 10) is None
    assert diagnostics.too_few_questions(12).code == "too_few_questions"
    assert "Only 12 questions were scored on the ranking metric" in diagnostics.too_few_questions(12).message
    assert "score the same on every one of the 100 questions" in diagnostics.too_few_questions(100, ("a", "b")).message
    assert diagnostics.too_few_questions(100) is None
    assert "1,300 questions would settle it" in diagnostics.recommendation_undecided("a", "b", 0.02, 1300, 30).message
    assert diagnostics.recommendation_undecided("a", None, 0.02, None, 30) is None
    assert diagnostics.recommendation_unstable("a", 0.8, 1000, "", None, 30) is None
    assert "in only 55% of 1,000" in diagnostics.recommendation_unstable("a", 0.55, 1000, "b 45%", 400, 30).message


def test_identical_configurations_are_shown_within_the_margin_and_the_cheaper_is_picked():
    """Two configurations that score the same on every question differ by exactly 0: the bound is 0."""
    base = list(np.linspace(0.1, 0.9, 40))
    comparison = compare_configurations(rows("a", np.array(base)) + rows("b", np.array(base)))
    assert [c.margin_class for c in comparison.configurations] == ["best", "within_margin"]
    rec = recommend(comparison, {"a|m": {"context_tokens": 20.0}, "b|m": {"context_tokens": 10.0}})
    assert rec.configuration == "b|m" and "0.000" not in rec.reason
