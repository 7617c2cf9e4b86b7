"""FinanceBench-shaped question sets over PDFs built here: evidence objects, page conventions, the parse ceiling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkbench_core.evaluation.evidence import (
    KIND_LABEL,
    evidence_kind,
    find_evidence,
    page_convention,
    resolve_document_name,
)
from chunkbench_core.evaluation.importers import (
    ImportOptions,
    detect_format,
    import_questions,
    parse_mapping,
)
from chunkbench_core.evaluation.question_check import check_questions
from chunkbench_core.evaluation.questions import parse_question_set
from chunkbench_core.parsing import parse
from tests.core.parsing.builders import build_text_pdf, fonts_available

needs_fonts = pytest.mark.skipif(not fonts_available(), reason="DejaVu fonts (fonts-dejavu-core) not installed")

BOEING_PAGES = [
    "Boeing annual report. The company designs and builds commercial airplanes and defense systems.",
    (
        "Commercial Airplanes delivered 480 airplanes during the year, up from 340 the year before, as the "
        "production rate of the 737 program recovered."
    ),
    (
        "Revenues 66,608 62,286 58,158\nCost of products 59,277 53,996 54,319\nResearch and development 2,852 "
        "2,249 2,476"
    ),
    "The backlog at year end was 404 billion dollars, including more than 4,500 commercial airplanes on order.",
]
ACME_PAGES = [
    "Acme quarterly report for the third quarter, prepared for the shareholders of the company.",
    "Net income for the quarter was 1,234 million dollars, driven by strong demand for anvils in every region.",
    "Liquidity remained strong with cash and equivalents of 9,876 million dollars at the end of the quarter.",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], dict[str, list[int]]]:
    if not fonts_available():
        pytest.skip("DejaVu fonts (fonts-dejavu-core) not installed")
    folder = tmp_path_factory.mktemp("filings")
    texts: dict[str, str] = {}
    pages: dict[str, list[int]] = {}
    specs = {
        "BOEING_2022_10K.pdf": BOEING_PAGES,
        "ACME_2023Q3_10Q.pdf": ACME_PAGES,
        "PEPSI_2022.pdf": [
            (
                "PepsiCo annual report with snacks and beverages across many markets, sold in "
                "more than two hundred countries and territories around the world."
            )
        ],
        "pepsi-2022.pdf": [
            (
                "A second copy of the PepsiCo report, named differently by another team, kept in "
                "the shared folder next to the first one by mistake."
            )
        ],
    }
    for name, page_texts in specs.items():
        document = parse(build_text_pdf(folder / name, page_texts))
        texts[name] = document.markdown
        pages[name] = list(document.page_starts)
    return texts, pages


def _evidence(text: str, doc: str, page: int) -> dict:
    return {
        "evidence_text": text,
        "doc_name": doc,
        "evidence_page_num": page,
        "evidence_text_full_page": "the whole page as another extractor read it",
    }


def _question(qid: str, question: str, answer: str, evidence: list) -> dict:
    return {
        "financebench_id": qid,
        "company": "Boeing",
        "question_type": "metrics-generated",
        "question_reasoning": "Information extraction",
        "question": question,
        "answer": answer,
        "justification": "",
        "doc_period": 2022,
        "evidence": evidence,
    }


def _zero_based_rows() -> list[dict]:
    return [
        _question(
            "fb-1",
            "How many airplanes did Boeing deliver?",
            "480 airplanes",
            [
                _evidence(
                    "Commercial Airplanes delivered 480 airplanes during the year, up from 340 the year before",
                    "BOEING_2022_10K",
                    1,
                )
            ],
        ),
        # several evidence objects, from different pages, one given with other separators and case
        _question(
            "fb-2",
            "What were revenues and the backlog?",
            "66,608 and 404 billion",
            [
                _evidence("Revenues 66,608 62,286 58,158\nCost of products 59,277 53,996 54,319", "boeing 2022 10k", 2),
                _evidence(
                    "The backlog at year end was 404 billion dollars, including more than 4,500 "
                    "commercial airplanes on order.",
                    "BOEING_2022_10K",
                    3,
                ),
            ],
        ),
        # evidence the parser cannot keep (the passage is on no page), and a malformed evidence object
        _question(
            "fb-3",
            "What is the pension discount rate?",
            "5.2 percent",
            [
                _evidence(
                    "The discount rate for pension obligations was 5.2 percent, set by the actuaries of "
                    "the plan after a review of corporate bond yields.",
                    "BOEING_2022_10K",
                    2,
                ),
                {"evidence_text": None, "doc_name": "BOEING_2022_10K", "evidence_page_num": 1},
            ],
        ),
        # an ambiguous name: two corpus files reduce to the same letters
        _question(
            "fb-4",
            "What does PepsiCo sell?",
            "snacks and beverages",
            [_evidence("PepsiCo annual report with snacks and beverages", "Pepsi 2022", 0)],
        ),
        _question(
            "fb-5",
            "What was Acme's net income?",
            "1,234 million",
            [
                _evidence("Net income for the quarter was 1,234 million dollars", "ACME_2023Q3_10Q", 1),
                _evidence("cash and equivalents of 9,876 million dollars", "ACME_2023Q3_10Q", 2),
            ],
        ),
    ]


@needs_fonts
def test_financebench_jsonl_imports_with_no_map_and_pages_stored_one_based(tmp_path: Path, corpus) -> None:
    texts, pages = corpus
    path = tmp_path / "financebench_open_source.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _zero_based_rows()) + "\n", encoding="utf-8")
    assert detect_format(path) == "financebench"
    result = import_questions(None, path, texts, ImportOptions(name="fb", pages=pages, locate=False))

    # no question lost: the ambiguous one and the one with unfound evidence are kept
    assert [q.id for q in result.question_set.questions] == ["fb-1", "fb-2", "fb-3", "fb-4", "fb-5"]
    assert result.pages is not None and result.pages.base == 0 and not result.pages.assumed
    by_id = {q.id: q for q in result.question_set.questions}
    fb1 = by_id["fb-1"]
    assert [(r.document, r.page) for r in fb1.references] == [("BOEING_2022_10K.pdf", 2)]
    assert "480 airplanes" in fb1.references[0].content
    # every evidence object its own reference, the extensionless and re-cased names resolved
    assert [(r.document, r.page) for r in by_id["fb-2"].references] == [
        ("BOEING_2022_10K.pdf", 3),
        ("BOEING_2022_10K.pdf", 4),
    ]
    # every other field a label
    assert fb1.labels["question_type"] == "metrics-generated" and fb1.labels["company"] == "Boeing"
    assert "evidence" not in fb1.labels

    # evidence not found: kept at the document and page level, counted, named in the metadata
    fb3 = by_id["fb-3"]
    assert fb3.references == () and fb3.document_pages == (("BOEING_2022_10K.pdf", 3),)
    assert fb3.metadata["evidence_not_found"][0]["document"] == "BOEING_2022_10K.pdf"
    assert by_id["fb-4"].judge_only

    # one line per malformed evidence object: file, question, field, reason
    lines = [str(p) for p in result.problems]
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    assert any("fb-3" in line and "evidence[1].evidence_text" in line for line in lines)
    ambiguous = next(line for line in lines if "fb-4" in line)
    assert "ambiguous" in ambiguous and "PEPSI_2022.pdf" in ambiguous and "pepsi-2022.pdf" in ambiguous

    ceiling = result.ceiling
    assert ceiling is not None and (ceiling.found, ceiling.total) == (5, 6)
    assert ceiling.by("kind") == {"table": (1, 1), "text": (4, 5)}
    assert "83 %" in ceiling.summary() and "1 text passage in BOEING_2022_10K.pdf" in ceiling.summary()
    # both kinds: questions are labelled by their evidence kind, so results break down by it
    assert by_id["fb-2"].labels[KIND_LABEL] == "table and text"
    assert by_id["fb-1"].labels[KIND_LABEL] == "text"

    # the written set reads back with its pages and its ceiling, and check prints the same ceiling
    data = result.to_json()
    assert data["parse_ceiling"]["found"] == 5
    folder = tmp_path / "questions"
    folder.mkdir()
    (folder / "fb.json").write_text(json.dumps(data), encoding="utf-8")
    again = parse_question_set(data, "fb.json")
    assert {q.id: q.pages for q in again.questions}["fb-2"] == (("BOEING_2022_10K.pdf", 3), ("BOEING_2022_10K.pdf", 4))
    check = check_questions(folder, texts)
    assert check.ok, [str(p) for p in check.problems]
    assert check.ceiling.found == 5 and check.ceiling.total == 6
    assert "parse ceiling" in check.summary()


@needs_fonts
def test_a_one_based_json_file_keeps_its_pages_and_a_wrong_page_is_reported(tmp_path: Path, corpus) -> None:
    texts, pages = corpus
    rows = [
        _question(
            "acme-1",
            "What was Acme's net income?",
            "1,234 million",
            [_evidence("Net income for the quarter was 1,234 million dollars", "ACME_2023Q3_10Q.pdf", 2)],
        ),
        _question(
            "acme-2",
            "How much cash did Acme hold?",
            "9,876 million",
            [_evidence("cash and equivalents of 9,876 million dollars", "acme 2023q3 10q", 3)],
        ),
        # cited on page 1, but the passage is on page 2
        _question(
            "acme-3",
            "What drove net income?",
            "anvils",
            [_evidence("driven by strong demand for anvils in every region", "ACME_2023Q3_10Q", 1)],
        ),
    ]
    path = tmp_path / "acme.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    result = import_questions("financebench", path, texts, ImportOptions(name="acme", pages=pages, locate=False))
    assert result.pages is not None and result.pages.base == 1
    assert "1-based" in result.pages.summary(path.name)
    by_id = {q.id: q for q in result.question_set.questions}
    assert by_id["acme-1"].references[0].page == 2
    assert by_id["acme-2"].references[0].page == 3
    assert any("acme-3" in n and "cited on page 1" in n and "found on page 2" in n for n in result.notes)


@needs_fonts
def test_map_names_fields_inside_a_list_of_objects(tmp_path: Path, corpus) -> None:
    texts, pages = corpus
    rows = [
        {
            "q": "How many airplanes?",
            "a": "480",
            "refs": [{"passage": "delivered 480 airplanes during the year", "file": "BOEING_2022_10K", "p": 2}],
        }
    ]
    path = tmp_path / "custom.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    mapping = parse_mapping("question=q,answer=a,contexts=refs[].passage,sources=refs[].file,pages=refs[].p")
    result = import_questions(
        "table", path, texts, ImportOptions(name="custom", mapping=mapping, pages=pages, locate=False)
    )
    question = result.question_set.questions[0]
    assert [(r.document, r.page) for r in question.references] == [("BOEING_2022_10K.pdf", 2)]
    assert result.pages is not None and result.pages.base == 1


def test_document_names_resolve_by_their_letters_and_digits() -> None:
    names = ["filings/BOEING_2022_10K.pdf", "AAPL 2022 Q3.pdf", "x/PEPSI_2022.pdf", "y/PEPSI_2022.pdf"]
    assert resolve_document_name("BOEING_2022_10K", names) == ["filings/BOEING_2022_10K.pdf"]
    assert resolve_document_name("boeing 2022 10k", names) == ["filings/BOEING_2022_10K.pdf"]
    assert resolve_document_name("aapl-2022-q3.PDF", names) == ["AAPL 2022 Q3.pdf"]
    assert resolve_document_name("PEPSI_2022", names) == ["x/PEPSI_2022.pdf", "y/PEPSI_2022.pdf"]
    assert resolve_document_name("MSFT_2022", names) == []


def test_evidence_found_across_formatting_and_a_reordered_table() -> None:
    markdown = (
        "Some intro.\n\n| Item | 2022 | 2021 |\n| --- | --- | --- |\n| Revenues | $66,608 | $62,286 |\n"
        "| Cost of products | (59,277) | (53,996) |\n\nThe compre-\nhensive income statement follows."
    )
    # whitespace, cell separators, $ and thousands separators, parentheses
    span = find_evidence("Revenues 66608 62286\nCost of products 59,277 53,996", markdown)
    assert span is not None and "Revenues" in markdown[span[0] : span[1]] and "53,996" in markdown[span[0] : span[1]]
    # a word broken across lines
    assert find_evidence("The comprehensive income statement", markdown) is not None
    # a passage that is not there
    assert find_evidence("Operating cash flow was 3,512 in the year under review by the board", markdown) is None


def test_evidence_kind_and_page_convention() -> None:
    assert evidence_kind("Revenues 66,608 62,286\nCost 59,277 53,996\nR&D 2,852 2,249") == "table"
    assert evidence_kind("The backlog grew as deliveries recovered.\nMore text here.") == "text"
    assert evidence_kind("Anything", {"Source Chunk Type": "Table"}) == "table"
    assert page_convention([(1, (2, 2)), (3, (4, 4)), (5, (5, 5))]).base == 0
    assert page_convention([(2, (2, 2))]).base == 1
    assert page_convention([], default=0).assumed


@needs_fonts
def test_a_table_of_evidence_lists_is_guessed_and_pages_need_a_list(tmp_path: Path, corpus) -> None:
    from chunkbench_core.errors import QuestionSetError
    from chunkbench_core.evaluation.importers import check_mapping, guess_mapping, read_table

    texts, pages = corpus
    path = tmp_path / "sheet.jsonl"
    path.write_text(
        json.dumps(
            {
                "question": "How many airplanes?",
                "answer": "480",
                "evidence": [
                    {"text": "delivered 480 airplanes during the year", "document": "BOEING_2022_10K", "page": 2}
                ],
            }
        )
        + "\n",
        encoding="utf-8",
    )
    table = read_table(path)
    assert guess_mapping(table) == {
        "contexts": "evidence[].text",
        "sources": "evidence[].document",
        "pages": "evidence[].page",
        "question": "question",
        "answer": "answer",
    }
    result = import_questions("table", path, texts, ImportOptions(name="sheet", pages=pages, locate=False))
    assert [(r.document, r.page) for r in result.question_set.questions[0].references] == [("BOEING_2022_10K.pdf", 2)]
    with pytest.raises(QuestionSetError, match="pages are read from a list of evidence objects"):
        check_mapping(parse_mapping("question=question,pages=answer"), table)


@needs_fonts
def test_a_sheet_names_its_sources_as_loosely_as_evidence_objects(tmp_path: Path, corpus) -> None:
    texts, pages = corpus
    path = tmp_path / "sheet.csv"
    path.write_text(
        "Question,Answer,Source\nHow many airplanes?,480,boeing 2022 10k\nWhat does PepsiCo sell?,snacks,Pepsi 2022\n",
        encoding="utf-8",
    )
    result = import_questions(
        "table",
        path,
        texts,
        ImportOptions(
            name="sheet", mapping={"question": "Question", "answer": "Answer", "sources": "Source"}, locate=False
        ),
    )
    assert [q.documents for q in result.question_set.questions] == [("BOEING_2022_10K.pdf",)]
    assert len(result.problems) == 1 and "ambiguous" in str(result.problems[0])
