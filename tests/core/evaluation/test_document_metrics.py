"""Document-level evidence: doc_hit@k, doc_recall@k, doc_mrr and the recall ceilings, hand-checked; questions
with source documents scored (not judge-only); the ranking's fallback to the document level; the counts
"N scored (M judge-only, not scored without an LLM)" and the evidence warnings."""

from __future__ import annotations

import json

import pytest

from chunkbench_core.evaluation import diagnostics, metrics
from chunkbench_core.evaluation.experiment import (
    QuestionOutcome,
    aggregate,
    outcome_row,
    reference_entries,
    resolve_questions,
    score_outcomes,
)
from chunkbench_core.evaluation.metric_registry import METRICS, Scored
from chunkbench_core.evaluation.questions import Span, parse_question_set
from chunkbench_core.evaluation.recommendation import metric_definition, recommend
from chunkbench_core.evaluation.retrieval import RetrievedChunk
from chunkbench_core.evaluation.statistics import DOCUMENT_RANK_METRIC, canonical_metric, compare_configurations
from chunkbench_core.wording import scored_counts

DOCS = {
    "2022 Q3 BRLF.pdf": "Brilliant Foods third quarter. Net sales 1,234. Gross margin 567.",
    "2023 Q3 ACME.pdf": "Acme third quarter 2023. Total net sales 82,959. Gross margin 36,413.",
    "2024 Q1 CBLT.pdf": "Cobalt first quarter 2024. Net sales 9,999. Operating income (3,000).",
    "notes.md": "Unrelated notes about the office kitchen.",
}


def hit(rank: int, document: str, start: int = 0, end: int = 10) -> RetrievedChunk:
    return RetrievedChunk(rank, f"{document}-{rank}-{start}", document, start, end, 1.0 - rank / 100)


# -- the formulas, by hand ---------------------------------------------------------------------------------
def test_doc_recall_at_k_by_hand() -> None:
    sources = ["A.pdf", "B.pdf", "C.pdf", "D.pdf"]
    ranked = ["A.pdf", "A.pdf", "E.pdf", "C.pdf", "A.pdf"]  # top 5: documents A, E, C (A three times)
    # {A, E, C} ∩ {A, B, C, D} = {A, C}: 2 of the 4 source documents
    assert metrics.document_recall(ranked, sources) == 0.5
    assert metrics.document_recall(ranked[:2], sources) == 0.25  # top 2: A only
    assert metrics.document_recall(["E.pdf"], sources) == 0.0
    assert metrics.document_recall(ranked, ["C.pdf"]) == 1.0
    assert metrics.document_recall(ranked, []) == 0.0
    assert metrics.document_hit(ranked, sources) == 1.0 and metrics.document_hit(["E.pdf"], sources) == 0.0
    assert metrics.document_reciprocal_rank(["E.pdf", "E.pdf", "C.pdf"], sources) == pytest.approx(1 / 3)
    assert metrics.document_reciprocal_rank(["E.pdf"], sources) == 0.0
    # the best doc recall k chunks can reach: min(1, k / |S|)
    assert metrics.document_recall_ceiling(5, sources) == 1.0
    assert metrics.document_recall_ceiling(2, sources) == 0.5
    assert metrics.document_recall_ceiling(3, sources * 2) == 0.75  # each document counts once


def test_span_recall_ceiling_by_hand() -> None:
    # evidence: 100 characters in a (0-100) and 50 in b (0-50); chunks of 40 characters, no overlap
    references = [Span("a", 0, 100), Span("b", 0, 50)]
    chunks = [Span("a", s, s + 40) for s in range(0, 120, 40)] + [Span("b", s, s + 40) for s in range(0, 80, 40)]
    # the chunks hold 40, 40, 20 (a) and 40, 10 (b) evidence characters; the best 3 hold 40 + 40 + 40 = 120 of 150
    assert metrics.recall_ceiling(chunks, references, 3) == pytest.approx(120 / 150)
    assert metrics.recall_ceiling(chunks, references, 5) == pytest.approx(1.0)
    assert metrics.recall_ceiling(chunks, references, 1) == pytest.approx(40 / 150)
    # overlapping chunks: the second pick adds only what the first does not cover
    overlapping = [Span("a", 0, 60), Span("a", 30, 90), Span("a", 60, 100)]
    assert metrics.recall_ceiling(overlapping, [Span("a", 0, 100)], 2) == pytest.approx(1.0)  # 0-60 and 60-100
    assert metrics.recall_ceiling([], references, 3) == 0.0


