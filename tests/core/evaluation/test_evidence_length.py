"""Evidence length in tokens: the buckets, the estimate from a document's tokens per character, and the warning
when a question set favours one chunk size."""

from __future__ import annotations

import json

from chunkbench_core.evaluation import evidence_length as el
from chunkbench_core.evaluation.breakdowns import group_breakdown


def test_buckets_are_in_tokens_shortest_first():
    assert el.bucket(None) is None and el.bucket(0) is None
    assert el.bucket(1) == el.bucket(64) == "up to 64 tokens"
    assert el.bucket(65) == "65 to 128 tokens"
    assert el.bucket(512) == "257 to 512 tokens"
    assert el.bucket(513) == "over 512 tokens"
    assert [el.bucket_order(name) for _, name in el.BUCKETS] == [0, 1, 2, 3, 4]


def test_evidence_tokens_use_each_documents_density():
    chunks = [  # a.md: 100 tokens over 400 characters; b.md: 50 tokens over 100 characters
        {
            "strategy": "s",
            "corpus_model": "m",
            "document": "a.md",
            "token_count": 60,
            "start_offset": 0,
            "end_offset": 240,
        },
        {
            "strategy": "s",
            "corpus_model": "m",
            "document": "a.md",
            "token_count": 40,
            "start_offset": 240,
            "end_offset": 400,
        },
        {
            "strategy": "s",
            "corpus_model": "m",
            "document": "b.md",
            "token_count": 50,
            "start_offset": 0,
            "end_offset": 100,
        },
        # another configuration's chunks of a.md are not counted twice
        {
            "strategy": "t",
            "corpus_model": "m",
            "document": "a.md",
            "token_count": 999,
            "start_offset": 0,
            "end_offset": 10,
        },
    ]
    density = el.density_of(chunks)
    assert density == {"a.md": 0.25, "b.md": 0.5}
    refs = json.dumps([{"document": "a.md", "start": 0, "end": 200}, {"document": "b.md", "start": 10, "end": 50}])
    assert el.evidence_tokens(refs, density) == 70  # 200 x 0.25 + 40 x 0.5
    assert el.evidence_tokens(json.dumps([{"document": "c.md", "start": 0, "end": 9}]), density) is None
    assert el.evidence_tokens(json.dumps([{"document": "a.md"}]), density) is None  # a document-level reference
    rows = el.question_evidence_rows(
        [
            {"question_set": "q", "question_id": "1", "references": refs},
            {"question_set": "q", "question_id": "1", "references": refs},
        ],
        density,
    )
    assert rows == [
        {"question_set": "q", "question_id": "1", "evidence_tokens": 70, "evidence_length": "65 to 128 tokens"}
    ]


def test_a_set_of_short_evidence_favours_small_chunks():
    report = el.length_report([20, 30, 40, 50, 300], [74.0, 192.0, 512.0])
    assert report.n_questions == 5 and report.median_tokens == 40
    assert report.fits == ((74, 0.8), (192, 0.8), (512, 1.0))
    assert dict(report.buckets)["up to 64 tokens"] == 4
    warning = el.favours_one_size(report)
    assert warning is not None and warning.startswith("80% of the 5 questions have evidence short enough")
    assert "favours small chunks" in warning
    assert "Fits in one chunk: 80% at 74 tokens, 80% at 192 tokens, 100% at 512 tokens." in report.sentence()


def test_a_set_of_long_evidence_favours_large_chunks_and_a_mixed_one_favours_none():
    long = el.length_report([600, 700, 800, 900, 100], [128.0, 256.0, 1024.0])
    assert "favours large chunks" in el.favours_one_size(long)
    mixed = el.length_report([30, 100, 200, 400, 600], [64.0, 256.0, 512.0])
    assert el.favours_one_size(mixed) is None
    assert el.favours_one_size(el.length_report([], [64.0, 128.0])) is None
    assert el.favours_one_size(el.length_report([30], [64.0])) is None  # one size: nothing to favour


def test_the_breakdown_splits_by_evidence_length():
    rows = []
    for _i, (bucket, strategy, score) in enumerate(
        [
            ("up to 64 tokens", "small", 0.9),
            ("up to 64 tokens", "big", 0.5),
            ("over 512 tokens", "small", 0.2),
            ("over 512 tokens", "big", 0.8),
        ]
    ):
        rows.append(
            {
                "strategy": strategy,
                "corpus_model": "m",
                "experiment_run_id": f"run-{strategy}",
                "question_set": "q",
                "question_id": bucket,
                "recall_at_512": score,
                "judge_only": False,
                "evidence_length": bucket,
                "references": "[]",
            }
        )
    cells = group_breakdown(rows)
    mine = cells[cells["dimension"] == "evidence_length"]
    got = {(r["group"], r["strategy"]): r["rank_mean"] for r in mine.to_dict("records")}
    assert got == {
        ("up to 64 tokens", "small"): 0.9,
        ("up to 64 tokens", "big"): 0.5,
        ("over 512 tokens", "small"): 0.2,
        ("over 512 tokens", "big"): 0.8,
    }


def test_a_questions_length_comes_from_whichever_of_its_rows_has_references():
    # a stored snapshot keeps the references on one row per question: the others must not hide them, in any order
    from chunkbench_core.evaluation.evidence_length import question_evidence_rows

    with_refs = {
        "question_set": "s",
        "question_id": "q1",
        "references": '[{"document": "a.md", "start": 0, "end": 100}]',
    }
    without = {"question_set": "s", "question_id": "q1", "references": None}
    for rows in ([without, with_refs], [with_refs, without]):
        (row,) = question_evidence_rows(rows, {"a.md": 0.25})
        assert row["evidence_tokens"] == 25
