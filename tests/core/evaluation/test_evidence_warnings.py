"""The comparison stage's evidence warnings on real DuckDB: low evidence recall of the best configuration, the
recall ceiling top_k puts on multi-document questions, and nothing scored when every question is judge-only."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from chunkbench_core.evaluation.recommendation import RankingSettings
from chunkbench_core.stages import compare_latest_runs
from chunkbench_core.storage.results_db import ResultsDB


def _row(
    strategy: str,
    qid: str,
    stamp: datetime,
    sources: list[str],
    recall: float | None,
    doc_recall: float | None,
    top_k: int = 2,
    judge_only: bool = False,
    recall_ceiling: float | None = None,
) -> dict:
    return {
        "experiment_run_id": f"run-{strategy}",
        "strategy": strategy,
        "corpus_model": "minilm",
        "question_set": "s",
        "question_id": qid,
        "question": qid,
        "top_k": top_k,
        "judge_only": judge_only,
        "n_references": 0 if recall is None else 1,
        "source_documents": json.dumps(sources),
        "references": "[]",
        "retrieved": "[]",
        "error": None,
        "recall": recall,
        "recall_at_512": recall,
        "doc_recall": doc_recall,
        "doc_recall_ceiling": None if not sources else min(1.0, top_k / len(sources)),
        "recall_ceiling": recall_ceiling,
        "context_tokens": 100.0,
        "created_at": stamp,
    }


def _write(results: ResultsDB, rows_by_strategy: dict[str, list[dict]]) -> None:
    for strategy, rows in rows_by_strategy.items():
        results.write("question_results", f"{strategy}__minilm__run-{strategy}", rows)
        results.write(
            "experiment_metrics",
            f"{strategy}__minilm__run-{strategy}",
            [
                {
                    "experiment_run_id": f"run-{strategy}",
                    "strategy": strategy,
                    "corpus_model": "minilm",
                    "n_questions": sum(not r["judge_only"] for r in rows),
                    "variant": "",
                    "neighbor_prev": 0,
                    "neighbor_next": 0,
                    "created_at": rows[0]["created_at"],
                }
            ],
        )


def test_low_recall_and_ceiling_of_the_best(tmp_path) -> None:
    results = ResultsDB(tmp_path / "results")
    base = datetime(2026, 1, 1, 12)
    four = ["a.pdf", "b.pdf", "c.pdf", "d.pdf"]
    _write(
        results,
        {
            "recursive": [
                _row("recursive", "q1", base, four, 0.2, 0.5, recall_ceiling=0.6),
                _row("recursive", "q2", base, ["a.pdf"], 0.1, 1.0, recall_ceiling=1.0),
                _row("recursive", "q3", base, ["a.pdf", "b.pdf"], 0.2, 0.5, recall_ceiling=0.8),
            ],
            "fixed_size": [
                _row("fixed_size", f"q{i}", base + timedelta(minutes=1), ["a.pdf"], 0.05, 1.0) for i in (1, 2, 3)
            ],
        },
    )
    compare_latest_runs(results, RankingSettings(rank_metric="recall@k"))
    messages = {r["code"]: r["message"] for r in results.diagnostics()}
    low = messages["low_evidence_recall"]
    assert "recursive × minilm" in low and "finds only 0.17 of the evidence text" in low
    ceiling = messages["recall_ceiling"]
    # q1: 4 source documents at top_k 2 -> its doc recall cannot exceed 0.5; it reached 0.5
    assert "1 question has evidence in more documents than top_k 2" in ceiling
    assert "cannot exceed 0.50" in ceiling and "reaches 0.50 on it" in ceiling
    # q1 and q3 have several documents: mean recall ceiling (0.6 + 0.8) / 2, reached (0.2 + 0.2) / 2
    assert "On the 2 questions with evidence in several documents" in ceiling
    assert "could reach is 0.70; it reaches 0.20" in ceiling


def test_nothing_scored_when_every_question_is_judge_only(tmp_path) -> None:
    results = ResultsDB(tmp_path / "results")
    stamp = datetime(2026, 1, 1, 12)
    _write(results, {"recursive": [_row("recursive", f"q{i}", stamp, [], None, None, judge_only=True) for i in (1, 2)]})
    compare_latest_runs(results)
    messages = {r["code"]: r["message"] for r in results.diagnostics()}
    assert "Nothing was scored: the 2 questions are judge-only" in messages["nothing_scored"]
    assert "low_evidence_recall" not in messages
