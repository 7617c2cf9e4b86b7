"""Evidence located from answers over quarterly filings that repeat each other's tables (texts built here)."""

from __future__ import annotations

from chunkbench_core.evaluation.locate import (
    Locator,
    cited_documents,
    document_period,
    locate_questions,
    text_periods,
)
from chunkbench_core.evaluation.questions import Question


def _filing(quarter: str, current: str, prior: str, cash: str) -> str:
    # a quarter's statement repeats the prior year's quarter as its comparative column, as 10-Qs do
    return (
        f"ACME CORP QUARTERLY REPORT {quarter}\n\nCONSOLIDATED STATEMENTS OF OPERATIONS (in millions)\n\n"
        f"| | Prior year | Current |\n| --- | --- | --- |\n| Total net sales | {prior} | {current} |\n"
        f"| Cost of sales | 40,101 | 41,202 |\n\nSegment information\n\n| Total net sales | {prior} | {current} |\n\n"
        f"Management discussion. Net sales were {current} in the quarter. Cash provided by operating activities "
        f"was {cash} for the quarter, compared with last year.\n\nRisk factors follow with general words about "
        "competition, suppliers and the economy of every region we serve.\n"
    )


FILINGS = {
    "2022 Q3 ACME.pdf": _filing("Q3 2022", "82,959", "70,001", "$11.4 billion"),
    "2023 Q3 ACME.pdf": _filing("Q3 2023", "91,017", "82,959", "$12.8 billion"),
    "2023 Q1 ACME.pdf": _filing("Q1 2023", "85,123", "75,456", "$4.2 billion"),
    "2023 Q1 OTHER.pdf": "OTHER INC report. Total net sales 82,959 and 91,017 in a table of a different company.\n",
}


def test_periods_and_citations_are_read() -> None:
    assert document_period("2023 Q3 ACME.pdf") == (2023, 3)
    assert document_period("acme_Q1_2023.pdf") == (2023, 1)
    assert document_period("handbook.docx") is None
    assert [
        p
        for _, p in text_periods(
            "For the quarter ended September 30, 2022, and Q1 2023, and the second quarter of 2023"
        )
    ] == [(2022, 3), (2023, 1), (2023, 2)]
    answer = "Sales rose.\n\nSOURCE(S): 2022 Q3 ACME.pdf, 2023 Q3 ACME.pdf"
    assert cited_documents(answer, list(FILINGS)) == ("2022 Q3 ACME.pdf", "2023 Q3 ACME.pdf")
    assert cited_documents("(SOURCE: 2023 q1 acme)", list(FILINGS)) == ("2023 Q1 ACME.pdf",)


def test_a_figure_repeated_by_the_next_years_filing_is_placed_in_the_filing_of_its_period() -> None:
    question = Question(
        "q1",
        "How did net sales change?",
        expected_answer=(
            "- For the quarter ended September 30, 2022, total net sales were $82,959 million.\n"
            "- For the quarter ended September 30, 2023, total net sales were $91.02 billion.\n"
            "SOURCE(S): 2022 Q3 ACME.pdf, 2023 Q3 ACME.pdf"
        ),
        documents=("*ACME*",),
    )
    (located,), report = locate_questions([question], Locator(FILINGS))
    documents = {r.document for r in located.references}
    # one reference (at least) per cited document, none in the other company's filing, none in Q1
    assert documents == {"2022 Q3 ACME.pdf", "2023 Q3 ACME.pdf"}
    q3_2022 = [r for r in located.references if r.document == "2022 Q3 ACME.pdf"]
    assert any("82,959" in r.content and "Total net sales" in r.content for r in q3_2022)
    # the scaled figure: 91.02 billion is 91,017 million
    assert any("91,017" in r.content for r in located.references if r.document == "2023 Q3 ACME.pdf")
    assert report.n_found == 1


def test_a_scaled_figure_in_a_sentence_is_placed_on_the_line_sharing_its_words() -> None:
    question = Question(
        "q2",
        "What were operating cash flows in Q3 2022?",
        expected_answer="Cash provided by operating activities was $11.4 billion for Q3 2022.",
        documents=("2022 Q3 ACME.pdf",),
    )
    (located,), _ = locate_questions([question], Locator(FILINGS))
    assert located.references and all(r.document == "2022 Q3 ACME.pdf" for r in located.references)
    assert "operating activities was $11.4 billion" in located.references[0].content


def test_the_linear_helpers_agree_with_the_plain_definitions() -> None:
    import random

    from chunkbench_core.evaluation.locate import _dominating, index_document, line_span

    rng = random.Random(3)
    runs = [("d", 0, 1, a, a + rng.randint(1, 6)) for a in (rng.randint(0, 20) for _ in range(300))]
    plain = [sum(1 for r in runs if r[3] <= run[3] and r[4] >= run[4]) for run in runs]
    assert _dominating(runs) == plain
    # one long line of sentences, short lines, and blank ones: a document's cached line spans are line_span's
    text = (
        ("Revenue was 12,345 in the year. " * 40)
        + "\n\nshort line 77,777\n  padded line 88,888  \n"
        + ("Costs were 4,321. Margins held. " * 30)
    )
    doc = index_document("x", text)
    for position in range(0, len(text), 7):
        assert doc.line_span(position) == line_span(text, position), position
