"""A results folder of 20 configurations with long names, for the page-layout checks in Chromium.

5 strategies (one of them contextual_retrieval built without an LLM: "(heading context)") x 4 corpus models
with long names, 16 questions over four documents of four formats, every configuration scored on every
question with its own pattern of hits and misses (so the comparison gives tiers, p-values from 1 down, and
a recommendation), local models only (every dollar amount 0). The exact numbers are not the point: the
pages are.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from chunkbench_core.evaluation.recommendation import RankingSettings
from chunkbench_core.labels import configuration_label
from chunkbench_core.stages import compare_latest_runs
from chunkbench_core.storage.results_db import ResultsDB

STRATEGIES = ("fixed_size", "recursive", "semantic", "contextual_retrieval", "semantic_parent_child")
MODELS = ("all-minilm-l6-v2", "multilingual-e5-small", "bge-small-en-v1.5", "nomic-embed-text-v1.5-long-context")
CONFIGURATIONS = [(s, m) for s in STRATEGIES for m in MODELS]
NOW = datetime(2026, 11, 20, 9, 30)
RUN = "run-wide"
CHUNK = 120
TOP_K = 3

SENTENCES = (
    "Employees accrue holiday at two days per month of service. ",
    "Claims must be filed within thirty days of the incident. ",
    "Wear protective goggles whenever the grinder is running. ",
    "Version two adds offline reports and a faster index build. ",
    "The premium is paid annually unless the contract says otherwise. ",
    "Report every near miss to the safety officer the same day. ",
)
DOCUMENTS = {
    name: "".join(SENTENCES[(i + k) % len(SENTENCES)] for k in range(12))
    for i, name in enumerate(
        ("employee-handbook.md", "insurance-policy.docx", "safety-manual.pdf", "release-notes.txt")
    )
}
CATEGORIES = ("policy", "howto", "factual", "troubleshooting")


def labels() -> dict[str, str]:
    """key (strategy|corpus model) -> the label every report must show for it."""
    return {f"{s}|{m}": configuration_label(s, m, _provenance(s, m)) for s, m in CONFIGURATIONS}


def _provenance(strategy: str, model: str) -> dict[str, Any]:
    provenance: dict[str, Any] = {
        "strategy": strategy,
        "corpus_model": model,
        "top_k": TOP_K,
        "neighbors": {"neighbor_prev": 0, "neighbor_next": 0, "applied": False},
        "chunking_params": {"chunk_size": CHUNK},
        "question_set_hash": "wide-questions",
        "boundary_model": model if strategy.startswith("semantic") else None,
    }
    if strategy == "contextual_retrieval":  # no LLM configured: the chunks got their heading path
        provenance["context_sources"] = {"headings": 40}
    return provenance


def _chunks(document: str) -> list[tuple[int, int]]:
    text = DOCUMENTS[document]
    return [(s, min(s + CHUNK, len(text))) for s in range(0, len(text), CHUNK)]


def _questions() -> list[tuple[str, str, int, int, str]]:
    out = []
    for q in range(16):
        document = list(DOCUMENTS)[q % len(DOCUMENTS)]
        sentence = SENTENCES[q % len(SENTENCES)]
        start = DOCUMENTS[document].index(sentence)
        out.append((f"q{q + 1}", document, start, start + len(sentence) - 1, CATEGORIES[q % len(CATEGORIES)]))
    return out


def build(root: Path) -> ResultsDB:
    db = ResultsDB(root)
    db.write(
        "documents",
        "all",
        [
            {
                "document": d,
                "path": f"/corpus/{d}",
                "sha256": f"{i:064x}",
                "size_bytes": len(t),
                "status": "parsed",
                "error": None,
                "parser": d.rsplit(".", 1)[1],
                "n_chars": len(t),
                "n_units": 12,
                "warnings": "[]",
                "parsed_at": NOW,
            }
            for i, (d, t) in enumerate(DOCUMENTS.items())
        ],
    )
    questions = _questions()
    for ci, (strategy, model) in enumerate(CONFIGURATIONS):
        chunk_rows = []
        for document in DOCUMENTS:
            for k, (s, e) in enumerate(_chunks(document)):
                chunk_rows.append(
                    {
                        "chunk_id": f"{strategy}_{document}_{k:04d}",
                        "point_id": f"{ci}-{document}-{k}",
                        "strategy": strategy,
                        "corpus_model": model,
                        "document": document,
                        "chunk_index": k,
                        "start_offset": s,
                        "end_offset": e,
                        "token_count": 24 + ci % 5,
                        "content_type": "text",
                        "heading_path": "[]",
                        "parent_id": None,
                        "text": DOCUMENTS[document][s:e],
                        "embedded_text": None,
                        "chunking_params": json.dumps({"chunk_size": CHUNK}),
                        "materialized_at": NOW,
                    }
                )
        db.write("chunks", f"{strategy}__{model}", chunk_rows)
        rows = []
        for qi, (qid, document, start, end, category) in enumerate(questions):
            spans = _chunks(document)
            evidence = [k for k, (s, e) in enumerate(spans) if s < end and e > start]
            # where the evidence lands: rank 1 to 3, or missed; weaker configurations miss more often
            place = (qi * 7 + ci * 3) % (4 + ci // 5)
            others = [k for k in range(len(spans)) if k not in evidence]
            order = others[:place] + evidence + others[place:] if place < TOP_K else others
            picked = order[:TOP_K]
            covered = sum(max(0, min(end, spans[k][1]) - max(start, spans[k][0])) for k in picked)
            retrieved_chars = sum(spans[k][1] - spans[k][0] for k in picked)
            first = next((r for r, k in enumerate(picked, 1) if k in evidence), 0)
            recall = covered / (end - start)
            rows.append(
                {
                    "experiment_run_id": RUN,
                    "strategy": strategy,
                    "corpus_model": model,
                    "question_set": "wide",
                    "question_id": qid,
                    "question": f"What does the {document} say, question {qi + 1}?",
                    "category": category,
                    "difficulty": "hard" if qi % 3 == 0 else "easy",
                    "top_k": TOP_K,
                    "n_references": 1,
                    "created_at": NOW,
                    "error": None,
                    "retrieval_ms": 4.0 + ci,
                    "retrieved": json.dumps(
                        [
                            {
                                "rank": r,
                                "chunk_id": f"{strategy}_{document}_{k:04d}",
                                "document": document,
                                "start": spans[k][0],
                                "end": spans[k][1],
                                "score": round(0.9 - 0.1 * r, 2),
                            }
                            for r, k in enumerate(picked, 1)
                        ]
                    ),
                    "references": json.dumps([{"document": document, "start": start, "end": end}]),
                    "recall": recall,
                    "precision": covered / retrieved_chars,
                    "iou": covered / (retrieved_chars + (end - start) - covered),
                    "hit": float(first > 0),
                    "reciprocal_rank": 1 / first if first else 0.0,
                    "context_tokens": 72.0,
                    "cost_usd": 0.0,
                    "embedding_usd": 0.0,
                }
            )
        db.write("question_results", f"{strategy}__{model}__{RUN}", rows)

        def mean(column: str, rows: list = rows) -> float:
            return sum(r[column] for r in rows) / len(rows)

        db.write(
            "experiment_metrics",
            f"{strategy}__{model}__{RUN}",
            [
                {
                    "experiment_run_id": RUN,
                    "strategy": strategy,
                    "corpus_model": model,
                    "n_questions": len(rows),
                    "n_failed": 0,
                    "recall": mean("recall"),
                    "precision": mean("precision"),
                    "iou": mean("iou"),
                    "mrr": mean("reciprocal_rank"),
                    "hit_rate": mean("hit"),
                    "top_k": TOP_K,
                    "created_at": NOW,
                    "provenance": json.dumps(_provenance(strategy, model)),
                    "context_tokens": 72.0,
                    "query_ms": 3.5 + ci,
                    "cold_query_ms": 250.0 + ci,
                    "index_usd": 0.0,
                    "query_usd_per_1000": 0.0,
                    "cost_usd": 0.0,
                    "llm_priced": False,
                }
            ],
        )
    compare_latest_runs(db, RankingSettings(rank_metric="recall@k"))
    return db
