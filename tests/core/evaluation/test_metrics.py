"""Character metrics against hand-computed cases (Chroma definitions)."""

from __future__ import annotations

import math

import pytest

from chunkbench_core.evaluation import metrics
from chunkbench_core.evaluation.questions import Span


def S(start: int, end: int, document: str = "a.md") -> Span:
    return Span(document, start, end)


def test_single_reference_inside_one_chunk():
    chunks = [S(0, 100), S(100, 200)]
    refs = [S(10, 30)]
    # numerator 20; recall 20/20; precision 20/200; IoU 20/(200 + 0)
    assert metrics.recall(chunks, refs) == 1.0
    assert metrics.precision(chunks, refs) == pytest.approx(20 / 200)
    assert metrics.iou(chunks, refs) == pytest.approx(20 / 200)


def test_overlapping_chunks_count_evidence_once_but_length_twice():
    chunks = [S(0, 60), S(40, 100)]  # overlap 40..60
    refs = [S(50, 70)]
    # evidence covered: 50..70 = 20 chars (50..60 is in both chunks, counted once)
    assert metrics.evidence_retrieved(chunks, refs) == 20
    assert metrics.recall(chunks, refs) == 1.0
    # precision denominator: 60 + 60 = 120 (the overlap is counted twice)
    assert metrics.precision(chunks, refs) == pytest.approx(20 / 120)
    assert metrics.iou(chunks, refs) == pytest.approx(20 / 120)


def test_multiple_references_partly_retrieved():
    chunks = [S(0, 50)]
    refs = [S(40, 60), S(100, 110)]
    # evidence: 40..50 = 10; reference total 30; missed: 10 (50..60) + 10 (100..110) = 20
    assert metrics.recall(chunks, refs) == pytest.approx(10 / 30)
    assert metrics.precision(chunks, refs) == pytest.approx(10 / 50)
    assert metrics.iou(chunks, refs) == pytest.approx(10 / (50 + 20))
    assert metrics.missed_evidence(chunks, refs) == 20


def test_no_hit_scores_zero_and_iou_counts_the_whole_reference():
    chunks = [S(0, 10), S(10, 20)]
    refs = [S(50, 80)]
    assert metrics.recall(chunks, refs) == 0.0
    assert metrics.precision(chunks, refs) == 0.0
    assert metrics.iou(chunks, refs) == 0.0
    assert metrics.hit(chunks, refs) == 0.0
    assert metrics.reciprocal_rank(chunks, refs) == 0.0


def test_chunks_of_another_document_never_intersect_but_count_in_precision():
    chunks = [S(0, 100, "b.md"), S(0, 100, "a.md")]
    refs = [S(20, 40, "a.md")]
    assert metrics.recall(chunks, refs) == 1.0
    # Chroma: the denominator sums every retrieved chunk, whatever its document
    assert metrics.precision(chunks, refs) == pytest.approx(20 / 200)
    assert metrics.iou(chunks, refs) == pytest.approx(20 / 200)
    assert metrics.reciprocal_rank(chunks, refs) == 0.5


def test_precision_omega_takes_every_chunk_touching_a_reference():
    all_chunks = [S(0, 50), S(50, 100), S(100, 150), S(0, 100, "b.md")]
    refs = [S(40, 60)]
    # touching: 0..50 and 50..100 (100..150 touches nothing); union 0..100; evidence 20
    assert metrics.precision_omega(all_chunks, refs) == pytest.approx(20 / 100)


def test_precision_omega_counts_touching_ranges_and_uncovered_evidence():
    # a chunk that ends exactly where the reference starts "touches" it (reference code)
    all_chunks = [S(0, 40), S(45, 60)]
    refs = [S(40, 50)]
    # touching: 0..40 (touches at 40) and 45..60; evidence 45..50 = 5;
    # uncovered evidence 40..45 joins the denominator: |0..40 ∪ 40..45 ∪ 45..60| = 60
    assert metrics.precision_omega(all_chunks, refs) == pytest.approx(5 / 60)


def test_evidence_characters_is_the_graded_relevance():
    refs = [S(10, 20), S(15, 30)]
    assert metrics.evidence_characters(S(0, 25), refs) == 15  # 10..25, overlap of the refs counted once
    assert metrics.evidence_characters(S(30, 40), refs) == 0


def test_empty_inputs_do_not_divide_by_zero():
    assert metrics.recall([], [S(0, 10)]) == 0.0
    assert metrics.precision([], [S(0, 10)]) == 0.0
    assert metrics.iou([], []) == 0.0
    assert metrics.precision_omega([], [S(0, 10)]) == 0.0
    assert not math.isnan(metrics.recall([S(0, 1)], []))
