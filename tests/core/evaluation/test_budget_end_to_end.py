"""End to end: a strategy that returns whole documents wins recall@k but not the budgeted ranking metric.

Real MiniLM, real Qdrant engine, real retrieval and scoring: six long documents whose evidence
sits near their end. Whole documents hold every answer (recall@5 near 1) but the first 512
tokens of their context rarely reach it; 100-token chunks put the evidence itself first.
"""

from __future__ import annotations

import pytest

from chunkbench_core.chunking import make_chunker
from chunkbench_core.chunking.base import Chunker
from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.evaluation.experiment import (
    RetrievalOptions,
    collection_chunks,
    outcome_row,
    resolve_questions,
    run_retrieval,
)
from chunkbench_core.evaluation.questions import parse_question_set
from chunkbench_core.evaluation.recommendation import recommend
from chunkbench_core.evaluation.statistics import compare_configurations
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.storage.vector_store import VectorStore


class WholeDocument(Chunker):
    """One chunk per document: the most text a strategy can send."""

    name = "whole_document"

    def spans(self, text, tokens):
        return [(0, len(text))]


TOPICS = {
    "garden.md": ("gardening", "The greenhouse heater switches on below four degrees Celsius."),
    "servers.md": ("server operations", "Backup snapshots of the servers are kept for thirty-seven days."),
    "payroll.md": ("payroll", "Salaries are paid on the twenty-fifth day of each month."),
    "travel.md": ("business travel", "Economy class is required for flights shorter than six hours."),
    "security.md": ("information security", "Passwords must be rotated every ninety days."),
    "kitchen.md": ("the office kitchen", "The dishwasher is emptied by the facilities team at noon."),
}
QUESTIONS = {
    "garden.md": "At what temperature does the greenhouse heater switch on?",
    "servers.md": "How long are server backup snapshots kept?",
    "payroll.md": "On which day are salaries paid?",
    "travel.md": "When is economy class required for flights?",
    "security.md": "How often must passwords be rotated?",
    "kitchen.md": "Who empties the dishwasher and when?",
}


def long_document(name: str, topic: str, evidence: str) -> ParsedDocument:
    filler = [
        f"Section {i} of the handbook on {topic} describes general practice number {i} and who to ask "
        f"about {topic} in case of doubt."
        for i in range(1, 60)
    ]
    text = "\n\n".join([*filler, evidence, f"This closes the handbook on {topic}."])
    return ParsedDocument(document=name, markdown=text, tree=TreeNode(node_type="document"), units=[], parser="test")


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    documents = [long_document(name, topic, evidence) for name, (topic, evidence) in TOPICS.items()]
    qs = parse_question_set(
        {
            "name": "t",
            "questions": [
                {"id": f"q{i}", "question": QUESTIONS[name], "references": [{"document": name, "content": evidence}]}
                for i, (name, (_, evidence)) in enumerate(TOPICS.items())
            ],
        },
        "t.json",
    )
    resolved, errors = resolve_questions([qs], {d.document: d.markdown for d in documents})
    assert errors == []
    embedder = Embedder(get_model("all-minilm-l6-v2"))
    out = []
    with VectorStore(local_root=tmp_path_factory.mktemp("qdrant")) as store:
        for strategy, chunker in (
            ("whole_document", WholeDocument(chunk_size=100_000, chunk_overlap=0)),
            ("fixed_size", make_chunker("fixed_size", chunk_size=100, chunk_overlap=0)),
        ):
            chunks = [c for d in documents for c in chunker.chunk(d)]
            store.ensure_collection(strategy, embedder.spec.dimension)
            store.replace_points(strategy, chunks, embedder.embed([c.text for c in chunks], "document"))
            outcomes = run_retrieval(
                resolved,
                embedder,
                store,
                strategy,
                RetrievalOptions(top_k=5, strategy=strategy, chunks=collection_chunks(chunks)),
            )
            out += [{**outcome_row(o), "strategy": strategy, "corpus_model": "all-minilm-l6-v2"} for o in outcomes]
    return out


def mean(rows, strategy, column):
    values = [r[column] for r in rows if r["strategy"] == strategy]
    return sum(values) / len(values)


def test_whole_documents_win_recall_at_k_but_not_the_budgeted_metric(rows):
    assert mean(rows, "whole_document", "recall") > mean(rows, "fixed_size", "recall")
    assert mean(rows, "whole_document", "context_tokens") > 4 * mean(rows, "fixed_size", "context_tokens")
    by_recall = compare_configurations(rows, metric="recall@k")
    assert by_recall.best == "whole_document|all-minilm-l6-v2"
    by_budget = compare_configurations(rows)  # the default: recall_at_512
    assert by_budget.metric == "recall_at_512"
    assert by_budget.best == "fixed_size|all-minilm-l6-v2"
    assert mean(rows, "fixed_size", "recall_at_512") > mean(rows, "whole_document", "recall_at_512")
    costs = {
        f"{s}|all-minilm-l6-v2": {"projected_usd": 0.0, "context_tokens": mean(rows, s, "context_tokens")}
        for s in ("whole_document", "fixed_size")
    }
    assert recommend(by_budget, costs).strategy == "fixed_size"
