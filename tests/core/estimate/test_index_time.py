"""The uncached index time: measured when nothing was cached, else derived from the engine's rate."""

from __future__ import annotations

import pytest

from chunkbench_core.estimate.calibration import EngineKey, EngineRate
from chunkbench_core.estimate.errors import EstimateError
from chunkbench_core.estimate.index_time import EmbeddingPass, uncached_index_seconds

MINILM = EngineRate(EngineKey("minilm", "minilm_onnx", "1", "cpu"), 0.004, 0.0001, 1.25)


def test_a_build_with_nothing_cached_is_measured():
    result = uncached_index_seconds(95.0, [EmbeddingPass(3000, 0, 450_000, 80.0, MINILM)])
    assert (result.seconds, result.source, result.added_seconds) == (95.0, "measured", 0.0)


def test_a_warm_rebuild_gets_back_its_first_build_time_from_the_rate():
    # every text cached: the rebuild took 3 s; embedding the 3,000 texts of 150 tokens would take
    # 3000 · 0.004 + 450,000 · 1.25 · 0.0001 = 12 + 56.25 seconds
    result = uncached_index_seconds(3.0, [EmbeddingPass(3000, 3000, 450_000, 0.4, MINILM)])
    assert result.source == "derived"
    assert result.added_seconds == pytest.approx(12 + 56.25)
    assert result.seconds == pytest.approx(3.0 + 68.25)
    assert result.as_row() == {
        "index_seconds_uncached": result.seconds,
        "index_time_source": "derived",
        "index_seconds_cached_part": result.added_seconds,
        "cached_texts": 3000,
        "cached_contexts": 0,
    }


def test_a_partly_cached_build_adds_only_the_cached_share():
    result = uncached_index_seconds(40.0, [EmbeddingPass(3000, 1000, 450_000, 30.0, MINILM)])
    assert result.added_seconds == pytest.approx(1000 * 0.004 + 150_000 * 1.25 * 0.0001)
    # the boundary model's sentences count too
    boundary = EmbeddingPass(8000, 8000, 200_000, 0.5, MINILM)
    both = uncached_index_seconds(40.0, [EmbeddingPass(3000, 1000, 450_000, 30.0, MINILM), boundary])
    assert both.added_seconds == pytest.approx(result.added_seconds + 8000 * 0.004 + 200_000 * 1.25 * 0.0001)
    assert both.cached_texts == 9000


def test_without_a_rate_the_build_s_own_per_text_time_is_used():
    result = uncached_index_seconds(50.0, [EmbeddingPass(400, 100, 60_000, 45.0)])
    assert result.source == "derived" and result.added_seconds == pytest.approx(45.0 / 300 * 100)


def test_without_any_rate_a_fully_cached_build_is_a_lower_bound():
    result = uncached_index_seconds(3.0, [EmbeddingPass(400, 400, 60_000, 0.2)])
    assert (result.seconds, result.source) == (3.0, "unknown")


def test_cached_llm_contexts_count_at_the_llms_seconds_per_call():
    derived = uncached_index_seconds(
        10.0, [EmbeddingPass(100, 0, 15_000, 5.0, MINILM)], cached_contexts=100, seconds_per_context=2.5
    )
    assert derived.source == "derived" and derived.seconds == pytest.approx(10.0 + 250.0)
    unknown = uncached_index_seconds(10.0, [EmbeddingPass(100, 0, 15_000, 5.0, MINILM)], cached_contexts=100)
    assert unknown.source == "unknown" and unknown.seconds == 10.0


def test_impossible_inputs_are_refused():
    with pytest.raises(EstimateError, match="cannot exceed"):
        EmbeddingPass(10, 11)
    with pytest.raises(EstimateError, match="texts must be an integer"):
        EmbeddingPass(-1, 0)
    with pytest.raises(EstimateError, match="measured_seconds"):
        uncached_index_seconds(float("nan"), [])
    with pytest.raises(EstimateError, match="tokens"):
        EmbeddingPass(10, 0, tokens=float("inf"))
