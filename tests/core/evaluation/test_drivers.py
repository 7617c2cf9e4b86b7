"""What drives the scores: the variance decomposition and the verdict on crafted per-question score tables.

Each table is y = 0.5 + q + s + e, built so every sum of squares is known by hand: q = ±0.3 alternating over the
questions (the category follows it), s the strategy's effect, and e = ±x with a zero sum over each question, each
strategy and each category, so the question, strategy and rest shares are exact."""

from __future__ import annotations

import numpy as np
import pytest

from chunkbench_core.errors import ConfigError
from chunkbench_core.evaluation import drivers
from chunkbench_core.evaluation.recommendation import RankingSettings, recommend
from chunkbench_core.evaluation.statistics import compare_configurations
from chunkbench_core.stages.comparison import decompose_comparison, judge_choice

COSTS = {"a|m": {"context_tokens": 300.0}, "b|m": {"context_tokens": 600.0}}


def rows(n_questions: int, effect: float, noise: float) -> list[dict]:
    """question_results rows of strategies a and b (one corpus model): a scores ``effect`` above the mean, b as
    much below."""
    out = []
    for i in range(n_questions):
        q = 0.3 if i % 2 == 0 else -0.3
        e = noise if (i // 2) % 2 == 0 else -noise
        for strategy, s, sign in (("a", effect, 1), ("b", -effect, -1)):
            out.append(
                {
                    "strategy": strategy,
                    "corpus_model": "m",
                    "question_set": "set",
                    "question_id": f"q{i:05d}",
                    "recall_at_512": 0.5 + q + s + sign * e,
                    "category": "high" if q > 0 else "low",
                    "source_documents": '["doc.md"]',
                }
            )
    return out


def analyse(table: list[dict], threshold: float = drivers.DEFAULT_INTERCHANGEABLE_SHARE):
    comparison = compare_configurations(table, costs=COSTS)
    decomposition = decompose_comparison(comparison, table)
    choice = judge_choice(comparison, decomposition, threshold, {}, table)
    return comparison, decomposition, choice


def expected_shares(n: int, effect: float, noise: float) -> dict[str, float]:
    question, strategy, rest = 2 * n * 0.09, 2 * n * effect**2, 2 * n * noise**2
    total = question + strategy + rest
    return {
        "question": question / total,
        "category": question / total,
        "strategy": strategy / total,
        "configuration": strategy / total,
        "corpus_model": 0.0,
        "strategy_x_category": 0.0,
        "rest": rest / total,
    }


def assert_shares(decomposition: drivers.Decomposition, expected: dict[str, float]) -> None:
    for factor, share in expected.items():
        assert decomposition.shares[factor].share == pytest.approx(share, abs=1e-9), factor


def test_a_large_set_with_a_negligible_strategy_effect_is_interchangeable():
    table = rows(2000, effect=0.001, noise=0.1)
    comparison, decomposition, choice = analyse(table)
    # 360 / 400.004 from the questions, 0.004 / 400.004 from the strategy, 40 / 400.004 from the rest
    assert_shares(decomposition, expected_shares(2000, 0.001, 0.1))
    assert decomposition.shares["strategy"].share == pytest.approx(1e-5, rel=1e-3)
    assert decomposition.shares["question"].share == pytest.approx(0.9, rel=1e-4)
    assert decomposition.n_questions == 2000
    assert choice.kind == drivers.INTERCHANGEABLE
    assert choice.ci_high < drivers.DEFAULT_INTERCHANGEABLE_SHARE
    assert choice.sentence.startswith("The configurations are interchangeable on this corpus")
    assert "Pick on cost alone" in choice.sentence
    assert "What would separate them: questions in category" in choice.sentence
    picked = recommend(comparison, COSTS, choice=choice)
    assert picked.configuration == "a|m"  # the cheaper
    assert picked.verdict == drivers.INTERCHANGEABLE and picked.decided
    assert picked.reason.startswith(choice.sentence)
    assert "a × m is the cheapest of the 2 configurations (300 vs 600 context tokens" in picked.reason


def test_a_small_set_with_the_same_means_cannot_tell_yet():
    table = rows(20, effect=0.001, noise=0.1)
    comparison, decomposition, choice = analyse(table)
    assert_shares(decomposition, expected_shares(20, 0.001, 0.1))  # the very shares of the large set
    assert choice.kind == drivers.CANNOT_TELL
    assert choice.ci_low < drivers.DEFAULT_INTERCHANGEABLE_SHARE <= choice.ci_high
    assert choice.sentence.startswith("Cannot tell yet whether the choice matters")
    picked = recommend(comparison, COSTS, choice=choice)
    assert picked.verdict == drivers.CANNOT_TELL
    assert choice.sentence in picked.reason


def test_a_real_effect_names_a_winner():
    table = rows(200, effect=0.1, noise=0.05)
    comparison, decomposition, choice = analyse(table)
    # questions 36, strategy 4, rest 1: 36/41, 4/41, 1/41
    assert_shares(decomposition, expected_shares(200, 0.1, 0.05))
    assert decomposition.shares["strategy"].share == pytest.approx(4 / 41, abs=1e-12)
    assert choice.kind == drivers.MATTERS
    assert choice.ci_low >= drivers.DEFAULT_INTERCHANGEABLE_SHARE
    assert choice.sentence.endswith("a × m leads.")
    picked = recommend(comparison, COSTS, choice=choice)
    assert picked.configuration == "a|m" and comparison.best == "a|m"
    assert picked.verdict == drivers.MATTERS


def test_the_threshold_is_a_setting():
    table = rows(200, effect=0.1, noise=0.05)
    _, _, choice = analyse(table, threshold=0.5)  # the strategy's ~10 % is below a 50 % threshold
    assert choice.kind == drivers.INTERCHANGEABLE and choice.threshold == 0.5
    assert RankingSettings.from_text(interchangeable_share="5%").interchangeable_share == 0.05
    assert RankingSettings().interchangeable_share == drivers.DEFAULT_INTERCHANGEABLE_SHARE
    for bad in ("0", "1.5", "lots"):
        with pytest.raises(ConfigError, match="interchangeable_share"):
            RankingSettings.from_text(interchangeable_share=bad)


def test_the_sentence_says_where_the_differences_come_from():
    _, decomposition, _ = analyse(rows(200, effect=0.1, noise=0.05))
    assert drivers.drivers_sentence(decomposition) == (
        "On this corpus 88 % of the differences in recall_at_512 come from the questions and 9.8 % from the strategy "
        "(over the 200 questions every configuration scored); the other 2.4 % from how each question fares under each "
        "configuration."
    )


def test_questions_not_scored_by_every_configuration_are_left_out_and_counted():
    values = np.array([[0.1, 0.2], [0.5, np.nan], [0.9, 0.8], [0.3, 0.3]])
    decomposition = drivers.decompose(values, ["a|m", "b|m"], "recall")
    assert decomposition.n_questions == 3 and decomposition.n_scored == 4
    assert "of 4)" in drivers.drivers_sentence(decomposition)


def test_one_configuration_and_identical_scores():
    single = drivers.decompose(np.array([[0.1], [0.5], [0.9]]), ["a|m"], "recall")
    assert drivers.verdict(single).kind == drivers.SINGLE
    same = drivers.decompose(np.full((5, 3), 0.4), ["a|m", "b|m", "c|m"], "recall")
    assert same.shares["configuration"].share == 0.0
    assert drivers.verdict(same).kind == drivers.INTERCHANGEABLE
    assert drivers.drivers_sentence(same).startswith("Every configuration scores the same")


def test_a_second_corpus_model_and_the_interplay_with_the_category():
    # strategy a is better on category x, b on category y; the corpus models n and m differ by a constant
    categories = ["x", "y"] * 10
    values = []
    for category in categories:
        lead = 0.2 if category == "x" else -0.2
        values.append([0.5 + lead, 0.5 - lead, 0.6 + lead, 0.6 - lead])
    decomposition = drivers.decompose(
        np.array(values), ["a|m", "b|m", "a|n", "b|n"], "recall", categories=categories, resamples=200
    )
    shares = decomposition.shares
    # total: 80 scores at ±0.2 around their model's mean (3.2) plus the models' ±0.05 (0.2): 3.4
    assert shares["strategy_x_category"].share == pytest.approx(3.2 / 3.4)
    assert shares["corpus_model"].share == pytest.approx(0.2 / 3.4)
    assert shares["strategy"].share == pytest.approx(0.0, abs=1e-12)
    assert shares["question"].share == pytest.approx(0.0, abs=1e-12)
    assert "from the corpus model" in drivers.drivers_sentence(decomposition)


def test_percent_never_reads_as_nothing():
    assert drivers.percent(0.713) == "71 %"
    assert drivers.percent(0.003) == "0.3 %"
    assert drivers.percent(0.0223) == "2.2 %"
    assert drivers.percent(0.00001) == "under 0.1 %"
    assert drivers.percent(0.0) == "0 %"


def test_a_retriever_is_its_own_factor_not_part_of_the_corpus_model():
    # one corpus model, two retrievers: hybrid configurations score 0.2 above their dense twins, so the retriever
    # explains every difference and the corpus model (one level) none; the shares add up to at most 1
    values = np.array([[0.4, 0.6, 0.5, 0.7], [0.4, 0.6, 0.5, 0.7], [0.4, 0.6, 0.5, 0.7]])
    names = ["a|m", "a|m|hybrid", "b|m", "b|m|hybrid"]
    shares = drivers.decompose(values, names, "recall", resamples=0).shares
    # total: 12 scores around 0.55, the retriever's ±0.1 (0.12) plus the strategy's ±0.05 (0.03): 0.15
    assert shares["retriever"].share == pytest.approx(0.12 / 0.15)
    assert shares["strategy"].share == pytest.approx(0.03 / 0.15)
    assert shares["corpus_model"].share == pytest.approx(0.0, abs=1e-12)
    assert shares["corpus_model"].levels == 1 and shares["retriever"].levels == 2


def test_a_hybrid_configuration_is_named_with_its_retriever():
    # the sentences that name configurations read the retriever as the third part of the name, not of the model
    assert drivers._label("a|m|hybrid") == "a × m × hybrid"
    assert drivers._label("a|m") == "a × m"
