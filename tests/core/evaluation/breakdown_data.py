"""A results folder with two formats (docx, pdf) and two categories, for the breakdown tests.

Two configurations, one run each (``run-recursive``, ``run-semantic``): ``recursive × minilm`` (best
overall) and ``semantic × minilm``.
recall_at_512 per question (the ranking metric; ``recall`` is the same value, ``precision`` a tenth of the
question number, ``context_tokens`` 100 x the question number):

=====  ===========================  ==========  ==========  =========  ==========
q      evidence                     category    difficulty  recursive  semantic
=====  ===========================  ==========  ==========  =========  ==========
q1     policy.docx                  policy      easy        1.0        0.5
q2     policy.docx                  policy      hard        1.0        0.5
q3     policy.docx                  howto       (none)      1.0        failed
q4     policy.docx                  policy      easy        1.0        0.5
q5     manual.pdf                   howto       easy        0.25       0.5
q6     manual.pdf                   howto       easy        0.25       0.5
q7     manual.pdf                   howto       hard        0.25       0.5
q8     manual.pdf                   (none)      hard        0.25       0.5
q9     policy.docx + manual.pdf     howto       hard        0.5        1.0
q10    judge-only (no references)   policy      easy        (empty)    (empty)
=====  ===========================  ==========  ==========  =========  ==========

With ``sweep=True`` the recursive run also holds the rows of a chunk-size sweep (another timestamp, every
score 0): never counted.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from chunkbench_core.storage.results_db import ResultsDB

RECURSIVE = "recursive × minilm"
SEMANTIC = "semantic × minilm"
QUESTIONS: list[tuple[str, list[str], str | None, str | None]] = [
    ("q1", ["policy.docx"], "policy", "easy"),
    ("q2", ["policy.docx"], "policy", "hard"),
    ("q3", ["policy.docx"], "howto", None),
    ("q4", ["policy.docx"], "policy", "easy"),
    ("q5", ["manual.pdf"], "howto", "easy"),
    ("q6", ["manual.pdf"], "howto", "easy"),
    ("q7", ["manual.pdf"], "howto", "hard"),
    ("q8", ["manual.pdf"], None, "hard"),
    ("q9", ["policy.docx", "manual.pdf", "policy.docx"], "howto", "hard"),
    ("q10", [], " policy ", "easy"),  # judge-only; blanks around the label are trimmed
]
SCORES = {
    "recursive": {
        "q1": 1.0,
        "q2": 1.0,
        "q3": 1.0,
        "q4": 1.0,
        "q5": 0.25,
        "q6": 0.25,
        "q7": 0.25,
        "q8": 0.25,
        "q9": 0.5,
    },
    "semantic": {"q1": 0.5, "q2": 0.5, "q3": None, "q4": 0.5, "q5": 0.5, "q6": 0.5, "q7": 0.5, "q8": 0.5, "q9": 1.0},
}


def _row(
    strategy: str,
    qid: str,
    documents: list[str],
    category: str | None,
    difficulty: str | None,
    stamp: datetime,
    score: float | None,
) -> dict[str, Any]:
    n = int(qid[1:])
    judge_only = not documents
    failed = not judge_only and score is None
    evidence = None if judge_only or failed else score
    return {
        "experiment_run_id": f"run-{strategy}",
        "strategy": strategy,
        "corpus_model": "minilm",
        "question_set": "s",
        "question_id": qid,
        "question": f"question {qid}",
        "category": category,
        "difficulty": difficulty,
        "top_k": 5,
        "n_references": len(documents),
        "judge_only": judge_only,
        "references": json.dumps([{"document": d, "start": 0, "end": 10} for d in documents]),
        "retrieved": "[]",
        "error": "retrieval: search timed out" if failed else None,
        "recall": evidence,
        "recall_at_512": evidence,
        "budget_auc": evidence,
        "precision": None if evidence is None else n / 10,
        "iou": evidence,
        "hit": None if evidence is None else 1.0,
        "reciprocal_rank": None if evidence is None else 1.0 / n,
        "context_tokens": None if failed else 100.0 * n,
        "embed_ms": None if failed else 2.0,
        "search_ms": None if failed else float(n),
        "created_at": stamp,
    }


def build(root: Path, sweep: bool = True) -> ResultsDB:
    results = ResultsDB(root)
    base = datetime(2026, 1, 1, 12, 0, 0)
    for i, strategy in enumerate(("recursive", "semantic")):
        stamp = base + timedelta(minutes=i)
        rows = [
            _row(strategy, qid, docs, cat, diff, stamp, SCORES[strategy].get(qid)) for qid, docs, cat, diff in QUESTIONS
        ]
        results.write("question_results", f"{strategy}__minilm__run-{strategy}", rows)
        scored = [SCORES[strategy][q] for q in SCORES[strategy] if SCORES[strategy][q] is not None]
        results.write(
            "experiment_metrics",
            f"{strategy}__minilm__run-{strategy}",
            [
                {
                    "experiment_run_id": f"run-{strategy}",
                    "strategy": strategy,
                    "corpus_model": "minilm",
                    "n_questions": len(scored),
                    "recall": sum(scored) / len(scored),
                    "variant": "",
                    "neighbor_prev": 0,
                    "neighbor_next": 0,
                    "created_at": stamp,
                }
            ],
        )
    if not sweep:
        return results
    # a chunk-size sweep of the same run: other timestamp, other scores (must not reach the breakdowns)
    sweep_stamp = base + timedelta(minutes=5)
    results.write(
        "question_results",
        "recursive__minilm__size256__run-recursive",
        [_row("recursive", qid, docs, cat, diff, sweep_stamp, 0.0) for qid, docs, cat, diff in QUESTIONS],
    )
    results.write(
        "experiment_metrics",
        "recursive__minilm__size256__run-recursive",
        [
            {
                "experiment_run_id": "run-recursive",
                "strategy": "recursive",
                "corpus_model": "minilm",
                "n_questions": 9,
                "recall": 0.0,
                "variant": "size256_overlap32",
                "neighbor_prev": 0,
                "neighbor_next": 0,
                "created_at": sweep_stamp,
            }
        ],
    )
    return results
