"""Table rows that keep their meaning: period headers, titles, sections, $ cells, footers (PDF and DOCX).

The PDFs are the financial fixture of ``scripts/make_financial_fixture.py`` (tests/fixtures/financial/):
three made-up quarterly reports whose statements have a two-row, a three-row and a one-line period
header, accounting ``$`` printed apart from its number, negatives in parentheses, section rows, and a
running header and footer on every page.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from chunkbench_core.parsing import ParsedDocument, check_spans, explain_text, parse
from chunkbench_core.parsing.tables import GridCell, flatten_table, table_units

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "fixtures" / "financial"
ACME, BRLF, CBLT = "2023 Q3 ACME.pdf", "2022 Q3 BRLF.pdf", "2024 Q1 CBLT.pdf"


@pytest.fixture(scope="module")
def reports() -> dict[str, ParsedDocument]:
    return {name: parse(FIXTURE / name) for name in (ACME, BRLF, CBLT)}


def _row(parsed: ParsedDocument, needle: str) -> str:
    rows = [u.text for u in parsed.units if u.content_type == "table_row" and needle in u.text]
    assert len(rows) == 1, (needle, rows)
    return rows[0]


# -- PDF -------------------------------------------------------------------------------------------
def test_two_row_period_header_labels_every_value(reports: dict[str, ParsedDocument]) -> None:
    row = _row(reports[ACME], "Total net sales")
    assert row == (
        "ACME Robotics, Inc. CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited) "
        "(In thousands, except per-share amounts) \u2014 Net sales > Total net sales | "
        "Three Months Ended September 30, 2023: 82,959 | Three Months Ended September 30, 2022: 74,917 | "
        "Nine Months Ended September 30, 2023: 242,048 | Nine Months Ended September 30, 2022: 215,319"
    )


def test_three_row_period_header_and_negatives_in_parentheses(reports: dict[str, ParsedDocument]) -> None:
    row = _row(reports[BRLF], "Operating income (loss)")
    assert row.endswith(
        "\u2014 Operating income (loss) | Three Months Ended June 25, 2022: (3,412) | "
        "Three Months Ended June 26, 2021: (384) | Nine Months Ended June 25, 2022: (9,866) | "
        "Nine Months Ended June 26, 2021: (524)"
    )
    # a "$" printed apart joins its number, also in front of a negative
    assert "\u2014 Net income (loss) | Three Months Ended June 25, 2022: $(4,478) | " in _row(
        reports[BRLF], "\u2014 Net income (loss) |"
    )


def test_one_line_period_header_over_two_columns(reports: dict[str, ParsedDocument]) -> None:
    row = _row(reports[CBLT], "Gross margin")
    assert row.endswith(
        "\u2014 Gross margin | Three Months Ended March 31, 2024: 32,616 | Three Months Ended March 31, 2023: 28,183"
    )


def test_dollar_cells_merge_with_their_numbers_and_never_shift_columns(reports: dict[str, ParsedDocument]) -> None:
    for parsed in reports.values():
        rows = [u.text for u in parsed.units if u.content_type == "table_row"]
        assert rows
        for row in rows:
            cells = row.split(" \u2014 ", 1)[-1].split(" | ")
            assert "$" not in cells and not any(c.endswith(" $") or c.endswith("$") for c in cells), row
            assert not re.search(r"\$\s", row), row
            # every value sits under a period label: label + one "Header: value" per column
            assert all(": " in c for c in cells[1:]), row
    row = _row(reports[ACME], "Cash and cash equivalents")
    assert row.endswith(
        "\u2014 ASSETS > Cash and cash equivalents | September 30, 2023: $41,230 | December 31, 2022: $35,918"
    )


def test_section_rows_tell_rows_with_the_same_label_apart(reports: dict[str, ParsedDocument]) -> None:
    parsed = reports[ACME]
    assert "Net sales > Products | Three Months Ended September 30, 2023: $61,204" in _row(parsed, "$61,204")
    assert "Cost of sales > Products | Three Months Ended September 30, 2023: 35,118" in _row(parsed, "35,118")
    # a total row closes its section: the next row has none
    assert "\u2014 Gross margin |" in _row(parsed, "Gross margin")
    # section rows are not rows of their own
    assert not any(u.text.endswith("\u2014 Operating expenses") for u in parsed.units)


def test_running_headers_footers_and_page_numbers_are_neither_rows_nor_prose(
    reports: dict[str, ParsedDocument],
) -> None:
    for name, parsed in reports.items():
        ticker = name.split()[-1].removesuffix(".pdf")
        assert f"{ticker} Quarterly Report" not in parsed.markdown
        assert not re.search(r"Page \d of \d", parsed.markdown)
        assert not any(
            u.text.startswith(
                ("ACME Robotics, Inc. Form 10-Q", "Borealis Foods Corp. Form 10-Q", "Cobalt Networks, Inc. Form 10-Q")
            )
            for u in parsed.units
        )
        assert parsed.stats["pdf_dropped_lines"] == 2 * parsed.stats["pages"]
        # the statement titles at the top of later pages are not mistaken for running headers
        assert parsed.markdown.count("CONDENSED CONSOLIDATED") >= 3


def test_spans_and_prose_are_intact(reports: dict[str, ParsedDocument]) -> None:
    facts = json.loads((FIXTURE / "facts.json").read_text(encoding="utf-8"))
    for company in facts["companies"]:
        parsed = reports[company["document"]]
        check_spans(parsed)
        paragraphs = " ".join(u.text for u in parsed.units if u.content_type == "paragraph")
        for fact in company["prose"]:
            assert fact["evidence"] in paragraphs


def test_explain_names_the_rules(reports: dict[str, ParsedDocument]) -> None:
    parsed = reports[BRLF]
    tables = [e for e in parsed.explain if e.kind == "table"]
    assert len(tables) == 3
    assert tables[0].text.startswith("header: Three Months Ended June 25, 2022 | Three Months Ended June 26, 2021")
    assert "rows 1-3 are a header" in tables[0].rule and "title from the caption above the table" in tables[0].rule
    text = explain_text(parsed)
    assert text.startswith("2022 Q3 BRLF.pdf (pdf): ")
    assert "heading (line 1): Borealis Foods Corp." in text
    assert "rule: level 1: font size 14 pt" in text
    assert "[pdf] heading_size_ratio" in text


# -- DOCX ------------------------------------------------------------------------------------------
def _financial_docx(path: Path) -> Path:
    """A Word statement as accountants type it: "$" in a column of its own, a period header spanning
    two columns over a row of years, a section row, a negative in parentheses, a caption above."""
    from docx import Document

    doc = Document()
    doc.add_heading("Item 1. Financial Statements", level=2)
    doc.add_paragraph("Kestrel Labs Ltd.")
    doc.add_paragraph("STATEMENTS OF OPERATIONS (In thousands)")
    rows = [
        ["", "", "Three Months Ended June 30,", "", ""],
        ["", "", "2024", "", "2023"],
        ["Revenue:", "", "", "", ""],
        ["Licences", "$", "12,400", "$", "11,050"],
        ["Total revenue", "$", "19,870", "$", "17,320"],
        ["Net loss", "", "(2,115)", "", "(640)"],
        ["Gross margin", "", "61.5", "%", "58.2 %"],
    ]
    table = doc.add_table(rows=len(rows), cols=5)
    for r, values in enumerate(rows):
        for c, value in enumerate(values):
            table.cell(r, c).text = value
    table.cell(0, 1).merge(table.cell(0, 4))  # the period header spans the $ and value columns
    table.cell(0, 1).text = "Three Months Ended June 30,"
    for c in (1, 3):  # the years sit over the "$" column and the value column
        table.cell(1, c).merge(table.cell(1, c + 1))
    table.cell(1, 1).text = "2024"
    table.cell(1, 3).text = "2023"
    doc.save(str(path))
    return path


def test_docx_statement_rows_carry_period_headers_and_title(tmp_path: Path) -> None:
    parsed = parse(_financial_docx(tmp_path / "kestrel.docx"))
    rows = [u.text for u in parsed.units if u.content_type == "table_row"]
    title = "Kestrel Labs Ltd. STATEMENTS OF OPERATIONS (In thousands) \u2014 "
    assert rows == [
        title + "Revenue > Licences | Three Months Ended June 30, 2024: $12,400 | Three Months Ended June 30, 2023: "
        "$11,050",
        title + "Revenue > Total revenue | Three Months Ended June 30, 2024: $19,870 | "
        "Three Months Ended June 30, 2023: $17,320",
        title + "Net loss | Three Months Ended June 30, 2024: (2,115) | Three Months Ended June 30, 2023: (640)",
        title + "Gross margin | Three Months Ended June 30, 2024: 61.5% | Three Months Ended June 30, 2023: 58.2%",
    ]
    check_spans(parsed)
    table = next(e for e in parsed.explain if e.kind == "table")
    assert "rows 1-2 are a header" in table.rule and "title from the caption above the table" in table.rule


# -- the shared rules --------------------------------------------------------------------------------
def _grid(rows: list[list[str]]) -> list[list[GridCell]]:
    return [[GridCell(text, (r, c)) for c, text in enumerate(row)] for r, row in enumerate(rows)]


def test_spanning_header_over_years_needs_an_empty_first_column() -> None:
    spanning = [
        [GridCell("", "a"), GridCell("Sales", "s"), GridCell("Sales", "s")],
        [GridCell("", "b"), GridCell("2024", "y1"), GridCell("2023", "y2")],
        [GridCell("North", "n"), GridCell("5", "v1"), GridCell("4", "v2")],
    ]
    flat = flatten_table(spanning, context=True)
    assert flat.header == ["", "Sales 2024", "Sales 2023"] and flat.header_rows == 2
    assert [i.text for i in flat.items] == ["North | Sales 2024: 5 | Sales 2023: 4"]
    # two text rows without an empty first column: the second is data, not a header
    flat = flatten_table(_grid([["Region", "Manager"], ["North", "Ms Rahimi"]]), context=True)
    assert flat.header == ["Region", "Manager"]
    assert [i.text for i in flat.items] == ["Region: North | Manager: Ms Rahimi"]


def test_total_rows_close_sections_and_unused_sections_are_kept() -> None:
    flat = flatten_table(
        _grid([["", "2024"], ["Costs:", ""], ["Rent", "5"], ["Total costs", "5"], ["Profit", "3"], ["Notes:", ""]]),
        context=True,
    )
    title, units = table_units(flat, "Plan")
    assert title == "Plan"
    assert units == [
        ("table_row", "Plan \u2014 Costs > Rent | 2024: 5"),
        ("table_row", "Plan \u2014 Costs > Total costs | 2024: 5"),
        ("table_row", "Plan \u2014 Profit | 2024: 3"),
        ("paragraph", "Notes"),
    ]


def test_spreadsheet_rules_are_unchanged_without_context() -> None:
    rows = _grid([["Report 2024", "", ""], ["", "", ""], ["A", "B", "C"], ["$", "2", "3"], ["x", "", "%"]])
    flat = flatten_table(rows)
    assert [(i.kind, i.text) for i in flat.items] == [
        ("title", "Report 2024"),
        ("row", "A: $ | B: 2 | C: 3"),
        ("row", "A: x | C: %"),
    ]


def test_a_label_wrapped_over_two_lines_is_one_label_and_a_short_label_alone_is_a_section() -> None:
    flat = flatten_table(
        _grid(
            [
                ["", "2023", "2022"],
                ["North America", "", ""],  # no colon, no figure: the rows under it are its
                ["Net sales", "$69,244", "$76,881"],
                ["Common stock (100,000 shares authorized; 10,242 and", "", ""],  # the printer wrapped the label
                ["10,258 shares outstanding", "108", "108"],
            ]
        ),
        context=True,
    )
    rows = [(i.section, i.text) for i in flat.items if i.kind == "row"]
    assert rows == [
        ("North America", "Net sales | 2023: $69,244 | 2022: $76,881"),
        (
            "North America",
            "Common stock (100,000 shares authorized; 10,242 and 10,258 shares outstanding | 2023: 108 | 2022: 108",
        ),
    ]


def _line(page: int, y: float, cells: list[tuple[float, float, str]], size: float = 8.0):  # -> pdf.Line
    from chunkbench_core.parsing.pdf import Fragment, Line

    frags = [Fragment(x, y, size, False, text, right) for x, right, text in cells]
    return Line(page, y, size, False, " ".join(t for _, _, t in cells), frags, x0=frags[0].x, x1=frags[-1].right)


def test_a_balance_sheets_date_row_heads_the_rows_below_its_section_labels() -> None:
    """A header row of dates, then "ASSETS" and "Current assets:", then the rows, then a second block of rows
    under "LIABILITIES" on the same page: one table whose every row is labelled with the dates."""
    from chunkbench_core.parsing.pdf import table_runs

    values = lambda y, label, a, b: _line(1, y, [(35, 140, label), (475, 510, a), (566, 600, b)])  # noqa: E731 - a one-line helper reads best beside its use
    lines = [
        _line(1, 100, [(433, 505, "December 31, 2022"), (528, 587, "March 31, 2023")]),
        _line(1, 110, [(534, 575, "(unaudited)")]),
        _line(1, 122, [(202, 232, "ASSETS")]),
        _line(1, 134, [(19, 85, "Current assets:")]),
        values(146, "Cash and cash equivalents", "$53,888", "$49,343"),
        values(158, "Inventories", "34,405", "34,170"),
        _line(1, 170, [(150, 300, "LIABILITIES AND EQUITY")]),
        _line(1, 182, [(19, 95, "Current liabilities:")]),
        values(194, "Accounts payable", "$79,600", "$66,907"),
        values(206, "Unearned revenue", "13,227", "14,281"),
    ]
    for line, gap in zip(lines[1:], (10, 12, 12, 12, 12, 12, 12, 12, 12)):
        line.gap_before = gap
    assert table_runs(lines) == {0: len(lines)}


def test_figures_side_by_side_are_two_cells_however_close() -> None:
    from chunkbench_core.parsing.options import ParseOptions
    from chunkbench_core.parsing.pdf import Fragment, group_lines

    frags = [
        Fragment(36, 50, 8, False, "Accounts payable", 91),
        Fragment(441, 50, 8, False, "(9,380)", 470),
        Fragment(473, 50, 8, False, "(11,264)", 510),
        Fragment(512, 50, 8, False, "2,488", 532),
        Fragment(574, 50, 8, False, "1,061", 597),
    ]
    (line,) = group_lines(frags, 1, ParseOptions())
    assert [c.text for c in line.cells] == ["Accounts payable", "(9,380)", "(11,264)", "2,488", "1,061"]


# -- the fixture itself ------------------------------------------------------------------------------
def _fixture_module():
    script = REPO / "scripts" / "make_financial_fixture.py"
    spec = importlib.util.spec_from_file_location("make_financial_fixture", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_fixture_script_reproduces_the_committed_fixture(tmp_path: Path) -> None:
    module = _fixture_module()
    module.write_all(tmp_path)
    for name in ("questions.csv", "facts.json"):
        assert (tmp_path / name).read_bytes() == (FIXTURE / name).read_bytes(), name
    for name in (ACME, BRLF, CBLT):  # the PDFs parse to the same text (bytes depend on the fpdf2 version)
        assert parse(tmp_path / name).markdown == parse(FIXTURE / name).markdown


def test_fixture_questions_have_the_golden_set_shape() -> None:
    with (FIXTURE / "questions.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 10
    assert list(rows[0]) == ["Question", "Source Docs", "Question Type", "Source Chunk Type", "Answer"]
    assert sorted(r["Source Chunk Type"] for r in rows) == ["Table"] * 6 + ["Text"] * 4
    names = {p.name for p in FIXTURE.glob("*.pdf")}
    import fnmatch

    for row in rows:
        globs = [g.strip() for g in row["Source Docs"].split(",")]
        assert all(len(fnmatch.filter(names, g)) == 1 for g in globs), row["Source Docs"]
    texts = [r["Answer"] for r in rows if r["Source Chunk Type"] == "Text"]
    assert all("\u201c" in t and "\u201d" in t for t in texts)
    # table answers quote figures in another format than the table's: "$82.96 million" for 82,959
    assert "$82.96 million" in rows[0]["Answer"] and "82,959" not in rows[0]["Answer"]


def _split_table_pdf(path: Path, repeat_header: bool) -> Path:
    """A statement whose rows run over to a second page, with or without its header repeated there."""
    from fpdf import FPDF

    pdf = FPDF(format="letter", unit="mm")
    pdf.set_auto_page_break(False)
    header = [[("Year Ended December 31,", 1, 2)], [("2024", 1, 1), ("2023", 2, 2)]]

    def draw_header() -> None:
        pdf.set_font("Helvetica", "B", 8)
        for cells in header:
            y = pdf.get_y()
            for text, first, last in cells:
                pdf.set_xy(130 + (first - 1) * 34, y)
                pdf.cell((last - first + 1) * 34 - 2, 4.2, text, align="C" if last > first else "R")
            pdf.set_y(y + 4.2)
        pdf.ln(1.5)

    pdf.add_page()
    pdf.set_font("Helvetica", "", 10)
    pdf.set_y(20)
    pdf.multi_cell(
        0,
        5,
        "Management reviews the segment figures below every quarter with the board of directors, "
        "and the auditors review them once a year before the annual report is published.",
    )
    pdf.ln(3)
    pdf.set_font("Helvetica", "B", 10)
    pdf.cell(0, 5, "SEGMENT REVENUE (In thousands)", align="C", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    draw_header()
    for n in range(1, 61):
        if n == 45:
            pdf.add_page()
            pdf.set_y(20)
            if repeat_header:
                draw_header()
        y = pdf.get_y()
        pdf.set_font("Helvetica", "", 9)
        pdf.set_xy(15, y)
        pdf.cell(90, 5, f"Region {n:02d}")
        for c, value in enumerate((1000 + 7 * n, 900 + 5 * n)):
            pdf.set_xy(130 + c * 34, y)
            pdf.cell(32, 5, f"{value:,}", align="R")
        pdf.set_y(y + 5)
    pdf.output(str(path))
    return path


@pytest.mark.parametrize("repeat_header", [False, True])
def test_a_table_continued_on_the_next_page_keeps_its_header_and_title(tmp_path: Path, repeat_header: bool) -> None:
    parsed = parse(_split_table_pdf(tmp_path / "segments.pdf", repeat_header))
    rows = [u.text for u in parsed.units if u.content_type == "table_row"]
    assert len(rows) == 60
    assert rows[0] == (
        "SEGMENT REVENUE (In thousands) \u2014 Region 01 | Year Ended December 31, 2024: 1,007 | "
        "Year Ended December 31, 2023: 905"
    )
    assert rows[59] == (
        "SEGMENT REVENUE (In thousands) \u2014 Region 60 | Year Ended December 31, 2024: 1,420 | "
        "Year Ended December 31, 2023: 1,200"
    )
    tables = [e for e in parsed.explain if e.kind == "table"]
    assert len(tables) == 2
    assert "continues" in tables[1].rule and "title from the table it continues on the page before" in tables[1].rule
    check_spans(parsed)
