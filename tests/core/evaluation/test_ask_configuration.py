"""Which configuration ``chunkbench ask`` asks when none is named: the recommendation, else the defaults."""

from __future__ import annotations

import pytest

from chunkbench_core.errors import ChunkbenchError
from chunkbench_core.evaluation.ask import choose_configuration

REC = {"strategy": "semantic", "corpus_model": "multilingual-e5-small"}
DEFAULT = ("all-minilm-l6-v2", "the model registry's default")


def test_named_configuration_is_used_as_given():
    choice = choose_configuration("fixed_size", "all-minilm-l6-v2", REC, DEFAULT, [])
    assert (choice.strategy, choice.corpus_model, choice.source, choice.note) == (
        "fixed_size",
        "all-minilm-l6-v2",
        "given",
        "",
    )


def test_nothing_named_asks_the_recommended_configuration_and_says_so():
    choice = choose_configuration(None, None, REC, DEFAULT, [])
    assert (choice.strategy, choice.corpus_model, choice.source) == ("semantic", "multilingual-e5-small", "recommended")
    assert "recommended configuration" in choice.note and "semantic × multilingual-e5-small" in choice.note
    # one half named and matching the recommendation: the other half from it
    assert choose_configuration("semantic", None, REC, DEFAULT, []).source == "recommended"
    assert choose_configuration(None, "multilingual-e5-small", REC, DEFAULT, []).strategy == "semantic"


def test_without_a_recommendation_the_corpus_default_and_its_best_strategy():
    ranked = [("recursive", "multilingual-e5-small"), ("fixed_size", "all-minilm-l6-v2")]
    built = [("semantic", "all-minilm-l6-v2"), ("fixed_size", "all-minilm-l6-v2")]
    choice = choose_configuration(None, None, None, DEFAULT, built, ranked)
    assert (choice.strategy, choice.corpus_model, choice.source) == ("fixed_size", "all-minilm-l6-v2", "defaults")
    assert "best-ranked" in choice.note and "registry" in choice.note
    choice = choose_configuration(None, None, None, DEFAULT, built)
    assert choice.strategy == "semantic" and "first built collection" in choice.note
    # a corpus model named that the recommendation does not use: its own strategies
    assert choose_configuration(None, "all-minilm-l6-v2", REC, DEFAULT, built).strategy == "semantic"
    # a strategy named: the corpus model in force
    choice = choose_configuration("recursive", None, None, ("multilingual-e5-small", "chunkbench defaults set"), [])
    assert (choice.corpus_model, choice.source) == ("multilingual-e5-small", "defaults")


def test_nothing_built_names_the_command_to_run():
    with pytest.raises(ChunkbenchError, match="chunkbench run --corpus-model all-minilm-l6-v2"):
        choose_configuration(None, None, None, DEFAULT, [("fixed_size", "multilingual-e5-small")])
