"""The financial fixture end to end through the command line, as a team with a golden-set sheet would run it.

3 PDFs of financial statements and the CSV of 10 questions (source-document globs, answers, no evidence):
``chunkbench questions import`` with the column mapping (the evidence located from the answers), ``chunkbench
questions review --accept-all``, a plain question without evidence beside them, then ``chunkbench run`` with
MiniLM and two strategies. Checked: the document-level metrics next to the span metrics, the counts
"N scored (M judge-only, not scored without an LLM)" in every view, the labels as groups, and a table row's
chunk holding its period header.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

from tests.pipelines.support.cli import chunkbench

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "financial"
MAPPING = 'question=Question,answer=Answer,sources="Source Docs",category="Source Chunk Type"'
MODEL = "all-minilm-l6-v2"
STRATEGIES = ("structural", "recursive")
COUNTS = "10 scored (1 judge-only, not scored without an LLM)"


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``chunkbench ARGS`` called in this test process (its exit status and both streams, as a subprocess gives
    them; tests/pipelines/support/cli.py), so each command does not start Python, Dagster and the engines again."""
    result = chunkbench(args, env, cwd=ROOT)
    assert result.returncode == 0, f"chunkbench {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


def sql(home: Path, query: str) -> list[tuple]:
    con = duckdb.connect(str(home / "chunkbench.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(home)])
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory):
    root = tmp_path_factory.mktemp("financial")
    corpus, questions, home = root / "corpus", root / "questions", root / "home"
    corpus.mkdir()
    questions.mkdir()
    for pdf in FIXTURE.glob("*.pdf"):
        shutil.copy(pdf, corpus / pdf.name)
    env = {
        "PATH": "/usr/bin:/bin",
        "CHUNKBENCH_HOME": str(home),
        "CHUNKBENCH_CORPUS": str(corpus),
        "CHUNKBENCH_QUESTIONS": str(questions),
        "CHUNKBENCH_BENCHMARK": "financial",
        **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
    }
    target = questions / "financial.json"
    imported = cli(
        "questions", "import", str(FIXTURE / "questions.csv"), "--map", MAPPING, "--out", str(target), env=env
    )
    reviewed = cli("questions", "review", str(target), "--accept-all", env=env)
    # a question with neither evidence nor source documents: judge-only
    (questions / "plain.json").write_text(
        json.dumps({"name": "plain", "questions": [{"id": "p1", "question": "Which company had the best year?"}]}),
        encoding="utf-8",
    )
    run = chunkbench(
        ["run", *(a for s in STRATEGIES for a in ("--strategy", s)), "--corpus-model", MODEL], env, cwd=ROOT
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return {
        "home": home / "benchmarks" / "financial",
        "imported": imported.stdout,
        "reviewed": reviewed.stdout,
        "run": run.stdout,
        "questions": target,
        "env": env,
    }


def experiment_metadata(env: dict[str, str]) -> list[dict]:
    """The metadata of every experiment_results materialization the run recorded in its Dagster instance."""
    from dagster import AssetKey

    from chunkbench_core.settings import Settings
    from chunkbench_pipelines.cli.instance import open_instance

    instance = open_instance(Settings.load(env), prepare=False)
    try:
        # under the benchmark's key prefix
        records = instance.fetch_materializations(AssetKey(["financial", "experiment_results"]), limit=10).records
        return [{k: v.value for k, v in r.asset_materialization.metadata.items()} for r in records]
    finally:
        instance.dispose()


@pytest.mark.e2e
@pytest.mark.slow
def test_document_metrics_counts_and_table_headers(benchmark):
    home = benchmark["home"]
    data = json.loads(benchmark["questions"].read_text(encoding="utf-8"))
    assert len(data["questions"]) == 10
    # accepted: the located evidence became ordinary references (no located_by left)
    assert all(r.get("located_by") is None for q in data["questions"] for r in q.get("references", []))
    assert all(any("content" in r for r in q["references"]) for q in data["questions"])

    # document-level metrics next to the span metrics, for every question with source documents
    rows = sql(
        home,
        "SELECT strategy, question_id, judge_only, recall, doc_recall, doc_hit, doc_reciprocal_rank, "
        "doc_recall_ceiling, source_documents, labels, evidence_origin FROM question_results "
        "ORDER BY strategy, question_id",
    )
    assert len(rows) == 2 * 11
    for _strategy, qid, judge_only, recall, doc_recall, doc_hit, doc_rr, ceiling, sources, labels, origin in rows:
        if qid == "p1":
            assert judge_only and doc_recall is None and recall is None and origin is None
            continue
        assert not judge_only and origin == "written"
        assert recall is not None and 0 <= doc_recall <= 1 and doc_hit in (0.0, 1.0) and 0 <= doc_rr <= 1
        assert json.loads(sources) and ceiling == 1.0  # top_k 5 >= every question's source documents
        assert json.loads(labels)["Question Type"]
    board = sql(home, "SELECT strategy, n_questions, n_judge_only, recall, doc_recall, doc_mrr FROM leaderboard")
    assert {b[0] for b in board} == set(STRATEGIES)
    assert all(n == 10 and j == 1 and d is not None for _, n, j, _, d, _ in board)

    # the same counts in every view: the CLI, the recommendation's reason, the reports, the Dagster metadata
    printed = benchmark["run"]
    # once, in the recommendation's reason (the terminal's text is wrapped: compared with its spaces joined)
    assert " ".join(printed.split()).lower().count(f"questions: {COUNTS}.".lower()) == 1, printed
    (reason,) = sql(home, "SELECT reason FROM recommendation")[0]
    assert f"Questions: {COUNTS}." in reason
    report = (home / "reports" / "benchmark_report.html").read_text(encoding="utf-8")
    assert COUNTS in report
    assert "<option value='label:Question Type'>Question Type</option>" in report  # results by group, by label
    technical = (home / "reports" / "technical_report.html").read_text(encoding="utf-8")
    assert COUNTS in technical
    metadata = experiment_metadata(benchmark["env"])
    assert len(metadata) == len(STRATEGIES) and all(m["questions"] == COUNTS for m in metadata)
    # the labels of the sheet are groups of leaderboard_by_group
    dimensions = {d for (d,) in sql(home, "SELECT DISTINCT dimension FROM leaderboard_by_group")}
    assert {"label:Question Type", "category", "document"} <= dimensions
    tables = sql(
        home,
        "SELECT \"group\", n_questions FROM leaderboard_by_group WHERE dimension = 'category' "
        "AND strategy = 'structural' ORDER BY \"group\"",
    )
    assert tables == [("(none)", 0), ("Table", 6), ("Text", 4)]

    # a table row's chunk holds its period header
    for strategy in STRATEGIES:
        texts = [
            t
            for (t,) in sql(
                home,
                f"SELECT text FROM chunks WHERE strategy = '{strategy}' AND "
                "document = '2023 Q3 ACME.pdf' AND text LIKE '%Total net sales |%'",
            )
        ]
        assert texts, strategy
        assert all("Three Months Ended September 30, 2023" in t for t in texts), strategy
