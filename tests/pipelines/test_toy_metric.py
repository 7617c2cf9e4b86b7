"""A new metric is one pure function and one registry line: a toy metric added here alone is scored per question,
stored long, averaged with its interval, and shows up in the leaderboard view, ``chunkbench leaderboard --wide``
and the technical report, with nothing else changed.

Everything but the toy is real: MiniLM, the embedded Qdrant, the results store (DuckDB over Parquet), the
comparison, the command line and the report writer.
"""

import json
from dataclasses import replace

import pytest

from chunkbench_core.embedding import Embedder, builtin_registry, get_model
from chunkbench_core.evaluation.metric_registry import METRICS, Metric, Scored, per_question
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.reporting import write_reports
from chunkbench_core.stages.collections import BuildRequest, build_collection
from chunkbench_core.stages.comparison import compare_latest_runs
from chunkbench_core.stages.experiments import ExperimentRequest, run_experiment
from chunkbench_core.stages.spec import CollectionRequest, SpecContext, resolve_collection
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore

MODEL = "all-minilm-l6-v2"
TEXTS = {
    "garden.md": "Tomatoes need full sun. Water the tomato plants deeply twice a week. Mulch keeps the soil moist.",
    "servers.md": "The backup job runs every night. Database servers are patched on the first Tuesday of every month.",
}
QUESTIONS = [
    ("q1", "How often should tomato plants be watered?", "garden.md", "deeply twice a week"),
    ("q2", "When are database servers patched?", "servers.md", "patched on the first Tuesday of every month"),
]


def on_evidence_documents(q: Scored) -> float:
    """Share of the retrieved chunks that come from a document holding evidence."""
    documents = {r.document for r in q.references}
    return sum(h.document in documents for h in q.hits) / len(q.hits) if q.hits else 0.0


@pytest.fixture()
def toy_metric():
    """The registry line (and its removal after the test)."""
    METRICS.add(
        Metric(
            "on_evidence_documents",
            per_question(on_evidence_documents),
            "on_evidence_documents_rate",
            "On-evidence hits",
            "share of the retrieved chunks that come from a document holding evidence",
        )
    )
    yield
    METRICS.remove("on_evidence_documents")


@pytest.fixture()
def benchmark(tmp_path):
    home = tmp_path / "home"
    results = ResultsDB(home / "benchmarks" / "toy")
    questions = tmp_path / "questions"
    questions.mkdir()
    (questions / "set.json").write_text(
        json.dumps(
            {
                "name": "set",
                "questions": [
                    {"id": i, "question": q, "references": [{"document": d, "content": c}]} for i, q, d, c in QUESTIONS
                ],
            }
        ),
        encoding="utf-8",
    )
    documents = [
        ParsedDocument(document=name, markdown=text, tree=TreeNode(node_type="document"), units=[], parser="test")
        for name, text in TEXTS.items()
    ]
    return home, results, questions, documents


def test_a_toy_metric_is_scored_stored_ranked_printed_and_reported(
    toy_metric, benchmark, tmp_path, monkeypatch, capsys
):
    home, results, questions, documents = benchmark
    embedder = Embedder(get_model(MODEL))
    spec = resolve_collection(
        CollectionRequest("fixed_size", MODEL, chunk_size=8, chunk_overlap=0), SpecContext(builtin_registry())
    )
    spec = replace(spec, variant="")  # the partition's own collection (8-token chunks), ranked on the board
    with VectorStore(local_root=tmp_path / "qdrant") as store:
        build_collection(BuildRequest(spec, documents), embedder, None, store, results)
        summary = run_experiment(
            ExperimentRequest(spec, "run-1", questions, documents, top_k=2), embedder, store, results
        )
    # its exact value, worked out again from what the run stored: each question's share of retrieved chunks from a
    # document of its references, then their mean (MiniLM ranks both of each question's chunks from its document)
    stored = results.query('SELECT question_id, retrieved, "references" FROM question_results ORDER BY question_id')
    expected = {}
    for row in stored.to_dict("records"):
        evidence = {r["document"] for r in json.loads(row["references"])}
        hits = json.loads(row["retrieved"])
        expected[row["question_id"]] = sum(h["document"] in evidence for h in hits) / len(hits)
    assert expected == {"q1": 1.0, "q2": 1.0}
    assert summary.metrics["on_evidence_documents_rate"] == sum(expected.values()) / len(expected) == 1.0
    assert summary.metrics["on_evidence_documents_rate_ci_low"] <= summary.metrics["on_evidence_documents_rate"]
    # stored long: one row per question, read back as a column of the wide view
    long = results.query("SELECT * FROM question_scores WHERE metric = 'on_evidence_documents'")
    assert sorted(long["question_id"]) == ["q1", "q2"]
    wide = results.query("SELECT question_id, on_evidence_documents, recall FROM question_results ORDER BY question_id")
    assert wide["on_evidence_documents"].tolist() == long.sort_values("question_id")["value"].tolist()
    assert dict(zip(wide["question_id"], wide["on_evidence_documents"])) == expected and wide["recall"].notna().all()

    compare_latest_runs(results)
    board = results.leaderboard()
    assert "on_evidence_documents_rate" in board.columns
    assert board["on_evidence_documents_rate"].iloc[0] == pytest.approx(summary.metrics["on_evidence_documents_rate"])

    from chunkbench_pipelines.cli import main

    monkeypatch.setenv("CHUNKBENCH_HOME", str(home))
    monkeypatch.setenv("CHUNKBENCH_BENCHMARK", "toy")
    capsys.readouterr()
    assert main(["leaderboard", "--wide"]) == 0
    printed = capsys.readouterr().out
    assert "on_evidence_documents_rate" in printed.splitlines()[0]

    paths = write_reports(results, results.root / "reports")
    technical = paths.technical.read_text(encoding="utf-8")
    assert "On-evidence hits" in technical