def test_the_registry_holds_them_with_definitions() -> None:
    for name, run_name in (
        ("doc_hit", "doc_hit_rate"),
        ("doc_recall", "doc_recall"),
        ("doc_reciprocal_rank", "doc_mrr"),
    ):
        metric = METRICS[name]
        assert metric.run_name == run_name and "leaderboard" in metric.views and "by_group" in metric.views
        assert metric.description
    assert not METRICS["doc_recall_ceiling"].views and not METRICS["recall_ceiling"].views  # shown apart
    assert canonical_metric("doc_recall@k") == "doc_recall" and canonical_metric("doc_mrr") == "doc_reciprocal_rank"
    assert "source documents" in metric_definition("doc_recall")


# -- a question with source documents is scored -------------------------------------------------------------
@pytest.fixture()
def resolved():
    qs = parse_question_set(
        {
            "name": "financial",
            "questions": [
                {
                    "id": "span",
                    "question": "Acme gross margin?",
                    "labels": {"Source Chunk Type": "Table"},
                    "references": [
                        {
                            "document": "2023 Q3 ACME.pdf",
                            "content": "Gross margin 36,413.",
                            "located_by": "answer_figures",
                            "score": 0.9,
                        }
                    ],
                },
                {
                    "id": "two",
                    "question": "Net sales of Brilliant and Cobalt?",
                    "references": [{"document": "*Q3 BRLF*"}, {"document": "2024 Q1 CBLT.pdf"}],
                },
                {"id": "plain", "question": "What is the weather?"},
            ],
        },
        "financial.json",
    )
    found, errors = resolve_questions([qs], DOCS)
    assert errors == []
    return {q.question.id: q for q in found}


def test_source_documents_make_a_question_scored(resolved) -> None:
    assert resolved["two"].documents == ("2022 Q3 BRLF.pdf", "2024 Q1 CBLT.pdf")
    assert not resolved["two"].judge_only and resolved["two"].scoring == "documents"
    assert resolved["span"].documents == ("2023 Q3 ACME.pdf",) and resolved["span"].scoring == "spans"
    assert resolved["plain"].judge_only


def _outcomes(resolved, top_k: int = 2):
    hits = {
        "span": [hit(1, "notes.md"), hit(2, "2023 Q3 ACME.pdf", 45, 69)],
        "two": [hit(1, "2024 Q1 CBLT.pdf"), hit(2, "notes.md")],
        "plain": [hit(1, "notes.md"), hit(2, "notes.md", 10, 20)],
    }
    out = []
    for qid in ("span", "two", "plain"):
        rq = resolved[qid]
        o = QuestionOutcome(rq, retrieved=hits[qid], expanded=hits[qid])
        o.scored = Scored(
            rq.key, rq.question, tuple(rq.references), tuple(hits[qid]), tuple(hits[qid]), top_k, documents=rq.documents
        )
        out.append(o)
    score_outcomes(out, METRICS.values(source="retrieval"))
    return out


def test_document_metrics_next_to_the_span_metrics(resolved) -> None:
    span, two, plain = _outcomes(resolved)
    # the span question: its evidence is in the second chunk
    assert span.values["recall"] == 1.0 and span.values["doc_recall"] == 1.0
    assert span.values["doc_reciprocal_rank"] == 0.5 and span.values["doc_hit"] == 1.0
    # two source documents, top 2 brings one of them first: doc recall 1/2, doc RR 1; no span metrics
    assert two.values["doc_recall"] == 0.5 and two.values["doc_reciprocal_rank"] == 1.0
    assert two.values["recall"] is None and two.values["hit"] is None
    assert two.values["doc_recall_ceiling"] == 1.0  # 2 chunks can reach 2 documents
    assert all(v is None for k, v in plain.values.items() if k.startswith("doc_"))
    summary = aggregate([span, two, plain], n_resamples=50)
    assert summary["n_questions"] == 2 and summary["n_judge_only"] == 1 and summary["n_documents_only"] == 1
    assert summary["n_located"] == 1
    assert summary["doc_recall"] == pytest.approx(0.75) and summary["doc_mrr"] == pytest.approx(0.75)
    assert summary["recall"] == 1.0  # over the span question only


def test_question_rows_carry_labels_sources_and_how_evidence_was_found(resolved) -> None:
    span, two, plain = _outcomes(resolved)
    row = outcome_row(span)
    assert json.loads(row["labels"]) == {"Source Chunk Type": "Table"}
    assert json.loads(row["source_documents"]) == ["2023 Q3 ACME.pdf"]
    assert row["n_located_references"] == 1 and row["evidence_origin"] == "located" and not row["judge_only"]
    (entry,) = reference_entries(span.resolved)
    assert entry["located_by"] == "answer_figures" and entry["score"] == 0.9
    assert DOCS["2023 Q3 ACME.pdf"][entry["start"] : entry["end"]] == "Gross margin 36,413."
    assert outcome_row(two)["evidence_origin"] == "documents" and outcome_row(two)["labels"] is None
    assert outcome_row(plain)["judge_only"] and outcome_row(plain)["evidence_origin"] is None


