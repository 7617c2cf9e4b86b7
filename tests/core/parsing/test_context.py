"""The document header: company or title, form and period, told from the cover page, the metadata or the name."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.parsing import parse
from chunkbench_core.parsing.context import DocumentContext, describe_document

FINANCIAL = Path(__file__).resolve().parents[2] / "fixtures" / "financial"

COVER = """## UNITED STATES SECURITIES AND EXCHANGE COMMISSION

## FORM 10-Q

QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934

For the quarterly period ended March 31, 2023 or

# AMAZON.COM, INC.

#### (Exact name of registrant as specified in its charter)

Delaware 91-1646860
"""


def test_the_cover_page_names_the_registrant_the_form_and_the_period():
    context = describe_document(
        "2023 Q1 AMZN.pdf", COVER, {"title": "0001018724-23-000008", "author": "EDGAR Online, a division of Donnelley"}
    )
    assert context.header == "AMAZON.COM, INC. | Form 10-Q | quarterly period ended March 31, 2023"
    assert dict(context.sources) == {"name": "cover page", "form": "cover page", "period": "cover page"}


def test_a_metadata_author_counts_only_when_the_text_names_it():
    text = "# Quarterly results\n\nNorthwind Traders sold more in the quarter ended June 30, 2024.\n"
    named = describe_document("report.pdf", text, {"author": "Northwind Traders"})
    assert named.name == "Northwind Traders" and dict(named.sources)["name"] == "metadata author"
    assert named.period == "quarter ended June 30, 2024"
    converter = describe_document("report.pdf", text, {"author": "anonymous", "title": "04.01.2023 10Q"})
    assert converter.name == "Quarterly results"  # the first heading: neither metadata value reads as a name


def test_the_file_name_is_the_last_resort_and_gives_a_quarter_and_a_form():
    context = describe_document("filings/2023 Q2 ACME 10-Q.txt", "no headings, no dates here")
    assert context == DocumentContext(
        "2023 Q2 ACME 10-Q",
        "Form 10-Q",
        "Q2 2023",
        (("form", "file name"), ("name", "file name"), ("period", "file name")),
    )
    assert describe_document("notes.md", "plain text").header == "notes"


def test_parse_stores_the_context_and_it_survives_a_round_trip():
    parsed = parse(FINANCIAL / "2023 Q3 ACME.pdf")
    assert parsed.context["header"] == "ACME Robotics, Inc. | Form 10-Q | quarter ended September 30, 2023"
    assert parsed.metadata["author"] == "ACME Robotics, Inc."
    again = type(parsed).from_dict(parsed.to_dict())
    assert again.context == parsed.context and again.metadata == parsed.metadata


@pytest.mark.parametrize("name", ["2022 Q3 BRLF.pdf", "2024 Q1 CBLT.pdf"])
def test_near_identical_reports_get_different_headers(name):
    header = parse(FINANCIAL / name).context["header"]
    assert "Form 10-Q" in header and ("June 25, 2022" in header or "March 31, 2024" in header)
