"""run_retrieval end to end on a real local Qdrant store with MiniLM: expansion, scores, determinism."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from chunkbench_core.chunking import make_chunker
from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.evaluation.experiment import (
    ExpansionSettings,
    aggregate,
    build_provenance,
    collection_chunks,
    outcome_row,
    ProvenanceInputs,
    resolve_questions,
    RetrievalOptions,
    run_retrieval,
)
from chunkbench_core.evaluation.metric_registry import METRICS
from chunkbench_core.evaluation.questions import parse_question_set
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.storage.vector_store import VectorStore

TOPICS = {
    "garden.md": [
        "Tomatoes need full sun and at least six hours of direct light every day.",
        "Water the tomato plants deeply twice a week rather than a little every day.",
        "Mulch keeps the soil moist and stops weeds from growing around the beds.",
        "Prune the lower leaves of the plants to keep fungal disease away.",
        "Harvest the fruit when it is firm and fully coloured.",
        "Compost made from kitchen scraps feeds the vegetable garden all year.",
    ],
    "servers.md": [
        "The backup job runs every night at two in the morning and keeps thirty days of snapshots.",
        "Restoring a snapshot requires approval from the on-call engineer.",
        "Disk usage alerts fire when a volume is more than eighty percent full.",
        "Database servers are patched on the first Tuesday of every month.",
        "All administrative access to servers goes through the bastion host with hardware keys.",
        "Logs are shipped to the central store and kept for one year.",
    ],
}
QUESTIONS = [
    (
        "q1",
        "How often should tomato plants be watered?",
        "garden.md",
        "Water the tomato plants deeply twice a week rather than a little every day.",
    ),
    (
        "q2",
        "How long are backup snapshots kept?",
        "servers.md",
        "The backup job runs every night at two in the morning and keeps thirty days of snapshots.",
    ),
    (
        "q3",
        "When are database servers patched?",
        "servers.md",
        "Database servers are patched on the first Tuesday of every month.",
    ),
    ("q4", "What does mulch do?", "garden.md", "Mulch keeps the soil moist"),
]


def document(name: str, sentences: list[str]) -> ParsedDocument:
    return ParsedDocument(
        document=name, markdown="\n\n".join(sentences), tree=TreeNode(node_type="document"), units=[], parser="test"
    )


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    documents = [document(name, sentences) for name, sentences in TOPICS.items()]
    chunker = make_chunker("fixed_size", chunk_size=20, chunk_overlap=0)
    chunks = [c for d in documents for c in chunker.chunk(d)]
    embedder = Embedder(get_model("all-minilm-l6-v2"))
    store = VectorStore(local_root=tmp_path_factory.mktemp("qdrant"))
    store.ensure_collection("col", embedder.spec.dimension)
    store.replace_points("col", chunks, embedder.embed([c.text for c in chunks], "document"))
    qs = parse_question_set(
        {
            "name": "t",
            "questions": [
                {"id": qid, "question": q, "references": [{"document": doc, "content": ref}]}
                for qid, q, doc, ref in QUESTIONS
            ],
        },
        "t.json",
    )
    resolved, errors = resolve_questions([qs], {d.document: d.markdown for d in documents})
    assert errors == []
    yield {"documents": documents, "chunks": chunks, "embedder": embedder, "store": store, "questions": resolved}
    store.close()


def run(setup, **kwargs):
    return run_retrieval(
        setup["questions"],
        setup["embedder"],
        setup["store"],
        "col",
        RetrievalOptions(top_k=2, strategy="fixed_size", chunks=collection_chunks(setup["chunks"]), **kwargs),
    )


def test_two_runs_give_identical_evidence_metrics(setup):
    first, second = run(setup, expansion=ExpansionSettings(1, 1)), run(setup, expansion=ExpansionSettings(1, 1))
    assert [o.scores for o in first] == [o.scores for o in second]
    assert [o.scores_expanded for o in first] == [o.scores_expanded for o in second]
    a, b = aggregate(first), aggregate(second)

    # NaN (a metric no question of the set applies to, such as the page metrics without cited pages) as None
    def same(x):
        return {k: None if v != v else v for k, v in x.items() if not k.endswith("_ms")}

    assert same(a) == same(b)


def test_expansion_adds_neighbors_and_scores_both_sets(setup):
    outcomes = run(setup, expansion=ExpansionSettings(1, 1))
    for o in outcomes:
        assert o.error is None
        assert len(o.retrieved) == 2 and len(o.expansion_tree) == 2
        assert len(o.expanded) >= len(o.retrieved)
        assert {c.chunk_id for c in o.retrieved} <= {c.chunk_id for c in o.expanded}
        assert all(c.role == "neighbor" and c.score is None for c in o.expanded if c.rank is None)
        assert o.scores_expanded["recall"] >= o.scores["recall"]
        assert set(o.scores) == {
            "recall",
            "precision",
            "iou",
            "precision_omega",
            "hit",
            "reciprocal_rank",
            "ndcg",
            "doc_hit",
            "doc_recall",
            "doc_reciprocal_rank",
        }  # spans have source documents too
        assert 0 <= o.scores["ndcg"] <= 1 and 0 < o.scores["precision_omega"] <= 1
    # the easy questions are answered by the top hit
    assert np.mean([o.scores["hit"] for o in outcomes]) >= 0.75


def test_without_expansion_the_after_scores_equal_the_before_scores(setup):
    for o in run(setup, expansion=ExpansionSettings(0, 0)):
        assert o.expanded == o.retrieved
        # precision_omega is the chunking's; the document-level metrics are not expanded (neighbors and parents
        # come from the same document)
        assert o.scores_expanded == {
            k: v for k, v in o.scores.items() if k != "precision_omega" and not k.startswith("doc_")
        }


def test_document_filter_and_missing_chunk_list(setup):
    outcomes = run_retrieval(
        setup["questions"], setup["embedder"], setup["store"], "col", RetrievalOptions(top_k=3, filter_by_document=True)
    )
    for o in outcomes:
        assert {c.document for c in o.retrieved} == {o.resolved.references[0].document}
        assert math.isnan(o.scores["precision_omega"]) and math.isnan(o.scores["ndcg"])
        assert not math.isnan(o.scores["reciprocal_rank"])


def test_rows_aggregates_and_provenance(setup):
    outcomes = run(setup, expansion=ExpansionSettings(1, 0))
    row = outcome_row(outcomes[0])
    for column in (
        "recall",
        "precision",
        "iou",
        "precision_omega",
        "hit",
        "reciprocal_rank",
        "ndcg",
        "recall_expanded",
        "ndcg_expanded",
        "n_expanded",
        "embed_ms",
        "search_ms",
        "expand_ms",
        "answer",
        "hallucination",
        "judge_error",
    ):
        assert column in row
    assert row["answer"] is None  # no LLM ran
    tree = json.loads(row["expansion_tree"])
    assert [n["rank"] for n in tree] == [1, 2]
    assert all(isinstance(r, dict) and "text" not in r for r in json.loads(row["retrieved"]))
    summary = aggregate(outcomes)
    for metric in METRICS.values(source="retrieval"):
        name = metric.run_name
        if metric.name.startswith("page_"):  # no page is cited in this set: the page metrics are NaN, never 0
            assert math.isnan(summary[name])
            continue
        assert summary[f"{name}_ci_low"] <= summary[name] <= summary[f"{name}_ci_high"]
    assert all(isinstance(v, (int, float)) for v in summary.values())
    assert "hallucination_rate" not in summary  # only when the LLM ran
    provenance = build_provenance(
        ProvenanceInputs(
            strategy="fixed_size",
            corpus_model="all-minilm-l6-v2",
            boundary_model=None,
            chunking_params={"chunk_size": 20, "chunk_overlap": 0},
            top_k=2,
            filter_by_document=False,
            expansion=ExpansionSettings(1, 0),
            question_set_hash="abc",
            question_sets={"t": "x"},
            documents={d.document: d.markdown for d in setup["documents"]},
            code_version="0.1.0",
        )
    )
    assert provenance["neighbors"] == {
        "neighbor_prev": 1,
        "neighbor_next": 0,
        "strategies": ["fixed_size"],
        "applied": True,
    }
    assert set(provenance["document_hashes"]) == set(TOPICS)
    json.dumps(provenance)


class TiedStore:
    """Returns hits with many tied scores, in an order that changes on every call (like a rebuilt index)."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls: list[int] = []
        self.flip = False

    def search(self, collection, vector, top_k, document=None):
        from chunkbench_core.storage.vector_store import SearchHit

        self.calls.append(top_k)
        self.flip = not self.flip
        items = sorted(self.scores.items(), key=lambda kv: (-kv[1], kv[0]), reverse=False)
        if self.flip:  # same scores, ties in reverse id order
            items = sorted(self.scores.items(), key=lambda kv: (-kv[1], tuple(-ord(ch) for ch in kv[0])))
        return [
            SearchHit(
                rank=i + 1, score=s, payload={"chunk_id": c, "document": "d", "start": 0, "end": 1, "chunk_index": 0}
            )
            for i, (c, s) in enumerate(items[:top_k])
        ]