def test_ceiling_of_a_question_with_more_documents_than_top_k(resolved) -> None:
    _, two, _ = _outcomes(resolved, top_k=1)
    assert two.values["doc_recall_ceiling"] == 0.5  # 1 chunk comes from 1 of the 2 source documents


# -- ranking, counts, warnings ------------------------------------------------------------------------------
def _rows(scores: dict[str, list[float | None]], judge_only: int = 0) -> list[dict]:
    rows = []
    for configuration, values in scores.items():
        strategy, model = configuration.split("|")
        for i, v in enumerate(values):
            rows.append(
                {
                    "strategy": strategy,
                    "corpus_model": model,
                    "question_set": "s",
                    "question_id": f"q{i}",
                    "judge_only": False,
                    "n_references": 0,
                    "doc_recall": v,
                    "recall_at_512": None,
                }
            )
        for j in range(judge_only):
            rows.append(
                {
                    "strategy": strategy,
                    "corpus_model": model,
                    "question_set": "s",
                    "question_id": f"j{j}",
                    "judge_only": True,
                    "n_references": 0,
                    "doc_recall": None,
                    "recall_at_512": None,
                }
            )
    return rows


def test_ranking_falls_back_to_the_document_level_and_says_so() -> None:
    rows = _rows({"recursive|minilm": [1.0, 0.5, 1.0, 0.5], "fixed_size|minilm": [0.5, 0.5, 0.5, 0.0]}, judge_only=2)
    comparison = compare_configurations(rows)
    assert comparison.metric == DOCUMENT_RANK_METRIC and comparison.best == "recursive|minilm"
    assert "no evidence spans, only source documents" in comparison.metric_note
    best = comparison.configurations[0]
    assert best.n_questions == 4 and best.n_judge_only == 2 and best.n_documents_only == 4  # judge-only not counted
    rec = recommend(comparison, {}, resamples=20)
    assert rec is not None and rec.metric == "doc_recall" and rec.n_questions == 4
    assert "ranking is at the document level" in rec.reason
    assert (
        "Questions: 4 scored (2 judge-only, not scored without an LLM); all 4 at the document level only" in rec.reason
    )
    # asked for explicitly, a document metric is used as it is
    rows_with_rr = [{**r, "doc_reciprocal_rank": r["doc_recall"]} for r in rows]
    assert compare_configurations(rows_with_rr, metric="doc_mrr").metric == "doc_reciprocal_rank"
    assert compare_configurations(rows, metric="doc_recall@k").metric == "doc_recall"


def test_counts_wording() -> None:
    assert scored_counts(32, 7) == "32 scored (7 judge-only, not scored without an LLM)"
    assert scored_counts(10, 0) == "10 scored (0 judge-only)"
    assert scored_counts(10, 2, judged=True) == "10 scored (2 judge-only, scored by the LLM judge only)"
    assert scored_counts(10, 0, 4).endswith(
        "; 4 of the 10 at the document level only (source documents, no evidence spans)"
    )


def test_low_recall_and_ceiling_warnings() -> None:
    low = diagnostics.low_evidence_recall("recursive × minilm", 0.18)
    assert low is not None and "0.18" in low.message and "questions or their evidence may be wrong" in low.message
    assert diagnostics.low_evidence_recall("recursive × minilm", 0.31) is None
    assert diagnostics.low_evidence_recall("x", None) is None
    ceiling = diagnostics.recall_ceiling(
        "recursive × minilm",
        diagnostics.Ceiling(
            top_k=2, n_multi_document=3, n_capped=2, doc_ceiling=0.5, doc_recall=0.25, recall_ceiling=0.4, recall=0.2
        ),
    )
    assert ceiling is not None
    assert "2 questions have evidence in more documents than top_k 2" in ceiling.message
    assert "cannot exceed 0.50" in ceiling.message and "reaches 0.25" in ceiling.message
    assert "could reach is 0.40; it reaches 0.20" in ceiling.message
    none_capped = diagnostics.Ceiling(
        top_k=5, n_multi_document=2, n_capped=0, doc_ceiling=0.0, doc_recall=0.0, recall_ceiling=1.0
    )
    assert diagnostics.recall_ceiling("x", none_capped) is None
