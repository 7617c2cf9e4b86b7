"""``chunkbench questions check``: every problem once (file, question, field, reason), exit 1 on any."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .support.cli import chunkbench

ROOT = Path(__file__).resolve().parents[2]
CLI = [str(Path(sys.executable).with_name("chunkbench"))]  # the bytes of `parse --text` through a real pipe
HANDBOOK = "# Leave\n\nEveryone gets 25 days of annual leave. Unused days expire in March.\n"


def run(*args, home, corpus):
    env = {
        "PATH": "/usr/bin:/bin",
        "CHUNKBENCH_HOME": str(home),
        "CHUNKBENCH_CORPUS": str(corpus),
        **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
    }  # a worktree's code first
    return chunkbench(args, env, cwd=ROOT)  # in this process (tests/pipelines/support/cli.py)


def test_questions_check_lists_each_problem_once_and_fails(tmp_path):
    corpus, questions = tmp_path / "corpus", tmp_path / "questions"
    corpus.mkdir()
    questions.mkdir()
    (corpus / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    good = {
        "id": "good",
        "question": "How many days?",
        "references": [{"document": "handbook.md", "content": "25 days"}],
    }
    (questions / "set.json").write_text(
        json.dumps(
            {
                "questions": [
                    good,
                    {"id": "wrong-key", "question": "?", "references": [{"doc": "handbook.md", "content": "25 days"}]},
                    {"id": "no-doc", "question": "?", "references": [{"document": "other.md", "content": "25 days"}]},
                    {
                        "id": "no-excerpt",
                        "question": "?",
                        "references": [{"document": "handbook.md", "content": "40 days"}],
                    },
                    {"id": "judge", "question": "When do days expire?"},
                ]
            }
        ),
        encoding="utf-8",
    )
    (questions / "syntax.json").write_text('{"questions": [\n  {"id": "a", "question": "b"},\n]}\n', encoding="utf-8")
    result = run("questions", "check", str(questions), home=tmp_path / "home", corpus=corpus)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4, result.stdout
    assert (
        sum("'wrong-key', field 'references[0].doc'" in line and "did you mean 'document'" in line for line in lines)
        == 1
    )
    assert sum("'no-doc', field 'references[0].document'" in line for line in lines) == 1
    assert sum("'no-excerpt', field 'references[0].content'" in line for line in lines) == 1
    assert sum("syntax.json: JSON syntax error at line 3, column 1" in line for line in lines) == 1
    assert "2 of 5 questions usable (1 with evidence, 1 judge-only" in result.stderr
    assert "parsing: 1/1 documents" in result.stderr  # parsed once, with a progress line, and stored
    assert list((tmp_path / "home" / "benchmarks").glob("*/parsed/*.md.*.json"))

    (questions / "syntax.json").unlink()
    (questions / "set.json").write_text(json.dumps({"questions": [good]}), encoding="utf-8")
    result = run("questions", "check", str(questions), home=tmp_path / "home", corpus=corpus)
    assert result.returncode == 0 and "1 of 1 questions usable" in result.stdout
    assert "parsing" not in result.stderr  # the stored parse of the unchanged document is read back


def test_parse_text_prints_the_parsed_text_exactly(tmp_path):
    from chunkbench_core.parsing import parse

    from chunkbench_core.datasets import SAMPLE_CORPUS

    sample = SAMPLE_CORPUS / "persian_leave_policy.docx"
    result = subprocess.run(
        [*CLI, "parse", str(sample), "--text"],
        capture_output=True,
        timeout=300,
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "CHUNKBENCH_HOME": str(tmp_path),
            **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
        },
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode("utf-8") == parse(str(sample)).markdown


@pytest.mark.slow
def test_questions_import_writes_a_set_that_checks_clean(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    source = tmp_path / "testset.jsonl"
    source.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"user_input": "How many days?", "reference": "25", "reference_contexts": ["25 days of annual leave"]},
                {"user_input": "Pets?", "reference": "?", "reference_contexts": ["Dogs are welcome"]},
            ]
        ),
        encoding="utf-8",
    )
    out = tmp_path / "questions" / "imported.json"
    result = run(
        "questions", "import", "--format", "ragas", str(source), "--out", str(out), home=tmp_path / "h", corpus=corpus
    )
    # the context found nowhere keeps its question (judge-only), and the import says so
    assert result.returncode == 0, result.stderr
    assert "ragas-0002" in result.stderr and "not verbatim" in result.stderr
    assert "2 question(s) read" in result.stdout and "2 kept" in result.stdout and "1 judge-only" in result.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["name"] == "imported" and [q["id"] for q in data["questions"]] == ["ragas-0001", "ragas-0002"]
    assert run("questions", "check", str(out.parent), home=tmp_path / "h", corpus=corpus).returncode == 0


FILINGS = {
    "AAPL 2023 Q3.md": "# Apple 10-Q\n\n| Total net sales | 81,797 | 82,959 |\n\nGross margin was driven by a different "
    "mix of products and services.\n",
    "MSFT 2023 Q3.md": "# Microsoft 10-Q\n\n| Revenue | 56,517 |\n\nGross margin was driven by a different mix of "
    "products and services.\n",
}


@pytest.mark.slow
def test_import_a_sheet_guesses_the_mapping_asks_for_confirmation_then_locates_and_reviews(tmp_path):
    import csv

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in FILINGS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    sheet = tmp_path / "golden.csv"
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(
            [
                ["Question", "Source Docs", "Question Type", "Source Chunk Type", "Answer"],
                ["Net sales a year earlier?", "*AAPL*", "figure", "Table", "Net sales were $82,959 million."],
                [
                    "Microsoft's margin?",
                    "*MSFT*",
                    "why",
                    "Text",
                    "Gross margin was driven by a “different mix” of products and services.",
                ],
            ]
        )
    out = tmp_path / "questions" / "golden.json"
    home = tmp_path / "h"
    asked = run("questions", "import", str(sheet), "--out", str(out), home=home, corpus=corpus)
    assert asked.returncode == 2 and not out.exists()  # no terminal, no --yes: the guess is shown, nothing written
    assert (
        "guessed column mapping" in asked.stdout and "'Source Chunk Type'" in asked.stdout and "--yes" in asked.stderr
    )
    mapped = run(
        "questions",
        "import",
        str(sheet),
        "--out",
        str(out),
        "--map",
        'question=Question,answer=Answer,sources="Source Docs",category="Source Chunk Type"',
        home=home,
        corpus=corpus,
    )
    assert mapped.returncode == 0, mapped.stderr
    assert "evidence located for 2 of 2 question(s)" in mapped.stdout and "1 by answer figures" in mapped.stdout
    assert "labels kept: Question Type" in mapped.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [q["category"] for q in data["questions"]] == ["Table", "Text"]
    assert data["questions"][1]["references"][0]["document"] == "MSFT 2023 Q3.md"
    page = run("questions", "review", str(out), home=home, corpus=corpus)
    assert page.returncode == 0 and "2 located reference(s) to review" in page.stdout
    assert (tmp_path / "questions" / "golden.review.html").is_file()
    accepted = run("questions", "review", str(out), "--accept-all", home=home, corpus=corpus)
    assert accepted.returncode == 0 and "2 located reference(s) accepted" in accepted.stdout
    assert "located_by" not in out.read_text(encoding="utf-8").split('"questions"')[1]
    relocated = run("questions", "locate", str(out), home=home, corpus=corpus)
    assert relocated.returncode == 0 and "written to" in relocated.stdout  # accepted ones stay as they are
    assert run("questions", "check", str(out.parent), home=home, corpus=corpus).returncode == 0
    guessed = run(
        "questions",
        "import",
        str(sheet),
        "--out",
        str(tmp_path / "g2.json"),
        "--yes",
        "--no-locate",
        home=home,
        corpus=corpus,
    )
    assert guessed.returncode == 0 and 'category="Question Type"' in guessed.stdout
    written = json.loads((tmp_path / "g2.json").read_text(encoding="utf-8"))["questions"]
    assert not any("located_by" in r for q in written for r in q.get("references", []))


def test_a_deeply_nested_question_file_is_one_line_in_check(tmp_path):
    corpus, questions = tmp_path / "corpus", tmp_path / "questions"
    corpus.mkdir()
    questions.mkdir()
    (corpus / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    (questions / "deep.json").write_text('{"questions": ' + "[" * 50_000 + "]" * 50_000 + "}", encoding="utf-8")
    result = run("questions", "check", str(questions), home=tmp_path / "h", corpus=corpus)
    assert result.returncode == 1 and "Traceback" not in result.stderr + result.stdout
    assert "deep.json: is nested too deeply to read" in result.stdout


def test_generate_without_an_llm_says_what_to_set(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "handbook.md").write_text(HANDBOOK * 5, encoding="utf-8")
    result = run(
        "questions", "generate", "--n", "2", "--out", str(tmp_path / "g.json"), home=tmp_path / "h", corpus=corpus
    )
    assert result.returncode == 2 and "CHUNKBENCH_LLM_MODEL" in result.stderr and "questions draft" in result.stderr
    assert not (tmp_path / "g.json").exists()
    dry = run(
        "questions",
        "generate",
        "--n",
        "2",
        "--out",
        str(tmp_path / "g.json"),
        "--dry-run",
        home=tmp_path / "h",
        corpus=corpus,
    )
    assert dry.returncode == 0 and "dry run:" in dry.stdout and "Nothing was sent" in dry.stdout


def test_questions_import_of_a_financebench_file_prints_pages_and_the_parse_ceiling(tmp_path):
    from tests.core.parsing.builders import build_text_pdf, fonts_available

    if not fonts_available():
        pytest.skip("DejaVu fonts (fonts-dejavu-core) not installed")
    corpus, questions = tmp_path / "corpus", tmp_path / "questions"
    corpus.mkdir()
    questions.mkdir()
    build_text_pdf(
        corpus / "ACME_2023_10K.pdf",
        [
            "Acme annual report. The company makes anvils, rockets and other tools for desert work.",
            "Net income for the year was 1,234 million dollars, driven by strong demand for anvils in every region.",
            "Liquidity remained strong with cash and equivalents of 9,876 million dollars at the end of the year.",
        ],
    )

    def evidence(text, page):
        return {"evidence_text": text, "doc_name": "ACME_2023_10K", "evidence_page_num": page}

    rows = [
        {
            "financebench_id": "fb-1",
            "question": "Net income?",
            "answer": "1,234 million",
            "company": "Acme",
            "evidence": [evidence("Net income for the year was 1,234 million dollars", 1)],
        },
        {
            "financebench_id": "fb-2",
            "question": "Cash?",
            "answer": "9,876 million",
            "company": "Acme",
            "evidence": [
                evidence("cash and equivalents of 9,876 million dollars", 2),
                evidence("The pension discount rate was 5.2 percent after a review of bond yields.", 2),
                {"doc_name": "ACME_2023_10K", "evidence_page_num": "two"},
            ],
        },
    ]
    source = tmp_path / "financebench.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    out = questions / "fb.json"
    result = run(
        "questions", "import", str(source), "--out", str(out), "--no-locate", home=tmp_path / "home", corpus=corpus
    )
    assert result.returncode == 1, result.stderr  # one malformed evidence object: named, the rest imported
    assert "'fb-2', field 'evidence[2].evidence_text'" in result.stderr
    assert "page numbers of financebench.jsonl are 0-based" in result.stdout
    assert "parse ceiling: 67 % of the evidence (2 of 3 passages)" in result.stdout
    assert "2 question(s) read" in result.stdout and "2 kept" in result.stdout
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["parse_ceiling"]["not_found"][0]["page"] == 3
    assert [r.get("page") for r in written["questions"][0]["references"]] == [2]

    check = run("questions", "check", str(questions), home=tmp_path / "home", corpus=corpus)
    assert check.returncode == 0, check.stderr
    assert "parse ceiling: 67 % of the evidence (2 of 3 passages)" in check.stdout
    assert "1 text passage in ACME_2023_10K.pdf" in check.stdout