def test_ties_are_broken_by_chunk_id_whatever_the_engine_order():
    from chunkbench_core.evaluation.experiment import TIE_MARGIN, search_stable

    scores = {"best": 0.9, **{f"dup{i:02d}": 0.5 for i in range(30)}, "low": 0.1}
    store = TiedStore(scores)
    first = [c.chunk_id for c in search_stable(store, "c", np.zeros(3), 3)]
    second = [c.chunk_id for c in search_stable(store, "c", np.zeros(3), 3)]
    assert first == second == ["best", "dup00", "dup01"]
    # 30 tied chunks straddle rank 3: the search widened until the tie ended
    assert store.calls[:3] == [3 + TIE_MARGIN, 2 * (3 + TIE_MARGIN), 4 * (3 + TIE_MARGIN)]
    ranks = [c.rank for c in search_stable(store, "c", np.zeros(3), 3)]
    assert ranks == [1, 2, 3]


def test_scoring_in_slices_gives_each_question_the_same_values(setup, monkeypatch):
    """Many questions are scored a slice at a time (a progress line between slices): a question's values are its
    own, whatever slice it is scored in."""
    from chunkbench_core.evaluation import experiment

    whole = run(setup, expansion=ExpansionSettings(1, 1))
    monkeypatch.setattr(experiment, "SCORE_SLICE", 1)
    sliced = run(setup, expansion=ExpansionSettings(1, 1))
    assert [o.values for o in sliced] == [o.values for o in whole]
    assert [o.scores for o in sliced] == [o.scores for o in whole]
    assert [o.budget_scores for o in sliced] == [o.budget_scores for o in whole]


@pytest.mark.parametrize("enabled", [True, False])
def test_a_run_pauses_the_cycle_collector_and_leaves_it_as_it_was(setup, monkeypatch, enabled):
    """The search and scoring run with the cycle collector paused (its passes cost a fifth of a large run), and
    the collector is as the caller had it afterwards, also when the run fails."""
    import gc

    from chunkbench_core.evaluation import experiment

    seen = []
    scoring = experiment.score_outcomes

    def watched(outcomes, chosen):
        seen.append(gc.isenabled())
        return scoring(outcomes, chosen)

    monkeypatch.setattr(experiment, "score_outcomes", watched)
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert run(setup)
        assert seen == [False] and gc.isenabled() is enabled

        def broken(outcomes, chosen):
            raise RuntimeError("scoring failed")

        monkeypatch.setattr(experiment, "score_outcomes", broken)
        with pytest.raises(RuntimeError, match="scoring failed"):
            run(setup)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
