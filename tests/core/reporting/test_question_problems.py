"""Both reports list the question problems (the question_errors table) and count judge-only questions."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from chunkbench_core.reporting import write_reports
from chunkbench_core.storage.results_db import ResultsDB

from .conftest import read


def test_reports_list_question_problems_once(base_results: ResultsDB, tmp_path: Path) -> None:
    stamp = datetime(2026, 11, 30, 12, 0)
    base_results.write(
        "question_errors",
        "latest",
        [
            {
                "file": "questions/mine.json",
                "question_set": "mine",
                "question_id": "q7",
                "field": "references[0].doc",
                "reason": "unknown key 'doc': did you mean 'document'?",
                "checked_at": stamp,
            },
            {
                "file": "questions/broken.json",
                "question_set": None,
                "question_id": None,
                "field": None,
                "reason": "JSON syntax error at line 3, column 1",
                "checked_at": stamp,
            },
        ],
    )
    try:
        paths = write_reports(base_results, tmp_path / "reports")
        for path in (paths.managerial, paths.technical):
            html = read(path)
            assert "Question problems" in html and "1 question(s) were left out" in html
            assert "1 file(s) could not be read" in html
            assert html.count("did you mean &#x27;document&#x27;?") == 1 and "(whole file)" in html
    finally:
        base_results.delete("question_errors", "latest")
    clean = read(write_reports(base_results, tmp_path / "clean").managerial)
    assert "id='no-question-problems'" in clean


def test_judge_only_questions_are_labelled_and_counted(base_results: ResultsDB, tmp_path: Path) -> None:
    from chunkbench_core.reporting.data import load_report_data
    from chunkbench_core.reporting.technical import render_technical

    data = load_report_data(base_results)
    first = data.questions["question_id"].iloc[0]
    data.questions["judge_only"] = data.questions["question_id"] == first
    html = render_technical(data, [], "technical_report.html")
    assert html.count(">judge only</span>") == int(data.questions["judge_only"].sum()) > 0
    assert "1 question(s) are judge-only, not scored without an LLM" in html


def test_reports_show_the_parse_ceiling_beside_the_scores(base_results: ResultsDB, tmp_path: Path) -> None:
    stamp = datetime(2026, 12, 4, 12, 0)
    base_results.record_parse_ceiling(
        [
            {
                "question_set": "fb",
                "document": "BOEING_2022_10K.pdf",
                "kind": "table",
                "found": 8,
                "total": 10,
                "checked_at": stamp,
            },
            {
                "question_set": "fb",
                "document": "BOEING_2022_10K.pdf",
                "kind": "text",
                "found": 17,
                "total": 17,
                "checked_at": stamp,
            },
        ]
    )
    try:
        paths = write_reports(base_results, tmp_path / "reports")
        for path in (paths.managerial, paths.technical):
            html = read(path)
            assert (
                "Scores cover the 93 % of evidence the parser kept; not found: 2 table passages in BOEING_2022_10K.pdf"
            ) in html
    finally:
        base_results.delete("parse_ceiling", "latest")
    clean = read(write_reports(base_results, tmp_path / "clean").managerial)
    assert "id='parse-ceiling'" not in clean
