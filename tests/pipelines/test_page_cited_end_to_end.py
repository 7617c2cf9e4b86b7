"""A FinanceBench-shaped set end to end through the command line: import with no map, run, page metrics and the
parse ceiling in every view (DuckDB, the reports, the Dagster metadata). The filings are PDFs built here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from tests.core.parsing.builders import build_text_pdf, fonts_available
from tests.pipelines.support.cli import chunkbench

ROOT = Path(__file__).resolve().parents[2]
MODEL = "all-minilm-l6-v2"

FILINGS = {
    "ACME_2023_10K.pdf": [
        "Acme annual report for 2023. Acme makes anvils, rockets and other tools for work in the desert.",
        (
            "Net income for the year was 1,234 million dollars, driven by strong demand for anvils in every region "
            "and by lower freight costs on the rocket line."
        ),
        "Revenues 12,345 11,002 10,456\nCost of products 8,765 8,001 7,654\nResearch and development 1,111 999 876",
        "Liquidity remained strong with cash and equivalents of 9,876 million dollars at the end of the year.",
    ],
    "ZETA_2023_10K.pdf": [
        "Zeta annual report for 2023. Zeta runs ferries between the islands of the northern archipelago.",
        "Passenger numbers rose to 4.2 million as two new ferries entered service on the longest routes.",
        "Fuel costs fell by 18 percent after the fleet moved to hybrid engines during the spring refit.",
    ],
}


def _evidence(text: str, doc: str, page: int) -> dict:
    return {"evidence_text": text, "doc_name": doc, "evidence_page_num": page, "evidence_text_full_page": ""}


ROWS = [
    {
        "financebench_id": "fb-1",
        "question": "What was Acme's net income?",
        "answer": "1,234 million dollars",
        "question_type": "metrics-generated",
        "company": "Acme",
        "evidence": [_evidence("Net income for the year was 1,234 million dollars", "ACME_2023_10K", 1)],
    },
    {
        "financebench_id": "fb-2",
        "question": "What were Acme's revenues and cost of products?",
        "answer": "12,345",
        "question_type": "metrics-generated",
        "company": "Acme",
        "evidence": [
            _evidence("Revenues 12,345 11,002 10,456\nCost of products 8,765 8,001 7,654", "acme 2023 10k", 2),
            _evidence("cash and equivalents of 9,876 million dollars", "ACME_2023_10K", 3),
        ],
    },
    {
        "financebench_id": "fb-3",
        "question": "What discount rate did Acme use for pensions?",
        "answer": "5.2 percent",
        "question_type": "domain-relevant",
        "company": "Acme",
        "evidence": [
            _evidence(
                "The discount rate for pension obligations was 5.2 percent, set after a review of "
                "corporate bond yields by the actuaries.",
                "ACME_2023_10K",
                3,
            )
        ],
    },
    {
        "financebench_id": "fb-4",
        "question": "How many passengers did Zeta carry?",
        "answer": "4.2 million",
        "question_type": "metrics-generated",
        "company": "Zeta",
        "evidence": [
            _evidence("Passenger numbers rose to 4.2 million as two new ferries entered service", "ZETA_2023_10K", 1)
        ],
    },
    {
        "financebench_id": "fb-5",
        "question": "Why did Zeta's fuel costs fall?",
        "answer": "hybrid engines",
        "question_type": "novel-generated",
        "company": "Zeta",
        "evidence": [
            _evidence("Fuel costs fell by 18 percent after the fleet moved to hybrid engines", "ZETA_2023_10K", 2)
        ],
    },
]


def sql(home: Path, query: str) -> list[tuple]:
    con = duckdb.connect(str(home / "chunkbench.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(home)])
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.mark.e2e
@pytest.mark.slow
def test_a_financebench_set_runs_with_page_metrics_and_the_parse_ceiling(tmp_path: Path) -> None:
    if not fonts_available():
        pytest.skip("DejaVu fonts (fonts-dejavu-core) not installed")
    corpus, questions, home = tmp_path / "corpus", tmp_path / "questions", tmp_path / "home"
    corpus.mkdir()
    questions.mkdir()
    for name, pages in FILINGS.items():
        build_text_pdf(corpus / name, pages)
    source = tmp_path / "financebench.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", encoding="utf-8")
    env = {
        "PATH": "/usr/bin:/bin",
        "CHUNKBENCH_HOME": str(home),
        "CHUNKBENCH_CORPUS": str(corpus),
        "CHUNKBENCH_QUESTIONS": str(questions),
        "CHUNKBENCH_BENCHMARK": "filings",
        **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
    }
    imported = chunkbench(
        ["questions", "import", str(source), "--out", str(questions / "fb.json"), "--no-locate"], env, cwd=ROOT
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "are 0-based" in imported.stdout and "parse ceiling: 83 %" in imported.stdout
    assert "5 question(s) read" in imported.stdout and "5 kept" in imported.stdout

    run = chunkbench(["run", "--strategy", "recursive", "--corpus-model", MODEL], env, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    results = home / "benchmarks" / "filings"
    rows = sql(
        results,
        "SELECT question_id, page_hit, page_recall, page_reciprocal_rank, recall, doc_hit "
        "FROM question_results ORDER BY question_id",
    )
    assert [r[0] for r in rows] == ["fb-1", "fb-2", "fb-3", "fb-4", "fb-5"]
    for qid, page_hit, page_recall, page_rr, recall, doc_hit in rows:
        assert page_hit in (0.0, 1.0) and 0 <= page_recall <= 1 and 0 <= page_rr <= 1, qid
        assert doc_hit == 1.0
        # the passage the parser did not keep: scored on its document and page, not on evidence text
        assert (recall is None) == (qid == "fb-3"), qid
    board = sql(results, "SELECT page_hit_rate, page_recall, page_mrr, doc_hit_rate FROM leaderboard")
    assert len(board) == 1 and all(v is not None for v in board[0])
    ceiling = sql(results, "SELECT document, kind, found, total FROM parse_ceiling ORDER BY document, kind")
    assert ("ACME_2023_10K.pdf", "text", 2, 3) in ceiling
    report = (results / "reports" / "benchmark_report.html").read_text(encoding="utf-8")
    assert "Scores cover the 83 % of evidence the parser kept; not found: 1 text passage in ACME_2023_10K.pdf" in report
    assert "Page hit@k" in report
    metadata = experiment_metadata(env)
    assert metadata and all(m.get("page_hit_rate") is not None and m.get("doc_hit_rate") is not None for m in metadata)


def experiment_metadata(env: dict[str, str]) -> list[dict]:
    """The metadata of every experiment_results materialization the run recorded in its Dagster instance."""
    from dagster import AssetKey

    from chunkbench_core.settings import Settings
    from chunkbench_pipelines.cli.instance import open_instance

    instance = open_instance(Settings.load(env), prepare=False)
    try:
        records = instance.fetch_materializations(AssetKey(["filings", "experiment_results"]), limit=10).records
        return [{k: v.value for k, v in r.asset_materialization.metadata.items()} for r in records]
    finally:
        instance.dispose()
